"""Running copy plans: a plan's pieces moved by the native loops (:mod:`native_copy`), split
over threads when the copy is large; a staged plan through a temporary, a shared gather as its
gather then its replication."""

from __future__ import annotations

import numpy as np

from ..compiler.exchange import MIN_PIECES_PER_THREAD, CopyPlan, SharedGather
from . import native_copy, threads

_MIN_BYTES_PER_THREAD = 1 << 18  # below this a copy is not worth handing to several threads


def execute(plan: CopyPlan | SharedGather, src_base: int, dst_base: int) -> None:
    """Run the copy between memories at these addresses."""
    if isinstance(plan, SharedGather):
        execute(plan.gather, src_base, dst_base)
        execute(plan.replicate, dst_base, dst_base)
        return
    if not len(plan):
        return
    if not plan.staged:
        _run(plan.pieces, plan.address, plan.steps, plan.nbytes, src_base, dst_base)
        return
    temp = np.empty(plan.nbytes + 8, dtype=np.uint8)
    into, out_of = plan.staging
    execute(into, src_base, temp.ctypes.data)
    execute(out_of, temp.ctypes.data, dst_base)


def _run(pieces: np.ndarray, address: int, steps: tuple[int, int, int] | None, nbytes: int, src_base: int,
         dst_base: int) -> None:
    """The native copy of these pieces (their table at ``address``), split over threads when it
    is large."""
    n = pieces.shape[0]
    parts = threads.split(n, MIN_PIECES_PER_THREAD) if nbytes >= _MIN_BYTES_PER_THREAD else [(0, n)]
    row = pieces.strides[0]
    if steps is None:
        threads.run_all(native_copy.copy_pieces(), [
            (src_base, dst_base, address + row * a, b - a) for a, b in parts])
    else:
        threads.run_all(native_copy.copy_uniform(steps[2]), [
            (src_base, dst_base, address + row * a, b - a, steps[0], steps[1]) for a, b in parts])
