"""popnn::gn: group norm. ``acts`` is ``[batch, channels, *field]``, channels split into
``numGroups`` groups; the statistics are ``[batch * numGroups]`` (batch-major), each over one
group's channels and field; ``gamma``, ``beta`` and their gradients are ``[channels]``.

Option ``groupNormStridedChannelGrouping`` (PopLibs' name; default ``"false"`` here): with
``"true"`` channel c belongs to group ``c % numGroups`` (PopLibs' fast layout), otherwise to
group ``c // (channels / numGroups)`` (the usual definition). Functions after the statistics infer
``numGroups`` from the statistics' size. See ``norms`` for what runs on the tiles. The trailing
``partialsType, debugContext, options`` follow PopLibs' positions.
"""

from __future__ import annotations

from poplar_py import FLOAT, Tensor
from poplar_py import program as prog_

from ..poputil import PoplibsError
from . import norms
from .norms import Layout

__all__ = ["groupNormGradients", "groupNormParamGradients", "groupNormParamUpdate", "groupNormStatistics",
           "groupNormWhiten", "groupNormalise"]


def strided_grouping(options: dict | None) -> bool:
    """The option ``groupNormStridedChannelGrouping``; PoplibsError for any other option name."""
    value = str((options or {}).get("groupNormStridedChannelGrouping", "false")).lower()
    if value not in ("true", "false"):
        raise PoplibsError(f"groupNormStridedChannelGrouping must be 'true' or 'false', not {value!r}")
    unknown = set(options or {}) - {"groupNormStridedChannelGrouping"}
    if unknown:
        raise PoplibsError(f"unknown group norm option(s) {sorted(unknown)}")
    return value == "true"


def layout(groups: int, options: dict | None = None) -> Layout:
    """Statistics per (batch, group): the view ``[B, G, C/G, F]`` reduced over ``[2, 3]``."""
    strided = strided_grouping(options)
    return Layout(lambda t: norms.grouped(t, groups, strided), [2, 3])


def _groups(acts: Tensor, stat: Tensor, name: str) -> int:
    if acts.dim(0) == 0 or stat.numElements() % acts.dim(0):
        raise PoplibsError(f"{name}: statistic '{stat.name}' ({stat.numElements()} elements) is not "
                           f"[batch * numGroups] for acts {acts.shape()}")
    return stat.numElements() // acts.dim(0)


def groupNormStatistics(graph, acts: Tensor, eps: float, prog: prog_.Sequence, numGroups: int,
                        unbiasedVarEstimate: bool = False, stableAlgo: bool = False, partialsType=FLOAT,
                        debugName: str = "", options: dict | None = None) -> tuple[Tensor, Tensor]:
    """``(mean, invStdDev)``, each ``[batch * numGroups]``."""
    _, name, options = norms.trailing("groupNormStatistics", partialsType, debugName, options)
    return norms.statistics(graph, layout(numGroups, options), acts, eps, prog, unbiasedVarEstimate,
                            stableAlgo, name or "groupNormStatistics")


def groupNormWhiten(graph, acts: Tensor, mean: Tensor, invStdDev: Tensor, prog: prog_.Sequence,
                    debugName: str = "", options: dict | None = None) -> Tensor:
    """A new tensor ``(acts - mean) * invStdDev`` per (batch, group)."""
    _, name, options = norms.trailing("groupNormWhiten", FLOAT, debugName, options)
    name = name or "groupNormWhiten"
    return norms.whiten(graph, layout(_groups(acts, mean, name), options), acts, mean, invStdDev, prog, name)


def groupNormalise(graph, acts: Tensor, gamma: Tensor, beta: Tensor, mean: Tensor, invStdDev: Tensor,
                   prog: prog_.Sequence, debugName: str = "",
                   options: dict | None = None) -> tuple[Tensor, Tensor]:
    """``(whitened * gamma + beta, whitened)``, gamma and beta per channel."""
    _, name, options = norms.trailing("groupNormalise", FLOAT, debugName, options)
    name = name or "groupNormalise"
    return norms.normalise(graph, layout(_groups(acts, mean, name), options), acts, gamma, beta, mean,
                           invStdDev, prog, name)


def groupNormParamGradients(graph, actsWhitened: Tensor, gradsIn: Tensor, prog: prog_.Sequence,
                            partialsType=FLOAT, debugName: str = "",
                            options: dict | None = None) -> tuple[Tensor, Tensor]:
    """``(gammaDelta, betaDelta)``, each ``[channels]``: sums of ``gradsIn * whitened`` and ``gradsIn``
    (``partialsType`` is accepted; sums accumulate in float)."""
    _, name, options = norms.trailing("groupNormParamGradients", partialsType, debugName, options)
    strided_grouping(options)
    return norms.param_gradients(graph, actsWhitened, gradsIn, prog, name or "groupNormParamGradients")


def groupNormGradients(graph, actsWhitened: Tensor, gradsIn: Tensor, invStdDev: Tensor, gamma: Tensor,
                       prog: prog_.Sequence, partialsType=FLOAT, debugName: str = "",
                       options: dict | None = None) -> Tensor:
    """The gradient w.r.t. ``acts`` (see ``norms.gradients``), means over each group."""
    _, name, options = norms.trailing("groupNormGradients", partialsType, debugName, options)
    name = name or "groupNormGradients"
    groups = _groups(actsWhitened, invStdDev, name)
    return norms.gradients(graph, layout(groups, options), actsWhitened, gradsIn, invStdDev, gamma, prog,
                           name)


def groupNormParamUpdate(graph, gammaDelta: Tensor, betaDelta: Tensor, scale: float | Tensor, gamma: Tensor,
                         beta: Tensor, prog: prog_.Sequence, debugName: str = "",
                         options: dict | None = None) -> None:
    """``gamma += scale * gammaDelta``; ``beta += scale * betaDelta``."""
    _, name, options = norms.trailing("groupNormParamUpdate", FLOAT, debugName, options)
    strided_grouping(options)
    norms.param_update(graph, gammaDelta, betaDelta, scale, gamma, beta, prog, name or "groupNormParamUpdate")
