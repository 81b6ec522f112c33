"""The step setting the tiles' floating-point control words (:mod:`fp_state`), lowered from
:class:`~poplar_py.csr_functions.FloatingPointControl`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

import numpy as np

from ..csr_functions import CSR_CYCLES, FloatingPointControl
from ..cycles.costs import CostModel, RunRecord, StepCost
from .exchange import CopyPlan
from .partition import GATHER, SCATTER, Move
from .steps import Step

if TYPE_CHECKING:  # (lower imports this module)
    from .lower import Lowerer


def _rng_offsets(lw: Lowerer, p: FloatingPointControl) -> np.ndarray:
    """Per tile: the arena offset of its row of the generator state (-1 where it has none)."""
    located = lw.layout.locate(lw.runs(p.seeds, "floating-point control"))
    starts = np.arange(p.seeds.dim(0), dtype=np.int64) * p.seeds[0].numElements()
    piece = np.searchsorted(located.flat, starts, side="right") - 1
    out = np.full(lw.num_tiles, -1, np.int64)
    out[located.tile[piece]] = lw.layout.address(located.tile[piece], located.offset[piece]) \
        + (starts - located.flat[piece]) * located.step[piece]
    return out


def lower_fp_control(lw: Lowerer, p: FloatingPointControl) -> Step:
    """The step of a FloatingPointControl program."""
    save = None if p.save is None else lw.host_plan(p.save, "getAndModifyFloatingPointBehaviour", True)[0]
    source = None if p.source is None \
        else lw.host_plan(p.source, "restoreFloatingPointBehaviour", False)[0]
    tiles = np.asarray(p.tiles, np.int64)
    step = FpControlStep(p.name, tiles, p.clear, p.set, _rng_offsets(lw, p), save, source)
    return lw.leaf(step)


@dataclass
class FpControlStep(Step):
    """Sets the control word of ``tiles`` on every replica: from ``source`` (a plan reading one
    UNSIGNED_INT per tile), else ``(word & ~clear) | set``; first, given ``save``, writes the old
    words through that plan. Costs a sync and ``CSR_CYCLES`` of compute on its tiles."""

    tiles: np.ndarray
    clear: int
    set: int
    rng: np.ndarray
    save: CopyPlan | None
    source: CopyPlan | None
    kind: ClassVar[str] = "OnTileExecute"

    def moves(self) -> list[Move]:
        return [*([(SCATTER, self.save, True)] if self.save is not None else []),
                *([(GATHER, self.source, True)] if self.source is not None else [])]

    def cost(self, model: CostModel, record: RunRecord) -> StepCost:
        compute = np.zeros(model.target.getNumTiles(), np.int64)
        replicas = model.replication.factor
        tiles = (self.tiles[None, :] + np.arange(replicas)[:, None] * (compute.size // replicas)).reshape(-1)
        compute[tiles] = CSR_CYCLES
        zero = model.zero
        return StepCost(self.kind, model.barrier.copy(), zero, zero, compute, compute)

