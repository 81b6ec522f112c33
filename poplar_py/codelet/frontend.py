"""Codelet frontend: a vertex class's ``compute`` (and its helpers) -> checked Python AST.

This pass parses the source of ``compute``, of every module-level helper function it calls
(from the same file) and of every method of the vertex class it calls as ``self.name(...)``
(methods read and write fields through ``self`` as compute does), moves every node to its
absolute line in that file, checks that only the supported Python subset is used, and
resolves every global name to one of: the ``math`` module, a ``math`` function, a helper
function, a numeric constant, or a supported builtin (``poplar_py``'s ``cdiv`` and ``cmod``
among them). Anything else raises :class:`CodeletCompileError` with the message
``"<file>:<line>: <where>: <what is wrong> (<construct>)"``. No types are inferred here.
The data model it produces is in :mod:`poplar_py.codelet.source`.
"""

from __future__ import annotations

import ast
import inspect
import math
import types
from typing import Any

import numpy as np

from ..errors import CodeletCompileError
from ..short_vectors import ShortVector
from ..templates import Policy, TypeParam
from ..types import Type
from ..vertex import LocalArray, Vertex
from .c_division import cdiv, cmod
from .prints import check_print, is_print
from .source import (
    BUILTINS,
    MATH_CONSTANTS,
    MATH_FUNCTIONS,
    FunctionSource,
    ParsedCodelet,
    Resolved,
    compile_error,
    helper_key,
    parse_function,
)

_UNSUPPORTED_STMTS = {
    ast.Try: "'try' statements",
    ast.With: "'with' statements",
    ast.Raise: "'raise' statements",
    ast.Delete: "'del' statements",
    ast.Global: "'global' statements",
    ast.Nonlocal: "'nonlocal' statements",
    ast.Import: "imports",
    ast.ImportFrom: "imports",
    ast.ClassDef: "class definitions",
    ast.FunctionDef: "nested functions",
    ast.AsyncFunctionDef: "async functions",
    ast.AsyncFor: "'async for'",
    ast.AsyncWith: "'async with'",
    ast.Match: "'match' statements",
}
_UNSUPPORTED_EXPRS = {
    ast.List: "lists",
    ast.Tuple: "tuples",
    ast.Dict: "dicts",
    ast.Set: "sets",
    ast.ListComp: "comprehensions",
    ast.SetComp: "comprehensions",
    ast.DictComp: "comprehensions",
    ast.GeneratorExp: "generator expressions",
    ast.Lambda: "lambdas",
    ast.JoinedStr: "strings",
    ast.Starred: "starred expressions",
    ast.NamedExpr: "':=' expressions",
    ast.Await: "'await' expressions",
    ast.Yield: "'yield' expressions",
    ast.YieldFrom: "'yield from' expressions",
    ast.Slice: "slices",
}
_ALLOWED_BINOPS = (
    ast.Add,
    ast.Sub,
    ast.Mult,
    ast.Div,
    ast.FloorDiv,
    ast.Mod,
    ast.Pow,
    ast.BitAnd,
    ast.BitOr,
    ast.BitXor,
    ast.LShift,
    ast.RShift,
)
_ALLOWED_CMPOPS = (ast.Eq, ast.NotEq, ast.Lt, ast.LtE, ast.Gt, ast.GtE)
#: poplar_py's codelet builtins for C's integer division, by name
C_DIVISION = {"cdiv": cdiv, "cmod": cmod}
_BUILTIN_ARITY = {"cdiv": 2, "cmod": 2}
_COUNTS = {1: "one argument", 2: "two arguments"}


def parse_codelet(cls: type) -> ParsedCodelet:
    """Run the frontend pass on a Vertex subclass."""
    if not (isinstance(cls, type) and issubclass(cls, Vertex)):
        raise CodeletCompileError(f"{cls!r} is not a Vertex subclass")
    owner = next((c for c in cls.__mro__ if "compute" in c.__dict__), Vertex)
    if owner is Vertex or (owner.__name__ == "MultiVertex" and owner.__module__ == Vertex.__module__):
        raise CodeletCompileError(f"{cls.__name__}: codelet has no compute() method")
    compute = owner.__dict__["compute"]
    if not isinstance(compute, types.FunctionType):
        raise CodeletCompileError(f"{cls.__name__}.compute must be a plain method")
    is_multi = bool(getattr(cls, "isMultiVertex", False))
    fn = parse_function(compute, f"{cls.__name__}.compute")
    fn.method = True
    expected = ["self", "workerId"] if is_multi else ["self"]
    if len(fn.params) != len(expected):
        sig = "compute(self, workerId)" if is_multi else "compute(self)"
        raise compile_error(fn, fn.node, f"the signature must be {sig}")
    parsed = ParsedCodelet(cls, fn.file, dict(cls.fields), is_multi, fn, {})
    _Checker(parsed, fn, is_method=True).run()
    return parsed


class _Checker(ast.NodeVisitor):
    """Checks one function against the subset and resolves its global names."""

    def __init__(self, parsed: ParsedCodelet, fn: FunctionSource, is_method: bool) -> None:
        self.parsed, self.fn, self.globals, self.is_method = parsed, fn, fn.func.__globals__, is_method

    def run(self) -> None:
        for stmt in self.fn.node.body:
            self.visit(stmt)

    def error(self, node: ast.AST, what: str) -> CodeletCompileError:
        return compile_error(self.fn, node, what)

    def generic_visit(self, node: ast.AST) -> None:
        for kind, what in {**_UNSUPPORTED_STMTS, **_UNSUPPORTED_EXPRS}.items():
            if isinstance(node, kind):
                raise self.error(node, f"{what} are not supported in codelets")
        allowed = (
            ast.Expr,
            ast.Assign,
            ast.AugAssign,
            ast.AnnAssign,
            ast.For,
            ast.While,
            ast.If,
            ast.Break,
            ast.Continue,
            ast.Pass,
            ast.Return,
            ast.BinOp,
            ast.UnaryOp,
            ast.BoolOp,
            ast.Compare,
            ast.IfExp,
            ast.Subscript,
            ast.expr_context,
            ast.operator,
            ast.unaryop,
            ast.boolop,
            ast.cmpop,
        )
        if not isinstance(node, allowed):
            raise self.error(node, f"'{type(node).__name__}' is not supported in codelets")
        super().generic_visit(node)

    # statements ---------------------------------------------------------------------------
    def visit_Assign(self, node: ast.Assign) -> None:
        if len(node.targets) != 1:
            raise self.error(node, "chained assignment is not supported")
        target = node.targets[0]
        if isinstance(target, ast.Tuple):
            if not isinstance(node.value, ast.Tuple) or len(node.value.elts) != len(target.elts):
                raise self.error(node, "tuple unpacking needs a tuple of the same length on the right")
            for t in target.elts:
                self._target(t)
            for v in node.value.elts:
                self.visit(v)
            return
        self._target(target)
        self.visit(node.value)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        if not isinstance(node.op, _ALLOWED_BINOPS):
            raise self.error(node, f"operator '{type(node.op).__name__}' is not supported")
        self._target(node.target)
        self.visit(node.value)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        if not isinstance(node.target, ast.Name) or node.value is None:
            raise self.error(node, "annotations are only supported on local variables with a value")
        self.visit(node.value)

    def _target(self, t: ast.expr) -> None:
        if isinstance(t, ast.Name) and not self._is_self(t):
            return
        if isinstance(t, ast.Attribute) and self._is_self(t.value):
            self._field_attr(t)
            return
        if isinstance(t, ast.Subscript):
            self.visit(t)
            return
        raise self.error(t, "can only assign to local names, self.<field> and vector elements")

    def visit_For(self, node: ast.For) -> None:
        if node.orelse:
            raise self.error(node, "'for ... else' is not supported")
        if not isinstance(node.target, ast.Name):
            raise self.error(node.target, "the loop variable must be a single name")
        it = node.iter
        if (
            isinstance(it, ast.Call)
            and isinstance(it.func, ast.Name)
            and it.func.id == "range"
            and self._resolve(it.func) == Resolved("builtin", "range")
        ):
            if not 1 <= len(it.args) <= 3 or it.keywords:
                raise self.error(it, "range() takes 1 to 3 positional arguments")
            for a in it.args:
                self.visit(a)
        else:
            self.visit(it)
        for s in node.body:
            self.visit(s)

    def visit_While(self, node: ast.While) -> None:
        if node.orelse:
            raise self.error(node, "'while ... else' is not supported")
        self.generic_visit(node)

    def visit_Assert(self, node: ast.Assert) -> None:
        msg = node.msg
        if msg is not None and not (isinstance(msg, ast.Constant) and isinstance(msg.value, str)):
            raise self.error(node, "an assert message must be a string literal")
        self.visit(node.test)
        text = ast.unparse(node.test)
        self.parsed.asserts[node.lineno] = text if msg is None else f"{text}: {msg.value}"

    def visit_Expr(self, node: ast.Expr) -> None:
        if isinstance(node.value, ast.Constant):
            raise self.error(node, "constant expression statements are not supported")
        if is_print(node.value):
            assert isinstance(node.value, ast.Call)
            self._builtin_print(node.value)
            check_print(node.value, self.visit, self.error)
            self.parsed.prints = True
            return
        self.visit(node.value)

    def _builtin_print(self, node: ast.Call) -> None:
        if "print" in self.fn.local_names or "print" in self.globals:
            raise self.error(node, "'print' in a codelet must be Python's print")

    def visit_Return(self, node: ast.Return) -> None:
        if node.value is not None and not (isinstance(node.value, ast.Constant) and node.value.value is None):
            self.visit(node.value)

    # expressions ----------------------------------------------------------------------------
    def visit_Constant(self, node: ast.Constant) -> None:
        if isinstance(node.value, (bool, int, float)):
            return
        what = (
            "strings"
            if isinstance(node.value, (str, bytes))
            else f"constants of type {type(node.value).__name__}"
        )
        raise self.error(node, f"{what} are not supported in codelets")

    def visit_BinOp(self, node: ast.BinOp) -> None:
        if not isinstance(node.op, _ALLOWED_BINOPS):
            raise self.error(node, f"operator '{type(node.op).__name__}' is not supported")
        self.generic_visit(node)

    def visit_Compare(self, node: ast.Compare) -> None:
        if self._type_test(node):
            return
        for op in node.ops:
            if not isinstance(op, _ALLOWED_CMPOPS):
                raise self.error(node, f"comparison '{type(op).__name__}' is not supported")
        self.generic_visit(node)

    def _type_test(self, node: ast.Compare) -> bool:
        """Whether ``node`` compares two types (``AccT == FLOAT``: C++'s ``std::is_same``), which
        is known when compiling; a type compared otherwise is an error."""
        names = [node.left, *node.comparators]
        kinds = [isinstance(n, ast.Name) and n.id not in self.fn.local_names
                 and self._resolve(n).kind == "type" for n in names]
        if not any(kinds):
            return False
        if not all(kinds) or len(node.ops) != 1 or not isinstance(node.ops[0], (ast.Eq, ast.NotEq)):
            raise self.error(node, "a type compares to another type only, with == or != (T == FLOAT)")
        return True

    def visit_Subscript(self, node: ast.Subscript) -> None:
        if isinstance(node.slice, (ast.Slice, ast.Tuple)):
            raise self.error(node, "only single-index subscripts are supported")
        self.visit(node.value)
        self.visit(node.slice)

    def visit_Name(self, node: ast.Name) -> None:
        if self._is_self(node):
            raise self.error(node, "'self' can only be used as self.<field>")
        if node.id in self.fn.local_names:
            return
        r = self._resolve(node)
        if r.kind in ("math_module", "helper", "builtin", "type", "poplar_module", "short_vector"):
            raise self.error(node, f"'{node.id}' can only be called, not used as a value")

    def visit_Attribute(self, node: ast.Attribute) -> None:
        if self._is_self(node.value):
            self._field_attr(node)
            return
        if isinstance(node.value, ast.Name) and node.value.id not in self.fn.local_names \
                and self._resolve(node.value).kind == "math_module":
            if node.attr not in MATH_CONSTANTS:
                raise self.error(node, f"math.{node.attr} is not supported as a value")
            return
        if self._policy_value(node.value):  # a policy's constant: checked by the typing pass
            return
        raise self.error(node, "attribute access other than self.<field>, math.<name> and "
                               "<policy>.<name> is not supported")

    def _policy_value(self, node: ast.expr) -> bool:
        """Whether ``node`` may hold an operation policy: ``self.<parameter>``, a local or a
        global policy class (the typing pass checks what it really holds)."""
        if isinstance(node, ast.Attribute) and self._is_self(node.value):
            value = self.parsed.constants.get(node.attr)
            return isinstance(value, type) and issubclass(value, Policy)
        if isinstance(node, ast.Name) and not self._is_self(node):
            if node.id in self.fn.local_names:
                return True
            return self._resolve(node).kind == "policy"
        return False

    def visit_Call(self, node: ast.Call) -> None:
        if is_print(node):
            raise self.error(node, "print() can only be called as a statement of its own")
        if node.keywords:
            raise self.error(node, "keyword arguments are not supported")
        f = node.func
        if isinstance(f, ast.Attribute) and self._is_self(f.value) and f.attr == "numWorkers":
            if not self.parsed.is_multi or node.args:
                raise self.error(node, "self.numWorkers() is only available in a MultiVertex")
            return
        if isinstance(f, ast.Attribute) and self._is_self(f.value):
            self._method(node, f.attr)
            for a in node.args:
                self.visit(a)
            return
        if isinstance(f, ast.Attribute) and self._policy_value(f.value):
            for a in node.args:  # a policy's function: found and checked by the typing pass
                self.visit(a)
            return
        name = self._callee(node)
        if name is None:
            raise self.error(
                node,
                "only math functions, min/max/abs/len/casts, LocalArray, cdiv/cmod, helper functions "
                "and methods of this file and policy functions can be called",
            )
        kind, target = name
        if kind == "short_vector":
            self._short_vector_call(node, target)
            return
        if kind == "type":
            if len(node.args) != 1:
                raise self.error(node, f"the cast {ast.unparse(f)}() takes exactly one argument")
            self.visit(node.args[0])
            return
        if kind == "builtin" and target == "LocalArray":
            if len(node.args) != 2:
                raise self.error(node, "LocalArray(type, size) takes two arguments")
            self._type_name(node.args[0])
            self.visit(node.args[1])
            return
        if kind == "math":
            arities = (1, 2) if target == "log" else (MATH_FUNCTIONS[target],)  # math.log(x, base)
            if len(node.args) not in arities:
                raise self.error(node, f"math.{target}() takes {' or '.join(map(str, arities))} argument(s)")
        if kind == "builtin":
            if target == "range":
                raise self.error(node, "range() can only be used as the iterable of a for loop")
            if target in ("min", "max") and len(node.args) < 2:
                raise self.error(node, f"{target}() needs at least 2 arguments")
            arity = _BUILTIN_ARITY.get(target, 1)
            if target not in ("min", "max") and len(node.args) != arity:
                raise self.error(node, f"{target}() takes exactly {_COUNTS[arity]}")
        for a in node.args:
            self.visit(a)

    def _short_vector_call(self, node: ast.Call, target: str) -> None:
        """``float2(a, b)``, ``float2(a)``, ``float2.load(v, i)``, ``float2.store(v, i, x)``."""
        f = node.func
        vector = self._resolve(f.value if isinstance(f, ast.Attribute) else f).value  # type: ignore[arg-type]
        arities = {"load": (2,), "store": (3,)}.get(target, (1, vector.width))
        if len(node.args) not in arities:
            what = f"{vector.name}.{target}()" if target in ("load", "store") else f"{vector.name}()"
            raise self.error(node, f"{what} takes {' or '.join(map(str, arities))} argument(s)")
        for a in node.args:
            self.visit(a)

    def _callee(self, node: ast.Call) -> tuple[str, str] | None:
        f = node.func
        if (
            isinstance(f, ast.Attribute)
            and isinstance(f.value, ast.Name)
            and f.value.id not in self.fn.local_names
            and self._resolve(f.value).kind == "math_module"
        ):
            if f.attr not in MATH_FUNCTIONS:
                raise self.error(node, f"math.{f.attr}() is not supported")
            return "math", f.attr
        if (
            isinstance(f, ast.Attribute)
            and isinstance(f.value, ast.Name)
            and f.value.id not in self.fn.local_names
            and self._resolve(f.value).kind == "poplar_module"
        ):
            if f.attr not in C_DIVISION:
                raise self.error(node, f"poplar_py.{f.attr}() cannot be called through the module in "
                                       f"codelets (only {' and '.join(C_DIVISION)}); import the name: "
                                       f"from poplar_py import {f.attr}")
            return "builtin", f.attr
        if (
            isinstance(f, ast.Attribute)
            and isinstance(f.value, ast.Name)
            and f.value.id not in self.fn.local_names
            and self._resolve(f.value).kind == "short_vector"
        ):
            if f.attr not in ("load", "store"):
                raise self.error(node, f"{f.value.id}.{f.attr}() is not supported (only load and store)")
            return "short_vector", f.attr
        if isinstance(f, ast.Name) and f.id not in self.fn.local_names:
            r = self._resolve(f)
            if r.kind in ("math", "helper", "builtin", "type"):
                return r.kind, r.value
            if r.kind == "short_vector":
                return r.kind, "make"
        return None

    def _method(self, node: ast.Call, name: str) -> None:
        """``self.<name>(...)``: a method of the vertex class, checked as a helper once."""
        cls = self.parsed.cls
        func = inspect.getattr_static(cls, name, None)
        if name in self.parsed.fields or name in self.parsed.constants:
            raise self.error(node, f"'{name}' is a field of {cls.__name__}, not a method")
        if name == "compute" or not isinstance(func, types.FunctionType):
            what = "compute() cannot be called" if name == "compute" else \
                f"{cls.__name__} has no method '{name}' (a plain def in the class)"
            raise self.error(node, what)
        if inspect.getsourcefile(func) != self.fn.file:
            raise self.error(node, f"method '{name}' is not defined in the codelet's file")
        self.parsed.methods[name] = check_helper(self.parsed, func, method=True)

    def _type_name(self, node: ast.expr) -> None:
        """LocalArray's element type: a poplar type, a type parameter, float, int or bool."""
        if isinstance(node, ast.Name) and node.id not in self.fn.local_names:
            r = self._resolve(node)
            if r.kind == "type" or (r.kind == "builtin" and r.value in ("float", "int", "bool")):
                return
        raise self.error(node, "the element type of a LocalArray must be a poplar type, a type "
                               "parameter, float, int or bool")

    # name resolution --------------------------------------------------------------------------
    def _is_self(self, node: ast.expr) -> bool:
        return self.is_method and isinstance(node, ast.Name) and node.id == "self"

    def _field_attr(self, node: ast.Attribute) -> None:
        params = self._parameters()
        if node.attr not in self.parsed.fields and node.attr not in params:
            also = f" nor a template constant ({', '.join(sorted(params))})" if params else ""
            raise self.error(node, f"'{node.attr}' is not a field of {self.parsed.cls.__name__}{also}")

    def _parameters(self) -> set[str]:
        """The class's template constants and policies (``self.R``, ``self.Op``)."""
        return {k for k, v in self.parsed.constants.items() if not isinstance(v, Type)}

    def _resolve(self, node: ast.Name) -> Resolved:
        name = node.id
        if name in self.fn.globals_used:
            return self.fn.globals_used[name]
        if name not in self.globals:
            if name in BUILTINS:
                r = Resolved("builtin", name)
            else:
                raise self.error(node, f"unknown name '{name}'")
        else:
            r = self._classify(node, self.globals[name])
        self.fn.globals_used[name] = r
        return r

    def _classify(self, node: ast.Name, value: Any) -> Resolved:
        if value is math:
            return Resolved("math_module")
        if value is LocalArray:
            return Resolved("builtin", "LocalArray")
        if isinstance(value, types.ModuleType) and value.__name__ == "poplar_py":  # poplar.cdiv(a, b)
            return Resolved("poplar_module")
        for name, builtin in C_DIVISION.items():
            if value is builtin:
                return Resolved("builtin", name)
        if isinstance(value, Type):
            return Resolved("type", value)
        if isinstance(value, ShortVector):
            return Resolved("short_vector", value)
        if isinstance(value, TypeParam):
            bound = self.parsed.constants.get(value.name)
            if not isinstance(bound, Type):
                raise self.error(node, f"type parameter '{value.name}' is not a template parameter of "
                                       f"{self.parsed.cls.__name__}")
            return Resolved("type", bound)
        if isinstance(value, type) and issubclass(value, Policy):
            return Resolved("policy", value)
        if callable(value) and getattr(math, getattr(value, "__name__", ""), None) is value:
            if value.__name__ not in MATH_FUNCTIONS:
                raise self.error(node, f"math.{value.__name__}() is not supported")
            return Resolved("math", value.__name__)
        if isinstance(value, types.FunctionType):
            if inspect.getsourcefile(value) != self.fn.file:
                raise self.error(node, f"function '{node.id}' is not defined in the codelet's file")
            return Resolved("helper", check_helper(self.parsed, value))
        if isinstance(value, (bool, int, float)) or (
            isinstance(value, np.generic) and value.dtype.kind in "biuf"
        ):
            if isinstance(value, int) and not isinstance(value, bool) and not -(2**63) <= value < 2**64:
                raise self.error(node, f"global '{node.id}' is out of the 64-bit integer range")
            return Resolved("const", value)
        raise self.error(
            node,
            f"global '{node.id}' of type {type(value).__name__} cannot be used in codelets "
            "(only numeric constants, math and helper functions)",
        )


def check_helper(parsed: ParsedCodelet, func: types.FunctionType, method: bool = False) -> str:
    """Parse and check a helper function, a method of the vertex class (``method``: its first
    parameter is the vertex) or a policy's function of ``parsed`` once; its key."""
    key = helper_key(func)
    if key not in parsed.helpers:
        where = f"{'method' if method else 'helper'} '{func.__qualname__}' (used by {parsed.cls.__name__})"
        fn = parse_function(func, where)
        fn.method = method
        if method and not fn.params:
            raise compile_error(fn, fn.node, "a method needs 'self' as its first parameter")
        parsed.helpers[key] = fn  # registered before checking: recursion is found by the typer
        _Checker(parsed, fn, is_method=method).run()
    return key
