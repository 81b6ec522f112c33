"""Expression lowering for the codelet codegen, and the helpers that statements share.

:class:`ExprLowering` holds the state of the function being built (the IR builder, the frames of
compute and of the helpers inlined into it, the cycles counted since the last flush) and lowers
each expression node to IR values: a scalar is one ``ir.Value`` of its register type
(:meth:`ScalarOps.reg_type`), a vector is a (data pointer, length) pair. Vector indexing is
bounds-checked when ``checked`` is set; helper calls are inlined. Cycle costs are those of the
model in :mod:`poplar_py.codelet.codegen`, which derives :class:`KernelBuilder` from this class.
"""

from __future__ import annotations

import ast
import operator
from dataclasses import dataclass, field

import llvmlite.ir as ir

from ..vertex import Direction, FieldKind
from .inference import FunctionTypes
from .lanes import first_lane
from .ops import MathLib, ScalarOps
from .short_vec import ShortVectorLowering, register, short_vector_call, vector_type
from .source import ParsedCodelet
from .type_rules import (
    BUFFER_ENTRY,
    ERR_OUT_OF_BOUNDS,
    PY_INT,
    CType,
    PolicyType,
    ScalarType,
    ShortVecType,
    VectorType,
)
from .unroll import Unroller

COSTS = {
    "div": 10,
    "pow": 20,
    "sqrt": 10,
    "fabs": 1,
    "copysign": 1,
    "floor": 1,
    "ceil": 1,
    "trunc": 1,
    "isnan": 1,
    "isinf": 1,
    "isfinite": 1,
    "fmod": 10,
}
MATH_COST = 20  # every other math function
#: integer operations done when compiling when both operands are constants (unrolled indices)
_FOLDED = {"Add": operator.add, "Sub": operator.sub, "Mult": operator.mul}
STATUS_OK = 0  # otherwise compute returns an ERR_* code (codelet/type_rules.py) after filling the record
I64, I32, I8, I1 = ir.IntType(64), ir.IntType(32), ir.IntType(8), ir.IntType(1)
PTR = ir.PointerType()
ERR_STRUCT = ir.LiteralStructType([I64] * 6)  # vertex, code, field, index, size, line
ENTRY_STRUCT = ir.LiteralStructType([PTR, I64])  # one row of a vector list
Vec = tuple[ir.Value, ir.Value]  # (data pointer, number of elements)
NO_VALUE = ir.Constant(I1, 0)  # what a policy evaluates to: it is only ever called
Value = ir.Value | Vec


def _in_bounds(index: ir.Value, size: ir.Value) -> bool:
    """Whether an index is known to be in bounds when compiling (constants: local arrays)."""
    return (isinstance(index, ir.Constant) and isinstance(size, ir.Constant)
            and 0 <= index.constant < size.constant)


def storage_type(t: ScalarType) -> ir.Type:
    """The LLVM type of an element in memory (bool is one byte)."""
    return I8 if t.kind == "b" else ScalarOps.reg_type(t)


@dataclass
class Frame:
    """One function body being lowered: compute, or one inlined helper call."""

    types: FunctionTypes
    slots: dict[str, ir.Value | tuple[ir.Value, ir.Value]]
    exit: ir.Block | None = None  # helpers: where return jumps
    result: ir.Value | None = None  # helpers: the return-value slot
    loops: list[tuple[ir.Block, ir.Block]] = field(default_factory=list)  # (continue, break)


class ExprLowering(ShortVectorLowering):
    """Lowers expressions; :class:`KernelBuilder` sets these attributes up and adds statements."""

    parsed: ParsedCodelet
    checked: bool
    flags: tuple[str, ...]  # fast-math flags of float operations (empty in strict mode)
    b: ir.IRBuilder  # where code goes
    alloca_builder: ir.IRBuilder  # the entry block: allocas and field loads
    ops: ScalarOps
    math: MathLib
    fields: dict[str, ir.Value | Vec]  # field -> pointer (edge, written state), value or (data, length)
    written: tuple[str, ...]  # the state fields compute writes: in tile memory, as edges
    err: ir.Value  # the error record to fill on failure
    cyc_out: ir.Value  # where the vertex's cycle count is stored on return
    counter: ir.Value  # the cycle counter slot
    pending: int  # main-pipeline cycles counted in the current block, not yet added to the counter
    pending_aux: int  # the same on the auxiliary (floating-point) pipeline, which issues beside it
    unchecked: frozenset[int]  # id() of the accesses not to check (the fast path of a versioned loop)
    oob: tuple[ir.Block, list[ir.PhiInstr]] | None  # the shared out-of-bounds exit and its values
    unroller: Unroller  # the copies of loops that unroll, and their types
    frames: list[Frame]

    def _body(self, stmts: list[ast.stmt]) -> None:
        """Lower statements (KernelBuilder): the body of an inlined helper goes through it."""
        raise NotImplementedError

    def _alloca(self, t: ir.Type, name: str = "") -> ir.Value:
        slot = self.alloca_builder.alloca(t, name=name)
        self.alloca_builder.store(ir.Constant(t, None), slot)
        return slot

    def _new_frame(self, types: FunctionTypes) -> Frame:
        slots: dict[str, ir.Value | tuple[ir.Value, ir.Value]] = {}
        for name, t in types.locals.items():
            if isinstance(t, VectorType):
                slots[name] = (self._alloca(PTR, name), self._alloca(I64, name + ".size"))
            elif isinstance(t, ScalarType):
                slots[name] = self._alloca(ScalarOps.reg_type(t), name)
            elif isinstance(t, ShortVecType):
                slots[name] = self._alloca(register(t), name)
        return Frame(types, slots)  # a policy needs no slot: its functions are known when compiling

    @property
    def frame(self) -> Frame:
        return self.frames[-1]

    def type(self, node: ast.AST) -> CType:
        return self.unroller.type(node, self.frame.types)

    def _typed(self, node: ast.AST) -> CType | None:
        """The type of an expression, None in a branch that is not compiled (loop versioning
        looks at whole statements)."""
        try:
            return self.type(node)
        except KeyError:
            return None

    # control flow with cycle accounting ---------------------------------------------------------
    def _flush(self) -> None:
        """Add the block's cycles to the counter: a worker issues a main-pipeline instruction (memory,
        integers, control) and a floating-point one together, so a block takes the longer of its
        two pipelines' counts."""
        cycles = max(self.pending, self.pending_aux)
        if cycles:
            self.b.store(self.b.add(self.b.load(self.counter), I64(cycles)), self.counter)
        self.pending = self.pending_aux = 0

    def _issue(self, t: CType | None, cycles: int = 1) -> None:
        """Count an operation on values of type ``t``: the auxiliary pipeline's for floats."""
        if isinstance(t, ScalarType) and t.is_float:
            self.pending_aux += cycles
        else:
            self.pending += cycles

    def _br(self, target: ir.Block) -> ir.Instruction:
        self._flush()
        return self.b.branch(target)

    def _cbr(self, cond: ir.Value, then: ir.Block, other: ir.Block, likely: bool | None = None) -> None:
        self._flush()
        inst = self.b.cbranch(cond, then, other)
        if likely is not None:
            inst.set_weights([1000, 1] if likely else [1, 1000])

    def _block(self, name: str) -> ir.Block:
        return self.b.append_basic_block(name)

    def _goto(self, block: ir.Block) -> None:
        """Continue emitting in ``block`` (falling through from the current block if it is open)."""
        if not self.b.block.is_terminated:
            self._br(block)
        self.b.position_at_end(block)

    def _ret_status(self, status: int) -> None:
        self._flush()
        self.b.store(self.b.load(self.counter), self.cyc_out)
        self.b.ret(I64(status))

    def _fail(self, status: int, field_index: int, index: ir.Value, size: ir.Value, line: int) -> None:
        for k, v in ((2, I64(field_index)), (3, index), (4, size), (5, I64(line))):
            self.b.store(v, self.b.gep(self.err, [I32(0), I32(k)], source_etype=ERR_STRUCT))
        self._ret_status(status)

    # expressions --------------------------------------------------------------------------------
    def expr(self, node: ast.expr) -> Value:
        return getattr(self, "_e" + type(node).__name__)(node)

    def condition(self, node: ast.expr) -> ir.Value:
        t = self.type(node)
        assert isinstance(t, ScalarType)
        return self.ops.truth(self.expr(node), t)

    def _eConstant(self, node: ast.Constant) -> ir.Value:
        return self.ops.constant(node.value, self.type(node))

    def _eName(self, node: ast.Name) -> Value:
        t = self.type(node)
        if isinstance(t, PolicyType):
            return NO_VALUE
        slot = self.frame.slots.get(node.id)
        if slot is None:  # a global numeric constant
            assert isinstance(t, ScalarType)
            return self.ops.constant(t.value, t)
        if isinstance(slot, tuple):
            return self.b.load(slot[0], typ=PTR), self.b.load(slot[1], typ=I64)
        return self.b.load(slot)

    def _eAttribute(self, node: ast.Attribute) -> Value:
        t = self.type(node)
        if isinstance(t, PolicyType):
            return NO_VALUE
        if not (isinstance(node.value, ast.Name) and node.value.id == "self") or node.attr not in self.fields:
            assert isinstance(t, ScalarType)  # math.pi, self.R, op.identity: constants
            return self.ops.constant(t.value, t)
        spec = self.parsed.fields[node.attr]
        value = self.fields[node.attr]
        in_record = spec.direction is Direction.STATE and node.attr not in self.written
        if spec.kind is not FieldKind.SCALAR or in_record:
            return value
        assert isinstance(t, ScalarType) and not isinstance(value, tuple)
        self.pending += 1
        return self._load(value, t)

    def _load(self, ptr: ir.Value, t: ScalarType) -> ir.Value:
        v = self.b.load(ptr, typ=storage_type(t))
        return self.b.icmp_unsigned("!=", v, I8(0)) if t.kind == "b" else v

    def _eSubscript(self, node: ast.Subscript) -> Value:
        vt = self.type(node.value)
        if isinstance(vt, ShortVecType):  # a constant index (the typing pass checked it)
            k = self.type(node.slice)
            assert isinstance(k, ScalarType)
            return self.element(self.expr(node.value), int(k.value))
        assert isinstance(vt, VectorType)
        if vt.is_list:
            table, index = self._checked_index(node)
            return self._row(table, index)
        ptr, et = self._element_ptr(node)
        self.pending += self._access_cost(node)
        return self._load(ptr, et)

    def _access_cost(self, node: ast.Subscript) -> int:
        """An element access costs a cycle, except a local array's at an index known when compiling:
        a register."""
        vt, it = self.type(node.value), self.type(node.slice)
        known = isinstance(vt, VectorType) and vt.size is not None and isinstance(it, ScalarType) \
            and it.value is not None
        return 0 if known else 1

    def _row(self, table: ir.Value, index: ir.Value) -> Vec:
        """Row ``index`` of a vector list. Entry tables never change while vertices run: the loads
        are marked invariant, so loops read a row's pointer and length once. An entry holds the
        row's address in the first replica's memories (every replica shares the tables): the
        replica's offset is added, or for a row in an exchange buffer (its top bit set), the
        buffers' offset (less that bit: the address wraps)."""
        entry = self.b.gep(table, [index], inbounds=True, source_etype=ENTRY_STRUCT)
        loads = [self.b.load(self.b.gep(entry, [I32(0), I32(k)], source_etype=ENTRY_STRUCT), typ=t)
                 for k, t in ((0, PTR), (1, I64))]
        invariant = self.b.module.add_metadata([])
        for load in loads:
            load.set_metadata("invariant.load", invariant)
        in_buffer = self.b.icmp_signed("<", self.b.ptrtoint(loads[0], I64), I64(0))
        buffers = self.b.add(self.buffer_offset, I64(-BUFFER_ENTRY))
        offset = self.b.select(in_buffer, buffers, self.replica_offset)
        return self.b.gep(loads[0], [offset], source_etype=I8), loads[1]

    def _checked_index(self, node: ast.Subscript) -> tuple[ir.Value, ir.Value]:
        """Evaluate container and index; in checked mode fail unless 0 <= index < len."""
        vt = self.type(node.value)
        it = self.type(node.slice)
        assert isinstance(vt, VectorType) and isinstance(it, ScalarType)
        data, size = self.expr(node.value)
        index = self.ops.convert(self.expr(node.slice), it, PY_INT)
        if self.checked and id(node) not in self.unchecked and not _in_bounds(index, size):
            self._check(self.b.icmp_unsigned("<", index, size), vt.field, index, size, node.lineno)
        return data, index

    def _check(self, ok: ir.Value, field_index: int, index: ir.Value, size: ir.Value, line: int) -> None:
        """Go on where ``ok`` holds, else fail with ERR_OUT_OF_BOUNDS: every check branches to one
        shared exit block, whose phis take the failing access's values (no block per check)."""
        if self.oob is None:
            block = self._block("out_of_bounds")
            b = ir.IRBuilder(block)
            phis = [b.phi(I64, name) for name in ("oob.field", "oob.index", "oob.size", "oob.line")]
            for k, phi in enumerate(phis, start=2):  # (lanes fail alike: lane 0 reports)
                b.store(phi, b.gep(self.err, [I32(0), I32(k)], source_etype=ERR_STRUCT))
            b.store(b.load(first_lane(self.counter)), self.cyc_out)
            b.ret(I64(ERR_OUT_OF_BOUNDS))
            self.oob = (block, phis)
        block, phis = self.oob
        go_on = self._block("idx.ok")
        self._cbr(ok, go_on, block, likely=True)
        for phi, v in zip(phis, (I64(field_index), index, size, I64(line))):
            phi.add_incoming(first_lane(v), self.b.block)
        self.b.position_at_end(go_on)

    def _element_ptr(self, node: ast.Subscript) -> tuple[ir.Value, ScalarType]:
        vt = self.type(node.value)
        assert isinstance(vt, VectorType)
        data, index = self._checked_index(node)
        return self.b.gep(data, [index], inbounds=True, source_etype=storage_type(vt.elem)), vt.elem

    def _eBinOp(self, node: ast.BinOp) -> ir.Value:
        rt = self.type(node)
        assert isinstance(rt, (ScalarType, ShortVecType))
        return self.binop(
            node.op,
            self.expr(node.left),
            self.type(node.left),
            self.expr(node.right),
            self.type(node.right),
            rt,
        )

    def binop(self, op: ast.operator, a: Value, at: CType, b: Value, bt: CType,
              rt: ScalarType | ShortVecType) -> ir.Value:
        if isinstance(rt, ShortVecType):
            return self.vector_binop(op, a, at, b, bt, rt)  # type: ignore[arg-type]
        assert isinstance(at, ScalarType) and isinstance(bt, ScalarType)
        kind = type(op).__name__
        self._issue(rt, COSTS["div"] if kind in ("Div", "FloorDiv", "Mod")
                    else COSTS["pow"] if kind == "Pow" and rt.is_float else 1)
        if kind == "Pow" and rt.is_int:
            assert isinstance(b, ir.Constant)
            return self.ops.int_pow(self.ops.convert(a, at, rt), int(b.constant), rt)
        x, y = self.ops.convert(a, at, rt), self.ops.convert(b, bt, rt)
        if rt.is_int and kind in _FOLDED and isinstance(x, ir.Constant) and isinstance(y, ir.Constant):
            return self.ops.constant(_FOLDED[kind](x.constant, y.constant), rt)  # wraps to the type
        return self.ops.binop(kind, x, y, rt, self.math)

    def _eUnaryOp(self, node: ast.UnaryOp) -> ir.Value:
        t = self.type(node.operand)
        if isinstance(t, ShortVecType):
            v = self.expr(node.operand)
            return v if isinstance(node.op, ast.UAdd) else self.vector_neg(v, t)  # type: ignore[arg-type]
        assert isinstance(t, ScalarType)
        self._issue(t)
        v = self.expr(node.operand)
        if isinstance(node.op, ast.Not):
            return self.b.not_(self.ops.truth(v, t))
        if isinstance(node.op, ast.UAdd):
            return v
        if isinstance(node.op, ast.Invert):
            return self.b.not_(v)
        return self.b.fneg(v, flags=self.flags) if t.is_float else self.b.neg(v)

    def _eCompare(self, node: ast.Compare) -> ir.Value:
        t = self.type(node)
        if isinstance(t, ScalarType) and t.value is not None:  # known when compiling: T == FLOAT
            return self.ops.constant(t.value, t)
        types = self.unroller.compares.get(id(node)) or self.frame.types.compares[id(node)]
        operands = [node.left, *node.comparators]
        chained = len(node.ops) > 1
        result = self._alloca(I1, "cmp") if chained else None
        done = self._block("cmp.end") if chained else None
        left = self.expr(node.left)
        c = None
        for k, (op, right_node, ct) in enumerate(zip(node.ops, node.comparators, types)):
            right = self.expr(right_node)
            self._issue(ct)
            lt, rtt = self.type(operands[k]), self.type(right_node)
            assert isinstance(lt, ScalarType) and isinstance(rtt, ScalarType)
            c = self.ops.compare(
                type(op).__name__, self.ops.convert(left, lt, ct), self.ops.convert(right, rtt, ct), ct
            )
            if result is not None and done is not None:
                self.b.store(c, result)
                if k < len(node.ops) - 1:  # chained: a < b < c evaluates b once and stops at the first False
                    nxt = self._block("cmp.next")
                    self._cbr(c, nxt, done)
                    self.b.position_at_end(nxt)
            left = right
        if result is None or done is None:
            return c
        self._goto(done)
        return self.b.load(result)

    def _eBoolOp(self, node: ast.BoolOp) -> ir.Value:
        rt = self.type(node)
        assert isinstance(rt, ScalarType)
        if rt.value is not None:  # decided by a value known when compiling
            return self.ops.constant(rt.value, rt)
        result = self._alloca(ScalarOps.reg_type(rt), "boolop")
        done = self._block("boolop.end")
        for k, v in enumerate(node.values):
            vt = self.type(v)
            assert isinstance(vt, ScalarType)
            value = self.expr(v)
            self.b.store(self.ops.convert(value, vt, rt), result)
            if k < len(node.values) - 1:
                self.pending += 1
                nxt = self._block("boolop.next")
                truth = self.ops.truth(value, vt)
                if isinstance(node.op, ast.Or):
                    self._cbr(truth, done, nxt)
                else:
                    self._cbr(truth, nxt, done)
                self.b.position_at_end(nxt)
        self._goto(done)
        return self.b.load(result)

    def _eIfExp(self, node: ast.IfExp) -> Value:
        rt = self.type(node)
        test = self.type(node.test)
        if isinstance(test, ScalarType) and test.value is not None:  # only that value compiled: free
            branch = node.body if test.value else node.orelse
            v, vt = self.expr(branch), self.type(branch)
            if isinstance(rt, ScalarType) and isinstance(vt, ScalarType):
                return self.ops.convert(v, vt, rt)
            return v
        then, other, done = self._block("ifexp.then"), self._block("ifexp.else"), self._block("ifexp.end")
        self.pending += 1
        self._cbr(self.condition(node.test), then, other)
        if isinstance(rt, VectorType):
            slot: ir.Value | tuple[ir.Value, ir.Value] = (self._alloca(PTR), self._alloca(I64))
        elif isinstance(rt, ShortVecType):
            slot = self._alloca(register(rt))
        else:
            assert isinstance(rt, ScalarType)
            slot = self._alloca(ScalarOps.reg_type(rt))
        for block, branch in ((then, node.body), (other, node.orelse)):
            self.b.position_at_end(block)
            v, vt = self.expr(branch), self.type(branch)
            if isinstance(slot, tuple):
                assert isinstance(v, tuple)
                self.b.store(v[0], slot[0])
                self.b.store(v[1], slot[1])
            elif isinstance(rt, ShortVecType):
                self.b.store(v, slot)
            else:
                assert isinstance(vt, ScalarType) and isinstance(rt, ScalarType)
                self.b.store(self.ops.convert(v, vt, rt), slot)
            self._br(done)
        self.b.position_at_end(done)
        if isinstance(slot, tuple):
            return self.b.load(slot[0], typ=PTR), self.b.load(slot[1], typ=I64)
        return self.b.load(slot)

    def _eCall(self, node: ast.Call) -> Value:
        f = node.func
        rt = self.type(node)
        if isinstance(f, ast.Attribute) and f.attr == "numWorkers":
            return I64(6)
        callee = self.unroller.calls.get(id(node)) or self.frame.types.calls.get(id(node))
        if callee is not None:
            return self._inline(node, callee)
        vector = short_vector_call(node, self.frame.types.fn)
        if vector is not None:
            return self._short_vector(node, vector[1], vector_type(vector[0]))
        name = f.attr if isinstance(f, ast.Attribute) else self._callee_name(f)
        if name == "len":
            v = self.expr(node.args[0])
            assert isinstance(v, tuple)
            return v[1]
        if name == "LocalArray":
            assert isinstance(rt, VectorType) and rt.size is not None
            array = ir.ArrayType(storage_type(rt.elem), rt.size)
            ptr = self.alloca_builder.alloca(array, name="array")
            self.b.store(ir.Constant(array, None), ptr)  # zeroed where it is made, as in Python
            return ptr, I64(rt.size)
        args = [self.expr(a) for a in node.args]
        types = [self.type(a) for a in node.args]
        if name in ("float", "int", "bool", "cast"):
            assert isinstance(types[0], ScalarType) and isinstance(rt, ScalarType)
            self._issue(types[0] if types[0].is_float else rt)
            return self.ops.narrow(args[0], types[0], rt)
        if name in ("min", "max", "abs"):
            assert isinstance(rt, ScalarType)
            return self._minmax_abs(name, args, types, rt)
        if name in ("cdiv", "cmod"):
            assert isinstance(rt, ScalarType)
            self._issue(rt, COSTS["div"])
            a, c = (self.ops.convert(v, t, rt) for v, t in zip(args, types))  # type: ignore[arg-type]
            return self.ops.trunc_divmod(a, c, rt)[0 if name == "cdiv" else 1]
        self.pending_aux += COSTS.get(name, MATH_COST)
        if name == "log" and len(args) == 2:  # log(x, base) = log(x) / log(base)
            self.pending_aux += MATH_COST + COSTS["div"]
        return self.math.call(name, args, types)  # type: ignore[arg-type]

    def _short_vector(self, node: ast.Call, what: str, t: ShortVecType) -> ir.Value:
        """``float2(...)``, ``float2.load(v, i)``, ``float2.store(v, i, x)`` (I1 0: no value)."""
        args = [self.expr(a) for a in node.args]
        types = [self.type(a) for a in node.args]
        if what == "make":
            return self.make_vector(args, types, t)  # type: ignore[arg-type]
        (data, size), vt, it = args[0], types[0], types[1]
        assert isinstance(vt, VectorType) and isinstance(it, ScalarType)
        index = self.ops.convert(args[1], it, PY_INT)
        address = self.vector_address(data, size, index, vt, t.width, node.lineno)
        if what == "load":
            return self.vector_load(address, t)
        self.vector_store(args[2], address, t)
        return I1(0)

    def _callee_name(self, f: ast.expr) -> str:
        assert isinstance(f, ast.Name)
        r = self.frame.types.fn.globals_used.get(f.id)
        if r is None:
            return f.id
        return "cast" if r.kind == "type" else r.value

    def _minmax_abs(self, name: str, args: list[Value], types: list[CType], rt: ScalarType) -> ir.Value:
        conv = [self.ops.convert(a, t, rt) for a, t in zip(args, types)]  # type: ignore[arg-type]
        if name == "abs":
            self._issue(rt)
            return self.ops.abs(conv[0], rt, self.math)
        result = conv[0]
        for v in conv[1:]:  # Python: a later argument wins only if strictly greater (smaller)
            self._issue(rt)
            result = self.b.select(
                self.ops.compare("Gt" if name == "max" else "Lt", v, result, rt), v, result
            )
        return result

    def _inline(self, node: ast.Call, callee: FunctionTypes) -> Value:
        args = [(self.expr(a), self.type(a)) for a in node.args]
        frame = self._new_frame(callee)
        for pname, (v, vt) in zip(callee.fn.arg_names, args):
            if isinstance(vt, PolicyType):
                continue
            slot = frame.slots[pname]
            if isinstance(slot, tuple):
                assert isinstance(v, tuple)
                self.b.store(v[0], slot[0])
                self.b.store(v[1], slot[1])
            elif isinstance(vt, ShortVecType):
                self.b.store(v, slot)
            else:
                pt = callee.locals[pname]
                assert isinstance(vt, ScalarType) and isinstance(pt, ScalarType)
                self.b.store(self.ops.store_local(v, vt, pt, callee.fn, pname), slot)
        frame.exit = self._block(f"{callee.fn.name}.exit")
        rt = callee.returns
        if isinstance(rt, (ScalarType, ShortVecType)):
            reg = register(rt) if isinstance(rt, ShortVecType) else ScalarOps.reg_type(rt)
            frame.result = self._alloca(reg, f"{callee.fn.name}.result")
        self.frames.append(frame)
        self._body(callee.fn.node.body)
        self._goto(frame.exit)
        self.frames.pop()
        return self.b.load(frame.result) if frame.result is not None else I1(0)
