"""The typing pass: every expression and local of ``compute`` and of its helpers gets a type.

Helpers are typed once per tuple of argument types (a specialisation, inlined by the codegen).
Local types are found by a fixpoint: the function body is walked until no local's type changes
(a loop can widen a local assigned after its first use), then once more to record the final type
of every expression and report errors. The rules are those of :mod:`poplar_py.codelet.type_rules`.
"""

from __future__ import annotations

import ast
import contextlib
from dataclasses import dataclass, field

from ..types import asType
from ..vertex import Direction, FieldKind
from .expression_types import ExpressionTyper, PendingTypeError
from .prints import is_print, values
from .source import FunctionSource, ParsedCodelet, compile_error
from .type_rules import (
    BOOL,
    NONE,
    PY_FLOAT,
    PY_INT,
    CType,
    PolicyType,
    ScalarType,
    ShortVecType,
    VectorType,
    forget,
    join,
    scalar_of,
)


@dataclass
class FunctionTypes:
    """Types found for one function (compute, or one specialisation of a helper)."""

    fn: FunctionSource
    param_types: tuple[CType, ...]
    locals: dict[str, CType] = field(default_factory=dict)
    exprs: dict[int, CType] = field(default_factory=dict)  # id(expression or AugAssign node) -> type
    compares: dict[int, list[ScalarType]] = field(default_factory=dict)  # id(Compare) -> operand types
    calls: dict[int, FunctionTypes] = field(default_factory=dict)  # id(Call of a helper) -> callee
    returns: CType = NONE

    def type(self, node: ast.AST) -> CType:
        return self.exprs[id(node)]


@dataclass
class TypedCodelet:
    """Output of the typing pass."""

    parsed: ParsedCodelet
    compute: FunctionTypes
    #: the vertex state fields compute (or a helper) writes, in field order: they live in tile
    #: memory, where the new value stays for the next run
    written: tuple[str, ...] = ()


def infer_types(parsed: ParsedCodelet) -> TypedCodelet:
    """Run the typing pass: every expression and local of compute and its helpers gets a type."""
    program = _Program(parsed)
    params: tuple[CType, ...] = (NONE, PY_INT) if parsed.is_multi else (NONE,)
    compute = program.function(parsed.compute, params, None)
    return TypedCodelet(parsed, compute, tuple(f for f in parsed.fields if f in program.written))


class _Program:
    def __init__(self, parsed: ParsedCodelet) -> None:
        self.parsed = parsed
        self.done: dict[tuple, FunctionTypes] = {}
        self.active: set[str] = set()
        self.fields = list(parsed.fields.values())
        self.written: set[str] = set()  # state fields stored to, directly or through a vector alias

    def function(self, fn: FunctionSource, params: tuple[CType, ...], call: ast.Call | None) -> FunctionTypes:
        """``fn`` typed for these argument types: one specialisation per types and known values
        (a helper called with ``R == 6`` and with ``R == 4`` is typed, and compiled, twice)."""
        key = (fn.key, params, tuple(getattr(p, "value", None) for p in params))
        if key in self.done:
            return self.done[key]
        if fn.key in self.active:
            assert call is not None
            raise compile_error(fn, call, f"recursive call of '{fn.name}' is not supported")
        self.active.add(fn.key)
        try:
            result = _FunctionTyper(self, fn, params).infer()
        finally:
            self.active.discard(fn.key)
        self.done[key] = result
        return result


class _FunctionTyper(ExpressionTyper):
    def __init__(self, program: _Program, fn: FunctionSource, params: tuple[CType, ...]) -> None:
        self.program, self.fn = program, fn
        self.is_compute = fn is program.parsed.compute
        self.has_self = fn.method  # compute and methods: self.<field> is the vertex's
        self.out = FunctionTypes(fn, params)
        self.declared: dict[str, ScalarType] = {}
        self.final = False
        self.changed = False
        self.bare_return: ast.Return | None = None
        self.assigned: set[str] = set(fn.params)  # final pass: locals assigned textually before here
        self.loop_depth = 0
        self.constant_names = _constant_names(fn)  # locals that keep a known value

    def error(self, node: ast.AST, what: str) -> Exception:
        return compile_error(self.fn, node, what)

    def infer(self) -> FunctionTypes:
        for node in ast.walk(self.fn.node):
            if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                self.declared[node.target.id] = self._annotation(node.annotation)
        self.out.locals.update(self.declared)
        first = 1 if self.has_self else 0  # self is the vertex, not a local
        for name, t in zip(self.fn.params[first:], self.out.param_types[first:]):
            self._assign(name, t, self.fn.node)
        for _ in range(50):
            self.changed = False
            self._body(self.fn.node.body)
            if not self.changed:
                break
        self.final = True
        self.assigned = set(self.fn.params)
        self.out.exprs.clear()
        self._body(self.fn.node.body)
        if self.out.returns is not NONE and self.bare_return is not None:
            raise self.error(self.bare_return, "a helper must return a value on every path, or never")
        if self.out.returns is not NONE and not self.is_compute and not _always_returns(self.fn.node.body):
            raise self.error(self.fn.node, f"'{self.fn.name}' must end with a return statement on every path")
        return self.out

    def _annotation(self, ann: ast.expr) -> ScalarType:
        if isinstance(ann, ast.Name) and ann.id in ("float", "int", "bool"):
            return {"float": PY_FLOAT, "int": PY_INT, "bool": BOOL}[ann.id]
        try:
            return scalar_of(asType(eval(ast.unparse(ann), dict(self.fn.func.__globals__))))
        except Exception:
            raise self.error(ann, "local annotations must be float, int, bool or a poplar type") from None

    def _assign(self, name: str, t: CType, node: ast.AST) -> None:
        self.assigned.add(name)
        if name not in self.constant_names:
            t = forget(t)
        if name in self.declared:
            if not isinstance(t, ScalarType):
                raise self.error(node, f"cannot assign a {t} to '{name}', declared {self.declared[name]}")
            return
        old = self.out.locals.get(name)
        try:
            new = t if old is None else join(old, t)
        except TypeError as exc:
            raise self.error(node, f"local '{name}': {exc}") from None
        if new is NONE:
            raise self.error(node, "a helper that returns nothing cannot be used as a value")
        if new != old:
            self.out.locals[name] = new
            self.changed = True

    # statements -------------------------------------------------------------------------------
    def _body(self, stmts: list[ast.stmt]) -> None:
        for s in stmts:
            with contextlib.suppress(PendingTypeError):  # typed in a later pass of the fixpoint
                getattr(self, "_" + type(s).__name__)(s)

    def _Pass(self, node: ast.stmt) -> None:
        pass

    _Break = _Continue = _Pass

    def _Expr(self, node: ast.Expr) -> None:
        if is_print(node.value):
            assert isinstance(node.value, ast.Call)
            self._print(node.value)
            return
        self.expr(node.value, allow_none=True)

    def _print(self, call: ast.Call) -> None:
        """A print statement: its values must be numbers or bools (codelet.prints)."""
        for v in values(call):
            t = self.expr(v)
            if not isinstance(t, ScalarType):
                raise self.error(v, f"print() can print numbers and bools, not a {t} "
                                    "(print its elements one by one)")
        self.out.exprs[id(call)] = NONE

    def _Assign(self, node: ast.Assign) -> None:
        target = node.targets[0]
        if isinstance(target, ast.Tuple):
            assert isinstance(node.value, ast.Tuple)
            values = [self.expr(v) for v in node.value.elts]
            for t, v in zip(target.elts, values):
                self._store(t, v)
        else:
            self._store(target, self.expr(node.value))

    def _AnnAssign(self, node: ast.AnnAssign) -> None:
        assert node.value is not None
        self._store(node.target, self.expr(node.value))

    def _AugAssign(self, node: ast.AugAssign) -> None:
        current = self.expr(node.target)
        value = self.expr(node.value)
        result = self._binop(node, node.op, current, value, node.value)
        self.out.exprs[id(node)] = result
        self._store(node.target, result)

    def _store(self, target: ast.expr, t: CType) -> None:
        if isinstance(target, ast.Name):
            self._assign(target.id, t, target)
            if isinstance(t, VectorType) and t.size is not None:
                self.program.parsed.name_array(t.field, target.id)
            return
        if not isinstance(t, ScalarType):
            raise self.error(target, f"cannot store a {t} into a field element")
        if isinstance(target, ast.Attribute):
            spec = self.program.parsed.fields.get(target.attr)
            if spec is None:
                raise self.error(target, f"cannot assign to template constant '{target.attr}': it is fixed "
                                         "when the class is instantiated")
            if spec.kind is not FieldKind.SCALAR:
                raise self.error(target, f"cannot assign a whole vector field '{target.attr}'")
            if spec.direction is Direction.STATE:
                self.program.written.add(target.attr)
            elif not spec.direction.writes:
                raise self.error(target, f"cannot write to {_role(spec.direction)} field '{target.attr}'")
            return
        assert isinstance(target, ast.Subscript)
        container = self.expr(target.value)
        if isinstance(container, ShortVecType):
            raise self.error(target, f"a {container} is a value: its elements cannot be assigned "
                                     f"(build a new one, {container}(...))")
        self.expr(target)
        assert isinstance(container, VectorType)
        if container.is_list:
            raise self.error(target, "cannot assign a whole vector of a vector list")
        self._writes(target, container)

    def _writes(self, node: ast.AST, container: VectorType) -> None:
        """``node`` writes into ``container``: it must be writable (vertex state is, and is then
        written state)."""
        if not container.writable:
            spec = self.program.fields[container.field]
            raise self.error(node, f"cannot write to {_role(spec.direction)} field '{spec.name}'")
        if container.field < len(self.program.fields):
            spec = self.program.fields[container.field]
            if spec.direction is Direction.STATE:
                self.program.written.add(spec.name)

    def _For(self, node: ast.For) -> None:
        it = node.iter
        target = node.target
        assert isinstance(target, ast.Name)
        with contextlib.suppress(PendingTypeError):  # the body is typed even when the loop header is pending
            if is_range(node):
                assert isinstance(it, ast.Call)
                for a in it.args:
                    t = self.expr(a)
                    if not (isinstance(t, ScalarType) and t.is_int):
                        raise self.error(a, f"range() needs integer arguments, not {t}")
                if len(it.args) == 3 and t.value == 0 and self.final:  # Python's ValueError, found early
                    raise self.error(it, "range() arg 3 must not be zero")
                self._assign(target.id, PY_INT, target)
            else:
                t = self.expr(it)
                if not isinstance(t, VectorType):
                    raise self.error(it, f"can only iterate over range() or a vector, not a {t}")
                self._assign(target.id, t.row() if t.is_list else t.elem, target)
        self.loop_depth += 1
        self._body(node.body)
        self.loop_depth -= 1

    def _While(self, node: ast.While | ast.If) -> None:
        test = None
        with contextlib.suppress(PendingTypeError):  # the bodies are typed even when the test is pending
            test = self._condition(node.test)
        loop = isinstance(node, ast.While)
        self.loop_depth += loop
        if loop or test is None or test.value is None:
            self._body(node.body)
            self._body(node.orelse)
        else:  # a test known when compiling (a template constant): only its branch is compiled
            self._body(node.body if test.value else node.orelse)
        self.loop_depth -= loop

    _If = _While

    def _Assert(self, node: ast.Assert) -> None:
        self._condition(node.test)

    def _Return(self, node: ast.Return) -> None:
        v = node.value
        t: CType = NONE if v is None or (isinstance(v, ast.Constant) and v.value is None) else self.expr(v)
        if self.is_compute:
            if t is not NONE and t != BOOL:
                raise self.error(node, "compute() must return True, False, None or a bool")
            return
        if isinstance(t, (VectorType, PolicyType)):
            raise self.error(node, "helpers can only return numbers and short vectors")
        if t is NONE:
            self.bare_return = node
            return
        try:
            self.out.returns = t if self.out.returns is NONE else join(self.out.returns, t)
        except TypeError as exc:
            raise self.error(node, f"return value: {exc}") from None

    def _condition(self, node: ast.expr) -> ScalarType:
        t = self.expr(node)
        if not isinstance(t, ScalarType):
            raise self.error(node, f"a {t} cannot be used as a condition")
        return t

    # expressions ------------------------------------------------------------------------------
def _constant_names(fn: FunctionSource) -> set[str]:
    """Locals whose value, when known, is kept: parameters never assigned in the body, and locals
    assigned once, by a plain assignment at the top level of the body."""
    stores: dict[str, int] = {}
    for n in ast.walk(fn.node):
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
            stores[n.id] = stores.get(n.id, 0) + 1
    top = {s.targets[0].id for s in fn.node.body
           if isinstance(s, ast.Assign) and isinstance(s.targets[0], ast.Name)}
    return {p for p in fn.params if p not in stores} | {n for n in top if stores.get(n) == 1}


def is_range(node: ast.For) -> bool:
    """Whether a for loop iterates over range(...) (the frontend made sure 'range' is the builtin)."""
    it = node.iter
    return isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id == "range"


def _role(direction: Direction) -> str:
    return "state" if direction is Direction.STATE else f"{direction.value}"


def _always_returns(stmts: list[ast.stmt]) -> bool:
    if not stmts:
        return False
    last = stmts[-1]
    if isinstance(last, ast.Return):
        return True
    if isinstance(last, ast.If):
        return _always_returns(last.body) and _always_returns(last.orelse)
    return False
