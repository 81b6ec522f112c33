"""Counted loops in a vertex entry's IR text: what the cycle count and the bounds checks need.

A counted loop is a header block holding an induction variable ``i = phi [start, ...], [i + 1,
latch]`` (``start`` a constant >= 0) and a branch on ``i < n`` (or ``i`` widened) whose true
edge enters the loop body. Two facts follow:

* its control costs what a Python codelet's ``for ... in range`` costs: the step ``i + 1`` and the
  branch 1 each a turn (the compare is the branch's: ``brnzdec``), or, for a repeat loop (a
  constant count of at most ``RPT_MAX_COUNT`` turns, no branch in its body:
  ``codelet/repeat.py``), nothing a turn and 1 where it is entered (:attr:`Loops.repeat_entries`);
* inside the body ``i < n``, so a bounds check of index ``i`` against a size is passed by every
  iteration when ``n <= size``: the check is told so (:class:`Loops.bound`), and LLVM's loop
  unswitching then runs the loop without checks when that holds, as the Python codelets'
  loop versioning does, so it can vectorise.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..codelet.repeat import RPT_MAX_COUNT
from .ir_text import LABEL, RESULT

_PHI = re.compile(r"^\s*(%[-\w.$]+) = phi (i\d+) (.*)$")
_STEP = re.compile(r"^\s*(%[-\w.$]+) = (?:add|sub)(?: nuw| nsw)* i\d+ (%[-\w.$]+), (-?\d+)")
_WIDEN = re.compile(r"^\s*(%[-\w.$]+) = (zext|sext|trunc)(?: nneg)? i\d+ (%[-\w.$]+) to (i\d+)")
_COMPARE = re.compile(r"^\s*(%[-\w.$]+) = icmp (?:samesign )?(\w+) (i\d+) ([^,]+), ([^,\s]+)")
_BRANCH = re.compile(r"^\s*br i1 (%[-\w.$]+), label %([-\w.$]+), label %([-\w.$]+)")
_TARGETS = re.compile(r"label %([-\w.$]+)")
#: compares that hold inside the loop body (true edge) as ``i < n``: (index operand, bound operand)
_BELOW = {"ult": (0, 1), "slt": (0, 1), "ugt": (1, 0), "sgt": (1, 0)}


@dataclass(frozen=True)
class Bound:
    """Inside the loop body, index < ``value`` (of ``type``; ``signed`` compare)."""

    value: str
    type: str
    signed: bool
    body: frozenset[str]  # the labels of the loop's body blocks


def blocks(body: list[str]) -> list[tuple[str, list[str]]]:
    """(label, lines) of each basic block; the entry block's label is ``""``."""
    out: list[tuple[str, list[str]]] = [("", [])]
    for line in body:
        m = LABEL.match(line)
        if m is not None:
            out.append((m[1], []))
        else:
            out[-1][1].append(line)
    return out


def _successors(lines: list[str]) -> list[str]:
    for k in range(len(lines) - 1, -1, -1):
        stripped = lines[k].strip()
        if stripped.startswith(("br ", "switch ", "indirectbr ")):
            return _TARGETS.findall(" ".join(lines[k:]))
    return []


def _starts_non_negative(incoming: str, step: str) -> bool:
    starts = [v for v, _ in re.findall(r"\[ ([^,]+), %([-\w.$]+) \]", incoming) if v != step]
    return bool(starts) and all(re.fullmatch(r"\d+", v) for v in starts)


class Loops:
    """The counted loops of one entry function."""

    def __init__(self, body: list[str]) -> None:
        self.cfg = {label: _successors(lines) for label, lines in blocks(body)}
        self.block_of: dict[str, str] = {}
        for label, lines in blocks(body):
            for line in lines:
                m = RESULT.match(line)
                if m is not None:
                    self.block_of[m[1]] = label
        self.lines = dict(blocks(body))
        self.control: set[str] = set()  # compares and steps of loop control
        self.steps: set[str] = set()  # of those, the steps (1 a turn, unless the loop repeats)
        self.repeats: set[str] = set()  # the compares and steps of repeat loops (free)
        self.repeat_entries: dict[str, int] = {}  # block -> repeat loops it enters (1 each)
        self.bounds: dict[str, Bound] = {}
        self._find(body)

    def _find(self, body: list[str]) -> None:
        phis = {m[1]: m[3] for m in map(_PHI.match, body) if m is not None}
        steps: dict[str, str] = {}  # induction variable -> its step
        counted: set[str] = set()  # those starting at a constant >= 0, stepping by +1
        for m in filter(None, map(_STEP.match, body)):
            incoming = phis.get(m[2])
            if incoming is not None and f"[ {m[1]}, " in incoming:
                steps[m[2]] = m[1]
                if m[3] == "1" and " add" in m[0] and _starts_non_negative(incoming, m[1]):
                    counted.add(m[2])
        owner = {step: variable for variable, step in steps.items()}
        roots = {**{v: v for v in steps}, **owner}  # a value of a loop's control -> its variable
        widened: dict[str, str] = {}  # a widening of an induction variable (not of its step) -> it
        for m in filter(None, map(_WIDEN.match, body)):
            if m[3] in roots:
                roots[m[1]] = roots[m[3]]
                if m[3] in steps or m[3] in widened:
                    widened[m[1]] = roots[m[3]]
        branches = {m[1]: (m[2], m[3]) for m in map(_BRANCH.match, body) if m is not None}
        for m in filter(None, map(_COMPARE.match, body)):
            name, predicate, type_, a, b = m.groups()
            operands = (a.strip(), b.strip())
            found = {roots[x] for x in operands if x in roots}
            if name not in branches or not found:
                continue
            self.control |= {name} | {steps[v] for v in found}
            self.steps |= {steps[v] for v in found}
            if predicate in _BELOW:
                index, limit = (operands[k] for k in _BELOW[predicate])
                variable = index if index in steps else widened.get(index)
                if variable in counted and limit not in roots:
                    bound = self._bound(
                        name,
                        Bound(limit, type_, predicate.startswith("s"), frozenset()),
                        branches[name],
                        variable,
                        widened,
                    )
                    if bound is not None:
                        self._repeat(name, phis[variable], steps[variable], bound)

    def _bound(
        self, compare: str, bound: Bound, targets: tuple[str, str], variable: str, widened: dict[str, str]
    ) -> Bound | None:
        header = self.block_of.get(compare, "")
        body = self._body(header, targets[0])
        if header in body or targets[1] in body:
            return None  # not a loop whose true edge enters its body
        bound = Bound(bound.value, bound.type, bound.signed, frozenset(body))
        for value in [variable, *(w for w, v in widened.items() if v == variable)]:
            self.bounds[value] = bound
        return bound

    def _repeat(self, compare: str, incoming: str, step: str, bound: Bound) -> None:
        """Mark a counted loop as a repeat loop when its count is a constant that fits and its
        body does not branch."""
        start = re.findall(r"\[ (\d+), %([-\w.$]+) \]", incoming)
        if len(start) != 1 or not re.fullmatch(r"\d+", bound.value):
            return
        if not 0 <= int(bound.value) - int(start[0][0]) <= RPT_MAX_COUNT:
            return
        if any(line.strip().startswith(("br i1", "switch ")) for b in bound.body for line in self.lines[b]):
            return
        self.repeats |= {compare, step}
        entry = start[0][1] if start[0][1] in self.lines else ""  # the entry block has no label line
        self.repeat_entries[entry] = self.repeat_entries.get(entry, 0) + 1

    def repeats_branch(self, line: str) -> bool:
        """Whether a conditional branch is a repeat loop's (free)."""
        m = _BRANCH.match(line)
        return m is not None and m[1] in self.repeats

    def _body(self, header: str, first: str) -> set[str]:
        """The blocks reached from ``first`` without passing ``header`` that lead back to it."""
        reach, todo = set(), [first]
        while todo:
            b = todo.pop()
            if b == header or b in reach:
                continue
            reach.add(b)
            todo += self.cfg.get(b, [])
        back = {b for b in reach if header in self.cfg.get(b, [])}
        body, todo = set(), list(back)
        preds: dict[str, list[str]] = {}
        for b in reach:
            for s in self.cfg.get(b, []):
                preds.setdefault(s, []).append(b)
        while todo:
            b = todo.pop()
            if b in body:
                continue
            body.add(b)
            todo += [p for p in preds.get(b, []) if p in reach]
        return body

    def bound(self, index: str, block: str) -> Bound | None:
        """The bound ``index`` stays below in ``block``, when the block is in its loop's body."""
        found = self.bounds.get(index)
        return found if found is not None and block in found.body else None
