"""checks.annotations.mismatch: an object tree against its annotations."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from poplar_py.checks.annotations import mismatch


@dataclass
class Leaf:
    n: int
    x: float
    flag: bool
    data: np.ndarray | None


@dataclass
class Node:
    name: str
    leaves: list[Leaf]
    table: Mapping[str, tuple[int, ...]]
    pair: tuple[Leaf, str]


def _node(**changes) -> Node:
    leaf = Leaf(np.int64(3), np.float32(1.5), np.bool_(True), None)
    fields = dict(name="n", leaves=[leaf, Leaf(1, 2, False, np.zeros(2))], table={"a": (1, 2)},
                  pair=(leaf, "p"))
    return Node(**{**fields, **changes})


def test_a_matching_tree_with_numpy_scalars_and_shared_objects():
    assert mismatch(_node(), Node, "root") is None
    assert mismatch([_node(), _node()], list[Node], "root") is None


def test_the_first_difference_is_named_with_its_path():
    cases = {
        "root is of type int, not Node": 3,
        "root.name is of type NoneType, not str": _node(name=None),
        "root.leaves item is of type str, not Leaf": _node(leaves=[Leaf(1, 2.0, True, None), "leaf"]),
        "root.leaves item.n is of type float, not int": _node(leaves=[Leaf(1.5, 2.0, True, None)]),
        "root.leaves item.data is of type list, not ndarray": _node(leaves=[Leaf(1, 2.0, True, [1])]),
        "root.leaves item.flag is of type int, not bool": _node(leaves=[Leaf(1, 2.0, 1, None)]),
        "root.table key is of type int, not str": _node(table={1: (1,)}),
        "root.table value item is of type str, not int": _node(table={"a": ("x",)}),
        "root.pair has 1 items, not 2": _node(pair=(Leaf(1, 2.0, True, None),)),
        "root.pair[1] is of type bytes, not str": _node(pair=(Leaf(1, 2.0, True, None), b"p")),
    }
    for message, value in cases.items():
        assert mismatch(value, Node, "root") == message


def test_a_missing_field_is_named():
    node = _node()
    del node.table
    assert mismatch(node, Node, "root") == "root has no field table"
