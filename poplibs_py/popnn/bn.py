"""popnn::bn: batch norm. ``acts`` is ``[batch, channels, *field]``; the statistics, ``gamma``,
``beta`` and their gradients are ``[channels]``, each over the batch and field of its channel.
See ``norms`` for what runs on the tiles. The trailing ``partialsType, debugContext, options``
follow PopLibs' positions; PopLibs' batch norm reads no option, so any dict is accepted."""

from __future__ import annotations

from typing import Any

from poplar_py import FLOAT, Tensor
from poplar_py import program as prog_

from ..poputil import PoplibsError
from . import norms
from .norms import Layout

__all__ = ["batchNormGradients", "batchNormParamGradients", "batchNormParamUpdate", "batchNormStatistics",
           "batchNormWhiten", "batchNormalise"]

LAYOUT = Layout(norms.channels, [0, 2])


def batchNormStatistics(graph, acts: Tensor, eps: float, prog: prog_.Sequence,
                        unbiasedVarEstimate: bool = False, stableAlgo: bool = False, partialsType=FLOAT,
                        debugName: str = "", options: dict | None = None) -> tuple[Tensor, Tensor]:
    """``(mean, invStdDev)``, each ``[channels]``: ``invStdDev = 1 / sqrt(var + eps)``.
    (``partialsType`` is accepted; reductions accumulate in float.)"""
    _, name, _ = norms.trailing("batchNormStatistics", partialsType, debugName, options)
    return norms.statistics(graph, LAYOUT, acts, eps, prog, unbiasedVarEstimate, stableAlgo,
                            name or "batchNormStatistics")


def batchNormWhiten(graph, acts: Tensor, mean: Tensor, invStdDev: Tensor, prog: prog_.Sequence,
                    debugName: str = "", options: dict | None = None) -> Tensor:
    """A new tensor ``(acts - mean) * invStdDev`` per channel."""
    _, name, _ = norms.trailing("batchNormWhiten", FLOAT, debugName, options)
    return norms.whiten(graph, LAYOUT, acts, mean, invStdDev, prog, name or "batchNormWhiten")


def batchNormalise(graph, acts: Tensor, gamma: Tensor, beta: Tensor, mean: Tensor, invStdDev: Tensor,
                   prog: prog_.Sequence, debugName: str = "",
                   options: dict | None = None) -> tuple[Tensor, Tensor]:
    """``(whitened * gamma + beta, whitened)``."""
    _, name, _ = norms.trailing("batchNormalise", FLOAT, debugName, options)
    return norms.normalise(graph, LAYOUT, acts, gamma, beta, mean, invStdDev, prog, name or "batchNormalise")


def batchNormParamGradients(graph, *args: Any, partialsType: Any = None, debugName: str = "",
                            options: dict | None = None) -> tuple[Tensor, Tensor]:
    """``(gammaDelta, betaDelta)``, each ``[channels]``: sums of ``gradsIn * whitened`` and ``gradsIn``.

    ``batchNormParamGradients(graph, actsWhitened, gradsIn, prog)`` or
    ``batchNormParamGradients(graph, acts, gradsIn, mean, invStdDev, prog)`` (whitens first);
    then optionally ``partialsType`` (accepted; sums accumulate in float), the debug name and
    ``options``, as in C++.
    """
    args, _, name, _ = norms.split_after_prog("batchNormParamGradients", args, partialsType, debugName,
                                              options)
    name = name or "batchNormParamGradients"
    if len(args) == 5:
        acts, grads, mean, isd, prog = args
        whitened = batchNormWhiten(graph, acts, mean, isd, prog, f"{name}/whiten")
    elif len(args) == 3:
        whitened, grads, prog = args
    else:
        raise PoplibsError(f"{name}: expected (actsWhitened, gradsIn, prog) or "
                           "(acts, gradsIn, mean, invStdDev, prog)")
    return norms.param_gradients(graph, whitened, grads, prog, name)


def batchNormGradients(graph, *args: Any, partialsType: Any = None, debugName: str = "",
                       options: dict | None = None) -> Tensor:
    """The gradient w.r.t. ``acts``: ``gamma * invStdDev * (g - mean(g) - whitened * mean(g * whitened))``.

    ``batchNormGradients(graph, actsWhitened, gradsIn, invStdDev, gamma, prog)`` or, reusing the
    parameter gradients, ``batchNormGradients(graph, actsWhitened, gradsIn, gammaDelta, betaDelta,
    invStdDev, gamma, prog)``; then optionally ``partialsType``, the debug name and ``options``,
    as :func:`batchNormParamGradients`.
    """
    args, _, name, _ = norms.split_after_prog("batchNormGradients", args, partialsType, debugName, options)
    name = name or "batchNormGradients"
    if len(args) == 5:
        whitened, grads, isd, gamma, prog = args
        return norms.gradients(graph, LAYOUT, whitened, grads, isd, gamma, prog, name)
    if len(args) == 7:
        return norms.gradients_from_deltas(graph, *args[:6], args[6], name)
    raise PoplibsError(f"{name}: expected (actsWhitened, gradsIn, invStdDev, gamma, prog) or "
                       "(actsWhitened, gradsIn, gammaDelta, betaDelta, invStdDev, gamma, prog)")


def batchNormParamUpdate(graph, gammaDelta: Tensor, betaDelta: Tensor, scale: float | Tensor, gamma: Tensor,
                         beta: Tensor, prog: prog_.Sequence, debugName: str = "",
                         options: dict | None = None) -> None:
    """``gamma += scale * gammaDelta``; ``beta += scale * betaDelta``, on the tiles holding them."""
    _, name, _ = norms.trailing("batchNormParamUpdate", FLOAT, debugName, options)
    norms.param_update(graph, gammaDelta, betaDelta, scale, gamma, beta, prog, name or "batchNormParamUpdate")
