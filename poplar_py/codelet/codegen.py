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

import llvmlite.ir as ir
import numpy as np

from ..vertex import Direction, FieldKind, FieldSpec
from .budget import BudgetLowering, check_vertex
from .code_size import code_bytes
from .exprs import ERR_STRUCT, I1, I8, I32, I64, PTR, STATUS_OK, Vec, storage_type
from .fp_ops import FpScalarOps
from .fp_rules import FP_ENV_DTYPE, RNG_BYTES
from .inference import TypedCodelet
from .lanes import LANES, LaneBuilder, lane_states, lockstep_ok, signature_columns
from .ops import MathLib, ScalarOps
from .statements import StatementLowering
from .type_rules import PY_INT, ScalarType, scalar_of
from .unroll import Unroller
from .versioning import VersionedLowering

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


class KernelBuilder(StatementLowering, VersionedLowering, BudgetLowering):
    """Lowers one TypedCodelet to an llvmlite module: the module's structure, its kernel entry and
    batch runner; the statements are :class:`~poplar_py.codelet.statements.StatementLowering`'s."""

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
