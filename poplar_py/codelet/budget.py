"""The cycle budget in checked kernels: a vertex that runs on and on fails, and Ctrl-C stops it.

A checked kernel's ``compute`` gets two more arguments: the budget (the cycles one vertex may
count, the engine option ``codelets.cycleBudget``) and the address of the process's stop flag
(set by Ctrl-C while a run is in native code: :mod:`codelet.interrupts`). A vertex that counts more
cycles than the budget fails with ``ERR_CYCLE_BUDGET``, one stopped by the flag with
``ERR_INTERRUPTED``; the error record holds the cycles counted (``index``), the budget (``size``)
and the line of the loop that checked. Only loops run on, so that is where the checks go, where
they cost least:

* a ``while`` loop checks at its head, every turn (``continue`` goes there too);
* a ``range`` loop runs its turns in chunks of at most :data:`CHUNK_TURNS`, and checks between
  two chunks: a chunk is a loop counting the turns it knows it has when it starts, with one exit,
  which LLVM unrolls and vectorises as it does the unchecked loop, and a loop of fewer turns (a
  repeat loop, of a small constant count, always) never checks;
* the kernel checks each vertex's count when it returns (:func:`check_vertex`), so a vertex past
  the budget fails wherever it passed it.

A loop over a vector is bounded by its length, and an unrolled loop is straight-line code: every
vertex either returns or reaches a check within ``CHUNK_TURNS`` turns of each of the loops it is
in. A check compares the count with a deadline held in a register, the budget or the next
:data:`POLL_CYCLES` cycles, whichever comes first; past it, the kernel reads the flag, fails past
the budget, and sets the next deadline. The checks count no cycles. Unchecked kernels take the
two arguments and ignore them.
"""

from __future__ import annotations

import llvmlite.ir as ir

from .exprs import ERR_STRUCT, I32, I64, ExprLowering
from .lanes import first_lane
from .type_rules import ERR_CYCLE_BUDGET, ERR_INTERRUPTED

#: the most turns of a range loop between two checks
CHUNK_TURNS = 4096
#: the cycles between two reads of the stop flag (microseconds when the kernel runs)
POLL_CYCLES = 1 << 16
#: the budget of a kernel run without one (tests calling kernels directly)
NO_BUDGET = 2**63 - 1


def check_vertex(b: ir.IRBuilder, code: ir.Value, cycles: ir.Value, err: ir.Value, budget: ir.Value,
                 line: int) -> ir.Value:
    """The status of a vertex that returned ``code`` having counted the cycles in slot ``cycles``:
    ERR_CYCLE_BUDGET (the record filled, naming ``line``) if it succeeded past the budget."""
    counted = b.load(cycles, typ=I64)
    over = b.and_(b.icmp_signed("==", code, I64(0)), b.icmp_signed(">", counted, budget))
    with b.if_then(over, likely=False):
        _fill(b, err, counted, budget, I64(line))
    return b.select(over, I64(ERR_CYCLE_BUDGET), code)


def _intrinsic(b: ir.IRBuilder, name: str, arity: int) -> ir.Function:
    """An LLVM intrinsic on i64 values, declared in the module the first time."""
    found = b.module.globals.get(name)
    return found if found is not None else ir.Function(b.module, ir.FunctionType(I64, [I64] * arity), name)


def _fill(b: ir.IRBuilder, err: ir.Value, counted: ir.Value, budget: ir.Value, line: ir.Value) -> None:
    for k, v in ((2, I64(-1)), (3, counted), (4, budget), (5, line)):
        b.store(v, b.gep(err, [I32(0), I32(k)], source_etype=ERR_STRUCT))


class BudgetLowering(ExprLowering):
    """The checks of a kernel's loops; :class:`KernelBuilder` calls them where it lowers loops."""

    budget: ir.Value  # compute's budget argument (i64)
    stop: ir.Value  # compute's stop flag argument (a pointer to an i64)
    deadline: ir.Value  # the slot of the count at which the next check looks further
    watch_exit: tuple[ir.Block, ir.PhiInstr] | None  # the shared failing exit, and its line

    def _start_budget(self) -> None:
        """In compute's entry block: the first deadline."""
        self.deadline = self._alloca(I64, "budget.deadline")
        self.alloca_builder.store(self._next_deadline(self.alloca_builder, I64(0)), self.deadline)

    def _next_deadline(self, b: ir.IRBuilder, counted: ir.Value) -> ir.Value:
        """POLL_CYCLES on from ``counted`` (at most the budget), or the budget if nearer."""
        near = b.icmp_signed("<=", b.sub(self.budget, counted), I64(POLL_CYCLES))
        return b.select(near, self.budget, b.add(counted, I64(POLL_CYCLES)))

    def _watch(self, line: int) -> None:
        """Go on if the count is within the deadline; else fail if it is past the budget or the run
        is stopped, and go on with the next deadline."""
        self._flush()
        counted = first_lane(self.b.load(self.counter))
        due, renew, go_on = self._block("budget.due"), self._block("budget.renew"), self._block("budget.ok")
        self.b.cbranch(self.b.icmp_signed(">", counted, first_lane(self.b.load(self.deadline))), due,
                       go_on).set_weights([1, 1000])
        self.b.position_at_end(due)
        fail = self.b.or_(self.b.icmp_signed(">", counted, self.budget), self._stopped(self.b))
        block, at = self._watch_exit()
        self.b.cbranch(fail, block, renew)
        at.add_incoming(I64(line), due)
        self.b.position_at_end(renew)
        self.b.store(self._next_deadline(self.b, counted), self.deadline)
        self.b.branch(go_on)
        self.b.position_at_end(go_on)

    def _chunk(self, left: ir.Value) -> ir.Value:
        """The turns of the chunk starting now, of the ``left`` a range loop has: at most
        CHUNK_TURNS."""
        return self.b.call(_intrinsic(self.b, "llvm.umin.i64", 2), [left, I64(CHUNK_TURNS)])

    def _next_chunk(self, left: ir.Value, turns: ir.Value, chunk: ir.Block, done: ir.Block,
                    line: int) -> None:
        """Where a chunk's loop ended after its ``turns`` of the ``left``: with none left, ``done``;
        else a check, and on to the next chunk. The test that ended a chunk is no turn's: its cycle
        is taken back."""
        again = self._block("for.again")
        self.b.cbranch(self.b.icmp_unsigned("==", left, turns), done, again)
        self.b.position_at_end(again)
        self.b.store(self.b.sub(self.b.load(self.counter), I64(1)), self.counter)
        self._watch(line)
        self.b.branch(chunk)

    def _stopped(self, b: ir.IRBuilder) -> ir.Value:
        """Whether the flag is set: an atomic load, so that LLVM reads it again every time."""
        flag = b.load_atomic(self.stop, "monotonic", 8, typ=I64)
        return b.icmp_signed("!=", flag, I64(0))

    def _watch_exit(self) -> tuple[ir.Block, ir.PhiInstr]:
        """The block every failing check branches to (one per function), and its line's phi."""
        if self.watch_exit is None:
            block = self._block("over_budget")
            b = ir.IRBuilder(block)
            at = b.phi(I64, "budget.line")
            counted = b.load(first_lane(self.counter), typ=I64)
            _fill(b, self.err, counted, self.budget, at)
            b.store(counted, self.cyc_out)
            b.ret(b.select(self._stopped(b), I64(ERR_INTERRUPTED), I64(ERR_CYCLE_BUDGET)))
            self.watch_exit = (block, at)
        return self.watch_exit
