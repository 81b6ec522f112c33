"""Outputs that alias inputs: the ``...WithOutput`` operations of popops and poplin write a
temporary and copy it when their output overlaps an input (``matMulWithOutput(g, Q, A, A, s)``
is ``A = Q @ A``), as a C++ caller of PopLibs expects."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from poplar_py import Graph, Tensor
from poplar_py import program as prog_

from .errors import PoplibsError


def computeWithOutput(graph: Graph, out: Tensor, inputs: Sequence[object], prog: object, name: str,
                      compute: Callable[[Tensor], object], elementwise: bool = False,
                      readsOutput: bool = False) -> None:
    """Run ``compute(dst)``, which adds to ``prog`` the work writing ``dst``, so that ``out`` gets
    the result. ``dst`` is ``out`` itself unless ``out`` overlaps one of ``inputs``; then it is a
    clone of ``out`` (on the same tiles) that ``prog`` copies into ``out`` afterwards (and fills
    from ``out`` first when the work ``readsOutput``, as an accumulating reduction does).

    For an ``elementwise`` operation an input equal to ``out`` element for element is no
    overlap: each element is read before it is written, on its own tile."""
    tensors = [t for t in inputs if isinstance(t, Tensor)] if isinstance(out, Tensor) else []
    overlapping = [t for t in tensors if t.intersectsWith(out)
                   and not (elementwise and t.shape() == out.shape() and t == out)]
    if not overlapping:  # (arguments of the wrong kind: the operation itself names them)
        compute(out)
        return
    if not isinstance(prog, prog_.Sequence):
        raise PoplibsError(f"{name}: output '{out.name}' overlaps input '{overlapping[0].name}'; the result "
                           f"goes through a temporary copied into the output, which needs a program "
                           f"Sequence, not {type(prog).__name__}")
    dst = graph.clone(out, f"{name}/aliasedOutput")
    if readsOutput:
        prog.add(prog_.Copy(out, dst))
    compute(dst)
    prog.add(prog_.Copy(dst, out))
