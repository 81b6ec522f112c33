"""poprand's operations (RandomGen.hpp): each adds one compute set of generator vertices.

Seed model (as PopLibs on hardware):

* With ``seed=None`` a call draws from the tiles' hardware generators (one per tile and worker,
  state in tile memory: :mod:`poplar_py.random_seed`) and leaves them advanced: the same call
  twice in a program gives two different tensors, and a run continues from the previous one.
  The engine option ``random.seed`` makes a freshly loaded engine repeat its draws.
* With a ``seed`` tensor (2 UNSIGNED_INT words) a call saves the hardware states
  (``getHwSeeds``), sets them from the seed and its ``seedModifier`` (:func:`setSeed`), draws,
  and restores them (``setHwSeeds``): the same seed and seedModifier give the same tensor,
  however often and in whatever order the program runs, and ``seed=None`` calls are not
  disturbed. ``setSeed`` then a ``seed=None`` call draws what the seeded call draws.

A generator belongs to a (tile, worker) pair: each tile's part of the output is split between
its workers with ``splitRegionsBetweenWorkers`` (grain: the type's vector width), and worker
w on tile t draws from its own generator.
"""

from __future__ import annotations

import math

import numpy as np

from poplar_py import FLOAT, HALF, INT, UNSIGNED_INT, Graph, Tensor, Type, concat, getHwSeeds, setHwSeeds
from poplar_py import program as prog_
from poplar_py.random_seed import hwSeedState
from poplar_py.types import asType

from ..poputil import (
    PoplibsArgumentError,
    PoplibsError,
    splitRegionsBetweenWorkers,
    templateVertex,
    tensorArgument,
)

__all__ = ["bernoulli", "dropout", "normal", "setSeed", "truncatedNormal", "uniform"]

_INT_RANGE = (-(2**31), 2**31 - 1)
_MAX_ROUNDS = 64  # truncatedNormal: most values drawn for one element before the fallback


def _seed_tensor(graph: Graph, seed: Tensor | None, name: str) -> Tensor | None:
    """``seed`` checked (rank 1, 2 UNSIGNED_INT elements), or None."""
    if seed is None:
        return None
    if not isinstance(seed, Tensor):
        raise PoplibsArgumentError(f"{name}: seed must be a Tensor or None, got {type(seed).__name__}")
    tensorArgument(graph, seed, f"{name}: seed")
    if seed.rank() != 1 or seed.numElements() != 2 or seed.elementType() != UNSIGNED_INT:
        raise PoplibsError(f"{name}: seed '{seed.name}' must be a 2-element UNSIGNED_INT tensor of rank 1, "
                           f"has shape {seed.shape()} and type {seed.elementType()}")
    return seed


def _check_modifier(seedModifier: int, name: str) -> int:
    if not isinstance(seedModifier, (int, np.integer)) or not 0 <= seedModifier < 2**32:
        raise PoplibsError(f"{name}: seedModifier must be an unsigned 32-bit integer, got {seedModifier!r}")
    return int(seedModifier)


def _check_type(type_: object, allowed: tuple[Type, ...], name: str) -> Type:
    try:
        t = asType(type_)
    except TypeError:
        t = None
    if t not in allowed:
        raise PoplibsError(f"{name}: unsupported type {type_}; use one of "
                           f"{', '.join(str(t) for t in allowed)}")
    return t


def _numbers(name: str, **values: object) -> None:
    """Each value must be a (real) number."""
    for what, v in values.items():
        if isinstance(v, (bool, str, bytes)) or not isinstance(v, (int, float, np.integer, np.floating)):
            raise PoplibsArgumentError(f"{name}: {what} must be a number, got {type(v).__name__} {v!r:.40}")


def _check_probability(p: float, what: str, name: str) -> float:
    _numbers(name, **{what: p})
    if not 0.0 <= p <= 1.0:  # also rejects NaN
        raise PoplibsError(f"{name}: {what} must be in [0, 1], got {p}")
    return float(p)


def _threshold(p: float) -> int:
    """The top-32-bit threshold below which an event with probability ``p`` happens."""
    return min(round(p * 2**32), 2**32)


def _piece(t: Tensor, part: list) -> Tensor:
    """The intervals ``part`` of the flat tensor ``t``, as one 1-D view."""
    return concat([t.slice(iv.begin(), iv.end()) for iv in part])


def _generate(graph: Graph, seed: Tensor | None, seedModifier: int, reference: Tensor, type_: Type,
              vertex: str, state: dict[str, object], prog: prog_.Sequence, name: str,
              src: Tensor | None = None) -> Tensor:
    """A clone of ``reference`` (of ``type_``) written by one ``vertex<type_>`` vertex per
    (tile, worker) share of it, in a new compute set executed by ``prog``; each vertex draws
    from its worker's hardware generator, set from ``seed`` first (and restored after) unless
    it is None, and gets ``state`` (and its share of ``src`` as ``input``)."""
    tensorArgument(graph, reference, f"{name}: reference")
    seed_t = _seed_tensor(graph, seed, name)
    modifier = _check_modifier(seedModifier, name)
    out = graph.clone(type_, reference, name)
    if out.numElements() == 0:
        return out
    saved = None
    if seed_t is not None:
        saved = getHwSeeds(graph, prog, f"{name}/hwSeeds")
        setSeed(graph, seed_t, modifier, prog, f"{name}/setSeed")
    target = graph.getTarget()
    flat_out = out.flatten()
    generators = hwSeedState(graph)
    grain = target.getVectorWidth(type_)
    vertexType = templateVertex(vertex, type_)
    cs = graph.addComputeSet(name)
    for tile, intervals in enumerate(graph.getTileMapping(flat_out)):
        parts = splitRegionsBetweenWorkers(target, intervals, grain) if intervals else []
        for worker, part in enumerate(parts):
            fields = {"out": _piece(flat_out, part), "state": generators[tile][worker]}
            if src is not None:
                fields["input"] = _piece(src.flatten(), part)
            v = graph.addVertex(cs, vertexType, fields)
            for field, value in state.items():
                graph.setInitialValue(v[field], value)
            graph.setTileMapping(v, tile)
    prog.add(prog_.Execute(cs))
    if saved is not None:
        setHwSeeds(graph, saved, prog, f"{name}/restore")
    return out


def uniform(graph: Graph, seed: Tensor | None, seedModifier: int, reference: Tensor, outType: Type,
            minVal: float, maxVal: float, prog: prog_.Sequence, debugName: str = "") -> Tensor:
    """A new tensor mapped like ``reference``, uniform in [minVal, maxVal].

    FLOAT and HALF: ``minVal + u * (maxVal - minVal)`` with u in [0, 1) from 24 random
    bits (the rounding to the type can reach maxVal). INT: integers in the inclusive range,
    via ``minVal + (32 random bits * range) >> 32`` (a bias below range / 2**32 unless the
    range is a power of 2). ``poprand::Uniform`` vertices generate each element on the tile
    that holds it.
    """
    name = debugName or "uniform"
    type_ = _check_type(outType, (FLOAT, HALF, INT), name)
    _numbers(name, minVal=minVal, maxVal=maxVal)
    if not minVal <= maxVal:  # also rejects NaN
        raise PoplibsError(f"{name}: need minVal <= maxVal, got [{minVal}, {maxVal}]")
    if type_ == INT:
        lo, hi = minVal, maxVal
        if lo < _INT_RANGE[0] or hi > _INT_RANGE[1] or lo != int(lo) or hi != int(hi):
            raise PoplibsError(f"{name}: an INT range needs integers in [-2**31, 2**31 - 1], "
                               f"got [{minVal}, {maxVal}]")
        state = {"base": np.uint64(int(lo) % 2**32), "range": np.uint64(int(hi) - int(lo) + 1)}
    else:
        state = {"offset": minVal, "scale": maxVal - minVal}
    return _generate(graph, seed, seedModifier, reference, type_, "poprand::Uniform", state, prog, name)


def normal(graph: Graph, seed: Tensor | None, seedModifier: int, reference: Tensor, outType: Type,
           mean: float, stdDev: float, prog: prog_.Sequence, debugName: str = "") -> Tensor:
    """A new tensor mapped like ``reference``, normal with ``mean`` and ``stdDev`` (FLOAT, HALF).

    ``poprand::Normal`` vertices on the tiles holding the elements use Box-Muller: two
    32-bit uniforms give two values, ``sqrt(-2 ln u1) * (cos, sin)(2 pi u2)``, in float64
    before the conversion to ``outType`` (so |z| < 6.7 standard deviations).
    """
    name = debugName or "normal"
    type_ = _check_type(outType, (FLOAT, HALF), name)
    _numbers(name, mean=mean, stdDev=stdDev)
    state = {"mean": mean, "stdDev": stdDev, "alpha": math.inf, "rounds": 1}
    return _generate(graph, seed, seedModifier, reference, type_, "poprand::Normal", state, prog, name)


def _rounds(alpha: float) -> int:
    """Draws per element so that all miss ``|z| <= alpha`` with probability below 2**-32
    (at most _MAX_ROUNDS)."""
    reject = math.erfc(alpha / math.sqrt(2.0))  # P(|z| > alpha)
    if reject < 2**-32:
        return 1
    return min(_MAX_ROUNDS, math.ceil(-32 * math.log(2.0) / math.log(reject)))


def truncatedNormal(graph: Graph, seed: Tensor | None, seedModifier: int, reference: Tensor, outType: Type,
                    mean: float, stdDev: float, alpha: float, prog: prog_.Sequence,
                    debugName: str = "") -> Tensor:
    """A new tensor mapped like ``reference``, normal with ``mean`` and ``stdDev`` truncated
    to ``mean +- alpha * stdDev`` (FLOAT, HALF; alpha > 0).

    ``poprand::TruncatedNormal`` vertices draw Box-Muller values (as :func:`normal`) and
    resample any beyond alpha standard deviations, up to enough draws per element that one
    is left without a value with probability below 2**-32 (at most 64); such an element
    takes a uniform value in the range instead, which only matters for small alpha, where
    the truncated normal is nearly uniform.
    """
    name = debugName or "truncatedNormal"
    type_ = _check_type(outType, (FLOAT, HALF), name)
    _numbers(name, mean=mean, stdDev=stdDev, alpha=alpha)
    if not alpha > 0:
        raise PoplibsError(f"{name}: alpha must be positive, got {alpha}")
    state = {"mean": mean, "stdDev": stdDev, "alpha": alpha, "rounds": _rounds(alpha)}
    return _generate(graph, seed, seedModifier, reference, type_, "poprand::TruncatedNormal", state, prog,
                     name)


def bernoulli(graph: Graph, seed: Tensor | None, seedModifier: int, reference: Tensor, outType: Type,
              prob: float, prog: prog_.Sequence, debugName: str = "") -> Tensor:
    """A new tensor mapped like ``reference``: 1 with probability ``prob``, else 0 (FLOAT,
    HALF, INT). ``poprand::Bernoulli`` vertices compare 32 random bits with
    ``prob * 2**32`` on the tiles holding the elements (prob 0 and 1 are exact)."""
    name = debugName or "bernoulli"
    type_ = _check_type(outType, (FLOAT, HALF, INT), name)
    state = {"threshold": np.uint64(_threshold(_check_probability(prob, "prob", name)))}
    return _generate(graph, seed, seedModifier, reference, type_, "poprand::Bernoulli", state, prog, name)


def dropout(graph: Graph, seed: Tensor | None, seedModifier: int, input: Tensor,  # noqa: A002 - PopLibs' name
            reference: Tensor, keepProbability: float, scale: float, prog: prog_.Sequence,
            debugName: str = "") -> Tensor:
    """``input * scale`` where an element is kept (probability ``keepProbability``), else 0.

    The result (of input's type, FLOAT or HALF) is a new tensor mapped like ``reference``,
    which must have input's shape; ``poprand::Dropout`` vertices on the tiles holding the
    result draw the mask as :func:`bernoulli` does and read ``input`` through the exchange
    where it lives elsewhere, so the mask depends on reference's mapping only.
    """
    name = debugName or "dropout"
    type_ = _check_type(input.elementType(), (FLOAT, HALF), name)
    if reference.shape() != input.shape():
        raise PoplibsError(f"{name}: reference '{reference.name}' has shape {reference.shape()}, "
                           f"input '{input.name}' has shape {input.shape()}")
    state = {"threshold": np.uint64(_threshold(_check_probability(keepProbability, "keepProbability", name))),
             "scale": scale}
    return _generate(graph, seed, seedModifier, reference, type_, "poprand::Dropout", state, prog, name,
                     src=input)


def setSeed(graph: Graph, seed: Tensor, seedModifier: int, prog: prog_.Sequence,
            debugName: str = "") -> None:
    """Set every tile's hardware generators (used by calls with ``seed=None``) from ``seed``
    and ``seedModifier``: a ``poprand::SetSeed`` vertex on each tile of ``graph`` gives worker
    w on tile t splitmix64's first two outputs from ``key ^ mix(seedModifier << 32 | t << 3 | w)``
    when ``prog`` runs (unlike the IPU Model, where setSeed does nothing)."""
    name = debugName or "setSeed"
    if seed is None:
        raise PoplibsError(f"{name}: seed must be a tensor, not None")
    seed_t = _seed_tensor(graph, seed, name)
    modifier = _check_modifier(seedModifier, name)
    generators = hwSeedState(graph)
    cs = graph.addComputeSet(name)
    for tile in range(generators.dim(0)):
        v = graph.addVertex(cs, "poprand::SetSeed", {"seed": seed_t, "hwSeeds": generators[tile].flatten()})
        graph.setInitialValue(v["streams"], np.uint64(modifier << 32 | tile << 3))
        graph.setTileMapping(v, tile)
    prog.add(prog_.Execute(cs))
