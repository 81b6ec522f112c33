"""LLVM IR of a typed codelet's statements: assignments, ``if``, loops (``while``, ``for`` over
``range``, counted loops versioned or repeated), ``break``/``continue``/``return``, ``assert`` and
``print``, each block's cycles counted (the cycle model: :mod:`codegen`)."""

from __future__ import annotations

import ast

import llvmlite.ir as ir

from .exprs import I8, I32, I64, PTR, STATUS_OK, ExprLowering, Value, storage_type
from .inference import is_range
from .loop_versioning import range_turns
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
from .unroll import CycleMark
from .versioning import UNROLL_OFF


class StatementLowering(ExprLowering):
    """Lowers a codelet's statements into the function being built (a part of
    :class:`~poplar_py.codelet.codegen.KernelBuilder`)."""

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
            # the loop counts its turns (a trip count LLVM expands cheaply, so it unrolls and
            # vectorises the loop); checked, it runs them in chunks between budget checks
            turn = self._alloca(I64, "for.turn")
            chunked = self.checked and control == 1
            if chunked:
                chunk, rest = self._block("for.chunk"), self._block("for.rest")
                self._goto(chunk)
            left = range_turns(self.b, self.b.load(counter), stop, step)
            turns = self._chunk(left) if chunked else left
            self.b.store(I64(0), turn)
            self._goto(head)
            i = self.b.load(counter)
            self.pending += control
            self._cbr(self.b.icmp_unsigned("<", self.b.load(turn), turns), body, rest if chunked else done)
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
        if bounds is not None:
            self.b.store(self.b.add(self.b.load(turn), I64(1), flags=("nuw", "nsw")), turn)
        back = self._br(head)
        if not self.unrolling:  # the rolled cold copy: LLVM must not unroll it either
            hints = (*hints, UNROLL_OFF)
        if hints:
            self._loop_hints(back, hints)
        if chunked:
            self.b.position_at_end(rest)
            self._next_chunk(left, turns, chunk, done, node.lineno)
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
