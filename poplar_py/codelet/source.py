"""Parsed codelet source: the data model every pass shares, and parsing of one function.

A codelet is a :class:`ParsedCodelet`: the vertex class's fields and the :class:`FunctionSource`
of ``compute`` and of each helper it calls, whose AST nodes carry absolute line numbers in the
codelet's file and whose global names are resolved (:class:`Resolved`). The tables here say which
builtins and ``math`` names the codelet language has.
"""

from __future__ import annotations

import ast
import inspect
import math
import textwrap
import types
from dataclasses import dataclass, field
from typing import Any

from ..errors import CodeletCompileError
from ..vertex import FieldSpec

BUILTINS = frozenset({"len", "range", "min", "max", "abs", "float", "int", "bool", "LocalArray"})
MATH_CONSTANTS = {"pi": math.pi, "e": math.e, "inf": math.inf, "nan": math.nan, "tau": math.tau}
#: math functions -> number of arguments (math.log also takes an optional base).
MATH_FUNCTIONS = {
    **dict.fromkeys(
        (
            "exp",
            "exp2",
            "expm1",
            "log",
            "log2",
            "log10",
            "log1p",
            "sqrt",
            "sin",
            "cos",
            "tan",
            "asin",
            "acos",
            "atan",
            "sinh",
            "cosh",
            "tanh",
            "erf",
            "erfc",
            "fabs",
            "floor",
            "ceil",
            "trunc",
            "isnan",
            "isinf",
            "isfinite",
        ),
        1,
    ),
    **dict.fromkeys(("pow", "fmod", "atan2", "hypot", "copysign"), 2),
}


@dataclass(frozen=True)
class Resolved:
    """What a global name in a codelet refers to."""

    # "math_module", "math", "helper", "const", "builtin", "type", "policy", "poplar_module", "short_vector"
    kind: str
    value: Any = None  # math function name, helper key, constant value, builtin name, Type, policy class
    # or ShortVector


@dataclass
class FunctionSource:
    """One parsed function: ``compute`` or a helper, with absolute line numbers."""

    name: str
    node: ast.FunctionDef
    file: str
    where: str  # how error messages name it: "SumVertex.compute" or "helper 'f' (used by SumVertex)"
    params: list[str]
    local_names: set[str]
    func: types.FunctionType  # the Python function itself (interpreter mode runs it)
    globals_used: dict[str, Resolved] = field(default_factory=dict)
    method: bool = False  # compute, or a method of the vertex class called as self.name(...)

    @property
    def arg_names(self) -> list[str]:
        """The parameters a call passes arguments to (a method's ``self`` is the vertex)."""
        return self.params[1:] if self.method else self.params

    @property
    def key(self) -> str:
        """How helpers are told apart: module and qualified name (``reduce.ReduceAdd.update``)."""
        return helper_key(self.func)


def helper_key(func: types.FunctionType) -> str:
    return f"{func.__module__}.{func.__qualname__}"


@dataclass
class ParsedCodelet:
    """Output of the frontend pass."""

    cls: type
    file: str
    fields: dict[str, FieldSpec]
    is_multi: bool
    compute: FunctionSource
    helpers: dict[str, FunctionSource]  # by FunctionSource.key (methods called as self.name(...) too)
    asserts: dict[int, str] = field(default_factory=dict)  # line -> the assert as error messages show it
    methods: dict[str, str] = field(default_factory=dict)  # self.<name>(...) -> the helper key it calls
    #: local arrays, numbered after the fields in error records: (file, line) of the LocalArray call
    #: and the name of the local it was assigned to
    arrays: list[tuple[str, int, str]] = field(default_factory=list)
    prints: bool = False  # compute or a helper has a print statement (codelet.prints)

    def array_index(self, file: str, line: int) -> int:
        """The error-record number of the local array made at ``file:line``."""
        for k, (f, n, _) in enumerate(self.arrays):
            if (f, n) == (file, line):
                return len(self.fields) + k
        self.arrays.append((file, line, "array"))
        return len(self.fields) + len(self.arrays) - 1

    def name_array(self, index: int, name: str) -> None:
        file, line, old = self.arrays[index - len(self.fields)]
        if old == "array":
            self.arrays[index - len(self.fields)] = (file, line, name)

    def describe_field(self, index: int) -> str:
        """A field, or a local array, by its number in error records."""
        if index < len(self.fields):
            return f"field '{list(self.fields)[index]}'"
        _, line, name = self.arrays[index - len(self.fields)]
        return f"local array '{name}' (made at line {line})"

    @property
    def constants(self) -> dict[str, Any]:
        """The class's bound template parameters (``self.R``, types, policies)."""
        return dict(getattr(self.cls, "constants", {}))

    def fingerprint(self) -> str:
        """Everything the generated code depends on, as text: the ASTs without columns, plus line numbers
        (they end up in error records), fields and what global names resolved to."""
        constants = sorted((k, repr(v)) for k, v in self.constants.items())
        parts = [self.cls.__name__, repr(self.is_multi), repr(constants), repr(sorted(self.methods.items()))]
        parts += [f"{f.name}:{f.direction.name}:{f.kind.name}:{f.type.name}" for f in self.fields.values()]
        for fn in [self.compute, *self.helpers.values()]:
            parts.append(ast.dump(fn.node))
            parts.append(repr([getattr(n, "lineno", 0) for n in ast.walk(fn.node)]))
            parts.append(repr(sorted((k, v.kind, repr(v.value)) for k, v in fn.globals_used.items())))
        return "\n".join(parts)


def compile_error(fn: FunctionSource, node: ast.AST, what: str) -> CodeletCompileError:
    """The error for ``node`` in ``fn``: ``"<file>:<line>: <where>: <what> (<construct>)"``."""
    line = getattr(node, "lineno", fn.node.lineno)
    snippet = ast.unparse(node).splitlines()[0] if isinstance(node, (ast.stmt, ast.expr)) else ""
    if len(snippet) > 60:
        snippet = snippet[:57] + "..."
    return CodeletCompileError(f"{fn.file}:{line}: {fn.where}: {what}" + (f" ({snippet})" if snippet else ""))


def parse_function(func: types.FunctionType, where: str) -> FunctionSource:
    """Parse one function's source, with line numbers made absolute in its file and the docstring
    dropped; checks only its signature (no defaults, keywords, varargs or decorators but
    ``@staticmethod``)."""
    try:
        lines, start = inspect.getsourcelines(func)
        file = inspect.getsourcefile(func) or func.__code__.co_filename
    except (OSError, TypeError) as exc:
        raise CodeletCompileError(f"{where}: cannot read the source of the codelet ({exc})") from None
    tree = ast.parse(textwrap.dedent("".join(lines)))
    ast.increment_lineno(tree, start - 1)
    node = tree.body[0]
    if isinstance(node, ast.AsyncFunctionDef):
        raise CodeletCompileError(f"{file}:{node.lineno}: {where}: 'async def' is not supported in codelets")
    if not isinstance(node, ast.FunctionDef):  # a lambda, or a function made some other way
        raise CodeletCompileError(f"{file}:{start}: {where}: must be defined with 'def'")
    fn = FunctionSource(func.__qualname__, node, file, where, [a.arg for a in node.args.args], set(), func)
    a = node.args
    if a.vararg or a.kwarg or a.kwonlyargs or a.posonlyargs or a.defaults:
        raise compile_error(fn, node, "default, keyword and variable arguments are not supported")
    for d in node.decorator_list:  # a policy's functions are static methods
        if not (isinstance(d, ast.Name) and d.id == "staticmethod"):
            raise compile_error(fn, d, "decorators other than @staticmethod are not supported")
    body = node.body
    if (
        body
        and isinstance(body[0], ast.Expr)
        and isinstance(body[0].value, ast.Constant)
        and isinstance(body[0].value.value, str)
    ):
        node.body = body[1:] or [ast.Pass(lineno=body[0].lineno, col_offset=0)]  # drop the docstring
    fn.local_names = set(fn.params) | {
        n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
    }
    return fn
