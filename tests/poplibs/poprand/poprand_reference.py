"""A numpy reference of poprand's generator (splitmix64 seeding, xoroshiro128+), and test helpers."""

from __future__ import annotations

import numpy as np

import poplar_py as poplar
from poplibs_py import poputil

M64 = np.uint64(0xFFFFFFFFFFFFFFFF)
GAMMA = np.uint64(0x9E3779B97F4A7C15)


def mix(z: np.ndarray) -> np.ndarray:
    """splitmix64's output function on uint64 arrays."""
    with np.errstate(over="ignore"):
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def rotl(x: np.ndarray, k: int) -> np.ndarray:
    return (x << np.uint64(k)) | (x >> np.uint64(64 - k))


def xoroshiro128plus(s0: np.ndarray, s1: np.ndarray, n: int) -> np.ndarray:
    """``[len(s0), n]``: the first n outputs of xoroshiro128+ (24, 16, 37) from each state."""
    s0, s1 = np.array(s0, np.uint64), np.array(s1, np.uint64)
    out = np.empty((s0.size, n), np.uint64)
    with np.errstate(over="ignore"):
        for k in range(n):
            out[:, k] = s0 + s1
            t = s0 ^ s1
            s0 = rotl(s0, 24) ^ t ^ (t << np.uint64(16))
            s1 = rotl(t, 37)
    return out


def stream_states(seed: tuple[int, int], streams: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The xoroshiro state (s0, s1) of each stream id, as the codelets derive it."""
    key = np.uint64(seed[0] | seed[1] << 32)
    s = mix(np.asarray(streams, np.uint64)) ^ key
    with np.errstate(over="ignore"):
        return mix(s + GAMMA), mix(s + GAMMA + GAMMA)


def reference_outputs(graph: poplar.Graph, out: poplar.Tensor, seed: tuple[int, int], modifier: int,
                      draws: int = 1, after: int = 0) -> np.ndarray:
    """The raw 64-bit draws behind each element of ``out`` (flattened; ``draws`` per element),
    the generators having drawn ``after`` earlier tensors mapped like ``out`` first.

    Each tile's elements are split between its workers as poprand does; worker w on tile t
    takes stream ``modifier << 32 | t << 3 | w`` in element order."""
    target = graph.getTarget()
    grain = target.getVectorWidth(out.elementType())
    owners = []  # (stream id, element indices in order)
    for tile, intervals in enumerate(graph.getTileMapping(out)):
        parts = poputil.splitRegionsBetweenWorkers(target, intervals, grain) if intervals else []
        for worker, part in enumerate(parts):
            idx = np.concatenate([np.arange(iv.begin(), iv.end()) for iv in part])
            owners.append((modifier << 32 | tile << 3 | worker, idx))
    s0, s1 = stream_states(seed, np.array([o[0] for o in owners], np.uint64))
    longest = max(len(o[1]) for o in owners)
    raw = xoroshiro128plus(s0, s1, longest * draws * (after + 1))
    result = np.empty((out.numElements(), draws), np.uint64)
    for row, (_, idx) in enumerate(owners):
        skip = len(idx) * draws * after
        result[idx] = raw[row, skip:skip + len(idx) * draws].reshape(-1, draws)
    return result


def reference_tensor(h, shape, type_=poplar.FLOAT, mapping="linear") -> poplar.Tensor:
    """A variable to use as ``reference`` (never written): mapped linearly, to one tile, or by a
    function of (graph, tensor)."""
    t = h.graph.addVariable(type_, list(shape), "ref")
    if mapping == "linear":
        poputil.mapTensorLinearly(h.graph, t)
    elif isinstance(mapping, int):
        h.graph.setTileMapping(t, mapping)
    else:
        mapping(h.graph, t)
    return t


def seed_tensor(h, seed=(1, 2), tile: int = 0) -> poplar.Tensor:
    """A 2-word UNSIGNED_INT seed variable written with ``seed`` when the harness runs."""
    name = f"seed{h.num_inputs}"
    return h.tensor(np.array(seed, np.uint32), poplar.UNSIGNED_INT, name=name, mapping=tile)
