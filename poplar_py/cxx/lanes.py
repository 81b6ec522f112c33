"""Lockstep lanes for C++ vertices: one entry run for ``LANES`` vertices at once, as the Python
codelets do (:mod:`codelet.lanes`), so that strict IEEE sums, latency-bound one vertex at a time,
run as independent chains side by side (LLVM's SLP vectoriser packs the lanes' operations).

Lanes share control flow, so a vertex class runs in lockstep only when every branch, switch and
return of its (counted, checked) entry depends on *uniform* values: constants, the worker, and
what the vertex's state record holds other than pointers (vector sizes, state scalars), and
what is computed from them. At run time the batch runner groups consecutive vertices whose
records agree on those bytes (the signature mask) and calls the lanes function for them; any
other vertex runs alone. Each lane does exactly the operations its vertex does alone, so results
and cycles are the same; a failing lane fails with its own vertex's record.

The transformation works on the entry's IR text: every instruction that reads a varying value
(a lane's pointers, and what is loaded through them) is emitted once per lane with renamed
values; uniform instructions, the branches and the cycle counter are emitted once.
"""

from __future__ import annotations

import re

from .ir_text import RESULT

#: the Python codelets' figure: two chains hide most of an add's latency
LANES = 2
_VALUE = re.compile(r"(?<!label )(%(?!class\.|struct\.|union\.)[-\w.$]+)")  # values, not types
_PURE = (
    "llvm.fabs",
    "llvm.sqrt",
    "llvm.copysign",
    "llvm.minnum",
    "llvm.maxnum",
    "llvm.floor",
    "llvm.ceil",
    "llvm.trunc",
    "llvm.round",
    "llvm.smin",
    "llvm.smax",
    "llvm.umin",
    "llvm.umax",
    "llvm.abs",
    "llvm.fmuladd",
    "llvm.fma",
    "llvm.exp",
    "llvm.log",
    "llvm.pow",
    "llvm.sin",
    "llvm.cos",
)


def lockstep(lines: list[str], name: str, stride: int) -> list[str] | None:
    """The entry function ``lines`` (its ``define`` line, its body) as function ``name`` running
    LANES vertices whose records are ``stride`` bytes apart; None when lanes could diverge."""
    header, body = lines[0], lines[1:]
    params = header[header.index("(") + 1 : header.rindex(")")]
    state = re.findall(r"%[-\w.$]+", params)[0]
    varying = _varying(body, state)
    for line in body:
        stripped = line.strip()
        steers = stripped.startswith(("br i1 ", "switch ", "ret ", "indirectbr"))
        if steers and any(v in varying for v in _VALUE.findall(stripped.split(" label ")[0])):
            return None  # control flow (or the status) may differ between lanes
    lanes = [state] + [f"%__pp.lane{k}" for k in range(1, LANES)]
    out = [re.sub(r"@[-\w.$]+\(", f"@{name}(", header, count=1)]
    out += [f"  {lanes[k]} = getelementptr i8, ptr {state}, i64 {k * stride}" for k in range(1, LANES)]
    for line in body:
        result = RESULT.match(line)
        uniform = result[1] not in varying if result else not any(v in varying for v in _VALUE.findall(line))
        if not line.startswith("  ") or uniform:
            out.append(line)  # once: its value (lane 0's operands where it reads a record) agrees
        else:
            out += [_rename(line, varying, state, lanes[k], k) for k in range(LANES)]
    return out


def _rename(line: str, varying: set[str], state: str, lane_state: str, k: int) -> str:
    if k == 0:
        return line

    def lane(m: re.Match) -> str:
        v = m[1]
        if v == state:
            return lane_state
        return f"%__l{k}.{v[1:]}" if v in varying else v

    if " = phi " in line:  # rename the values of its [value, block] pairs, never the blocks
        head, pairs = line.split(" = phi ", 1)
        pairs = re.sub(r"\[ (%[-\w.$]+),", lambda m: f"[ {lane(m)},", pairs)
        return f"{_VALUE.sub(lane, head)} = phi {pairs}"
    return _VALUE.sub(lane, line)


def _varying(body: list[str], state: str) -> set[str]:
    """The values that differ between lanes: the lane's record and its pointers, what is loaded
    through them, locals (allocas), calls that are not pure maths, and what reads any of these."""
    defs = []
    for line in body:
        m = RESULT.match(line)
        if m is not None:
            defs.append((m[1], m[2].strip()))
    records = {state}  # addresses within a lane's own state record
    varying = {state}
    changed = True
    while changed:
        changed = False
        for result, rest in defs:
            if result in varying:
                continue
            if _is_varying(result, rest, varying, records):
                varying.add(result)
                changed = True
    return varying


def _is_varying(result: str, rest: str, varying: set[str], records: set[str]) -> bool:
    opcode = rest.split(" ", 1)[0]
    operands = _VALUE.findall(rest)
    if opcode == "getelementptr":
        base = operands[0] if operands else None
        if base in records and len(operands) == 1:
            records.add(result)  # a field of the record: constant indices
        return any(v in varying for v in operands)
    if opcode == "load":
        pointer = operands[0] if operands else None
        if pointer in records:
            return rest.startswith("load ptr")  # a pointer differs per lane; sizes and scalars agree
        return pointer is None or pointer in varying
    if opcode == "alloca":
        return result != "%__pp.cycles"
    if opcode in ("call", "tail", "notail", "musttail"):
        callee = re.search(r"@([-\w.$]+)\(", rest)
        if callee is None or not callee[1].startswith(_PURE):
            return True
    if opcode == "phi":
        values = re.findall(r"\[ ([^,]+),", rest)
        return any(v.strip() in varying for v in values)
    return any(v in varying for v in operands)
