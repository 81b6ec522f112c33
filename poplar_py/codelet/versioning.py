"""Loop versioning in the codegen: the lowering side of :mod:`~poplar_py.codelet.loop_versioning`.

:class:`VersionedLowering` lowers a range loop (and the straight-line code after it, when
:func:`~.loop_versioning.hoistable`) twice behind one guard: a fast copy whose covered accesses go
unchecked, and a checked cold copy for when the guard fails. When the guarded code is
:func:`~.loop_versioning.certain` to fail with the guard, the cold copy keeps its loops rolled, so
it stays small (the largest PopLibs kernel compiles in half the time). :class:`KernelBuilder`
derives from this class.
"""

from __future__ import annotations

import ast
import contextlib
import copy
from collections.abc import Callable, Iterator

import llvmlite.ir as ir
from llvmlite.ir import MetaDataString

from .exprs import I1, I64, ExprLowering, storage_type
from .loop_versioning import (
    LoopPlan,
    assigned_names,
    certain,
    emit_guard,
    hoistable,
    loop_points,
    plan_loop,
    plan_region,
)
from .type_rules import PY_INT, ScalarType, VectorType

#: LLVM loop options: a name, and a boolean value or none
UNROLL_OFF = ("llvm.loop.unroll.disable", None)
VECTORIZE_OFF = ("llvm.loop.vectorize.enable", False)


class VersionedLowering(ExprLowering):
    """Versioned loops and regions; :class:`KernelBuilder` supplies the statement lowering."""

    module: ir.Module
    versioning: bool  # False while lowering the checked copy of versioned code
    unrolling: bool  # False in the rolled cold copy

    def _loop(self, node: ast.For, bounds: tuple[ir.Value, ir.Value, ir.Value] | None,
              hints: tuple[tuple[str, bool | None], ...] = ()) -> None:
        raise NotImplementedError

    def _statements(self, stmts: list[ast.stmt]) -> None:
        raise NotImplementedError

    def _versioned_loop(self, node: ast.For, after: list[ast.stmt]) -> bool:
        """A range loop; with the straight-line statements ``after`` it too when one guard can
        cover both (:func:`hoistable`). Whether it lowered ``after``."""
        original, node = node, self._flattened(node)
        assert isinstance(node.iter, ast.Call)
        args = [self.ops.convert(self.expr(a), self.type(a), PY_INT) for a in node.iter.args]
        bounds = (
            (I64(0), args[0], I64(1))
            if len(args) == 1
            else (args[0], args[1], args[2] if len(args) == 3 else I64(1))
        )
        plan = None
        if self.checked and self.versioning:
            plan = plan_loop(node, self._typed, self.frame.types.locals, self.fields)
        # a body of unrolled copies is SLP's to vectorise: the loop vectoriser, once it may
        # reassociate, treats every sum of a register tile as a reduction and spills them (a
        # fastMath matMul ran 6x slower than a strict one)
        hints = (VECTORIZE_OFF,) if original is not node and self.flags else ()
        if plan is None:
            self._loop(node, bounds, hints)
            return False
        region = self._region_plan(after) if after else None
        if region is None or not hoistable(node, region):
            region, after = None, []

        def lower() -> None:
            self._loop(node, bounds, hints)
            self._statements(after)

        def lower_rolled() -> None:  # the cold copy when it can only end in an error
            with self._rolled(original):
                self._loop(original, bounds)
            self._statements(after)

        # loop versioning (codelet/loop_versioning.py): an unchecked copy when the guard proves every covered
        # access in bounds, else the checked loop (the same error record as without versioning)
        runs, points = loop_points(self.b, plan.step, bounds[0], bounds[1])
        guard = self.b.or_(self.b.not_(runs), self._guard(plan, points))
        ids = plan.ids
        if region is not None:
            guard, ids = self.b.and_(guard, self._guard(region, [I64(0)])), ids | region.ids
        exact = original is not node and certain(node.body + after, self._is_helper)
        self._versioned(guard, ids, lower, lower_rolled if exact else None)
        return region is not None

    def _is_helper(self, call: ast.Call) -> bool:
        return id(call) in self.frame.types.calls or id(call) in self.unroller.calls

    @contextlib.contextmanager
    def _rolled(self, loop: ast.For) -> Iterator[None]:
        """Lower without unrolling, the local arrays ``loop`` uses copied to arrays of their own
        (indexed by loop variables, they stay in memory; the originals stay in registers)."""
        arrays = {n.id for s in loop.body for n in ast.walk(s) if isinstance(n, ast.Name)}
        arrays -= set(assigned_names(loop.body))  # one the loop makes anew is its own already
        moved = []
        for name in sorted(arrays):
            t = self.frame.types.locals.get(name)
            slot = self.frame.slots.get(name)
            if isinstance(t, VectorType) and t.size is not None and isinstance(slot, tuple):
                array = ir.ArrayType(storage_type(t.elem), t.size)
                home, copy_ = self.b.load(slot[0]), self.alloca_builder.alloca(array, name=f"{name}.rolled")
                self.b.store(self.b.load(home, typ=array), copy_)
                self.b.store(copy_, slot[0])
                moved.append((slot[0], home, copy_, array))
        outer, self.unrolling = self.unrolling, False
        try:
            yield
        finally:
            self.unrolling = outer
        if not self.b.block.is_terminated:
            for ptr_slot, home, copy_, array in moved:
                self.b.store(self.b.load(copy_, typ=array), home)
                self.b.store(home, ptr_slot)

    def _loop_hints(self, back_edge: ir.Instruction, hints: tuple[tuple[str, bool | None], ...]) -> None:
        """Give the loop ``back_edge`` closes the LLVM loop options ``hints``."""
        m = self.module
        loop = m.add_metadata([MetaDataString(m, f"loop.{len(m.metadata)}")])  # a loop id of its own
        options = [m.add_metadata([MetaDataString(m, name)] if value is None
                                  else [MetaDataString(m, name), ir.Constant(I1, value)])
                   for name, value in hints]
        loop.operands = (loop, *options)
        back_edge.set_metadata("llvm.loop", loop)

    def _region_plan(self, stmts: list[ast.stmt]) -> LoopPlan | None:
        return plan_region(stmts, self._typed, self.frame.types.locals, self.fields, self.unchecked)

    def _guard(self, plan: LoopPlan, points: list[ir.Value]) -> ir.Value:
        return emit_guard(self.b, plan, points, self._guard_leaf, self._guard_size, self._guard_row)

    def _flattened(self, node: ast.For) -> ast.For:
        """The loop with the loops of its body that unroll expanded (what loop versioning plans)."""
        if not self.unrolling:
            return node
        body = self.unroller.expand(node.body, self.frame.types)
        if body == node.body:
            return node
        flat = copy.copy(node)
        flat.body = body
        return flat

    def _versioned(self, guard: ir.Value, ids: frozenset[int], lower: Callable[[], None],
                   lower_checked: Callable[[], None] | None = None) -> None:
        """Lower code twice: with the accesses ``ids`` unchecked where ``guard`` holds, else checked
        (by ``lower_checked`` if given; not versioned again: the checked copy is the cold path)."""
        fast, slow, join = self._block("ver.fast"), self._block("ver.checked"), self._block("ver.join")
        self._cbr(guard, fast, slow, likely=True)
        outer = self.unchecked
        copies = ((fast, outer | ids, True, lower), (slow, outer, False, lower_checked or lower))
        for block, skip, versioning, how in copies:
            self.b.position_at_end(block)
            self.unchecked, self.versioning = skip, versioning
            how()
            if not self.b.block.is_terminated:
                self._br(join)
        self.unchecked, self.versioning = outer, True
        self.b.position_at_end(join)

    # guards: invariant values, no cycles counted ----------------------------------------------------
    def _guard_leaf(self, e: ast.expr) -> ir.Value:
        if isinstance(e, ast.Call):  # len(v)
            return self._guard_size(e.args[0])
        assert isinstance(e, ast.Name)
        v, t = self._eName(e), self.type(e)
        assert not isinstance(v, tuple) and isinstance(t, ScalarType)
        return self.ops.convert(v, t, PY_INT)

    def _guard_size(self, container: ast.expr) -> ir.Value:
        v = self._eName(container) if isinstance(container, ast.Name) else self.expr(container)
        assert isinstance(v, tuple)
        return v[1]

    def _guard_row(self, table: ast.expr, index: ir.Value) -> tuple[ir.Value, ir.Value]:
        """Whether an i128 index of a vector list is in bounds, and then its row's length (i128,
        0 otherwise: the table is only read in bounds)."""
        data, n = self._eName(table) if isinstance(table, ast.Name) else self.expr(table)  # type: ignore[misc]
        i128 = ir.IntType(128)
        ok = self.b.icmp_unsigned("<", index, self.b.sext(n, i128))
        slot = self._alloca(I64, "row.size")
        with self.b.if_then(ok):
            self.b.store(self._row(data, self.b.trunc(index, I64))[1], slot)
        return ok, self.b.sext(self.b.load(slot), i128)
