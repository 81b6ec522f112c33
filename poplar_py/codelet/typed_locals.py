"""Interpreter mode: locals declared with a type annotation convert on every assignment.

Compiled kernels convert every value stored into a local declared ``x: HALF = ...`` (or any other
poplar type, or ``float``/``int``/``bool``) to the declared type; plain Python ignores local
annotations. :func:`typed_function` therefore gives the interpreter a copy of such a function
whose assignments to declared locals are wrapped in the compiler's conversion:

* ``x: T = v`` and ``x = v`` become ``x: T = conv(v)`` and ``x = conv(v)`` (also one element
  of ``a, x = u, v``); ``x += v`` becomes ``x = conv(x + v)``;
* a ``for x in ...`` loop over a declared ``x`` converts ``x`` first thing in each iteration;
* a parameter declared in the body (``def f(x): x: HALF = x``) converts on entry, as the inlined
  helper's parameter slot does.

``conv`` is :func:`~poplar_py.codelet.type_rules.cast_value` to the type's dtype for poplar types and ``bool``
(round to nearest, float -> int truncating and saturating with NaN -> 0, int -> int wrapping,
``!= 0``); for ``float`` a Python float, and for ``int`` a Python int wrapped (or, from a float,
saturated) to 64 bits, as the weak f64/i64 registers hold them.

The copy is compiled from the function's own AST (the frontend's, with absolute lines and the
file's columns) under the function's file name, so tracebacks, error lines, ``sys.settrace``
and pdb breakpoints by ``file:line`` work as for the original. Functions with no declared local
are not copied (:func:`typed_function` returns None).
"""

from __future__ import annotations

import ast
import copy
import functools
import linecache
import types
from collections.abc import Callable
from typing import Any

import numpy as np

from ..types import asType
from .source import FunctionSource
from .type_rules import BOOL, PY_FLOAT, PY_INT, ScalarType, cast_value, scalar_of

_I64 = np.dtype(np.int64)
_F64 = np.dtype(np.float64)
_OUTER = "__poplar_closure__"


def _as_python_float(v: Any) -> float:
    """The value a weak float (f64) local holds."""
    return float(cast_value(v, _F64))


def _as_python_int(v: Any) -> int:
    """The value a weak int (i64) local holds: int wraps, float truncates and saturates (NaN -> 0)."""
    return int(cast_value(v, _I64))


def converter(t: ScalarType, cast: Callable[[Any, np.dtype], Any] = cast_value) -> Callable[[Any], Any]:
    """The conversion a store into a local of type ``t`` applies (``cast`` for poplar types and
    bool)."""
    if t == PY_FLOAT:
        return _as_python_float
    if t == PY_INT:
        return _as_python_int
    return functools.partial(cast, dtype=t.dtype)


def converter_name(t: ScalarType) -> str:
    """The global name the copied function calls the conversion to ``t`` by."""
    kind = "bool" if t == BOOL else "float" if t == PY_FLOAT else "int" if t == PY_INT else t.dtype.name
    return f"__poplar_as_{kind}__"


def declared_locals(fn: FunctionSource) -> dict[str, ScalarType]:
    """The locals of ``fn`` declared with an annotation, and their types (as the typing pass reads
    them: ``float``, ``int``, ``bool`` or an expression naming a poplar type)."""
    declared: dict[str, ScalarType] = {}
    for node in ast.walk(fn.node):
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            ann = node.annotation
            if isinstance(ann, ast.Name) and ann.id in ("float", "int", "bool"):
                declared[node.target.id] = {"float": PY_FLOAT, "int": PY_INT, "bool": BOOL}[ann.id]
            else:  # the typing pass accepted it, so this evaluates to a poplar type
                declared[node.target.id] = scalar_of(
                    asType(eval(ast.unparse(ann), dict(fn.func.__globals__)))
                )
    return declared


def typed_function(fn: FunctionSource, g: dict[str, Any], method: bool,
                   rewrite: ast.NodeTransformer | None = None,
                   cast: Callable[[Any, np.dtype], Any] = cast_value) -> types.FunctionType | None:
    """A copy of ``fn.func`` (``compute`` when ``method``) with globals ``g`` whose stores to declared
    locals convert (with ``cast`` to poplar types), or None if it declares no local and there is
    no ``rewrite`` (a transformation applied to the function's AST first). Adds the conversions it
    calls to ``g``."""
    declared = declared_locals(fn)
    if not declared and rewrite is None:
        return None
    names = {name: converter_name(t) for name, t in declared.items()}
    for t in declared.values():
        g[converter_name(t)] = converter(t, cast)
    func = fn.func
    node = copy.deepcopy(fn.node)
    _shift_columns(node, fn)
    if rewrite is not None:
        node = rewrite.visit(node)
    node = _Converts(names).visit(node)
    params = [p for p in fn.params[1 if method else 0 :] if p in names]
    if params:  # parameters convert on entry, reported at the first statement's line
        first = node.body[0]
        node.body[:0] = [
            ast.copy_location(_assign(p, _convert(names[p], ast.Name(p, ast.Load()))), first) for p in params
        ]
    free = func.__code__.co_freevars
    body: ast.stmt = node
    if free:  # compile inside a function whose locals are the free names, to get the same cells
        args = ast.arguments(
            posonlyargs=[], args=[ast.arg(n) for n in free], kwonlyargs=[], kw_defaults=[], defaults=[]
        )
        extra = {"type_params": []} if "type_params" in ast.FunctionDef._fields else {}
        body = ast.FunctionDef(_OUTER, args, [node], [], None, **extra)
        ast.copy_location(body, node)
    module = ast.fix_missing_locations(ast.Module([body], []))
    code = _find_code(compile(module, func.__code__.co_filename, "exec", dont_inherit=True), func.__name__)
    if hasattr(code, "co_qualname"):
        code = code.replace(co_qualname=func.__code__.co_qualname)
    closure = None
    if free:
        cells = dict(zip(free, func.__closure__ or ()))
        closure = tuple(cells[n] for n in code.co_freevars)
    copied = types.FunctionType(code, g, func.__name__, func.__defaults__, closure)
    copied.__qualname__, copied.__doc__ = func.__qualname__, func.__doc__
    copied.__wrapped__ = func  # type: ignore[attr-defined]
    return copied


class _Converts(ast.NodeTransformer):
    """Wraps every value stored into a declared local in its conversion."""

    def __init__(self, names: dict[str, str]) -> None:
        self.names = names

    def _conv(self, target: ast.expr, value: ast.expr) -> ast.expr:
        if isinstance(target, ast.Name) and target.id in self.names:
            return ast.copy_location(_convert(self.names[target.id], value), value)
        return value

    def visit_Assign(self, node: ast.Assign) -> ast.AST:
        self.generic_visit(node)
        target = node.targets[0]
        if isinstance(target, ast.Tuple) and isinstance(node.value, ast.Tuple):
            node.value.elts = [self._conv(t, v) for t, v in zip(target.elts, node.value.elts)]
        else:
            node.value = self._conv(target, node.value)
        return node

    def visit_AnnAssign(self, node: ast.AnnAssign) -> ast.AST:
        self.generic_visit(node)
        if node.value is not None:
            node.value = self._conv(node.target, node.value)
        return node

    def visit_AugAssign(self, node: ast.AugAssign) -> ast.AST:
        self.generic_visit(node)
        target = node.target
        if not (isinstance(target, ast.Name) and target.id in self.names):
            return node
        result = ast.copy_location(ast.BinOp(ast.Name(target.id, ast.Load()), node.op, node.value), node)
        ast.copy_location(result.left, target)
        return ast.copy_location(_assign(target.id, _convert(self.names[target.id], result)), node)

    def visit_For(self, node: ast.For) -> ast.AST:
        self.generic_visit(node)
        target = node.target
        if isinstance(target, ast.Name) and target.id in self.names:
            load = ast.copy_location(ast.Name(target.id, ast.Load()), target)
            store = ast.copy_location(_assign(target.id, _convert(self.names[target.id], load)), target)
            node.body.insert(0, store)
        return node


def _convert(name: str, value: ast.expr) -> ast.Call:
    return ast.Call(ast.Name(name, ast.Load()), [value], [])


def _assign(name: str, value: ast.expr) -> ast.Assign:
    return ast.Assign([ast.Name(name, ast.Store())], value)


def _shift_columns(node: ast.AST, fn: FunctionSource) -> None:
    """The frontend parsed dedented source: put the columns back where they are in the file (for
    the carets of tracebacks)."""
    line = linecache.getline(fn.func.__code__.co_filename, fn.node.lineno)
    shift = len(line) - len(line.lstrip()) - fn.node.col_offset
    if shift <= 0 or not line.lstrip().startswith("def "):
        return
    for n in ast.walk(node):
        if hasattr(n, "col_offset") and n.col_offset is not None:
            n.col_offset += shift
        if getattr(n, "end_col_offset", None) is not None:
            n.end_col_offset += shift


def _find_code(code: types.CodeType, name: str) -> types.CodeType:
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            if const.co_name == name:
                return const
            if const.co_name == _OUTER:
                return _find_code(const, name)
    raise AssertionError(f"no code object for {name}")
