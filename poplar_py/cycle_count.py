"""Poplar's cycle counters (``poplar/CycleCount.hpp``): a program reads the simulated cycle
counter into a tensor, as a program on the IPU reads a tile's counter registers.

The counter is the profile's cycle model: the cycles of every step the engine's run record
holds (since the engine was loaded, or since ``resetExecutionProfile``), so a count read on
the device equals the profile's figure for the same steps. Every tile of a BSP machine leaves
each step together, so every tile reads the same count.
"""

from __future__ import annotations

from typing import Any

from . import program as prog
from .checks.arguments import checked_int
from .debug import DebugContext, DebugNameAndId, debug_name
from .errors import InvalidArgumentError
from .graph import Graph
from .tensor import Tensor
from .types import UNSIGNED_INT

INTERNAL = prog.SyncType.INTERNAL


def _counter(graph: Graph, prog_: Any, tile: Any, syncType: Any, name: str) -> tuple[prog.Sequence, Tensor]:
    """The checked Sequence and a new counter tensor on ``tile`` (always live: it starts at 0)."""
    if not isinstance(graph, Graph):
        raise InvalidArgumentError(f"{name}: graph must be a poplar.Graph, got {type(graph).__name__}")
    if not isinstance(prog_, prog.Sequence):
        raise InvalidArgumentError(f"{name}: prog must be a program.Sequence, got {type(prog_).__name__}")
    if not isinstance(syncType, prog.SyncType):
        raise InvalidArgumentError(f"{name}: syncType must be a poplar.SyncType, got {syncType!r:.40}")
    tiles = graph.getTarget().getNumTiles()
    tile = checked_int(tile, f"{name}: tile")
    if tile >= tiles:
        raise InvalidArgumentError(f"{name}: tile {tile} is out of range: the graph has {tiles} tiles")
    t = graph.addVariable(UNSIGNED_INT, [2], name)
    graph.setTileMapping(t, tile)
    graph.setInitialValue(t, [0, 0])
    return prog_, t


def _overload(syncType: Any, debugContext: Any, what: str) -> tuple[Any, str]:
    """(syncType, name) of both overloads: today's ``(..., tile, syncType, debugContext)`` and
    the older ``(..., tile, debugPrefix)``, whose fourth argument is the name."""
    if isinstance(syncType, (str, DebugContext, DebugNameAndId)):
        if debugContext != "":
            raise InvalidArgumentError(f"{what}: a debug prefix in syncType's place and a debugContext "
                                       f"too ({syncType!r:.40}, {debugContext!r:.40})")
        syncType, debugContext = INTERNAL, syncType
    return syncType, debug_name(debugContext, f"{what}: debugContext") or what


def cycleStamp(graph: Graph, prog_: prog.Sequence, tile: int, syncType: prog.SyncType | str = INTERNAL,
               debugContext: Any = "") -> Tensor:
    """Append to ``prog_`` a read of the cycle counter on ``tile``: returns a tensor of two
    UNSIGNED_INTs (the low and high 32 bits of the cycles run so far, on that tile). The older
    overload ``cycleStamp(graph, prog, tile, debugPrefix)`` is taken too."""
    syncType, name = _overload(syncType, debugContext, "cycleStamp")
    seq, t = _counter(graph, prog_, tile, syncType, name)
    seq.add(prog.CycleStamp(t, name=name))
    return t


def cycleCount(graph: Graph, prog_: prog.Sequence, tile: int, syncType: prog.SyncType | str = INTERNAL,
               debugContext: Any = "") -> Tensor:
    """Time ``prog_``: a read of the cycle counter on ``tile`` goes before its programs and one
    after them; returns a tensor of two UNSIGNED_INTs (low and high 32 bits) holding the cycles
    its programs took, computed on the tile from the two reads. The older overload
    ``cycleCount(graph, prog, tile, debugPrefix)`` is taken too."""
    syncType, name = _overload(syncType, debugContext, "cycleCount")
    seq, t = _counter(graph, prog_, tile, syncType, name)
    _, start = _counter(graph, seq, tile, syncType, f"{name}/start")
    seq.programs.insert(0, prog.CycleStamp(start, name=f"{name}/start"))
    seq.add(prog.CycleStamp(t, since=start, name=name))
    return t
