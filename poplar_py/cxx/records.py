"""The vertex classes of a C++ codelet file, read from clang's record layouts.

clang prints the layout of every complete class (``-fdump-record-layouts-complete``, canonical
type names): its bases, its members with their byte offsets, its size. A vertex is a class with
``poplar::Vertex``, ``poplar::MultiVertex`` or ``poplar::SupervisorVertex`` among its bases (a
template counts once explicitly instantiated, as Poplar requires). Each member is a field, in
order: its C++ type gives the direction, the shape and the element type, and the offsets clang
chose must be the ones of the engine's state record (checked here, so a layout the engine cannot
fill is refused when the file is added, never read wrongly).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from ..errors import CodeletError
from ..types import ALL_TYPES, Type
from ..vector_layout import VectorLayout, VectorListLayout
from ..vertex import Direction, FieldKind, FieldSpec, vector_of_edges

_BASES = {
    "poplar::Vertex": "Vertex",
    "poplar::MultiVertex": "MultiVertex",
    "poplar::SupervisorVertex": "SupervisorVertex",
}
_ELEMENTS: dict[str, Type] = {t.name: t for t in ALL_TYPES} | {"_Float16": ALL_TYPES[1]}
_EDGES = {
    "poplar::Input": Direction.INPUT,
    "poplar::Output": Direction.OUTPUT,
    "poplar::InOut": Direction.INOUT,
}
_LINE = re.compile(r"^\s*(?P<offset>\d+)?(?P<bits>:\d+-\d+)? \|(?P<indent> *)(?P<decl>.*)$")
_SIZE = re.compile(r"\[sizeof=(\d+),")


@dataclass(frozen=True)
class Member:
    """One data member of a vertex class: name, canonical C++ type, byte offset."""

    name: str
    ctype: str
    offset: int


@dataclass(frozen=True)
class VertexRecord:
    """A vertex class as clang laid it out."""

    name: str  # as Poplar names it: "SumVertex", "ns::Tm<float, 3>"
    base: str  # "Vertex", "MultiVertex" or "SupervisorVertex"
    members: tuple[Member, ...]
    size: int


def vertex_records(dump: str, file: str) -> list[VertexRecord]:
    """Every vertex class in clang's layout dump, in the order clang laid them out."""
    found = []
    for block in dump.split("*** Dumping AST Record Layout")[1:]:
        record = _record(block, file)
        if record is not None:
            found.append(record)
    return found


def _record(block: str, file: str) -> VertexRecord | None:
    rows = []
    for text in block.splitlines():
        m = _LINE.match(text)
        if m is not None:
            rows.append((m["offset"], len(m["indent"]) // 2, m["decl"].strip(), m["bits"]))
    if not rows:
        return None
    name = _strip_tags(rows[0][2])
    if "<" in name and name.split("<")[0].endswith(("poplar::Input", "poplar::Output", "poplar::InOut")):
        return None
    base, members, problems = None, [], []
    user_base = False  # within a base class of the file's own (its members are the vertex's too)
    for offset, depth, decl, bits in rows[1:]:
        if depth == 1:
            user_base = False
        elif not (depth == 2 and user_base):
            continue
        kind = _strip_tags(decl.split(" (")[0])
        if "(base)" in decl or "(virtual base)" in decl:
            if kind in _BASES:
                base = base or _BASES[kind]
            elif "(virtual base)" in decl:
                problems.append(f"vertex {name} has a virtual base: vertex state must be plain data")
            else:
                user_base = depth == 1
            continue
        if "vtable pointer" in decl or "vftable pointer" in decl:
            problems.append(f"vertex {name} has virtual functions: vertex state must be plain data")
            continue
        ctype, _, member = decl.rpartition(" ")
        if offset is None or not ctype:
            continue
        if bits:
            problems.append(
                f"field '{member}' of vertex {name} is a bit-field, which the simulator cannot lay out"
            )
        members.append(Member(member, _strip_tags(ctype), int(offset)))
    if base is None:
        return None
    if problems:
        raise CodeletError(f"{file}: {problems[0]}")
    size = _SIZE.search(block)
    return VertexRecord(name, base, tuple(members), int(size[1]) if size else 0)


def _strip_tags(ctype: str) -> str:
    """``class poplar::Input<class poplar::Vector<float> >`` -> ``poplar::Input<poplar::Vector<float>>``."""
    return (
        re.sub(r"\b(class|struct|union|enum) ", "", ctype).replace("> >", ">>").replace("> >", ">>").strip()
    )


def split_template(ctype: str) -> tuple[str, list[str]]:
    """``a::B<x, c<d, e>>`` -> (``a::B``, [``x``, ``c<d, e>``]); no arguments -> (ctype, [])."""
    if not ctype.endswith(">") or "<" not in ctype:
        return ctype, []
    head, inner = ctype.split("<", 1)
    args, depth, start = [], 0, 0
    inner = inner[:-1]
    for i, ch in enumerate(inner):
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth -= 1
        elif ch == "," and depth == 0:
            args.append(inner[start:i].strip())
            start = i + 1
    args.append(inner[start:].strip())
    return head.strip(), args


def field_spec(record: VertexRecord, member: Member, file: str) -> FieldSpec:
    """The FieldSpec of one member; a type the engine cannot lay out is a CodeletError."""
    spec = _spec(member.name, member.ctype)
    if spec is None:
        raise CodeletError(
            f"{file}: field '{member.name}' of vertex {record.name} has type {member.ctype}, which the "
            "simulator cannot lay out; fields are Input/Output/InOut of an element type or of "
            "Vector<T>/VectorList<T>, Vector<Input<Vector<T>>>, Vector<T>, or an element type "
            f"({', '.join(t.name for t in ALL_TYPES)})"
        )
    return spec


def _spec(name: str, ctype: str) -> FieldSpec | None:
    if ctype in _ELEMENTS:
        return FieldSpec(name, Direction.STATE, FieldKind.SCALAR, _ELEMENTS[ctype])
    head, args = split_template(ctype)
    if not args:
        return None
    if head in _EDGES:
        direction = _EDGES[head]
        if args[0] in _ELEMENTS:
            return FieldSpec(name, direction, FieldKind.SCALAR, _ELEMENTS[args[0]])
        inner, inner_args = split_template(args[0])
        kinds = {"poplar::Vector": (FieldKind.VECTOR, VectorLayout),
                 "poplar::VectorList": (FieldKind.VECTOR_LIST, VectorListLayout)}
        if inner_args and inner_args[0] in _ELEMENTS and inner in kinds:
            kind, layouts = kinds[inner]
            return FieldSpec(name, direction, kind, _ELEMENTS[inner_args[0]], _layout(inner_args, layouts))
        return None
    if head == "poplar::Vector":
        layout = _layout(args, VectorLayout)
        if args[0] in _ELEMENTS:
            return FieldSpec(name, Direction.STATE, FieldKind.VECTOR, _ELEMENTS[args[0]], layout)
        edge = _spec(name, args[0])
        if edge is None or edge.direction is Direction.STATE or edge.kind is FieldKind.VECTOR_LIST:
            return None
        return vector_of_edges(edge, layout)
    return None


def _layout(args: list[str], layouts: type[VectorLayout] | type[VectorListLayout]
            ) -> VectorLayout | VectorListLayout | None:
    """The layout a vector's template arguments name after the element type
    (``poplar::VectorLayout::ONE_PTR``), None when they name none."""
    if len(args) < 2:
        return None
    name = args[1].rsplit("::", 1)[-1]
    return layouts.__members__.get(name)


def check_layout(record: VertexRecord, fields: dict[str, FieldSpec], state: np.dtype, file: str) -> None:
    """clang's offsets and size must be the engine's state record's."""
    for member in record.members:
        column = member.name if member.name in state.names else f"{member.name}.ptr"
        expected = state.fields[column][1]
        if member.offset != expected:
            raise CodeletError(
                f"{file}: field '{member.name}' of vertex {record.name} is at byte {member.offset}, where "
                f"the simulator's state record has it at byte {expected}: fields must be the class's "
                "only data members (no bit-fields, no alignment attributes)"
            )
    if record.members and record.size != state.itemsize:
        raise CodeletError(
            f"{file}: vertex {record.name} takes {record.size} bytes, the simulator's state "
            f"record {state.itemsize}"
        )
