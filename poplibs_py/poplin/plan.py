"""The matrix-multiplication planner: how to split ``[g, m, k] x [g, k, n]`` over tiles.

The plan is a pure function of the shapes, the element types and a few target figures
(:class:`TargetFigures`), memoised with ``functools.lru_cache`` (or, when the caller gives one,
in a :class:`PlanningCache`), and returns a frozen :class:`MatMulPlan`. Each group gets
``numTiles // g`` tiles (at least one); within a group M, N and K are split
``splitM x splitN x splitK`` ways, one block product per tile. For every candidate split the
cost model estimates, per tile:

* compute: what the block's vertex costs (:mod:`.perf_estimation`): PopLibs' AMP estimate
  for floating-point types, the workers' scalar loop for integers;
* exchange: the A and B blocks the tile needs, at ``exchangeBytesPerCycle``;
* reduction (``splitK > 1``, or a partials type other than the output type): a second
  compute set in which each tile adds ``splitK`` partials for its share of the block's
  outputs (PopLibs' reduction estimate), receiving the ``splitK - 1`` remote ones, plus its
  barriers.

The cheapest split whose blocks fit in ``availableMemoryProportion`` of a tile wins. Splits
within ``HOST_TILE_SLACK`` (5%) of the cheapest count as ties: those go to blocks that are
whole 6x16 register tiles of the host kernel, then to fewer K-splits, then to the cheaper,
then to fewer tiles. If nothing fits, the split using least memory wins
(and the Engine reports the overflow).
"""

from __future__ import annotations

import functools
import threading
from dataclasses import dataclass
from typing import Any

import numpy as np

from poplar_py import FLOAT, HALF, Target, Type

from ..poputil import PoplibsArgumentError
from .perf_estimation import AmpFigures, blockCycles, ceil_div, reduceCycles

#: fraction of a tile the planner lets one matmul's blocks use (PopLibs' default option)
AVAILABLE_MEMORY_PROPORTION = 0.6
#: plans within this fraction of the cheapest modelled cost count as ties, settled in favour of
#: blocks that are whole register tiles of the host kernel (REGISTER_TILE)
HOST_TILE_SLACK = 0.05
#: rows and columns of MatMulBlock's register tiles (its template arguments R and C)
REGISTER_TILE = (6, 16)

#: a block coordinate or a tile: an int, or an array of them for many blocks
Index = int | np.ndarray


@dataclass(frozen=True)
class TargetFigures:
    """The target figures the planner depends on (hashable, so plans can be memoised)."""

    numTiles: int
    bytesPerTile: int
    numWorkers: int
    exchangeBytesPerCycle: int
    syncCycles: int
    target: Target  # the whole target, for its AMP figures

    @staticmethod
    def of(target: Target) -> TargetFigures:
        return TargetFigures(target.getNumTiles(), target.getBytesPerTile(), target.getNumWorkerContexts(),
                             target.getExchangeBytesPerCycle(), target.syncCycles, target)


@dataclass(frozen=True)
class MatMulPlan:
    """How one (grouped) matmul is spread over the tiles, with the model's cycle estimates."""

    groups: int
    m: int
    k: int
    n: int
    inputType: Type
    partialsType: Type
    outputType: Type
    splitM: int
    splitN: int
    splitK: int
    tilesPerGroup: int  # tiles a group's blocks are spread over
    numTiles: int
    computeCycles: int  # per tile, the block-product compute set
    exchangeCycles: int  # per tile, bringing in the A and B blocks
    reduceCycles: int  # the partial-sum compute set (0 when there is none)
    bytesPerTile: int  # estimated peak bytes a tile holds for this matmul

    @property
    def blockM(self) -> int:
        return ceil_div(self.m, self.splitM)

    @property
    def blockN(self) -> int:
        return ceil_div(self.n, self.splitN)

    @property
    def blockK(self) -> int:
        return ceil_div(self.k, self.splitK)

    @property
    def blocksPerGroup(self) -> int:
        return self.splitM * self.splitN * self.splitK

    @property
    def tilesUsed(self) -> int:
        return min(self.numTiles, self.groups * self.blocksPerGroup) if self.m and self.n else 0

    @property
    def needsReduction(self) -> bool:
        return self.splitK > 1 or self.partialsType != self.outputType

    @property
    def estimatedCycles(self) -> int:
        return self.computeCycles + self.exchangeCycles + self.reduceCycles

    def ranges(self, size: int, split: int, index: int) -> tuple[int, int]:
        """Elements ``[begin, end)`` of part ``index`` when ``size`` is cut in ``split`` blocks."""
        block = ceil_div(size, split)
        return min(index * block, size), min((index + 1) * block, size)

    def tile(self, group: Index, im: Index, jn: Index, ik: Index) -> Index:
        """The tile computing block (im, jn, ik) of ``group``: blocks spread over the group's tiles
        (integers, or arrays of them for many blocks)."""
        index = (im * self.splitN + jn) * self.splitK + ik
        base = group * self.tilesPerGroup
        return (base + index * self.tilesPerGroup // self.blocksPerGroup) % self.numTiles


def partialsTypeFor(inputType: Type, outputType: Type, requested: Type | None = None) -> Type:
    """Partial sums are float for floating-point inputs (PopLibs' default; the option
    ``partialsType`` may ask for half with half inputs), else the output type."""
    if not (inputType.is_float and outputType.is_float):
        return outputType
    return HALF if requested == HALF and inputType == HALF else FLOAT


def _candidates(size: int, limit: int) -> tuple[np.ndarray, np.ndarray]:
    """(splits, block sizes): the smallest split giving each distinct block size, up to ``limit`` parts."""
    if size == 0:
        return np.array([1]), np.array([0])
    splits = np.arange(1, min(size, limit) + 1)
    blocks = -(-size // splits)
    first = np.concatenate(([True], blocks[1:] != blocks[:-1]))
    splits, blocks = splits[first], blocks[first]
    return -(-size // blocks), blocks  # the fewest parts that give that block size


@functools.lru_cache(maxsize=512)
def planMatMul(figures: TargetFigures, inputType: Type, outputType: Type,
               groups: int, m: int, k: int, n: int,
               availableMemoryProportion: float = AVAILABLE_MEMORY_PROPORTION,
               partialsType: Type | None = None) -> MatMulPlan:
    """The cheapest split of ``[groups, m, k] x [groups, k, n]`` under the cost model above
    (``partialsType``: the option's request, see :func:`partialsTypeFor`)."""
    partials = partialsTypeFor(inputType, outputType, partialsType)
    T, W = figures.numTiles, figures.numWorkers
    per_group = max(1, T // groups)
    rounds = ceil_div(groups, T // per_group)  # groups that take turns on one tile
    sm, bm = _candidates(m, per_group)
    sn, bn = _candidates(n, per_group)
    sk, bk = _candidates(k, per_group)
    # only splits that fit in the group's tiles can win: the cost model runs on those alone
    SM, SN, SK = (a.ravel() for a in np.meshgrid(sm, sn, sk, indexing="ij"))
    BM, BN, BK = (a.ravel() for a in np.meshgrid(bm, bn, bk, indexing="ij"))
    used = SM * SN * SK
    valid = used <= per_group
    SM, SN, SK, BM, BN, BK, used = (a[valid] for a in (SM, SN, SK, BM, BN, BK, used))
    amp = AmpFigures.of(figures.target, inputType, partials)
    compute = blockCycles(BM, BK, BN, amp, W) * rounds
    in_bytes = (BM * BK + BK * BN) * inputType.size
    exchange = -(-in_bytes // figures.exchangeBytesPerCycle) * rounds
    reducing = (SK > 1) | (partials != outputType)
    elems = -(-(BM * BN) // SK)
    red_bytes = elems * (SK - 1) * partials.size
    red_compute = reduceCycles(elems, SK, partials, outputType, W)
    reduce = np.where(reducing, (red_compute + -(-red_bytes // figures.exchangeBytesPerCycle)) * rounds
                      + 3 * figures.syncCycles, 0)
    out_bytes = np.where(reducing, BM * BN * partials.size + elems * outputType.size
                         + red_bytes, BM * BN * outputType.size)
    memory = (in_bytes + out_bytes) * rounds
    total = compute + exchange + reduce
    fits = memory <= availableMemoryProportion * figures.bytesPerTile
    score = np.where(fits, total, np.iinfo(np.int64).max) if fits.any() else memory
    # Near-ties (within HOST_TILE_SLACK of the cheapest) go to blocks the host kernel runs in
    # whole register tiles (rows a multiple of 6, columns of 16: no edge code, aligned rows of
    # B), then to fewer K-splits (less reduction); then the deterministic order: cost, fewer tiles,
    # fewer K-splits.
    plain = np.lexsort((SK, used, score))[0]
    best_score = score[plain]
    # the operand elements the exchange moves in all (A is needed splitN times, B splitM times):
    # a near-tie may not copy much more than the cheapest plan (the host pays for every copy)
    volume = SN * m * k + SM * k * n
    near = ((score <= best_score + best_score * HOST_TILE_SLACK) & fits  # not for the memory fallback
            & (volume <= volume[plain] + volume[plain] // 10))
    rows, cols = REGISTER_TILE
    misfit = np.where(near, (BN % cols != 0).astype(np.int64) + (BM % rows != 0), 3)
    best = np.lexsort((SK, used, score, np.where(near, SK, 0), misfit))[0]
    return MatMulPlan(groups, m, k, n, inputType, partials, outputType, int(SM[best]), int(SN[best]),
                      int(SK[best]), per_group, T, int(compute[best]), int(exchange[best]),
                      int(reduce[best]), int(memory[best]))



class PlanningCache:
    """PopLibs' ``poplin::PlanningCache``: the plans of the matMuls and convolutions given it.

    A function taking ``cache`` looks its plan up here and stores a plan it computes here (without
    a cache, plans are memoised globally); ``size()`` counts the plans held, one per distinct
    combination of shapes, types, target and planning options.
    """

    def __init__(self) -> None:
        self._plans: dict[tuple, MatMulPlan] = {}
        self._lock = threading.Lock()

    def size(self) -> int:
        """The number of plans the cache holds."""
        with self._lock:
            return len(self._plans)

    def plan(self, figures: TargetFigures, inputType: Type, outputType: Type, groups: int, m: int, k: int,
             n: int, *options: Any) -> MatMulPlan:
        """:func:`planMatMul`'s plan for these arguments, from the cache or computed and stored."""
        key = (figures, inputType, outputType, groups, m, k, n, *options)
        with self._lock:
            plan = self._plans.get(key)
        if plan is None:
            plan = planMatMul.__wrapped__(figures, inputType, outputType, groups, m, k, n, *options)
            with self._lock:
                plan = self._plans.setdefault(key, plan)
        return plan

    def getImpl(self) -> PlanningCache:
        """The cache itself (PopLibs' ``matmul::PlanningCache::getImpl``: one class serves both)."""
        return self

    def __repr__(self) -> str:
        return f"{type(self).__name__}(size={self.size()})"


def planningCacheArgument(cache: Any, what: str) -> PlanningCache | None:
    """``cache`` if it is a PlanningCache (or None: no cache); else PoplibsArgumentError naming it."""
    if cache is not None and not isinstance(cache, PlanningCache):
        raise PoplibsArgumentError(f"{what}: cache must be a poplin.PlanningCache (or None), got "
                                   f"{type(cache).__name__} {cache!r:.40}")
    return cache
