"""Vertex base classes and the field kinds a codelet declares.

A codelet is a class deriving from :class:`Vertex` (``compute(self)`` runs on one
worker thread) or :class:`MultiVertex` (``compute(self, workerId)`` runs on all the
tile's workers). Its fields are class annotations::

    class SumVertex(Vertex):
        x: Input[Vector[float]]      # edge: connected to a 1-D tensor
        out: Output[float]           # edge: connected to a 0-D tensor
        scale: float                 # vertex state, set with graph.setInitialValue

Each annotation resolves to a :class:`FieldSpec`: a direction (input, output,
in-out or state), a shape kind (scalar, vector, list of vectors) and an element type.
"""

from __future__ import annotations

import enum
import inspect
import sys
from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Any, ClassVar

import numpy as np

from .errors import CodeletCompileError
from .templates import Bound, Policy, TemplateParam, TypeParam, argument_text
from .types import ALL_TYPES, Type, asType
from .vector_layout import VectorLayout, VectorListLayout, reference_bytes


class Direction(enum.Enum):
    INPUT = "Input"
    OUTPUT = "Output"
    INOUT = "InOut"
    STATE = "state"

    @property
    def writes(self) -> bool:
        return self in (Direction.OUTPUT, Direction.INOUT)

    @property
    def reads(self) -> bool:
        return self in (Direction.INPUT, Direction.INOUT)


class FieldKind(enum.Enum):
    SCALAR = 0  # one element: a 0-D tensor, or a state value
    VECTOR = 1  # a 1-D tensor, contiguous as the vertex sees it
    VECTOR_LIST = 2  # a list of 1-D tensors (a 2-D tensor, or a jagged list)


@dataclass(frozen=True)
class FieldSpec:
    """One declared field of a vertex class."""

    name: str
    direction: Direction
    kind: FieldKind
    type: Type
    # how the IPU stores a vector (a list: each row): its declared layout, None for the default
    # (SPAN; a VectorList's DELTANELEMENTS)
    layout: VectorLayout | VectorListLayout | None = None

    @property
    def is_edge(self) -> bool:
        return self.direction is not Direction.STATE

    @property
    def record_bytes(self) -> int:
        """Bytes of the field in the vertex's state record on an IPU: a state value, an edge's
        32-bit pointer, a vector's reference in its layout, a list's pointer and count."""
        if self.kind is FieldKind.SCALAR:
            return self.type.size if self.direction is Direction.STATE else 4
        if self.kind is FieldKind.VECTOR:
            return reference_bytes(self.layout or VectorLayout.SPAN)
        return 8

    @property
    def row_bytes(self) -> int:
        """Bytes of each row's entry in a list field's table on an IPU."""
        return reference_bytes(self.layout or VectorListLayout.DELTANELEMENTS)

    def describe(self) -> str:
        inner = {FieldKind.SCALAR: str(self.type), FieldKind.VECTOR: f"Vector[{self.type}]",
                 FieldKind.VECTOR_LIST: f"VectorList[{self.type}]"}[self.kind]
        return inner if self.direction is Direction.STATE else f"{self.direction.value}[{inner}]"


def state_record_bytes(fields: Iterable[FieldSpec]) -> int:
    """Bytes of a vertex's state record on an IPU: its fields in order, each aligned to its size
    (at most 4 bytes), the record to 4 bytes."""
    end = 0
    for spec in fields:
        size = spec.record_bytes
        end = -(-end // min(size, 4)) * min(size, 4) + size
    return -(-end // 4) * 4


@dataclass(frozen=True)
class _Annotation:
    """What ``Input[...]``, ``Vector[...]`` and friends evaluate to in a class body."""

    wrapper: str  # "Input", "Output", "InOut", "Vector", "VectorList"
    inner: Any
    layout: VectorLayout | VectorListLayout | None = None  # Vector[T, layout] (likewise VectorList)


class _Wrapper:
    def __init__(self, name: str) -> None:
        self._name = name

    def __getitem__(self, inner: Any) -> _Annotation:
        if isinstance(inner, tuple) and self._name in _LAYOUTS:
            return _Annotation(self._name, *_laid_out(self._name, inner))
        return _Annotation(self._name, inner)

    def __repr__(self) -> str:
        return f"poplar.{self._name}"


_LAYOUTS = {"Vector": VectorLayout, "VectorList": VectorListLayout}


def _laid_out(wrapper: str, params: tuple) -> tuple[Any, VectorLayout | VectorListLayout]:
    """The element type and layout of ``Vector[T, layout[, align]]`` (likewise VectorList), the
    rest checked: the host stores every layout alike (see :mod:`poplar_py.vector_layout`)."""
    layout = _LAYOUTS[wrapper]
    if not 2 <= len(params) <= 3 or not isinstance(params[1], layout) or (
            len(params) == 3 and not (isinstance(params[2], int) and params[2] > 0)):
        raise CodeletCompileError(f"{wrapper}[{', '.join(map(repr, params))}]: expected {wrapper}[T], "
                                  f"{wrapper}[T, {layout.__name__}.X] or {wrapper}[T, {layout.__name__}.X, "
                                  "alignment in bytes]")
    return params[0], params[1]


Const = _Wrapper("Const")  # a template constant: ``R: Const[int]`` (see poplar_py.templates)
Input = _Wrapper("Input")
Output = _Wrapper("Output")
InOut = _Wrapper("InOut")
Vector = _Wrapper("Vector")
VectorList = _Wrapper("VectorList")

_EDGES = {"Input": Direction.INPUT, "Output": Direction.OUTPUT, "InOut": Direction.INOUT}


def _element_type(t: Any) -> Type | TypeParam | None:
    if isinstance(t, TypeParam):
        return t
    try:
        return asType(t)
    except TypeError:
        return None


def resolve_field(name: str, ann: Any) -> FieldSpec | None:
    """Turn one annotation into a FieldSpec, or None when it is not a field form."""
    elem = _element_type(ann)
    if elem is not None:
        return FieldSpec(name, Direction.STATE, FieldKind.SCALAR, elem)
    if not isinstance(ann, _Annotation):
        return None
    inner = ann.inner
    if ann.wrapper in _EDGES:
        direction = _EDGES[ann.wrapper]
        elem = _element_type(inner)
        if elem is not None:
            return FieldSpec(name, direction, FieldKind.SCALAR, elem)
        if isinstance(inner, _Annotation) and _element_type(inner.inner) is not None:
            kind = {"Vector": FieldKind.VECTOR, "VectorList": FieldKind.VECTOR_LIST}.get(inner.wrapper)
            if kind is not None:
                return FieldSpec(name, direction, kind, _element_type(inner.inner), inner.layout)  # type: ignore[arg-type]
        return None
    if ann.wrapper == "Vector":
        elem = _element_type(inner)
        if elem is not None:
            return FieldSpec(name, Direction.STATE, FieldKind.VECTOR, elem, ann.layout)
        if isinstance(inner, _Annotation) and inner.wrapper in _EDGES:
            edge = resolve_field(name, inner)
            if edge is None or edge.kind is FieldKind.VECTOR_LIST:
                return None
            return vector_of_edges(edge, ann.layout)
    return None


def vector_of_edges(edge: FieldSpec, layout: VectorLayout | VectorListLayout | None) -> FieldSpec:
    """The field ``Vector<edge, layout>`` (``edge`` a scalar or vector edge): a vector of scalar
    edges, or a list of vectors whose rows are stored in the edge's layout (a SPAN unless it
    declares one)."""
    if edge.kind is FieldKind.SCALAR:
        return FieldSpec(edge.name, edge.direction, FieldKind.VECTOR, edge.type, layout)
    row = edge.layout or VectorLayout.SPAN
    return FieldSpec(edge.name, edge.direction, FieldKind.VECTOR_LIST, edge.type, row)


_CLASS_ATTRIBUTES = ("fields", "isMultiVertex", "sourceFile", "NUM_WORKERS", "vertexName", "typeParams",
                     "templateParams", "constants", "memoryConstraints")


def _collect(cls: type) -> tuple[dict[str, FieldSpec], list[TemplateParam]]:
    """The fields and the template parameters (in order of first appearance) of ``cls``."""
    module = sys.modules.get(cls.__module__)
    namespace = dict(vars(module)) if module is not None else {}
    fields: dict[str, FieldSpec] = {}
    params: dict[str, TemplateParam] = {}
    for base in reversed(cls.__mro__[1:]):
        fields.update(getattr(base, "fields", {}) or {})
        params.update({p.name: p for p in getattr(base, "_declared", ())})
    for name, ann in inspect.get_annotations(cls).items():
        if name.startswith("_") or name in _CLASS_ATTRIBUTES:
            continue
        if isinstance(ann, str):
            ann = _eval_annotation(cls, name, ann, namespace)
        if isinstance(ann, _Annotation) and ann.wrapper == "Const":
            kind = ann.inner
            if not (kind in (int, bool) or (isinstance(kind, type) and issubclass(kind, Policy))):
                raise CodeletCompileError(
                    f"{_where(cls)}: template constant '{cls.__name__}.{name}' must be Const[int], "
                    f"Const[bool] or Const[<a Policy family>], not Const[{kind!r}]")
            params.setdefault(name, TemplateParam(name, kind))
            continue
        spec = resolve_field(name, ann)
        if spec is None:
            raise CodeletCompileError(
                f"{_where(cls)}: field '{cls.__name__}.{name}' has an unsupported annotation "
                f"{ann!r}; use T, Vector[T], Input[T], Input[Vector[T]], Input[VectorList[T]] "
                "or Vector[Input[Vector[T]]] (likewise Output and InOut)")
        if isinstance(spec.type, TypeParam):
            params.setdefault(spec.type.name, TemplateParam(spec.type.name, None))
        fields[name] = spec
    return fields, list(params.values())


def _eval_annotation(cls: type, name: str, text: str, namespace: dict[str, Any]) -> Any:
    scope = {"Input": Input, "Output": Output, "InOut": InOut, "Vector": Vector, "Const": Const,
             "VectorList": VectorList, "float": float, "int": int, "bool": bool}
    scope.update({t.__repr__().split(".")[1]: t for t in ALL_TYPES})
    scope.update(namespace)
    try:
        return eval(text, scope)
    except Exception as exc:
        raise CodeletCompileError(
            f"{_where(cls)}: cannot evaluate the annotation of field "
            f"'{cls.__name__}.{name}': {text!r} ({exc})") from None


def _where(cls: type) -> str:
    try:
        _, line = inspect.getsourcelines(cls)
        return f"{inspect.getsourcefile(cls)}:{line}"
    except (OSError, TypeError):
        return cls.__module__


def LocalArray(type_: Type | TypeParam | type, size: int) -> np.ndarray:
    """A fixed-size local array of ``size`` elements of ``type_``, zero-filled: in a codelet,
    ``acc = LocalArray(OutT, R * C)``. The size is a literal or a constant expression (template
    constants, global constants); compiled code keeps the array in registers once loops over it
    unroll, and checks its indices like a vector field's."""
    dtype = np.dtype(float) if type_ is float else np.dtype(int) if type_ is int else \
        np.dtype(bool) if type_ is bool else asType(type_).dtype
    return np.zeros(int(size), dtype)


class Vertex:
    """Base class of codelets whose ``compute(self)`` runs on one worker thread.

    Subclasses declare fields as annotations. ``compute`` may return True,
    None (success) or False (failure: the engine raises VertexError).
    """

    fields: ClassVar[dict[str, FieldSpec]] = {}
    isMultiVertex: ClassVar[bool] = False
    sourceFile: ClassVar[str] = ""
    vertexName: ClassVar[str] = ""  # the name addVertex uses; the class name by default
    templateParams: ClassVar[tuple[TemplateParam, ...]] = ()  # unbound: the class is a template
    typeParams: ClassVar[tuple[str, ...]] = ()  # the names of templateParams
    constants: ClassVar[dict[str, Bound]] = {}  # bound template constants (``self.R``) and types
    _declared: ClassVar[tuple[TemplateParam, ...]] = ()  # every template parameter, bound or not

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        fields, declared = _collect(cls)
        bound: dict[str, Bound] = cls.__dict__.get("_bindings", {})
        cls.fields = {n: replace(s, type=bound[s.type.name]) if isinstance(s.type, TypeParam)
                      and s.type.name in bound else s for n, s in fields.items()}
        cls._declared = tuple(declared)
        cls.templateParams = tuple(p for p in declared if p.name not in bound)
        cls.typeParams = tuple(p.name for p in cls.templateParams)
        cls.constants = dict(bound)
        if "vertexName" not in cls.__dict__:
            cls.vertexName = cls.__name__
        try:
            cls.sourceFile = inspect.getsourcefile(cls) or ""
        except (OSError, TypeError):
            cls.sourceFile = ""

    @classmethod
    def instantiate(cls, *args: object) -> type[Vertex]:
        """The class with its template parameters bound, in order of first appearance in the
        class's annotations (types, ``int`` and ``bool`` constants, policies).

        Named ``"<vertexName><float,6,true>"`` as Poplar's templated vertices; cached.
        """
        params = cls.templateParams
        if len(args) != len(params):
            raise CodeletCompileError(
                f"{cls.vertexName} takes {len(params)} template argument(s) "
                f"({', '.join(p.describe() for p in params) or 'none'}), got {len(args)}")
        values = tuple(p.bind(a, cls.vertexName) for p, a in zip(params, args))
        cache = cls.__dict__.get("_instances")
        if cache is None:
            cache = {}
            cls._instances = cache
        key = tuple((type(v), v) for v in values)  # True and 1 are different arguments
        if key not in cache:
            name = f"{cls.vertexName}<{','.join(argument_text(v) for v in values)}>"
            safe = cls.__name__ + "_" + "_".join(argument_text(v).replace(" ", "_").replace(":", "_")
                                                 for v in values)
            bindings = {**cls.constants, **dict(zip(cls.typeParams, values))}
            cache[key] = type(cls)(safe, (cls,), {
                "_bindings": bindings, "vertexName": name, "__module__": cls.__module__,
                "__qualname__": safe, "templateArgs": values})
            for p, v in zip(params, values):
                if p.kind is not None:
                    setattr(cache[key], p.name, v)  # self.R in the interpreter, as in Python
        return cache[key]

    def compute(self, *args: Any) -> bool | None:  # pragma: no cover - overridden
        raise NotImplementedError


class MultiVertex(Vertex):
    """Base class of codelets whose ``compute(self, workerId)`` runs on every worker.

    The engine calls ``compute`` once for each ``workerId`` in
    ``range(numWorkers())``; the code splits its work by ``workerId``.
    """

    isMultiVertex: ClassVar[bool] = True
    NUM_WORKERS: ClassVar[int] = 6

    @classmethod
    def numWorkers(cls) -> int:
        return cls.NUM_WORKERS
