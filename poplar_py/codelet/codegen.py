"""LLVM code generation for a typed codelet (llvmlite.ir), with bounds checks and cycle counting.

The module holds two functions: an internal ``alwaysinline`` ``compute(ptr state, i64 worker,
ptr err, ptr cycles, i64 offset, i64 buffers, i64 budget, ptr stop) -> i64 status`` and the
exported ``<symbol>(ptr states, i64 n, ptr slots, ptr sums, ptr err, i64 offset, i64 buffers,
i64 budget, ptr stop) -> i64`` that runs ``compute`` over ``n`` consecutive state records (each
worker of a MultiVertex in turn) and adds vertex i's cycles to ``sums[slots[i]]`` (none for a
negative slot, or when ``slots`` is null): the engine's per-tile, per-worker totals, made where
they are counted. A checked kernel holds each vertex to the cycle budget and stops when the flag
at ``stop`` is set (:mod:`codelet.budget`). Locals live in entry-block allocas (mem2reg promotes
them); element access uses GEPs from pointers loaded out of the state record; helpers are inlined
at the AST level.

Cycle model (a per-vertex i64 counter; the kernel counts what it executes):

* ``VERTEX_OVERHEAD`` (10) per vertex, per worker for a MultiVertex (which reports 6 x its slowest
  worker: tile cycles, the unit of a MultiVertex estimate);
* 1 per arithmetic, bitwise, comparison, conversion and boolean operation;
* 1 per field read or write (scalar or element) and per local-array element at an index not known
  when compiling (one at a known index is a register), 1 per ``if``/``while``/``assert`` test and
  loop iteration (a test known when compiling is free: only its branch is compiled);
* ``PRINT_CYCLES`` (50) per ``print`` plus ``PRINT_VALUE_CYCLES`` (10) per value it prints
  (codelet/prints.py);
* ``COSTS`` (in codelet/exprs.py) for division/modulo (10, ``cdiv``/``cmod`` too), float ``**`` (20)
  and ``math`` functions (1-20; ``math.log(x, base)`` costs two logs and a division);
* locals, constants, ``len`` and bounds checks are free (the count does not depend on options).

Costs are summed per basic block at compile time and added once at the block's end, so a loop
adds a constant per iteration: an induction variable that does not stop vectorisation.
"""

from __future__ import annotations

import ast

import llvmlite.ir as ir
import numpy as np

from ..vertex import Direction, FieldKind, FieldSpec
from .budget import BudgetLowering, check_vertex
from .code_size import code_bytes
from .exprs import (
    ERR_STRUCT,
    I1,
    I8,
    I32,
    I64,
    PTR,
    STATUS_OK,
    Value,
    Vec,
    storage_type,
)
from .fp_ops import FpScalarOps
from .fp_rules import FP_ENV_DTYPE, RNG_BYTES
from .inference import TypedCodelet, is_range
from .lanes import LANES, LaneBuilder, lane_states, lockstep_ok, signature_columns
from .ops import MathLib, ScalarOps
from .prints import CALLBACK_SYMBOL, PRINT_CYCLES, PRINT_VALUE_CYCLES, Field, encode, is_print, kind, layout
from .repeat import repeatable
from .type_rules import (
    ERR_ASSERTION,
    ERR_RANGE_STEP,
    ERR_RETURNED_FALSE,
    PY_INT,
    CType,
    PolicyType,
    ScalarType,
    ShortVecType,
    VectorType,
    scalar_of,
)
from .unroll import CycleMark, Unroller
from .versioning import UNROLL_OFF, VersionedLowering

VERTEX_OVERHEAD = 10
#: lockstep lanes for codelets up to this modelled size: small bodies are the latency-bound ones,
#: and the lanes multiply the code LLVM optimises
LOCKSTEP_CODE_BYTES = 1024
#: bytes of each vector of the next lockstep group prefetched (long vectors' later lines the
#: hardware prefetchers find themselves)
PREFETCH_BYTES = 2048


def _add_cycles(b: ir.IRBuilder, slots: ir.Value, sums: ir.Value, i: ir.Value, cycles: ir.Value) -> None:
    """``sums[slots[i]] += cycles`` unless the slot is negative (or there are no slots)."""
    with b.if_then(b.icmp_unsigned("!=", slots, ir.Constant(PTR, None))):
        slot = b.load(b.gep(slots, [i], inbounds=True, source_etype=I64), typ=I64)
        with b.if_then(b.icmp_signed(">=", slot, I64(0))):
            total = b.gep(sums, [slot], inbounds=True, source_etype=I64)
            b.store(b.add(b.load(total, typ=I64), cycles), total)


def _prefetch(b: ir.IRBuilder, ptr: ir.Value, nbytes: ir.Value) -> None:
    """Prefetch (for reading, into all cache levels) the cache lines of ``nbytes`` from ``ptr``."""
    m = b.module
    pf = m.globals.get("llvm.prefetch.p0") or ir.Function(
        m, ir.FunctionType(ir.VoidType(), [PTR, I32, I32, I32]), "llvm.prefetch.p0")
    before = b.block
    head, body, done = (b.function.append_basic_block(f"prefetch.{x}") for x in ("head", "body", "done"))
    b.branch(head)
    b.position_at_end(head)
    offset = b.phi(I64)
    offset.add_incoming(I64(0), before)
    b.cbranch(b.icmp_signed("<", offset, nbytes), body, done)
    b.position_at_end(body)
    b.call(pf, [b.gep(ptr, [offset], source_etype=I8), I32(0), I32(3), I32(1)])
    offset.add_incoming(b.add(offset, I64(64)), body)
    b.branch(head)
    b.position_at_end(done)


def _equal_bits(b: ir.IRBuilder, x: ir.Value, y: ir.Value) -> ir.Value:
    """Whether two record values have the same bits (floats too: NaN states agree with themselves)."""
    if isinstance(x.type, (ir.FloatType, ir.DoubleType, ir.HalfType)):
        width = ir.IntType({ir.FloatType: 32, ir.DoubleType: 64, ir.HalfType: 16}[type(x.type)])
        x, y = b.bitcast(x, width), b.bitcast(y, width)
    return b.icmp_unsigned("==", x, y)


def state_layout(fields: dict[str, FieldSpec], written: tuple[str, ...] = ()
                 ) -> tuple[np.dtype, ir.LiteralStructType, dict[str, list[int]]]:
    """The numpy record dtype (align=True) and the identical LLVM struct of one vertex's state,
    plus, per field, the struct element indices it occupies. A state scalar is the value itself,
    unless compute writes it (``written``): then, as an edge, the address of its tile memory."""
    names: list[str] = []
    formats: list[np.dtype] = []
    elements: list[ir.Type] = []
    slots: dict[str, list[int]] = {}
    for name, spec in fields.items():
        if spec.kind is FieldKind.SCALAR:
            state = spec.direction is Direction.STATE and name not in written
            cols = [
                (
                    name,
                    spec.type.dtype if state else np.dtype("<u8"),
                    storage_type(scalar_of(spec.type)) if state else PTR,
                )
            ]
        else:
            cols = [(f"{name}.ptr", np.dtype("<u8"), PTR), (f"{name}.size", np.dtype("<i8"), I64)]
        slots[name] = list(range(len(elements), len(elements) + len(cols)))
        for col, dt, lt in cols:
            names.append(col)
            formats.append(dt)
            elements.append(lt)
    return np.dtype({"names": names, "formats": formats}, align=True), ir.LiteralStructType(elements), slots


class KernelBuilder(VersionedLowering, BudgetLowering):
    """Lowers one TypedCodelet to an llvmlite module: module structure and statements."""

    def __init__(
        self,
        typed: TypedCodelet,
        symbol: str,
        checked: bool,
        fast_math: bool,
        triple: str = "",
        data_layout: str = "",
        lanes: bool = False,
        fp: int = 0,
    ) -> None:
        self.typed, self.parsed = typed, typed.parsed
        self.lanes = lanes and not fp
        self.fp = fp  # the control bits handled under the vertices' control words (codelet_fp_ops)
        self.symbol = symbol
        self.written = typed.written
        _, self.struct, self.field_slots = state_layout(self.parsed.fields, self.written)
        self.checked = checked
        self.module = ir.Module(name=symbol)
        self.module.triple, self.module.data_layout = triple, data_layout
        self.flags = ("reassoc", "contract", "nsz", "arcp", "afn") if fast_math else ()
        self.pending = self.pending_aux = 0
        self.unchecked: frozenset[int] = frozenset()  # accesses a versioned loop proved in bounds
        self.versioning = True  # False while lowering the checked copy of versioned code
        self.unroller = Unroller()
        self.unrolling = True  # False in the rolled cold copy of versioned code
        self.oob = None
        self.watch_exit = None

    # module structure ---------------------------------------------------------------------------
    def build(self) -> str:
        compute = self._compute(1)
        # strict mode: vertices run in lockstep lanes when their control flow cannot diverge
        wanted = self.lanes and not self.flags and code_bytes(self.typed) <= LOCKSTEP_CODE_BYTES
        lanes = self._compute(LANES) if wanted and lockstep_ok(self.typed) else None
        self._run(compute, lanes)
        return str(self.module)

    def _compute(self, lanes: int) -> ir.Function:
        """compute(state, worker, err, cycles, replica offset, buffers' offset, budget, stop flag[,
        control word, generator]) for one vertex, or for ``lanes`` consecutive vertices in lockstep
        (codelet/lanes.py)."""
        fp_args = (I64, PTR) if self.fp else ()
        fnty = ir.FunctionType(I64, [PTR, I64, PTR, PTR, I64, I64, I64, PTR, *fp_args])
        suffix = "" if lanes == 1 else "_lanes"
        fn = ir.Function(self.module, fnty, name=f"{self.symbol}_compute{suffix}")
        fn.linkage = "internal"
        fn.attributes.add("alwaysinline")
        states, self.worker, self.err, self.cyc_out, self.replica_offset, self.buffer_offset, self.budget, \
            self.stop = fn.args[:8]
        entry = ir.IRBuilder(fn.append_basic_block("entry"))
        body = ir.IRBuilder(fn.append_basic_block("body"))
        if lanes == 1:
            self.state, self.alloca_builder, self.b = states, entry, body
        else:
            self.state = lane_states(entry, states, self.struct, lanes)
            self.alloca_builder, self.b = LaneBuilder(entry, lanes), LaneBuilder(body, lanes)  # type: ignore[assignment]
        self.oob, self.watch_exit, self.unchecked, self.versioning = None, None, frozenset(), True
        self.ops = FpScalarOps(self.b, self.flags, *fn.args[8:], self, self.fp) if self.fp \
            else ScalarOps(self.b, self.flags)
        self.math = MathLib(self.ops, fast=bool(self.flags))
        self.counter = self._alloca(I64, "cycles")
        if self.checked:
            self._start_budget()
        self._preload_fields()
        frame = self._new_frame(self.typed.compute)
        if self.parsed.is_multi:
            name = self.parsed.compute.params[1]
            local = self.typed.compute.locals[name]
            assert isinstance(local, ScalarType)
            self.b.store(self.ops.convert(self.worker, PY_INT, local), frame.slots[name])
        self.frames = [frame]
        self.pending = VERTEX_OVERHEAD
        self._body(self.parsed.compute.node.body)
        if not self.b.block.is_terminated:
            self._ret_status(STATUS_OK)
        self.alloca_builder.branch(fn.blocks[1])
        return fn

    def _run(self, compute: ir.Function, lanes: ir.Function | None) -> None:
        fp_args = (PTR,) if self.fp else ()
        fnty = ir.FunctionType(I64, [PTR, I64, PTR, PTR, PTR, I64, I64, I64, PTR, *fp_args])
        fn = ir.Function(self.module, fnty, name=self.symbol)
        states, n, slots, sums, err, *passed = fn.args[:9]  # passed on to compute: offsets, budget, stop
        b = ir.IRBuilder(fn.append_basic_block("entry"))
        i_slot, w_slot, cyc, cmax = b.alloca(I64), b.alloca(I64), b.alloca(I64), b.alloca(I64)
        together = b.alloca(I1)  # (the lockstep path's, in the entry block for mem2reg)
        generator = b.alloca(I64, size=2) if self.fp else None  # a worker's, in registers
        b.store(I64(0), i_slot)
        blocks = ("head", "body", "worker", "next", "done")
        head, body, worker, after, done = (fn.append_basic_block(x) for x in blocks)
        b.branch(head)
        b.position_at_end(head)
        i = b.load(i_slot)
        b.cbranch(b.icmp_signed("<", i, n), body, done)
        b.position_at_end(body)
        if lanes is not None:
            self._lockstep(b, lanes, states, i, n, slots, sums, err, passed, (i_slot, together, cyc), head)
        state = b.gep(states, [i], inbounds=True, source_etype=self.struct)
        b.store(I64(0), cmax)
        b.store(I64(0), w_slot)
        b.branch(worker)
        b.position_at_end(worker)  # a MultiVertex runs its workers in turn and reports the slowest
        w = b.load(w_slot)
        if generator is None:
            code = b.call(compute, [state, w, err, cyc, *passed])
        else:
            code = self._call_fp(b, compute, [state, w, err, cyc, *passed], fn.args[9], i, w, generator)
        code = self._vertex_status(b, code, cyc, err, passed)
        with b.if_then(b.icmp_signed("!=", code, I64(0)), likely=False):
            b.store(i, b.gep(err, [I32(0), I32(0)], source_etype=ERR_STRUCT))
            b.store(code, b.gep(err, [I32(0), I32(1)], source_etype=ERR_STRUCT))
            b.ret(code)
        c, old = b.load(cyc), b.load(cmax)
        b.store(b.select(b.icmp_signed(">", c, old), c, old), cmax)
        b.store(b.add(w, I64(1)), w_slot)
        workers = I64(6 if self.parsed.is_multi else 1)
        b.cbranch(b.icmp_signed("<", b.add(w, I64(1)), workers), worker, after)
        b.position_at_end(after)
        # the barrel issues the workers in turn: a MultiVertex takes 6 x its slowest worker (tile cycles)
        _add_cycles(b, slots, sums, i, b.mul(b.load(cmax), workers))
        b.store(b.add(i, I64(1)), i_slot)
        b.branch(head)
        b.position_at_end(done)
        b.ret(I64(0))

    def _call_fp(self, b: ir.IRBuilder, compute: ir.Function, args: list[ir.Value], env: ir.Value,
                 i: ir.Value, w: ir.Value, generator: ir.Value) -> ir.Value:
        """Call a floating-point compute for worker w of vertex i with its control word and its
        generator state (FP_ENV_DTYPE records at ``env``), copied into ``generator`` for the call
        (a stack slot that aliases nothing: its words stay in registers) and back after it."""
        record = ir.LiteralStructType([I64, I64])
        assert FP_ENV_DTYPE.itemsize == 16
        at = b.gep(env, [i], inbounds=True, source_etype=record)
        ctl = b.load(b.gep(at, [I32(0), I32(0)], source_etype=record), typ=I64)
        rng = b.load(b.gep(at, [I32(0), I32(1)], source_etype=record), typ=I64)
        home = b.inttoptr(b.add(rng, b.mul(w, I64(RNG_BYTES))), PTR)
        pairs = [(b.gep(home, [I64(k)], source_etype=I64), b.gep(generator, [I64(k)]))
                 for k in range(2)]
        has = b.icmp_unsigned("!=", rng, I64(0))  # (no generator: the word has no ESR)
        with b.if_then(has):
            for memory, slot in pairs:
                b.store(b.load(memory, typ=I64), slot)
        code = b.call(compute, [*args, ctl, generator])
        with b.if_then(has):
            for memory, slot in pairs:
                b.store(b.load(slot, typ=I64), memory)
        return code

    def _lockstep(self, b: ir.IRBuilder, lanes: ir.Function, states: ir.Value, i: ir.Value, n: ir.Value,
                  slots: ir.Value, sums: ir.Value, err: ir.Value, passed: list[ir.Value],
                  scratch: tuple[ir.Value, ...], head: ir.Block) -> None:
        """At vertex i: when ``LANES`` vertices remain and their shapes agree, run them in lockstep
        (each gets the cycles it would count alone) and go on after them; else fall through.
        ``scratch``: the slots of i, of the decision and of the cycles."""
        i_slot, together, cycles = scratch
        fits = b.icmp_signed("<=", b.add(i, I64(LANES)), n)
        b.store(ir.Constant(I1, 0), together)
        with b.if_then(fits):
            same = ir.Constant(I1, 1)
            for column in signature_columns(self.typed):
                k = self.struct_index[column]
                base = self._column(b, states, i, k)
                for lane in range(1, LANES):
                    same = b.and_(same, _equal_bits(b, base, self._column(b, states, b.add(i, I64(lane)), k)))
            b.store(same, together)
        run, alone = b.function.append_basic_block("lanes"), b.function.append_basic_block("alone")
        b.cbranch(b.load(together), run, alone)
        b.position_at_end(run)
        self._prefetch_next(b, states, b.add(i, I64(LANES)), n)
        first = b.gep(states, [i], inbounds=True, source_etype=self.struct)
        code = self._vertex_status(b, b.call(lanes, [first, I64(0), err, cycles, *passed]), cycles, err,
                                   passed)
        with b.if_then(b.icmp_signed("!=", code, I64(0)), likely=False):  # lanes fail alike: vertex i first
            b.store(i, b.gep(err, [I32(0), I32(0)], source_etype=ERR_STRUCT))
            b.store(code, b.gep(err, [I32(0), I32(1)], source_etype=ERR_STRUCT))
            b.ret(code)
        for lane in range(LANES):
            _add_cycles(b, slots, sums, b.add(i, I64(lane)), b.load(cycles))
        b.store(b.add(i, I64(LANES)), i_slot)
        b.branch(head)
        b.position_at_end(alone)

    def _vertex_status(self, b: ir.IRBuilder, code: ir.Value, cycles: ir.Value, err: ir.Value,
                       passed: list[ir.Value]) -> ir.Value:
        """What compute returned; checked, a vertex that succeeded past the budget (``passed``:
        compute's offsets, budget and stop flag) fails."""
        if not self.checked:
            return code
        _, _, budget, _ = passed
        return check_vertex(b, code, cycles, err, budget, self.parsed.compute.node.lineno)

    def _prefetch_next(self, b: ir.IRBuilder, states: ir.Value, j: ir.Value, n: ir.Value) -> None:
        """Prefetch the first PREFETCH_BYTES of every vector of the group from vertex j: lanes read
        LANES short streams at once, which the hardware prefetchers do not follow (measured: without
        this, lockstep runs tutorial 7 slower than one vertex at a time)."""
        with b.if_then(b.icmp_signed("<=", b.add(j, I64(LANES)), n)):
            for name, spec in self.parsed.fields.items():
                if spec.kind is FieldKind.VECTOR:
                    ptr_k, size_k = self.field_slots[name]
                    for lane in range(LANES):
                        ptr, size = (self._column(b, states, b.add(j, I64(lane)), k) for k in (ptr_k, size_k))
                        end = b.mul(size, I64(spec.type.dtype.itemsize))
                        _prefetch(b, ptr, b.select(b.icmp_signed("<", end, I64(PREFETCH_BYTES)), end,
                                                   I64(PREFETCH_BYTES)))

    def _column(self, b: ir.IRBuilder, states: ir.Value, i: ir.Value, k: int) -> ir.Value:
        """Struct element k of vertex i's record."""
        record = b.gep(states, [i], inbounds=True, source_etype=self.struct)
        at = b.gep(record, [I32(0), I32(k)], inbounds=True, source_etype=self.struct)
        return b.load(at, typ=self.struct.elements[k])

    @property
    def struct_index(self) -> dict[str, int]:
        """Record column name -> struct element."""
        names = state_layout(self.parsed.fields, self.written)[0].names
        return {name: k for k, name in enumerate(names)}

    def _preload_fields(self) -> None:
        """State records do not change during compute: load every pointer, size and state value once
        (a state scalar compute writes is in tile memory: its address)."""
        b = self.alloca_builder
        self.fields: dict[str, ir.Value | Vec] = {}
        for name, spec in self.parsed.fields.items():
            idx = self.field_slots[name]
            loads = [
                b.load(
                    b.gep(self.state, [I32(0), I32(k)], inbounds=True, source_etype=self.struct),
                    typ=self.struct.elements[k],
                )
                for k in idx
            ]
            if (
                spec.kind is FieldKind.SCALAR
                and spec.direction is Direction.STATE
                and name not in self.written
                and spec.type.dtype.kind == "b"
            ):
                loads[0] = b.icmp_unsigned("!=", loads[0], I8(0))
            self.fields[name] = loads[0] if len(loads) == 1 else (loads[0], loads[1])

    # statements ---------------------------------------------------------------------------------
    def _body(self, stmts: list[ast.stmt]) -> None:
        if self.unrolling:
            stmts = self.unroller.expand(stmts, self.frame.types)
        k = 0
        while k < len(stmts):
            loop = stmts[k]
            versioned_loop = isinstance(loop, ast.For) and is_range(loop) and not self.b.block.is_terminated
            end = k + 1 if versioned_loop else k
            while end < len(stmts) and self._simple(stmts[end]):
                end += 1
            if versioned_loop and isinstance(loop, ast.For):
                # the loop, and the straight-line code after it when one guard covers both
                k = end if self._versioned_loop(loop, stmts[k + 1:end]) else k + 1
                continue
            plan = None
            if end - k > 1 and self.checked and self.versioning:
                plan = self._region_plan(stmts[k:end])
                # a leading assignment of an index local (j = self.j) keeps its uses out of the
                # region: start the region after it if that covers more accesses
                later = self._region_plan(stmts[k + 1:end])
                if later is not None and (plan is None or len(later.accesses) > len(plan.accesses)):
                    self._statements(stmts[k:k + 1])
                    k, plan = k + 1, later
            if plan is not None and not self.b.block.is_terminated:
                # straight-line code: one guard for its accesses (codelet/loop_versioning.py), as for loops
                run = stmts[k:end]
                guard = self._guard(plan, [I64(0)])
                self._versioned(guard, plan.ids, lambda run=run: self._statements(run))
                k = end
                continue
            self._statements(stmts[k:max(end, k + 1)])
            k = max(end, k + 1)

    def _statements(self, stmts: list[ast.stmt]) -> None:
        for s in stmts:
            if self.b.block.is_terminated:  # code after return/break/continue: unreachable
                self.b.position_at_end(self._block("dead"))
            if self.fp and hasattr(s, "lineno"):  # the line a floating-point exception reports
                self.ops.line = s.lineno  # type: ignore[attr-defined]
            getattr(self, "_" + type(s).__name__)(s)

    def _simple(self, s: ast.stmt) -> bool:
        """An assignment or expression statement without helper calls (region versioning)."""
        if isinstance(s, CycleMark):
            return True
        if not isinstance(s, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Expr)):
            return False
        return not any(isinstance(n, ast.Call) and self._is_helper(n) for n in ast.walk(s))

    def _Pass(self, node: ast.Pass) -> None:
        pass

    def _CycleMark(self, node: CycleMark) -> None:
        self._flush()
        self.pending += node.cycles
        self._flush()

    def _Expr(self, node: ast.Expr) -> None:
        if is_print(node.value):
            assert isinstance(node.value, ast.Call)
            self._print(node.value)
            return
        self.expr(node.value)

    def _print(self, call: ast.Call) -> None:
        """A print statement: its values as 64-bit words (floats as doubles) in a stack array, and
        a call of the host's callback with the state record, the worker and the print's layout."""
        pieces = layout(call)
        fields = [p for p in pieces if isinstance(p, Field)]
        words, kinds = [], []
        for f in fields:
            t = self.type(f.node)
            assert isinstance(t, ScalarType)
            v = self.expr(f.node)
            if t.is_float:
                words.append(self.b.bitcast(self.ops.convert(v, t, ScalarType("f", 64)), I64))
            else:
                words.append(self.ops.convert(v, t, ScalarType("i" if t.kind == "i" else "u", 64)))
            kinds.append(kind(t))
        text = encode(pieces, kinds)
        chars = ir.ArrayType(I8, len(text))
        spec = ir.GlobalVariable(self.module, chars, self.module.get_unique_name("print"))
        spec.global_constant, spec.linkage = True, "private"
        spec.initializer = ir.Constant(chars, bytearray(text))
        args = self.alloca_builder.alloca(ir.ArrayType(I64, max(len(words), 1)), name="print.args")
        for k, w in enumerate(words):
            self.b.store(w, self.b.gep(args, [I32(0), I32(k)], inbounds=True))
        callee = self.module.globals.get(CALLBACK_SYMBOL) or ir.Function(
            self.module, ir.FunctionType(ir.VoidType(), [PTR, I64, PTR, PTR]), CALLBACK_SYMBOL)
        self.b.call(callee, [self.state, self.worker, spec, args])
        self.pending += PRINT_CYCLES + PRINT_VALUE_CYCLES * len(words)

    def _Assign(self, node: ast.Assign) -> None:
        target = node.targets[0]
        if isinstance(target, ast.Tuple):
            assert isinstance(node.value, ast.Tuple)
            values = [(self.expr(v), self.type(v)) for v in node.value.elts]  # all values before any store
            for t, (v, vt) in zip(target.elts, values):
                self._store(t, v, vt)
        else:
            self._store(target, self.expr(node.value), self.type(node.value))

    def _AnnAssign(self, node: ast.AnnAssign) -> None:
        assert node.value is not None
        self._store(node.target, self.expr(node.value), self.type(node.value))

    def _AugAssign(self, node: ast.AugAssign) -> None:
        target = node.target
        rt = self.type(node)
        assert isinstance(rt, (ScalarType, ShortVecType))
        if isinstance(target, ast.Subscript):  # one index computation and bounds check for load and store
            ptr, et = self._element_ptr(target)
            cost = self._access_cost(target)
            self.pending += cost
            current = self._load(ptr, et)
            value = self.binop(node.op, current, et, self.expr(node.value), self.type(node.value), rt)
            self._store_element(ptr, value, rt, et, cost)
            return
        current = self.expr(target)
        value = self.binop(
            node.op, current, self.type(target), self.expr(node.value), self.type(node.value), rt
        )
        self._store(target, value, rt)

    def _store(self, target: ast.expr, value: Value, vt: CType) -> None:
        if isinstance(target, ast.Name):
            if isinstance(vt, PolicyType):
                return
            slot = self.frame.slots[target.id]
            lt = self.frame.types.locals[target.id]
            if isinstance(slot, tuple):
                assert isinstance(value, tuple)
                self.b.store(value[0], slot[0])
                self.b.store(value[1], slot[1])
            elif isinstance(vt, ShortVecType):  # (the typing pass made the local's type the same)
                self.b.store(value, slot)
            else:
                assert isinstance(vt, ScalarType) and isinstance(lt, ScalarType)
                self.b.store(self.ops.store_local(value, vt, lt, self.frame.types.fn, target.id), slot)
            return
        assert isinstance(vt, ScalarType)
        if isinstance(target, ast.Attribute):
            spec = self.parsed.fields[target.attr]
            ptr = self.fields[target.attr]
            assert not isinstance(ptr, tuple)
            self._store_element(ptr, value, vt, scalar_of(spec.type))
            return
        assert isinstance(target, ast.Subscript)
        ptr, et = self._element_ptr(target)
        self._store_element(ptr, value, vt, et, self._access_cost(target))

    def _store_element(self, ptr: ir.Value, value: ir.Value, vt: ScalarType, et: ScalarType,
                       cost: int = 1) -> None:
        self.pending += cost
        v = self.ops.narrow(value, vt, et)
        self.b.store(self.b.zext(v, I8) if et.kind == "b" else v, ptr)

    def _If(self, node: ast.If) -> None:
        test = self.type(node.test)
        if isinstance(test, ScalarType) and test.value is not None:  # only the branch compiled: free
            self._body(node.body if test.value else node.orelse)
            return
        then, other, done = self._block("if.then"), self._block("if.else"), self._block("if.end")
        self.pending += 1
        self._cbr(self.condition(node.test), then, other if node.orelse else done)
        for block, body in ((then, node.body), (other, node.orelse)):
            if body:
                self.b.position_at_end(block)
                self._body(body)
                if not self.b.block.is_terminated:
                    self._br(done)
        if not node.orelse:
            other.parent.blocks.remove(other)
        self.b.position_at_end(done)

    def _While(self, node: ast.While) -> None:
        head, body, done = self._block("while.head"), self._block("while.body"), self._block("while.end")
        self._goto(head)
        if self.checked:  # any turn may be one too many (codelet.budget)
            self._watch(node.lineno)
        self.pending += 1
        self._cbr(self.condition(node.test), body, done)
        self.b.position_at_end(body)
        self.frame.loops.append((head, done))
        self._body(node.body)
        self.frame.loops.pop()
        if not self.b.block.is_terminated:
            self._br(head)
        self.b.position_at_end(done)

    def _For(self, node: ast.For) -> None:
        assert isinstance(node.target, ast.Name)
        if not is_range(node):
            self._loop(node, None)
            return
        self._versioned_loop(node, [])

    def _loop(self, node: ast.For, bounds: tuple[ir.Value, ir.Value, ir.Value] | None,
              hints: tuple[tuple[str, bool | None], ...] = ()) -> None:
        """The loop itself: over range(start, stop, step) when ``bounds`` is given, else a vector;
        ``hints``: LLVM loop options it gets (codelet/versioning.py)."""
        counter = self._alloca(I64, "for.i")
        head, body, latch, done = (self._block(f"for.{x}") for x in ("head", "body", "latch", "end"))
        # a loop's control is its index step and its test-and-branch (brnzdec), 2 a turn; a repeat
        # loop (rpt: a count the instruction holds, a body without branches) costs 1, once
        control = 1
        chunked = False  # checked range loops run their turns in chunks (codelet.budget)
        if bounds is not None:
            start, stop, step = bounds
            if self.checked:
                self._nonzero_step(step, node.lineno)
            if repeatable(node, bounds, self._is_helper):
                self.pending += 1
                control = 0
            self.b.store(start, counter)
            limit, chunked = stop, self.checked and control == 1
            if chunked:  # the budget checked between chunks of turns: the loop stays vectorisable
                chunk, rest = self._block("for.chunk"), self._block("for.rest")
                self._goto(chunk)
                limit = self._chunk_end(self.b.load(counter), stop, step)
            self._goto(head)
            i = self.b.load(counter)
            self.pending += control
            self._cbr(self._range_test(i, limit, step), body, rest if chunked else done)
            self.b.position_at_end(body)
            self._store(node.target, i, PY_INT)
            constant_unit = isinstance(step, ir.Constant) and step.constant in (1, -1)
            # i < stop implies i + 1 <= stop: the hidden counter cannot wrap when the step is +-1
            step_flags: tuple[str, ...] = ("nsw",) if constant_unit else ()
        else:
            vec = self.expr(node.iter)
            vt = self.type(node.iter)
            assert isinstance(vec, tuple) and isinstance(vt, VectorType)
            self.b.store(I64(0), counter)
            self._goto(head)
            i = self.b.load(counter)
            self.pending += 1
            self._cbr(self.b.icmp_signed("<", i, vec[1]), body, done)
            self.b.position_at_end(body)
            if vt.is_list:
                self._store(node.target, self._row(vec[0], i), vt.row())
            else:
                self.pending += 1
                ptr = self.b.gep(vec[0], [i], inbounds=True, source_etype=storage_type(vt.elem))
                self._store(node.target, self._load(ptr, vt.elem), vt.elem)
            step, step_flags = I64(1), ("nsw",)
        self.frame.loops.append((latch, done))
        self._body(node.body)
        self.frame.loops.pop()
        self._goto(latch)
        self.pending += control
        self.b.store(self.b.add(self.b.load(counter), step, flags=step_flags), counter)
        back = self._br(head)
        if not self.unrolling:  # the rolled cold copy: LLVM must not unroll it either
            hints = (*hints, UNROLL_OFF)
        if hints:
            self._loop_hints(back, hints)
        if chunked:
            self.b.position_at_end(rest)
            self._next_chunk(limit, stop, chunk, done, node.lineno)
        self.b.position_at_end(done)

    def _nonzero_step(self, step: ir.Value, line: int) -> None:
        """Fail with ERR_RANGE_STEP where a range's step is zero (Python's ValueError)."""
        if isinstance(step, ir.Constant) and step.constant != 0:
            return
        ok, zero = self._block("step.ok"), self._block("step.zero")
        self._cbr(self.b.icmp_signed("!=", step, I64(0)), ok, zero, likely=True)
        self.b.position_at_end(zero)
        self._fail(ERR_RANGE_STEP, -1, I64(0), I64(0), line)
        self.b.position_at_end(ok)

    def _range_test(self, i: ir.Value, stop: ir.Value, step: ir.Value) -> ir.Value:
        """Whether the loop goes on at ``i``; never for a zero step (unchecked, such a loop runs no
        turn: checked, it fails before)."""
        if isinstance(step, ir.Constant):
            if step.constant == 0:
                return I1(0)
            return self.b.icmp_signed(">" if step.constant < 0 else "<", i, stop)
        up = self.b.icmp_signed("<", i, stop)
        down = self.b.icmp_signed(">", i, stop)
        return self.b.select(
            self.b.icmp_signed(">", step, I64(0)),
            up,
            self.b.select(self.b.icmp_signed("<", step, I64(0)), down, I1(0)),
        )

    def _Break(self, node: ast.Break) -> None:
        self._br(self.frame.loops[-1][1])

    def _Continue(self, node: ast.Continue) -> None:
        self._br(self.frame.loops[-1][0])

    def _Return(self, node: ast.Return) -> None:
        v = node.value
        frame = self.frame
        if frame.exit is not None:  # inlined helper
            if v is not None and frame.result is not None:
                rt = frame.types.returns
                if isinstance(rt, ShortVecType):  # (every return has that type: the typing pass)
                    self.b.store(self.expr(v), frame.result)
                else:
                    assert isinstance(rt, ScalarType)
                    self.b.store(self.ops.convert(self.expr(v), self.type(v), rt), frame.result)
            self._br(frame.exit)
            return
        if v is None or (isinstance(v, ast.Constant) and v.value in (None, True)):
            self._ret_status(STATUS_OK)
            return
        ok = self.condition(v)
        good, bad = self._block("ret.true"), self._block("ret.false")
        self._cbr(ok, good, bad)
        self.b.position_at_end(good)
        self._ret_status(STATUS_OK)
        self.b.position_at_end(bad)
        self._fail(ERR_RETURNED_FALSE, -1, I64(-1), I64(-1), node.lineno)

    def _Assert(self, node: ast.Assert) -> None:
        good, bad = self._block("assert.ok"), self._block("assert.failed")
        self.pending += 1
        self._cbr(self.condition(node.test), good, bad, likely=True)
        self.b.position_at_end(bad)
        self._fail(ERR_ASSERTION, -1, I64(-1), I64(-1), node.lineno)  # also from an inlined helper
        self.b.position_at_end(good)
