"""The tiles' hardware random generators, and Poplar's ``getHwSeeds`` / ``setHwSeeds``
(poplar/RandomSeed.hpp).

Every worker of every tile has a xoroshiro128+ generator, as the IPU's PRNG is one per worker
context. Its state is two 64-bit words, held as four UNSIGNED_INT (``s0`` low, ``s0`` high, ``s1``
low, ``s1`` high) in tile memory: one variable ``[numTiles, numWorkerContexts, 4]`` of the
top-level graph, row ``t`` on tile ``t``, made on first use (:func:`hwSeedState`). Vertices that
draw from the hardware generator (poprand with ``seed=None``) read their worker's state and write
it back advanced, so each draw continues where the last one stopped. ``engine.run`` keeps it.

At ``engine.load`` every generator starts from the engine's seed, the engine option
``random.seed`` (an unsigned integer, taken modulo 2**64; default 0): worker ``w`` of tile ``t``
holds splitmix64's first two outputs from ``seed ^ mix(t << 3 | w)`` (:func:`initialHwSeeds`,
the state ``poprand.setSeed`` gives for that seed and seedModifier 0), so an engine loaded with
the same seed draws the same numbers, in both codelet modes.
"""

from __future__ import annotations

import weakref

import numpy as np

from . import program as prog_
from .debug import debug_name
from .errors import InvalidArgumentError
from .graph import Graph
from .tensor import Tensor, concat
from .types import UNSIGNED_INT

__all__ = ["HW_SEEDS_HANDLE", "getHwSeeds", "hwSeedState", "initialHwSeeds", "setHwSeeds"]

#: the host write through which ``engine.load`` sets the generators from the engine's seed
HW_SEEDS_HANDLE = "poplar_py/hwSeeds"
WORDS = 4  # UNSIGNED_INT words of one worker's state
_GAMMA = np.uint64(0x9E3779B97F4A7C15)
_states: weakref.WeakKeyDictionary[Graph, Tensor] = weakref.WeakKeyDictionary()


def hwSeedState(graph: Graph) -> Tensor:
    """The hardware generator state of ``graph``'s tiles, ``[tiles, workers, 4]`` UNSIGNED_INT
    (row ``t`` on tile ``t`` of ``graph``; a virtual graph sees its own tiles' rows). A
    poplar-py addition, for the codelets that draw from the hardware generators."""
    top = graph.getTopLevelGraph()
    state = _states.get(top)
    if state is None:
        target = top.getTarget()
        state = top.addVariable(UNSIGNED_INT, [target.getNumTiles(), target.getNumWorkerContexts(), WORDS],
                                "hwSeeds")
        _row_per_tile(top, state)
        top.createHostWrite(HW_SEEDS_HANDLE, state)
        _states[top] = state
    if graph is top:
        return state
    per_tile = state[0].numElements()
    rows = [intervals[0].begin() // per_tile for intervals in graph.getTileMapping(state, False)]
    return concat([state[r].expand([0]) for r in rows])


def getHwSeeds(graph: Graph, prog: prog_.Sequence, debugContext: object = "") -> Tensor:
    """A new ``[tiles, workers, 4]`` UNSIGNED_INT tensor (row ``t`` on tile ``t``) that ``prog``
    fills with a copy of every worker's generator state, tile by tile (no exchange)."""
    name = debug_name(debugContext, "getHwSeeds") or "hwSeeds"
    _sequence(prog, "getHwSeeds")
    state = hwSeedState(graph)
    copy = graph.addVariable(UNSIGNED_INT, state.shape(), name)
    _row_per_tile(graph, copy)
    prog.add(prog_.Copy(state, copy))
    return copy


def setHwSeeds(graph: Graph, hwSeeds: Tensor, prog: prog_.Sequence, debugContext: object = "") -> None:
    """``prog`` copies ``hwSeeds`` (``[tiles, workers, 4]`` UNSIGNED_INT, as :func:`getHwSeeds`
    returns) into every worker's generator state; rows on other tiles travel by exchange."""
    _sequence(prog, "setHwSeeds")
    state = hwSeedState(graph)
    if not isinstance(hwSeeds, Tensor):
        raise InvalidArgumentError(f"setHwSeeds: hwSeeds must be a Tensor, got {type(hwSeeds).__name__}")
    if hwSeeds.shape() != state.shape() or hwSeeds.elementType() != UNSIGNED_INT:
        raise InvalidArgumentError(f"setHwSeeds: hwSeeds '{hwSeeds.name}' must be UNSIGNED_INT of shape "
                                   f"{state.shape()} (tiles, workers, 4), has {hwSeeds.elementType()} "
                                   f"{hwSeeds.shape()}")
    prog.add(prog_.Copy(hwSeeds, state))


def initialHwSeeds(seed: int, tiles: int, workers: int) -> np.ndarray:
    """The generator state every worker holds at load for the engine's ``seed``:
    ``[tiles, workers, 4]`` UNSIGNED_INT words (the engine writes them, as a reset sets the
    hardware's registers)."""
    key = np.uint64(seed % 2**64)
    streams = (np.arange(tiles, dtype=np.uint64)[:, None] << np.uint64(3)) \
        | np.arange(workers, dtype=np.uint64)[None, :]
    with np.errstate(over="ignore"):
        s = key ^ _mix(streams)
        words = np.stack([_mix(s + _GAMMA), _mix(s + _GAMMA + _GAMMA)], axis=-1)
    return words.view(np.uint32).reshape(tiles, workers, WORDS)  # little-endian: low word first


def _row_per_tile(graph: Graph, t: Tensor) -> None:
    """Map row ``k`` of ``t`` to tile ``k`` of ``graph``."""
    per_tile = t[0].numElements()
    graph.setTileMapping(t, [[(k * per_tile, (k + 1) * per_tile)] for k in range(t.dim(0))])


def _mix(z: np.ndarray) -> np.ndarray:
    """splitmix64's output function (the codelets' ``_mix``)."""
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def _sequence(prog: object, what: str) -> None:
    if not isinstance(prog, prog_.Sequence):
        raise InvalidArgumentError(f"{what}: prog must be a program.Sequence, got {type(prog).__name__}")
