"""The typing pass's rules for expressions: constants, names, fields and their elements,
operators, comparisons, calls (helpers, policies, short vectors, ``cdiv``/``cmod``, local arrays,
``math``), each expression's type recorded for code generation (:mod:`type_rules` has the rules)."""

from __future__ import annotations

import ast
import itertools
import types

from ..short_vectors import ShortVector
from ..types import Type, asType
from ..vertex import Direction, FieldKind
from .c_division import cdiv, cmod
from .frontend import check_helper
from .short_vec import binop_vector_type, vector_type
from .source import MATH_CONSTANTS, FunctionSource
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


class PendingTypeError(Exception):
    """A local was read before the fixpoint gave it a type (only in the early passes)."""


class ExpressionTyper:
    """Types a function's expressions (a part of the typing pass's function typer, :mod:`inference`)."""

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
                raise PendingTypeError
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
        first = self.scalar(node.values[0])
        if first.value is not None and bool(first.value) == isinstance(node.op, ast.Or):
            return first  # known when compiling, and it decides: the rest is never compiled
        return self._join_all(node, [first, *(self.scalar(v) for v in node.values[1:])])

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
        names = [node.left, *node.comparators]
        if all(isinstance(n, ast.Name) and n.id not in self.fn.local_names
               and self.fn.globals_used[n.id].kind == "type" for n in names):  # T == FLOAT
            a, b = (self.fn.globals_used[n.id].value for n in names)
            return known(BOOL, (a == b) == isinstance(node.ops[0], ast.Eq))
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
