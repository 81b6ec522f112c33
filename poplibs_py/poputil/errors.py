"""PopLibs' error class (``poputil::poplibs_error``), and the checks of tensor, program and
index-list arguments."""

from collections.abc import Sequence as AnySequence
from typing import Any

import numpy as np

from poplar_py import Graph, Tensor
from poplar_py.errors import InvalidArgumentError, PoplarError
from poplar_py.program import Sequence


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


def sequenceArgument(prog: Any, what: str) -> Sequence:
    """``prog``, if it is a program Sequence (to which an operation adds its programs); else
    PoplibsArgumentError naming ``what``."""
    if not isinstance(prog, Sequence):
        raise PoplibsArgumentError(f"{what}: prog must be a program Sequence, got {type(prog).__name__} "
                                   f"{prog!r:.40}")
    return prog


def indexList(values: Any, what: str) -> list[int]:
    """``values`` (a list, tuple or array of non-negative integers: a shape, indices, factors) as
    ints; else PoplibsArgumentError naming ``what``."""
    if isinstance(values, (str, bytes)) or not isinstance(values, (AnySequence, np.ndarray)):
        raise PoplibsArgumentError(f"{what} must be a list of integers, got {type(values).__name__} "
                                   f"{values!r:.40}")
    out = []
    for v in values:
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)) or v < 0:
            raise PoplibsArgumentError(f"{what} must be a list of non-negative integers, got {v!r:.40} in "
                                       f"{list(values)!r:.60}")
        out.append(int(v))
    return out
