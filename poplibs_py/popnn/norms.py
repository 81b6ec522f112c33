"""The machinery shared by batch, layer and group norm (PopLibs' poplin/popnn Norms back end).

Activations are ``[batch, channels, *field]``. A ``Layout`` views them so that one statistic
covers the elements of the reduced dimensions: batch norm views ``[B, C, F]`` and reduces
``[0, 2]`` (statistics ``[C]``); group norm views ``[B, G, C/G, F]`` and reduces ``[2, 3]``
(statistics ``[B * G]``, batch-major); layer norm is group norm with one group.

Everything runs on the tiles: statistics are ``popops.reduce`` calls (mean and mean square in
one ``reduceMany``) finished by a map; whitening, the affine transform and the gradients are
fused ``popops.map`` expressions broadcasting the statistics and the per-channel ``gamma``/``beta``.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from typing import Any

from poplar_py import FLOAT, HALF, Graph, Tensor, Type
from poplar_py import program as prog_
from poplar_py.debug import debug_name, isDebugName
from poplar_py.errors import InvalidArgumentError
from poplar_py.types import asType

from .. import popops
from ..popops import expr as pe
from ..popops.expr import _1, _2, _3, _4, _5, _6
from ..popops.reduce import Operation, ReduceParams, SingleReduceOp
from ..poputil import PoplibsArgumentError, PoplibsError, checkOptions, mapTensorLinearly, trailingArguments


def trailing(what: str, partialsType: Any, debugName: Any, options: Any,
             known: Collection[str] | None = None) -> tuple[Type, str, dict]:
    """PopLibs' trailing ``partialsType, debugContext, options`` of a norm function, checked
    (``known``: the option names it reads; None: any). A debug name in partialsType's place is
    the form without a partials type: it and what follows move one place along."""
    if isDebugName(partialsType):
        given_name = debugName is not None and not (isinstance(debugName, str) and debugName == "")
        rest = [partialsType, debugName] if given_name else [partialsType]
        debugName, options = trailingArguments(what, rest, {"debugContext": None, "options": options})
        partialsType = FLOAT
    try:
        partials = asType(partialsType)
    except InvalidArgumentError:
        raise PoplibsArgumentError(f"{what}: partialsType must be a poplar element type, got "
                                   f"{type(partialsType).__name__} {partialsType!r:.40}") from None
    return partials, debug_name(debugName, f"{what}: debugContext"), checkOptions(options, known, what)


def split_after_prog(what: str, args: Sequence[Any], partialsType: Any, debugName: Any, options: Any,
                     known: Collection[str] | None = None) -> tuple[list, Type, str, dict]:
    """For a norm function taking its overloads' tensors in ``args``: the arguments up to ``prog``
    (the first program Sequence), and the :func:`trailing` ones after it, positional or by keyword."""
    progs = [i for i, a in enumerate(args) if isinstance(a, prog_.Sequence)]
    end = progs[0] + 1 if progs else len(args)
    partialsType, debugName, options = trailingArguments(
        what, args[end:], {"partialsType": partialsType, "debugContext": debugName, "options": options})
    return list(args[:end]), *trailing(what, FLOAT if partialsType is None else partialsType, debugName,
                                       options, known)


@dataclass
class Layout:
    """How statistics cover the activations: ``view(acts)`` and the dimensions it reduces."""

    view: Callable[[Tensor], Tensor]
    dims: list[int]

    def count(self, acts: Tensor) -> int:
        """Elements behind one statistic."""
        v = self.view(acts)
        n = 1
        for d in self.dims:
            n *= v.dim(d)
        return n

    def broadcast(self, acts: Tensor, stat: Tensor) -> Tensor:
        """``stat`` (flat) reshaped to broadcast against ``view(acts)``."""
        v = self.view(acts)
        return stat.reshape([1 if d in self.dims else v.dim(d) for d in range(v.rank())])


def check_acts(acts: Tensor, name: str) -> None:
    if acts.rank() < 2 or acts.elementType() not in (FLOAT, HALF):
        raise PoplibsError(f"{name}: acts '{acts.name}' must be FLOAT or HALF [batch, channels, ...], is "
                           f"{acts.elementType()} {acts.shape()}")


def channels(acts: Tensor) -> Tensor:
    """``acts`` as ``[B, C, F]`` (F = the product of the field dimensions, 1 without a field)."""
    b, c = acts.dim(0), acts.dim(1)
    return acts.reshape([b, c, acts.numElements() // max(b * c, 1)])


def grouped(acts: Tensor, groups: int, strided: bool) -> Tensor:
    """``acts`` as ``[B, G, C/G, F]``: channel c is in group ``c // (C/G)``, or ``c % G`` if strided."""
    b, c, f = channels(acts).shape()
    if groups < 1 or c % groups:
        raise PoplibsError(f"number of groups {groups} must divide the {c} channels of '{acts.name}'")
    if strided:
        return channels(acts).reshape([b, c // groups, groups, f]).dimShuffle([0, 2, 1, 3])
    return channels(acts).reshape([b, groups, c // groups, f])


def _check_stats(layout: Layout, acts: Tensor, stats: list[Tensor], name: str) -> None:
    want = layout.view(acts).numElements() // max(layout.count(acts), 1)
    for s in stats:
        if s.numElements() != want or s.elementType() != acts.elementType():
            raise PoplibsError(f"{name}: statistic '{s.name}' must have {want} {acts.elementType()} "
                               f"elements, is {s.elementType()} {s.shape()}")


def _check_params(acts: Tensor, params: list[Tensor], name: str) -> None:
    for p in params:
        if p.shape() != [acts.dim(1)] or p.elementType() != acts.elementType():
            raise PoplibsError(f"{name}: '{p.name}' must be {acts.elementType()} [{acts.dim(1)}] (one per "
                               f"channel), is {p.elementType()} {p.shape()}")


def statistics(graph: Graph, layout: Layout, acts: Tensor, eps: float, prog: prog_.Sequence,
               unbiasedVarEstimate: bool, stableAlgo: bool, name: str) -> tuple[Tensor, Tensor]:
    """(mean, invStdDev), flat: ``mean = sum(x) / n``, ``invStdDev = 1 / sqrt(var + eps)`` with
    ``var`` biased (``/ n``) or unbiased (``/ (n - 1)``). ``stableAlgo`` reduces ``(x - mean)**2``
    in a second pass; otherwise ``var = mean(x**2) - mean**2`` from the same pass as the mean."""
    check_acts(acts, name)
    x, n = layout.view(acts), layout.count(acts)
    if n == 0 or x.numElements() == 0:
        raise PoplibsError(f"{name}: acts '{acts.name}' {acts.shape()} leave no elements to normalise over")
    k = n / (n - 1) if unbiasedVarEstimate and n > 1 else 1.0
    mean_p = ReduceParams(Operation.ADD, scale=1.0 / n)
    square_p = ReduceParams(Operation.SQUARE_ADD, scale=1.0 / n)
    if stableAlgo:
        mean = popops.reduce(graph, x, layout.dims, mean_p, prog, f"{name}/mean")
        centred = popops.map(graph, _1 - _2, [x, layout.broadcast(acts, mean.flatten())], prog,
                             f"{name}/centre")
        var = popops.reduce(graph, centred, layout.dims, square_p, prog, f"{name}/variance")
        popops.mapInPlace(graph, pe.Rsqrt(_1 * k + eps), [var], prog, f"{name}/invStdDev")
        return mean.flatten(), var.flatten()
    outs: list[Tensor] = []
    popops.reduceMany(graph, [SingleReduceOp(x, layout.dims, mean_p),
                              SingleReduceOp(x, layout.dims, square_p)], outs, prog, f"{name}/moments")
    mean, power = outs
    # mean(x^2) - mean^2 can round below 0 when the variance is tiny
    popops.mapInPlace(graph, pe.Rsqrt(pe.Max(_1 - _2 * _2, 0) * k + eps), [power, mean], prog,
                      f"{name}/invStdDev")
    return mean.flatten(), power.flatten()


def whiten(graph: Graph, layout: Layout, acts: Tensor, mean: Tensor, invStdDev: Tensor, prog: prog_.Sequence,
           name: str) -> Tensor:
    """A new tensor of ``acts``' shape and layout: ``(acts - mean) * invStdDev``."""
    check_acts(acts, name)
    _check_stats(layout, acts, [mean, invStdDev], name)
    out = graph.clone(acts, f"{name}/whitened")
    popops.mapWithOutput(graph, (_1 - _2) * _3, [layout.view(acts), layout.broadcast(acts, mean.flatten()),
                                                  layout.broadcast(acts, invStdDev.flatten())],
                         layout.view(out), prog, name)
    return out


def affine(graph: Graph, whitened: Tensor, gamma: Tensor, beta: Tensor, prog: prog_.Sequence,
           name: str) -> Tensor:
    """A new tensor ``whitened * gamma + beta``, gamma and beta per channel."""
    _check_params(whitened, [gamma, beta], name)
    c = whitened.dim(1)
    out = popops.map(graph, _1 * _2 + _3, [channels(whitened), gamma.reshape([1, c, 1]),
                                             beta.reshape([1, c, 1])], prog, name)
    return out.reshape(whitened.shape())


def normalise(graph: Graph, layout: Layout, acts: Tensor, gamma: Tensor, beta: Tensor, mean: Tensor,
              invStdDev: Tensor, prog: prog_.Sequence, name: str) -> tuple[Tensor, Tensor]:
    """(``whitened * gamma + beta``, ``whitened``)."""
    whitened = whiten(graph, layout, acts, mean, invStdDev, prog, f"{name}/whiten")
    return affine(graph, whitened, gamma, beta, prog, name), whitened


def param_gradients(graph: Graph, whitened: Tensor, gradsIn: Tensor, prog: prog_.Sequence,
                    name: str) -> tuple[Tensor, Tensor]:
    """(gammaDelta, betaDelta), per channel: the sums over batch and field of
    ``gradsIn * whitened`` and of ``gradsIn``."""
    check_acts(whitened, name)
    if gradsIn.shape() != whitened.shape() or gradsIn.elementType() != whitened.elementType():
        raise PoplibsError(f"{name}: gradsIn '{gradsIn.name}' must match actsWhitened {whitened.shape()}")
    g = channels(gradsIn)
    product = popops.map(graph, _1 * _2, [g, channels(whitened)], prog, f"{name}/gradsTimesWhitened")
    outs: list[Tensor] = []
    popops.reduceMany(graph, [SingleReduceOp(product, [0, 2], Operation.ADD),
                              SingleReduceOp(g, [0, 2], Operation.ADD)], outs, prog, name)
    return outs[0], outs[1]


def gradients(graph: Graph, layout: Layout, whitened: Tensor, gradsIn: Tensor, invStdDev: Tensor,
              gamma: Tensor, prog: prog_.Sequence, name: str) -> Tensor:
    """The gradient w.r.t. the activations: with ``h = gradsIn * gamma`` and means over each
    statistic's elements, ``invStdDev * (h - mean(h) - whitened * mean(h * whitened))``."""
    check_acts(whitened, name)
    if gradsIn.shape() != whitened.shape() or gradsIn.elementType() != whitened.elementType():
        raise PoplibsError(f"{name}: gradsIn '{gradsIn.name}' must match actsWhitened {whitened.shape()}")
    _check_params(whitened, [gamma], name)
    _check_stats(layout, whitened, [invStdDev], name)
    c, n = whitened.dim(1), layout.count(whitened)
    h = popops.map(graph, _1 * _2, [channels(gradsIn), gamma.reshape([1, c, 1])], prog, f"{name}/gamma")
    h = h.reshape(whitened.shape())
    hx = popops.map(graph, _1 * _2, [layout.view(h), layout.view(whitened)], prog, f"{name}/hx")
    means: list[Tensor] = []
    scaled = ReduceParams(Operation.ADD, scale=1.0 / n)
    popops.reduceMany(graph, [SingleReduceOp(layout.view(h), layout.dims, scaled),
                              SingleReduceOp(hx, layout.dims, scaled)], means, prog, f"{name}/means")
    out = graph.clone(gradsIn, f"{name}/gradsOut")
    ins = [layout.view(h), layout.view(whitened), layout.broadcast(whitened, means[0].flatten()),
           layout.broadcast(whitened, means[1].flatten()), layout.broadcast(whitened, invStdDev.flatten())]
    popops.mapWithOutput(graph, _5 * (_1 - _3 - _2 * _4), ins, layout.view(out), prog, name)
    return out


def gradients_from_deltas(graph: Graph, whitened: Tensor, gradsIn: Tensor, gammaDelta: Tensor,
                          betaDelta: Tensor, invStdDev: Tensor, gamma: Tensor, prog: prog_.Sequence,
                          name: str) -> Tensor:
    """Batch norm's gradient from its parameter gradients, in one map:
    ``gamma * invStdDev * (gradsIn - (betaDelta + whitened * gammaDelta) / n)``."""
    check_acts(whitened, name)
    _check_params(whitened, [gammaDelta, betaDelta, invStdDev, gamma], name)
    c = whitened.dim(1)
    n = whitened.numElements() // max(c, 1)
    per_channel = [t.reshape([1, c, 1]) for t in (gammaDelta, betaDelta, invStdDev, gamma)]
    out = popops.map(graph, _6 * _5 * (_1 - (_4 + _2 * _3) * (1.0 / n)),
                     [channels(gradsIn), channels(whitened), *per_channel], prog, name)
    return out.reshape(whitened.shape())


def param_update(graph: Graph, gammaDelta: Tensor, betaDelta: Tensor, scale: float | Tensor, gamma: Tensor,
                 beta: Tensor, prog: prog_.Sequence, name: str) -> None:
    """``gamma += scale * gammaDelta``, ``beta += scale * betaDelta`` (scale is usually -learning rate)."""
    popops.scaledAddTo(graph, gamma, gammaDelta, scale, prog, debugName=f"{name}/gamma")
    popops.scaledAddTo(graph, beta, betaDelta, scale, prog, debugName=f"{name}/beta")


# ---- popnn's Norms.hpp: parameters and FLOP counts ------------------------------------------------

def _norm_param(graph: Graph, acts: Tensor, debugContext: Any, what: str, default: str) -> Tensor:
    if not isinstance(acts, Tensor) or acts.rank() < 2:
        got = acts.shape() if isinstance(acts, Tensor) else type(acts).__name__
        raise PoplibsError(f"{what}: acts must be [batch, channels, ...], got {got}")
    name = debug_name(debugContext, f"{what}: debugContext") or default
    param = graph.addVariable(acts.elementType(), [acts.dim(1)], name)
    mapTensorLinearly(graph, param)
    return param


def createNormGamma(graph: Graph, acts: Tensor, debugContext: Any = "") -> Tensor:
    """A new ``[channels]`` gamma of ``acts``' type, spread over the tiles."""
    return _norm_param(graph, acts, debugContext, "createNormGamma", "gamma")


def createNormBeta(graph: Graph, acts: Tensor, debugContext: Any = "") -> Tensor:
    """A new ``[channels]`` beta of ``acts``' type, spread over the tiles."""
    return _norm_param(graph, acts, debugContext, "createNormBeta", "beta")


def createNormParams(graph: Graph, acts: Tensor, debugContext: Any = "") -> tuple[Tensor, Tensor]:
    """``(createNormGamma, createNormBeta)``."""
    name = debug_name(debugContext, "createNormParams: debugContext")
    return (createNormGamma(graph, acts, f"{name}/gamma" if name else ""),
            createNormBeta(graph, acts, f"{name}/beta" if name else ""))


def getNormFwdFlops(statisticsSize: int, numActsElements: int, computeStats: bool = True) -> int:
    """PopLibs' count: 2 an element to normalise; with the statistics, 2 more to sum and sum
    squares, 5 per statistic and 2 an element to whiten."""
    norm = 2 * numActsElements
    if not computeStats:
        return norm
    return 2 * numActsElements + 5 * statisticsSize + 2 * numActsElements + norm


def getNormBwdFlops(statisticsSize: int, numActsElements: int) -> int:
    """PopLibs' count: 8 an element and 2 per statistic."""
    return numActsElements + 7 * numActsElements + 2 * statisticsSize


def getNormWuFlops(paramsSize: int, numActsElements: int) -> int:
    """PopLibs' count: 3 an element for the parameter gradients, 4 per parameter to update."""
    return 3 * numActsElements + 4 * paramsSize
