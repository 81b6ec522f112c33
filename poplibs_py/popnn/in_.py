"""popnn::in: instance norm (``in`` is a Python keyword, hence ``popnn.in_``).

As in PopLibs, instance norm is group norm with one group per channel: ``acts`` is ``[batch,
channels, *field]``, the statistics are ``[batch * channels]`` (batch-major), each over one
channel's field of one batch element; ``gamma``, ``beta`` and their gradients are
``[channels]``. Everything runs through ``popnn.gn`` (see ``norms`` for the tiles' work); the
options are group norm's and the trailing ``partialsType, debugContext, options`` follow
PopLibs' positions. The overloads taking ``acts, gradsIn, mean, invStdDev`` whiten first.
"""

from __future__ import annotations

from typing import Any

from poplar_py import FLOAT, Tensor
from poplar_py import program as prog_

from ..poputil import PoplibsError
from . import gn, norms

__all__ = ["getBwdFlops", "getFwdFlops", "getWuFlops", "instanceNormGradients", "instanceNormParamGradients",
           "instanceNormParamUpdate", "instanceNormStatistics", "instanceNormWhiten", "instanceNormalise"]


def instanceNormStatistics(graph, acts: Tensor, eps: float, prog: prog_.Sequence, unbiasedVarEstimate: bool,
                           stableAlgo: bool = False, partialsType: Any = FLOAT, debugContext: Any = "",
                           options: dict | None = None) -> tuple[Tensor, Tensor]:
    """``(mean, invStdDev)``, each ``[batch * channels]``."""
    norms.check_acts(acts, "instanceNormStatistics")
    return gn.groupNormStatistics(graph, acts, eps, prog, acts.dim(1), unbiasedVarEstimate, stableAlgo,
                                  partialsType, debugContext or "instanceNormStatistics", options)


def instanceNormWhiten(graph, acts: Tensor, mean: Tensor, invStdDev: Tensor, prog: prog_.Sequence,
                       debugContext: Any = "", options: dict | None = None) -> Tensor:
    """A new tensor ``(acts - mean) * invStdDev`` per (batch element, channel)."""
    return gn.groupNormWhiten(graph, acts, mean, invStdDev, prog, debugContext or "instanceNormWhiten",
                              options)


def instanceNormalise(graph, acts: Tensor, gamma: Tensor, beta: Tensor, mean: Tensor, invStdDev: Tensor,
                      prog: prog_.Sequence, debugContext: Any = "",
                      options: dict | None = None) -> tuple[Tensor, Tensor]:
    """``(whitened * gamma + beta, whitened)``."""
    return gn.groupNormalise(graph, acts, gamma, beta, mean, invStdDev, prog,
                             debugContext or "instanceNormalise", options)


def _split(what: str, args: tuple, counts: tuple[int, int]) -> tuple[list, Any, Any, Any]:
    """The tensors and prog of either overload, then ``partialsType, debugContext, options``."""
    progs = [i for i, a in enumerate(args) if isinstance(a, prog_.Sequence)]
    if not progs or progs[0] + 1 not in counts:
        raise PoplibsError(f"{what}: expected {counts[0] - 1} or {counts[1] - 1} tensors, then a program "
                           "Sequence")
    head, rest = list(args[:progs[0] + 1]), list(args[progs[0] + 1:])
    if len(rest) > 3:
        raise PoplibsError(f"{what}: too many arguments after prog (partialsType, debugContext, options)")
    rest += [FLOAT, "", None][len(rest):]
    return head, *rest


def instanceNormParamGradients(graph, *args: Any) -> tuple[Tensor, Tensor]:
    """``(gammaDelta, betaDelta)``, each ``[channels]``: ``(graph, actsWhitened, gradsIn, prog, ...)``
    or ``(graph, acts, gradsIn, mean, invStdDev, prog, ...)``."""
    what = "instanceNormParamGradients"
    head, partials, name, options = _split(what, args, (3, 5))
    name = name or what
    if len(head) == 5:
        acts, grads, mean, isd, prog = head
        whitened = instanceNormWhiten(graph, acts, mean, isd, prog, f"{name}/whiten", options)
    else:
        whitened, grads, prog = head
    return gn.groupNormParamGradients(graph, whitened, grads, prog, partials, name, options)


def instanceNormGradients(graph, *args: Any) -> Tensor:
    """The gradient w.r.t. ``acts``: ``(graph, actsWhitened, gradsIn, invStdDev, gamma, prog, ...)``
    or ``(graph, acts, gradsIn, mean, invStdDev, gamma, prog, ...)``."""
    what = "instanceNormGradients"
    head, partials, name, options = _split(what, args, (5, 6))
    name = name or what
    if len(head) == 6:
        acts, grads, mean, isd, gamma, prog = head
        whitened = instanceNormWhiten(graph, acts, mean, isd, prog, f"{name}/whiten", options)
    else:
        whitened, grads, isd, gamma, prog = head
    return gn.groupNormGradients(graph, whitened, grads, isd, gamma, prog, partials, name, options)


def instanceNormParamUpdate(graph, gammaDelta: Tensor, betaDelta: Tensor, scale: float | Tensor,
                            gamma: Tensor, beta: Tensor, prog: prog_.Sequence, debugContext: Any = "",
                            options: dict | None = None) -> None:
    """``gamma += scale * gammaDelta``; ``beta += scale * betaDelta`` (scale a float or a tensor)."""
    gn.groupNormParamUpdate(graph, gammaDelta, betaDelta, scale, gamma, beta, prog,
                            debugContext or "instanceNormParamUpdate", options)


def getFwdFlops(numChannels: int, actsPerChannel: int, computeEstimates: bool) -> int:
    """``getNormFwdFlops`` with one statistic per channel (PopLibs declares these three)."""
    return norms.getNormFwdFlops(numChannels, numChannels * actsPerChannel, computeEstimates)


def getBwdFlops(numChannels: int, actsPerChannel: int) -> int:
    return norms.getNormBwdFlops(numChannels, numChannels * actsPerChannel)


def getWuFlops(numChannels: int, actsPerChannel: int) -> int:
    return norms.getNormWuFlops(numChannels, numChannels * actsPerChannel)
