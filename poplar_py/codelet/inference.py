"""The typing pass: every expression and local of ``compute`` and of its helpers gets a type.

Helpers are typed once per tuple of argument types (a specialisation, inlined by the codegen).
Local types are found by a fixpoint: the function body is walked until no local's type changes
(a loop can widen a local assigned after its first use), then once more to record the final type
of every expression and report errors. The rules are those of :mod:`poplar_py.codelet.type_rules`.
"""

from __future__ import annotations

import ast
import contextlib
import itertools
import types
from dataclasses import dataclass, field

from ..short_vectors import ShortVector
from ..types import Type, asType
from ..vertex import Direction, FieldKind
from .c_division import cdiv, cmod
from .frontend import check_helper
from .prints import is_print, values
from .short_vec import binop_vector_type, vector_type
from .source import MATH_CONSTANTS, FunctionSource, ParsedCodelet, compile_error
from .type_rules import (
    BOOL,
    F64,
    NONE,
    OP_SYMBOLS,
    PY_FLOAT,
    PY_INT,
    CType,
    PolicyType,
    ScalarType,
    ShortVecType,
    VectorType,
    binop_type,
    compare_type,
    constant_type,
    fold,
    forget,
    join,
    known,
    math_result,
    scalar_of,
    wrap64,
)

#: the largest local array, in elements (it lives on the stack of the kernel)
MAX_LOCAL_ARRAY = 1 << 16


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


class _PendingError(Exception):
    """A local was read before the fixpoint gave it a type (only in the early passes)."""


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


class _FunctionTyper:
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
            with contextlib.suppress(_PendingError):  # typed in a later pass of the fixpoint
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
        with contextlib.suppress(_PendingError):  # the body is typed even when the loop header is pending
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
        with contextlib.suppress(_PendingError):  # the bodies are typed even when the test is pending
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
    def expr(self, node: ast.expr, allow_none: bool = False) -> CType:
        t = getattr(self, "_e" + type(node).__name__)(node)
        if t is NONE and not allow_none:
            raise self.error(node, "a helper that returns nothing cannot be used as a value")
        self.out.exprs[id(node)] = t
        return t

    def scalar(self, node: ast.expr) -> ScalarType:
        t = self.expr(node)
        if not isinstance(t, ScalarType):
            raise self.error(node, f"expected a number, not a {t}")
        return t

    def _eConstant(self, node: ast.Constant) -> CType:
        v = node.value
        if isinstance(v, int) and not isinstance(v, bool) and not -(2**63) <= v < 2**63:
            raise self.error(node, "integer literal out of the 64-bit range")
        return constant_type(v)

    def _eName(self, node: ast.Name) -> CType:
        if node.id in self.fn.local_names:
            t = self.out.locals.get(node.id)
            if self.final and (t is None or (node.id not in self.assigned and not self.loop_depth)):
                raise self.error(node, f"local '{node.id}' is used before it is assigned")
            if t is None:
                raise _PendingError
            return t
        r = self.fn.globals_used[node.id]
        return PolicyType(r.value) if r.kind == "policy" else constant_type(r.value)

    def _eAttribute(self, node: ast.Attribute) -> CType:
        value = node.value
        if isinstance(value, ast.Name) and value.id == "self" and self.has_self:
            return self._self_attribute(node)
        if isinstance(value, ast.Name) and value.id not in self.fn.local_names \
                and self.fn.globals_used[value.id].kind == "math_module":
            return constant_type(MATH_CONSTANTS[node.attr])
        owner = self.expr(value)
        if not isinstance(owner, PolicyType):
            raise self.error(node, f"a {owner} has no attribute '{node.attr}'")
        constant = getattr(owner.cls, node.attr, None)
        if isinstance(constant, (bool, int, float)):
            return constant_type(constant)
        raise self.error(node, f"policy {owner.cls.__name__} has no numeric constant '{node.attr}'")

    def _self_attribute(self, node: ast.Attribute) -> CType:
        parsed = self.program.parsed
        if node.attr not in parsed.fields:  # a template constant or policy (the frontend checked)
            value = parsed.constants[node.attr]
            return constant_type(value) if isinstance(value, (bool, int)) else PolicyType(value)
        spec = parsed.fields[node.attr]
        index = list(parsed.fields).index(node.attr)
        elem = scalar_of(spec.type)
        if spec.kind is FieldKind.SCALAR:
            return elem
        writable = spec.direction is not Direction.INPUT  # state vectors too: tile memory
        return VectorType(elem, writable, index, spec.kind is FieldKind.VECTOR_LIST)

    def _eSubscript(self, node: ast.Subscript) -> CType:
        container = self.expr(node.value)
        if isinstance(container, ShortVecType):
            k = self.scalar(node.slice)
            if not (k.is_int and k.value is not None and 0 <= k.value < container.width):
                raise self.error(node.slice, f"an element of a {container} needs a constant index in "
                                             f"0..{container.width - 1}")
            return container.elem
        if not isinstance(container, VectorType):
            raise self.error(node, f"cannot index a {container}")
        index = self.scalar(node.slice)
        if not index.is_int:
            raise self.error(node.slice, f"vector indices must be integers, not {index}")
        return container.row() if container.is_list else container.elem

    def _eBinOp(self, node: ast.BinOp) -> CType:
        return self._binop(node, node.op, self._operand(node.left), self._operand(node.right), node.right)

    def _operand(self, node: ast.expr) -> ScalarType | ShortVecType:
        t = self.expr(node)
        return t if isinstance(t, ShortVecType) else self.scalar(node)

    def _binop(self, node: ast.AST, op: ast.operator, a: CType, b: CType,
               rhs: ast.expr) -> ScalarType | ShortVecType:
        if isinstance(a, ShortVecType) or isinstance(b, ShortVecType):
            try:
                return binop_vector_type(type(op), a, b)
            except TypeError as exc:
                raise self.error(node, str(exc)) from None
        if not isinstance(a, ScalarType) or not isinstance(b, ScalarType):
            raise self.error(node, f"operator '{OP_SYMBOLS[type(op)]}' needs numbers, not {a} and {b}")
        try:
            result = binop_type(type(op), a, b)
        except TypeError as exc:
            raise self.error(node, str(exc)) from None
        if (
            isinstance(op, ast.Pow)
            and result.is_int
            and not (isinstance(rhs, ast.Constant) and isinstance(rhs.value, int) and 0 <= rhs.value <= 64)
        ):
            raise self.error(node, "integer ** needs a constant exponent in 0..64 (use floats otherwise)")
        value = fold(type(op), a, b) if result == PY_INT else None
        return result if value is None else known(result, value)

    def _eUnaryOp(self, node: ast.UnaryOp) -> CType:
        vector = self.expr(node.operand)
        if isinstance(vector, ShortVecType):
            if not isinstance(node.op, (ast.USub, ast.UAdd)):
                raise self.error(node, f"only unary - and + apply to a {vector}")
            return vector
        t = self.scalar(node.operand)
        if isinstance(node.op, ast.Not):
            return BOOL if t.value is None else known(BOOL, not t.value)
        if t == BOOL:
            raise self.error(node, "arithmetic on bool values is not supported; convert with int()")
        if isinstance(node.op, ast.Invert) and not t.is_int:
            raise self.error(node, f"'~' needs an integer, not {t}")
        if t == PY_INT and t.value is not None and not isinstance(node.op, ast.UAdd):
            op = ast.Mult if isinstance(node.op, ast.USub) else ast.BitXor  # -x and ~x
            return known(PY_INT, fold(op, t, known(PY_INT, -1)))
        return t

    def _eBoolOp(self, node: ast.BoolOp) -> CType:
        types = [self.scalar(v) for v in node.values]
        return self._join_all(node, types)

    def _eIfExp(self, node: ast.IfExp) -> CType:
        test = self._condition(node.test)
        if test.value is not None:  # known when compiling: only that value is compiled
            return self.expr(node.body if test.value else node.orelse)
        return self._join_all(node, [self.expr(node.body), self.expr(node.orelse)])

    def _join_all(self, node: ast.AST, types: list[CType]) -> CType:
        result = types[0]
        try:
            for t in types[1:]:
                result = join(result, t)
        except TypeError as exc:
            raise self.error(node, str(exc)) from None
        return result

    def _eCompare(self, node: ast.Compare) -> CType:
        operands = [self.scalar(node.left)] + [self.scalar(c) for c in node.comparators]
        self.out.compares[id(node)] = [compare_type(a, b) for a, b in itertools.pairwise(operands)]
        if all(t.value is not None and t.kind != "f" for t in operands):  # integers: exact
            values = [int(t.value) for t in operands]
            ops = {ast.Eq: int.__eq__, ast.NotEq: int.__ne__, ast.Lt: int.__lt__, ast.LtE: int.__le__,
                   ast.Gt: int.__gt__, ast.GtE: int.__ge__}
            truth = all(ops[type(op)](a, b) for op, a, b in zip(node.ops, values, values[1:]))
            return known(BOOL, truth)
        return BOOL

    def _eCall(self, node: ast.Call) -> CType:
        f = node.func
        on_self = isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id == "self" \
            and self.has_self
        if on_self and f.attr == "numWorkers":
            return known(PY_INT, 6)
        if on_self:
            parsed = self.program.parsed
            return self._helper_call(node, parsed.helpers[parsed.methods[f.attr]])
        if isinstance(f, ast.Attribute):
            owner = f.value
            if isinstance(owner, ast.Name) and owner.id not in self.fn.local_names:
                kind = self.fn.globals_used[owner.id].kind
                if kind == "math_module":
                    return self._math(node, f.attr)
                if kind == "short_vector":
                    return self._short_vector(node, f.attr, self.fn.globals_used[owner.id].value)
                if kind == "poplar_module":  # poplar.cdiv(a, b)
                    return self._c_division(node, f.attr)
            return self._policy_call(node, f)
        assert isinstance(f, ast.Name)
        r = self.fn.globals_used.get(f.id)
        kind, name = (r.kind, r.value) if r is not None else ("builtin", f.id)
        if kind == "math":
            return self._math(node, name)
        if kind == "helper":
            return self._helper_call(node, self.program.parsed.helpers[name])
        if kind == "type":
            self.scalar(node.args[0])
            return scalar_of(name)
        if kind == "short_vector":
            return self._short_vector(node, "make", name)
        if name == "LocalArray":
            return self._local_array(node)
        if name in ("cdiv", "cmod"):
            return self._c_division(node, name)
        if name == "len":
            v = self.expr(node.args[0])
            if not isinstance(v, VectorType):
                raise self.error(node, "len() needs a vector")
            return PY_INT if v.size is None else known(PY_INT, v.size)
        types = [self.scalar(a) for a in node.args]
        if name in ("min", "max"):
            joined = self._join_all(node, types)
            if joined == PY_INT and all(t.value is not None for t in types):
                return known(PY_INT, (min if name == "min" else max)(t.value for t in types))
            return joined
        if name == "abs":
            if types[0] == BOOL:
                raise self.error(node, "abs() of a bool is not supported")
            return forget(types[0])  # type: ignore[return-value]
        result = {"float": PY_FLOAT, "int": PY_INT, "bool": BOOL}[name]
        if name != "float" and types[0].value is not None and types[0].kind != "f":
            return known(result, int(types[0].value) if name == "int" else bool(types[0].value))
        return result

    def _helper_call(self, node: ast.Call, callee_fn: FunctionSource) -> CType:
        """A helper or method call, typed (and compiled) per argument types; a method's ``self``
        is the vertex, typed NONE as compute's is."""
        args = tuple(self.expr(a) for a in node.args)
        if len(args) != len(callee_fn.arg_names):
            raise self.error(node, f"'{callee_fn.name}' takes {len(callee_fn.arg_names)} argument(s)")
        if callee_fn.method:
            args = (NONE, *args)
        callee = self.program.function(callee_fn, args, node)
        self.out.calls[id(node)] = callee
        return callee.returns

    def _policy_call(self, node: ast.Call, f: ast.Attribute) -> CType:
        """``op.update(acc, x)``: the policy's function, checked and typed as a helper."""
        owner = self.expr(f.value)
        if not isinstance(owner, PolicyType):
            raise self.error(node, f"a {owner} has no functions (only operation policies do)")
        func = getattr(owner.cls, f.attr, None)
        if not isinstance(func, types.FunctionType):
            raise self.error(node, f"policy {owner.cls.__name__} has no function '{f.attr}'")
        key = check_helper(self.program.parsed, func)
        return self._helper_call(node, self.program.parsed.helpers[key])

    def _short_vector(self, node: ast.Call, what: str, vector: ShortVector) -> CType:
        """``float2(a, b)``, ``float2(a)``; ``float2.load(v, i)``; ``float2.store(v, i, x)``."""
        t = vector_type(vector)
        if what == "make":
            for a in node.args:
                if self.scalar(a) == BOOL:
                    raise self.error(a, f"{t}() takes numbers, not bools; convert with int()")
            return t
        container = self.expr(node.args[0])
        if not isinstance(container, VectorType) or container.is_list or container.elem != t.elem:
            raise self.error(node.args[0], f"{t}.{what}() needs a vector of {t.elem}, not a {container}")
        index = self.scalar(node.args[1])
        if not index.is_int:
            raise self.error(node.args[1], f"{t}.{what}() needs an integer index, not {index}")
        if what == "load":
            return t
        value = self.expr(node.args[2])
        if value != t:
            raise self.error(node.args[2], f"{t}.store() stores a {t}, not a {value}")
        self._writes(node, container)
        return NONE

    def _c_division(self, node: ast.Call, name: str) -> ScalarType:
        """``cdiv(a, b)``, ``cmod(a, b)``: integers of the type ``a // b`` has (known when both are)."""
        a, b = (self.scalar(x) for x in node.args)
        if not (a.is_int and b.is_int):
            raise self.error(node, f"{name}() needs two integers, not {a} and {b}")
        result = binop_type(ast.FloorDiv, a, b)
        if result == PY_INT and a.value is not None and b.value is not None:
            return known(result, wrap64((cdiv if name == "cdiv" else cmod)(int(a.value), int(b.value))))
        return result

    def _local_array(self, node: ast.Call) -> CType:
        """``LocalArray(T, n)``: a writable local vector whose length is a known integer."""
        type_arg, size_arg = node.args
        assert isinstance(type_arg, ast.Name)
        r = self.fn.globals_used.get(type_arg.id)
        if r is not None and isinstance(r.value, Type):
            elem = scalar_of(r.value)
        else:  # float, int or bool: numpy's float64, int64 and bool
            elem = {"float": F64, "int": scalar_of(asType("long long")), "bool": BOOL}[type_arg.id]
        size = self.scalar(size_arg)
        if size.value is None or not size.is_int:
            raise self.error(size_arg, "the size of a LocalArray must be an integer known when the codelet "
                                       "is compiled: a literal, a template constant (self.R) or an "
                                       "expression of them")
        n = int(size.value)
        if not 0 <= n <= MAX_LOCAL_ARRAY:
            raise self.error(size_arg, f"a LocalArray holds 0 to {MAX_LOCAL_ARRAY} elements, not {n}")
        index = self.program.parsed.array_index(self.fn.file, node.lineno)
        return VectorType(elem, True, index, size=n)

    def _math(self, node: ast.Call, name: str) -> ScalarType:
        return math_result(name, [self.scalar(a) for a in node.args])


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
