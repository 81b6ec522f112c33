"""popops' SlicePlan (DynamicSlice.hpp): how a multi-slice or multi-update is laid out.

A plan comes from :func:`poplibs_py.popops.embedding.plan`. It fixes the layout of an
embedding matrix ``[numEntries, outputSize]`` (per group): its columns are cut into runs of
``columns_per_tile`` and run k of group g lives on tile ``g * tiles_per_group + k``. Every
row of a column is on the column's tile, so the multi-slice vertices, one per run of
columns, slice and update it without exchanging the matrix; the slices and the indices
made for the plan are laid out on the same tiles. A default-constructed ``SlicePlan()``
is PopLibs' empty plan: the operations then follow the tensors' own mapping.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from poplar_py import Graph, Tensor

from ..poputil import PoplibsError


@dataclass(frozen=True)
class SlicePlan:
    """A plan for slicing a ``[numEntries, outputSize]`` matrix (in each of ``groupSize``
    groups); all fields ``None`` is the empty plan. Plans compare equal when they lay out
    and run the operations the same way (PopLibs' ``==`` and ``<``); ``str(plan)`` prints it."""

    data_type: str | None = None
    num_tiles: int | None = None
    group_size: int | None = None
    num_entries: int | None = None
    output_size: int | None = None
    num_lookups: tuple[int, ...] = field(default=())
    tiles_per_group: int | None = None
    columns_per_tile: int | None = None
    used_for_slice: bool = True
    used_for_update: bool = True
    operation_for_update: str = "add"

    def isPlanned(self) -> bool:
        """Whether this plan lays tensors out (False for the empty plan)."""
        return self.columns_per_tile is not None

    def __lt__(self, other: SlicePlan) -> bool:
        if not isinstance(other, SlicePlan):
            return NotImplemented
        return self._key() < other._key()

    def _key(self) -> tuple:
        return tuple((0, "") if v is None else (1, v) for v in self.__dict__.values())

    def __str__(self) -> str:
        if not self.isPlanned():
            return "SlicePlan(empty)"
        return (f"SlicePlan(type={self.data_type}, groupSize={self.group_size}, "
                f"numEntries={self.num_entries}, "
                f"outputSize={self.output_size}, numLookups={list(self.num_lookups)}, "
                f"tilesPerGroup={self.tiles_per_group}, columnsPerTile={self.columns_per_tile}, "
                f"usedForSlice={self.used_for_slice}, usedForUpdate={self.used_for_update}, "
                f"operationForUpdate={self.operation_for_update})")

    def column_tiles(self, group: int, columns: int) -> np.ndarray:
        """The tile of each of ``columns`` columns of group ``group``."""
        first = group * self.tiles_per_group
        runs = np.minimum(np.arange(columns) // self.columns_per_tile, self.tiles_per_group - 1)
        return (first + runs) % self.num_tiles

    def check(self, what: str, dataType: object, shape: list[int], dims: list[int], grouped: bool) -> None:
        """PopLibs' checks that a planned operation's tensor agrees with the plan: one sliced
        dim of ``numEntries`` rows, ``outputSize`` elements in the others, the plan's group size."""
        if not self.isPlanned():
            if grouped:
                raise PoplibsError(f"{what}: grouped operations need a plan from embedding.plan")
            return
        if str(dataType) != self.data_type:
            raise PoplibsError(f"{what}: the plan is for {self.data_type}, not {dataType}")
        groups = shape[0] if grouped else 1
        inner = shape[1:] if grouped else shape
        if groups != self.group_size:
            raise PoplibsError(f"{what}: the plan is for groupSize {self.group_size}, not {groups}")
        if len(dims) != 1 or inner[dims[0]] != self.num_entries or \
                int(np.prod(inner, dtype=np.int64)) != self.num_entries * self.output_size:
            raise PoplibsError(f"{what}: shape {inner} sliced in dims {dims} does not fit the plan's "
                               f"[{self.num_entries}, {self.output_size}] matrix")


def map_planned(graph: Graph, view: Tensor, plan: SlicePlan, group: int) -> None:
    """Map a 2-D ``[rows, outputSize]`` view of group ``group`` by the plan's columns."""
    tiles = plan.column_tiles(group, view.dim(1))
    for tile in np.unique(tiles).tolist():
        begin, end = np.flatnonzero(tiles == tile)[[0, -1]].tolist()
        graph.setTileMapping(view.slice(begin, end + 1, 1), tile)


def map_indices(graph: Graph, indices: Tensor, plan: SlicePlan | None, group: int) -> None:
    """Spread a group's ``[numIndices, ...]`` indices evenly over the group's tiles (all tiles
    without a plan), whole indices to a tile."""
    if indices.numElements() == 0:
        return
    num_tiles = graph.getTarget().getNumTiles()
    first, count = (0, num_tiles) if plan is None or not plan.isPlanned() else \
        (group * plan.tiles_per_group, plan.tiles_per_group)
    n = indices.dim(0)
    tiles = first + (np.arange(n) * min(count, n)) // n
    for tile in np.unique(tiles).tolist():
        begin, end = np.flatnonzero(tiles == tile)[[0, -1]].tolist()
        graph.setTileMapping(indices.slice(begin, end + 1, 0), tile % num_tiles)
