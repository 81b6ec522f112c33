"""Engine.enableExecutionProfiling / disableExecutionProfiling: whether runs reach the profile.

An engine records every run it makes (the leaf steps run, the cycles its kernels count), and the
execution profile is costed from that record. With profiling disabled, a run still runs in full
(and ``cycleStamp`` still counts its cycles, as a device's counter would), but what it recorded
is dropped afterwards, so the profile holds the profiled runs only.
"""

from __future__ import annotations

import contextlib
import copy
from collections.abc import Callable, Iterator
from dataclasses import dataclass, fields

from ..cycles.costs import RunRecord


@dataclass
class _Mark:
    """A record as it was before an unprofiled run (its trace by length: it only grows)."""

    values: dict[str, object]
    trace_length: int


def _mark(record: RunRecord) -> _Mark:
    values = {f.name: copy.deepcopy(getattr(record, f.name)) for f in fields(record) if f.name != "trace"}
    return _Mark(values, len(record.trace))


def _restore(record: RunRecord, mark: _Mark) -> None:
    for name, value in mark.values.items():
        setattr(record, name, value)
    del record.trace[mark.trace_length:]


class ExecutionProfiling:
    """The switch, and the device clock across unprofiled runs: ``clock`` counts the cycles of
    the record (profiled runs, and the run under way) plus those of the unprofiled runs."""

    def __init__(self, machine: RunRecord, profile: RunRecord, clock: Callable[[], int]) -> None:
        self._records = [machine] if profile is machine else [machine, profile]  # (MPI: two)
        self._clock = clock
        self.enabled = True
        self._unprofiled_cycles = 0

    def clock(self) -> int:
        return self._clock() + self._unprofiled_cycles

    @contextlib.contextmanager
    def run(self) -> Iterator[None]:
        """Around one ``Engine.run``: with profiling disabled, the record is put back as it was
        when the run ends (on a failure too)."""
        if self.enabled:
            yield
            return
        marks = [_mark(r) for r in self._records]
        before = self._clock()
        try:
            yield
            self._unprofiled_cycles += self._clock() - before
        finally:
            for record, mark in zip(self._records, marks):
                _restore(record, mark)
