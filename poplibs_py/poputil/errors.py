"""PopLibs' error class (``poputil::poplibs_error``), and the check of tensor arguments."""

from typing import Any

from poplar_py import Graph, Tensor
from poplar_py.errors import InvalidArgumentError, PoplarError


class PoplibsError(PoplarError, ValueError):
    """A PopLibs operation was given arguments it cannot use (shapes, types, aliasing...)."""


class PoplibsArgumentError(PoplibsError, InvalidArgumentError):
    """A PopLibs argument of the wrong kind (not a tensor, a tensor of another graph): both a
    PoplibsError and a TypeError."""


def tensorArgument(graph: Graph, t: Any, what: str) -> Tensor:
    """``t``, if it is a tensor of ``graph``; else PoplibsArgumentError naming ``what``."""
    if not isinstance(t, Tensor):
        raise PoplibsArgumentError(f"{what} must be a tensor, got {type(t).__name__} {t!r:.40}")
    if not graph.owns(t):
        raise PoplibsArgumentError(f"{what}: tensor '{t.name}' belongs to another graph")
    return t
