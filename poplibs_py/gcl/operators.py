"""GCL's collective operators, and the popops expressions that combine two partials."""

from __future__ import annotations

import enum

from ..popops import expr as pe


class CollectiveOperator(enum.Enum):
    """How a collective combines the replicas' (or IPUs') values, as ``gcl::CollectiveOperator``.

    MEAN adds then divides by the number of partials; SQUARE_ADD adds the squares; LOCAL
    combines nothing: each replica keeps its own value."""

    ADD = "ADD"
    MEAN = "MEAN"
    MUL = "MUL"
    MIN = "MIN"
    MAX = "MAX"
    LOGICAL_AND = "LOGICAL_AND"
    LOGICAL_OR = "LOGICAL_OR"
    SQUARE_ADD = "SQUARE_ADD"
    LOCAL = "LOCAL"


_A, _B = pe.PlaceHolder(1), pe.PlaceHolder(2)

#: two partials combined (each operator is commutative: the order does not matter)
_COMBINE = {
    CollectiveOperator.ADD: pe.Add(_A, _B),
    CollectiveOperator.MEAN: pe.Add(_A, _B),
    CollectiveOperator.SQUARE_ADD: pe.Add(_A, _B),
    CollectiveOperator.MUL: pe.Mul(_A, _B),
    CollectiveOperator.MIN: pe.Min(_A, _B),
    CollectiveOperator.MAX: pe.Max(_A, _B),
    CollectiveOperator.LOGICAL_AND: pe.And(_A, _B),
    CollectiveOperator.LOGICAL_OR: pe.Or(_A, _B),
}


def combine_expr(op: CollectiveOperator) -> pe.Expr:
    """``f(a, b)`` combining two partials, for a reducing operator."""
    return _COMBINE[op]

