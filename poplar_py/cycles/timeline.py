"""Per-IPU clocks: a run's leaf steps replayed in the order they ran.

On an IPU system each IPU runs its own share of the program and the IPUs synchronise only at
known points. A leaf step involves the IPUs whose tiles it works on (every IPU when it works on
none, as an empty compute set or an internal Sync) and advances each of their clocks by its
cycles; IPUs it does not involve go on with their own work. A step that moves bytes between
IPUs, to or from the host or Streaming Memory, reads the cycle counter, or is an external Sync
first synchronises the IPUs it involves: each waits until the latest arrives (its *waiting*
cycles). Control flow reading a predicate makes every IPU of a replica wait for the one holding
it. A run's total is the latest clock. Replicas run the same program on IPUs of their own, so
their clocks advance alike.

The run record keeps the trace: each leaf step's id as it ran, and ``-1 - ipu`` where control
flow read a predicate held on IPU ``ipu`` of each replica.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

_I64 = np.int64


@dataclass(frozen=True)
class Span:
    """How one run of a leaf step occupies the IPUs: which it involves, whether they synchronise
    first, and its cycles on each."""

    ipus: np.ndarray  # indices of the device's IPUs it involves
    syncs: bool
    cycles: int


@dataclass
class Timeline:
    """The clocks after a replay, per device IPU: where each ends, its busy and waiting cycles, and
    the first runs' places (``entries``: step, IPUs, arrival, start and end on each)."""

    clocks: np.ndarray
    busy: np.ndarray
    waiting: np.ndarray
    entries: list[tuple[int, np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = field(default_factory=list)
    truncated: int = 0  # runs left out of ``entries``

    @property
    def total(self) -> int:
        return int(self.clocks.max(initial=0))


def replay(trace: Sequence[int], spans: dict[int, Span], num_ipus: int, ipus_per_replica: int,
           keep: int = 0) -> Timeline:
    """The clocks of ``num_ipus`` IPUs (replicas of ``ipus_per_replica`` each) after the runs in
    ``trace``, each leaf step as ``spans`` says; the first runs' places kept while their IPUs
    number at most ``keep`` in all."""
    clocks, busy, waiting = (np.zeros(num_ipus, _I64) for _ in range(3))
    timeline = Timeline(clocks, busy, waiting)
    replicas = np.arange(0, num_ipus, ipus_per_replica)
    for entry in trace:
        if entry < 0:  # a predicate read: every IPU of each replica waits for the one holding it
            if ipus_per_replica > 1:
                holder = clocks[replicas + (-1 - entry)]
                arrival = clocks.copy()
                np.maximum(clocks, np.repeat(holder, ipus_per_replica), out=clocks)
                waiting += clocks - arrival
            continue
        span = spans[entry]
        ipus = span.ipus
        arrival = clocks[ipus]
        start = np.full(ipus.size, arrival.max()) if span.syncs else arrival
        if span.syncs:
            waiting[ipus] += start - arrival
        clocks[ipus] = start + span.cycles
        busy[ipus] += span.cycles
        if keep >= ipus.size:
            keep -= ipus.size
            timeline.entries.append((entry, ipus, arrival, start, clocks[ipus]))
        else:  # the entries kept are the first runs, none after a gap
            keep = -1
            timeline.truncated += 1
    return timeline
