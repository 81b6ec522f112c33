"""Definite assignment: a local read where some path from the function's entry has not
assigned it is an error when the codelet is added, in both modes.

Python raises ``UnboundLocalError`` at such a read only when the path is taken; a native
kernel would read whatever its register held. So the rule is Java's: a read is accepted
only if every path to it assigns the name first. Loops may run zero times (unless their
``range`` is known when compiling and not empty), ``break``, ``continue`` and ``return``
end paths, and a branch on a value known when compiling counts only its taken side, as
only that side is compiled. The pass reads the typed codelet (compute and every helper
specialisation it calls) and returns nothing: ``check_assigned(typed)``.
"""

from __future__ import annotations

import ast

from .inference import FunctionTypes, TypedCodelet, is_range
from .source import compile_error
from .type_rules import ScalarType

#: the state of a point in the function: the names surely assigned there, or None (unreachable)
State = frozenset[str] | None


def check_assigned(typed: TypedCodelet) -> None:
    """Raise CodeletCompileError (file, line, name) at the first read of a local that some path
    leaves unassigned, in compute or any helper it calls."""
    seen: set[int] = set()
    stack = [typed.compute]
    while stack:
        types = stack.pop()
        if id(types) not in seen:
            seen.add(id(types))
            _Flow(types).run()
            stack.extend(types.calls.values())


def _meet(*states: State) -> State:
    """Where paths join: the names every reachable path assigned."""
    live = [s for s in states if s is not None]
    return frozenset.intersection(*live) if live else None


class _Loop:
    def __init__(self) -> None:
        self.breaks: list[State] = []
        self.continues: list[State] = []


class _Flow:
    def __init__(self, types: FunctionTypes) -> None:
        self.types, self.fn = types, types.fn
        self.locals = set(self.fn.local_names) - set(self.fn.params)
        self.loops: list[_Loop] = []

    def run(self) -> None:
        self.block(self.fn.node.body, frozenset(self.fn.params))

    def known(self, e: ast.expr) -> object:
        """The value of ``e`` when it is known when compiling, else None."""
        t = self.types.exprs.get(id(e))
        return t.value if isinstance(t, ScalarType) else None

    # statements -----------------------------------------------------------------------------
    def block(self, stmts: list[ast.stmt], state: State) -> State:
        for s in stmts:
            if state is None:
                return None  # unreachable code is not compiled
            state = self.statement(s, state)
        return state

    def statement(self, s: ast.stmt, state: frozenset[str]) -> State:
        if isinstance(s, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            if s.value is not None:
                self.reads(s.value, state)
            targets = s.targets if isinstance(s, ast.Assign) else [s.target]
            if isinstance(s, ast.AugAssign):
                self.reads(s.target, state)  # x += 1 reads x first
            for t in targets:
                state = self.target(t, state)
            return state
        if isinstance(s, ast.If):
            return self.branch(s, state)
        if isinstance(s, (ast.For, ast.While)):
            return self.loop(s, state)
        if isinstance(s, ast.Break):
            self.loops[-1].breaks.append(state)
            return None
        if isinstance(s, ast.Continue):
            self.loops[-1].continues.append(state)
            return None
        if isinstance(s, ast.Return):
            if s.value is not None:
                self.reads(s.value, state)
            return None
        for child in ast.iter_child_nodes(s):  # Expr, Assert, Pass
            if isinstance(child, ast.expr):
                self.reads(child, state)
        return state

    def target(self, t: ast.expr, state: frozenset[str]) -> frozenset[str]:
        if isinstance(t, ast.Name):
            return state | {t.id}
        if isinstance(t, (ast.Tuple, ast.List)):
            for e in t.elts:
                state = self.target(e, state)
            return state
        self.reads(t, state)  # x[i] = ...: reads x and i
        return state

    def branch(self, s: ast.If, state: frozenset[str]) -> State:
        test = self.known(s.test)
        if test is not None:
            return self.block(s.body if test else s.orelse, state)
        self.reads(s.test, state)
        return _meet(self.block(s.body, state), self.block(s.orelse, state))

    def loop(self, s: ast.For | ast.While, state: frozenset[str]) -> State:
        at_least_once = False
        if isinstance(s, ast.For):
            self.reads(s.iter, state)
            entry = self.target(s.target, state)
            if is_range(s):
                assert isinstance(s.iter, ast.Call)
                bounds = [self.known(a) for a in s.iter.args]
                if all(isinstance(b, int) and not isinstance(b, bool) for b in bounds):
                    at_least_once = len(range(*bounds)) > 0  # type: ignore[arg-type]
        else:
            self.reads(s.test, state)
            entry = state
            forever = self.known(s.test)
            at_least_once = bool(forever)
            if forever:  # while True: leaves by break (or return) only
                loop = _Loop()
                self.loops.append(loop)
                self.block(s.body, entry)
                self.loops.pop()
                return _meet(*loop.breaks)
        loop = _Loop()
        self.loops.append(loop)
        end = self.block(s.body, entry)
        self.loops.pop()
        exhausted = _meet(end, *loop.continues) if at_least_once else state
        after_else = self.block(s.orelse, exhausted) if exhausted is not None else None
        return _meet(after_else, *loop.breaks)

    # expressions ----------------------------------------------------------------------------
    def reads(self, e: ast.expr, state: frozenset[str]) -> None:
        for node in ast.walk(e):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id in self.locals \
                    and node.id not in state:
                raise compile_error(self.fn, node, f"local variable '{node.id}' may be read before it is "
                                                   "assigned (some path to here does not assign it)")
