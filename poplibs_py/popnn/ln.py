"""popnn::ln: layer norm, i.e. group norm with one group. ``acts`` is ``[batch, channels, *field]``;
the statistics are ``[batch]``, each over all channels and field of one batch element; ``gamma``,
``beta`` and their gradients are ``[channels]``. See ``norms`` for what runs on the tiles. As in
PopLibs (whose layer norm is its group norm), the options are group norm's and the trailing
``partialsType, debugContext, options`` follow PopLibs' positions."""

from __future__ import annotations

from typing import Any

from poplar_py import FLOAT, Tensor
from poplar_py import program as prog_

from . import gn, norms

__all__ = ["layerNormGradients", "layerNormParamGradients", "layerNormParamUpdate", "layerNormStatistics",
           "layerNormWhiten", "layerNormalise"]

LAYOUT = gn.layout(1)


def _trailing(what: str, partialsType: Any, debugName: Any, options: Any) -> str:
    """The debug name, after checking the trailing arguments as group norm does."""
    _, name, options = norms.trailing(what, partialsType, debugName, options)
    gn.strided_grouping(options)
    return name or what


def layerNormStatistics(graph, acts: Tensor, eps: float, prog: prog_.Sequence,
                        unbiasedVarEstimate: bool = False, stableAlgo: bool = False, partialsType=FLOAT,
                        debugName: str = "", options: dict | None = None) -> tuple[Tensor, Tensor]:
    """``(mean, invStdDev)``, each ``[batch]``."""
    name = _trailing("layerNormStatistics", partialsType, debugName, options)
    return norms.statistics(graph, LAYOUT, acts, eps, prog, unbiasedVarEstimate, stableAlgo, name)


def layerNormWhiten(graph, acts: Tensor, mean: Tensor, invStdDev: Tensor, prog: prog_.Sequence,
                    debugName: str = "", options: dict | None = None) -> Tensor:
    """A new tensor ``(acts - mean) * invStdDev`` per batch element."""
    name = _trailing("layerNormWhiten", FLOAT, debugName, options)
    return norms.whiten(graph, LAYOUT, acts, mean, invStdDev, prog, name)


def layerNormalise(graph, acts: Tensor, gamma: Tensor, beta: Tensor, mean: Tensor, invStdDev: Tensor,
                   prog: prog_.Sequence, debugName: str = "",
                   options: dict | None = None) -> tuple[Tensor, Tensor]:
    """``(whitened * gamma + beta, whitened)``, gamma and beta per channel."""
    name = _trailing("layerNormalise", FLOAT, debugName, options)
    return norms.normalise(graph, LAYOUT, acts, gamma, beta, mean, invStdDev, prog, name)


def layerNormParamGradients(graph, actsWhitened: Tensor, gradsIn: Tensor, prog: prog_.Sequence,
                            partialsType=FLOAT, debugName: str = "",
                            options: dict | None = None) -> tuple[Tensor, Tensor]:
    """``(gammaDelta, betaDelta)``, each ``[channels]`` (``partialsType`` accepted; sums in float)."""
    name = _trailing("layerNormParamGradients", partialsType, debugName, options)
    return norms.param_gradients(graph, actsWhitened, gradsIn, prog, name)


def layerNormGradients(graph, actsWhitened: Tensor, gradsIn: Tensor, invStdDev: Tensor, gamma: Tensor,
                       prog: prog_.Sequence, partialsType=FLOAT, debugName: str = "",
                       options: dict | None = None) -> Tensor:
    """The gradient w.r.t. ``acts`` (see ``norms.gradients``), means over each batch element."""
    name = _trailing("layerNormGradients", partialsType, debugName, options)
    return norms.gradients(graph, LAYOUT, actsWhitened, gradsIn, invStdDev, gamma, prog, name)


def layerNormParamUpdate(graph, gammaDelta: Tensor, betaDelta: Tensor, scale: float | Tensor, gamma: Tensor,
                         beta: Tensor, prog: prog_.Sequence, debugName: str = "",
                         options: dict | None = None) -> None:
    """``gamma += scale * gammaDelta``; ``beta += scale * betaDelta``."""
    name = _trailing("layerNormParamUpdate", FLOAT, debugName, options)
    norms.param_update(graph, gammaDelta, betaDelta, scale, gamma, beta, prog, name)
