"""A build's progress: Poplar's progress callback, and a bar on stderr for builds that take a
while (click's progress bar).

The callback (``compileGraph``'s and the Engine's ``progressCallback``, Poplar's ``ProgressFunc``)
is called as ``callback(done, total)`` before each pass, with the number of passes done so far,
and ``callback(total, total)`` once they all are.

The bar is shown when stderr is a terminal and the build has run for more than ``AFTER`` seconds,
from the next pass on; ``POPLAR_PY_PROGRESS=1`` shows it from the start whatever stderr is, and
``POPLAR_PY_PROGRESS=0`` never.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from types import TracebackType
from typing import Any

import click

AFTER = 1.0  # seconds


def _wanted() -> bool | None:
    """True: always; False: never; None: when stderr is a terminal and the build is slow."""
    forced = os.environ.get("POPLAR_PY_PROGRESS")
    if forced in ("0", "1"):
        return forced == "1"
    return None if sys.stderr.isatty() else False


class Progress:
    """Steps of a build, each named; ``with Progress(n) as p: p.step(name) ...``."""

    def __init__(self, steps: int, label: str = "Building the engine",
                 callback: Callable[[int, int], object] | None = None) -> None:
        self.steps, self.label, self.callback = steps, label, callback
        self.wanted = _wanted()
        self.started = time.perf_counter()
        self.done = 0
        self.bar: Any = None

    def __enter__(self) -> Progress:
        return self

    def step(self, name: str) -> None:
        """Step ``name`` begins (the ones before it are done)."""
        if self.callback is not None:
            self.callback(self.done, self.steps)
        if self.bar is None and (self.wanted or (self.wanted is None
                                                 and time.perf_counter() - self.started > AFTER)):
            self.bar = click.progressbar(length=self.steps, label=self.label, file=sys.stderr, show_eta=False,
                                         item_show_func=lambda item: item)
            self.bar.__enter__()
        if self.bar is not None:
            self.bar.update(self.done - self.bar.pos, current_item=name)
        self.done += 1

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 tb: TracebackType | None) -> None:
        if kind is None and self.callback is not None:
            self.callback(self.steps, self.steps)
        if self.bar is not None:
            self.bar.update(self.steps - self.bar.pos)
            self.bar.__exit__(kind, value, tb)
