"""The thread pool that runs native kernels and copies (ctypes releases the GIL).

Vertices of one compute set are independent, and so are the pieces of one copy (the
planner only splits copies that do not overwrite their own source), so any split over
threads gives the same result. POPLAR_PY_THREADS sets the thread count (default: the
machine's CPU count, divided among the MPI ranks on it).
"""

from __future__ import annotations

import functools
import itertools
import os
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor, wait

import numpy as np

#: environment variables by which MPI launchers give the number of ranks on this machine
_LOCAL_RANKS = ("MPI_LOCALNRANKS", "OMPI_COMM_WORLD_LOCAL_SIZE")


def count() -> int:
    """How many threads native work is split over: POPLAR_PY_THREADS, else this machine's
    cores shared among the MPI ranks running on it."""
    given = os.environ.get("POPLAR_PY_THREADS")
    if given is not None:
        return max(1, int(given))
    local = next((int(v) for v in map(os.environ.get, _LOCAL_RANKS) if v and v.isdigit()), 1)
    return max(1, (os.cpu_count() or 1) // max(local, 1))


@functools.cache
def _pool(threads: int) -> ThreadPoolExecutor:
    return ThreadPoolExecutor(max_workers=threads, thread_name_prefix="poplar-py")


def split(n: int, min_per_piece: int) -> list[tuple[int, int]]:
    """[begin, end) pieces of ``range(n)``: one per thread, each at least ``min_per_piece`` long."""
    k = min(count(), max(1, n // max(min_per_piece, 1)))
    if k == 1:
        return [(0, n)]
    bounds = np.linspace(0, n, k + 1).astype(int).tolist()
    return list(itertools.pairwise(bounds))


def run_all(fn: Callable[..., int], calls: Sequence[tuple]) -> list[int]:
    """``fn(*args)`` for every tuple in ``calls``, in parallel when there are several (the
    calling thread runs the first: one hand-over fewer per call)."""
    if len(calls) == 1:
        return [fn(*calls[0])]
    pool = _pool(len(calls) - 1)
    rest = [pool.submit(fn, *args) for args in calls[1:]]
    try:
        return [fn(*calls[0]), *(f.result() for f in rest)]
    except BaseException:  # Ctrl-C (checked kernels stop soon) or an error: none runs on after it
        wait(rest)
        raise
