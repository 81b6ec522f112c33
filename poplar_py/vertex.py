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
from dataclasses import dataclass, replace
from typing import Any, ClassVar

from .errors import CodeletCompileError
from .types import ALL_TYPES, Type, asType


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

    @property
    def is_edge(self) -> bool:
        return self.direction is not Direction.STATE

    def describe(self) -> str:
        inner = {FieldKind.SCALAR: str(self.type), FieldKind.VECTOR: f"Vector[{self.type}]",
                 FieldKind.VECTOR_LIST: f"VectorList[{self.type}]"}[self.kind]
        return inner if self.direction is Direction.STATE else f"{self.direction.value}[{inner}]"


@dataclass(frozen=True)
class _Annotation:
    """What ``Input[...]``, ``Vector[...]`` and friends evaluate to in a class body."""

    wrapper: str  # "Input", "Output", "InOut", "Vector", "VectorList"
    inner: Any


class _Wrapper:
    def __init__(self, name: str) -> None:
        self._name = name

    def __getitem__(self, inner: Any) -> _Annotation:
        return _Annotation(self._name, inner)

    def __repr__(self) -> str:
        return f"poplar.{self._name}"


Input = _Wrapper("Input")
Output = _Wrapper("Output")
InOut = _Wrapper("InOut")
Vector = _Wrapper("Vector")
VectorList = _Wrapper("VectorList")

_EDGES = {"Input": Direction.INPUT, "Output": Direction.OUTPUT, "InOut": Direction.INOUT}


class TypeParam:
    """A placeholder element type of a templated codelet (``T = TypeParam("T")``).

    ``Fill.instantiate(FLOAT)`` (or the vertex name ``"popops::Fill<float>"``) gives
    the class with ``T`` bound, which is what gets compiled.
    """

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return self.name


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
                return FieldSpec(name, direction, kind, _element_type(inner.inner))  # type: ignore[arg-type]
        return None
    if ann.wrapper == "Vector":
        elem = _element_type(inner)
        if elem is not None:
            return FieldSpec(name, Direction.STATE, FieldKind.VECTOR, elem)
        if isinstance(inner, _Annotation) and inner.wrapper in _EDGES:
            edge = resolve_field(name, inner)
            if edge is None or edge.kind is FieldKind.VECTOR_LIST:
                return None
            # Vector[Input[T]] is a vector of scalar edges; Vector[Input[Vector[T]]] a list of vectors.
            kind = FieldKind.VECTOR if edge.kind is FieldKind.SCALAR else FieldKind.VECTOR_LIST
            return FieldSpec(name, edge.direction, kind, edge.type)
    return None


def _collect_fields(cls: type) -> dict[str, FieldSpec]:
    module = sys.modules.get(cls.__module__)
    namespace = dict(vars(module)) if module is not None else {}
    fields: dict[str, FieldSpec] = {}
    for base in reversed(cls.__mro__[1:]):
        fields.update(getattr(base, "fields", {}) or {})
    for name, ann in inspect.get_annotations(cls).items():
        if name.startswith("_") or name in ("fields", "isMultiVertex", "sourceFile", "NUM_WORKERS",
                                            "vertexName", "typeParams"):
            continue
        if isinstance(ann, str):
            ann = _eval_annotation(cls, name, ann, namespace)
        spec = resolve_field(name, ann)
        if spec is None:
            raise CodeletCompileError(
                f"{_where(cls)}: field '{cls.__name__}.{name}' has an unsupported annotation "
                f"{ann!r}; use T, Vector[T], Input[T], Input[Vector[T]], Input[VectorList[T]] "
                "or Vector[Input[Vector[T]]] (likewise Output and InOut)")
        fields[name] = spec
    return fields


def _eval_annotation(cls: type, name: str, text: str, namespace: dict[str, Any]) -> Any:
    scope = {"Input": Input, "Output": Output, "InOut": InOut, "Vector": Vector,
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


class Vertex:
    """Base class of codelets whose ``compute(self)`` runs on one worker thread.

    Subclasses declare fields as annotations. ``compute`` may return True,
    None (success) or False (failure: the engine raises VertexError).
    """

    fields: ClassVar[dict[str, FieldSpec]] = {}
    isMultiVertex: ClassVar[bool] = False
    sourceFile: ClassVar[str] = ""
    vertexName: ClassVar[str] = ""  # the name addVertex uses; the class name by default
    typeParams: ClassVar[tuple[str, ...]] = ()  # unbound TypeParam names: a template

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls.fields = _collect_fields(cls)
        bound = cls.__dict__.get("_bindings", {})
        cls.fields = {n: replace(s, type=bound[s.type.name]) if isinstance(s.type, TypeParam)
                      and s.type.name in bound else s for n, s in cls.fields.items()}
        cls.typeParams = tuple(dict.fromkeys(s.type.name for s in cls.fields.values()
                                             if isinstance(s.type, TypeParam)))
        if "vertexName" not in cls.__dict__:
            cls.vertexName = cls.__name__
        try:
            cls.sourceFile = inspect.getsourcefile(cls) or ""
        except (OSError, TypeError):
            cls.sourceFile = ""

    @classmethod
    def instantiate(cls, *types: Type | object) -> type[Vertex]:
        """The class with its type parameters bound, in order of first use in the fields.

        Named ``"<vertexName><float,int>"`` as Poplar's templated vertices; cached.
        """
        if len(types) != len(cls.typeParams):
            raise CodeletCompileError(
                f"{cls.vertexName} takes {len(cls.typeParams)} type argument(s) "
                f"({', '.join(cls.typeParams) or 'none'}), got {len(types)}")
        args = tuple(asType(t) for t in types)
        cache = cls.__dict__.get("_instances")
        if cache is None:
            cache = {}
            cls._instances = cache
        if args not in cache:
            name = f"{cls.vertexName}<{','.join(str(t) for t in args)}>"
            safe = cls.__name__ + "_" + "_".join(str(t).replace(" ", "_") for t in args)
            cache[args] = type(cls)(safe, (cls,), {
                "_bindings": dict(zip(cls.typeParams, args)), "vertexName": name,
                "__module__": cls.__module__, "__qualname__": safe})
        return cache[args]

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
