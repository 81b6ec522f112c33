"""Template parameters of codelets: element types, constants and operation policies.

A templated codelet is a family of vertex classes, one per binding of its parameters, as
PopLibs' C++ vertex templates are. Three kinds of parameter exist:

* an element type, ``T = TypeParam("T")`` used in field annotations (``out: Output[Vector[T]]``)
  and in code as a cast (``T(x)``) or a local array's type (``LocalArray(T, 8)``);
* a constant, declared in the class as ``R: Const[int]`` or ``update: Const[bool]`` and read as
  ``self.R``: sizes of local arrays and bounds of loops that unroll;
* an operation policy, declared as ``Op: Const[ReduceOp]`` where ``ReduceOp`` derives from
  :class:`Policy`: the codelet calls ``self.Op.update(acc, x)``, PopLibs' ``ReduceOp::update``.

Parameters are bound in order of first appearance in the class's annotations:
``Cls.instantiate(FLOAT, 6, 16)``, or by name, ``"poplin::MatMulBlock<float,6,16>"``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from .errors import CodeletCompileError
from .types import Type, asType

__all__ = ["Policy", "TemplateParam", "TypeParam", "argument_text", "parse_argument", "split_arguments"]


class TypeParam:
    """A placeholder element type of a templated codelet (``T = TypeParam("T")``).

    ``Fill.instantiate(FLOAT)`` (or the vertex name ``"popops::Fill<float>"``) gives
    the class with ``T`` bound, which is what gets compiled.
    """

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return self.name


class Policy:
    """Base of operation policies: classes of plain functions (no ``self``) and numeric constants
    that templated codelets call through a ``Const[Family]`` parameter.

    A family is a direct subclass (``class ReduceOp(Policy)``); its members derive from it
    (``class ReduceAdd(ReduceOp)``) and are named in vertex names by ``policyName`` (the class
    name unless set: ``"popops::ReduceAdd"``). Their functions are compiled like helper
    functions, inlined where the codelet calls them.
    """

    policyName: ClassVar[str] = ""

    def __init_subclass__(cls, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        if "policyName" not in cls.__dict__:
            cls.policyName = cls.__name__


Bound = Type | int | bool | type[Policy]


@dataclass(frozen=True)
class TemplateParam:
    """One template parameter: its name and kind (``None``: an element type; ``int``, ``bool`` or
    a :class:`Policy` family: a constant)."""

    name: str
    kind: type | None

    def describe(self) -> str:
        kind = self.kind
        what = "type" if kind is None else kind.__name__
        return f"{self.name}: {what}"

    def bind(self, value: object, vertex: str) -> Bound:
        """``value`` checked (and converted) for this parameter."""
        kind = self.kind
        if kind is None:
            try:
                return asType(value)
            except TypeError as exc:
                raise CodeletCompileError(f"{vertex}: template parameter {self.name} needs an element "
                                          f"type: {exc}") from None
        if kind is bool:
            if isinstance(value, bool):
                return value
        elif kind is int:
            if isinstance(value, int) and not isinstance(value, bool) and -(2**63) <= value < 2**63:
                return value
        elif isinstance(value, type) and issubclass(value, kind):
            return value
        raise CodeletCompileError(f"{vertex}: template parameter {self.name} needs "
                                  f"{_expected(kind)}, got {value!r}")


def _expected(kind: type) -> str:
    if kind is bool:
        return "a bool"
    if kind is int:
        return "a 64-bit integer"
    members = ", ".join(sorted(p.policyName for p in _members(kind)))
    return f"a {kind.__name__} ({members or 'none defined'})"


def _members(family: type) -> list[type[Policy]]:
    out, todo = [], list(family.__subclasses__())
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(p.__subclasses__())
    return out


def argument_text(value: Bound) -> str:
    """How a bound value is spelled in a vertex name (Poplar's ``templateVertex``)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, type) and issubclass(value, Policy):
        return value.policyName
    return str(value)


def parse_argument(param: TemplateParam, text: str, vertex: str) -> Bound:
    """A template argument as written in a vertex name, for ``param``."""
    text = text.strip()
    kind = param.kind
    if kind is None:
        return param.bind(text, vertex)
    if kind is bool:
        words = {"true": True, "false": False, "1": True, "0": False}
        if text in words:
            return words[text]
    elif kind is int:
        try:
            return param.bind(int(text, 0), vertex)
        except ValueError:
            pass
    else:
        for p in _members(kind):
            if text in (p.policyName, p.__name__):
                return p
    raise CodeletCompileError(f"{vertex}: template parameter {param.name} needs {_expected(kind)}, "
                              f"got '{text}'")


def split_arguments(text: str) -> list[str]:
    """``"float,6,foo<int,2>"`` -> ``["float", "6", "foo<int,2>"]`` (commas at the top level)."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        depth += ch == "<"
        depth -= ch == ">"
        if ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return [p.strip() for p in parts]
