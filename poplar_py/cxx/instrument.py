"""The cycle count and the checks of a C++ codelet, written into its LLVM IR.

Input: the module clang wrote, after LLVM's always-inliner and SROA, so each vertex's entry
function holds its whole ``compute`` (every call the codelet makes inlined) with locals in
registers. For each entry this pass, working on the IR text:

* refuses what cannot run here, naming the codelet file's line: inline assembly, calls that were
  not inlined (recursion), calls through a function pointer, local arrays larger than a tile;
* counts cycles as the Python codelets' compiler does, per basic block, added once at the
  block's end into a local counter (promoted to a register by LLVM) stored at each return:
  1 per arithmetic, comparison, float conversion, select, load, store and conditional branch;
  10 per division or remainder; a ``<cmath>`` call what the Python codelets' ``math`` call costs;
  ``phi``, address arithmetic, integer width changes, unconditional branches and the shipped
  headers' bookkeeping (see ``poplar_py/hooks.h``) are free;
* replaces the headers' hooks: a bounds check becomes a compare that fails the vertex (or
  nothing, unchecked), the worker id and the row offsets become the entry's arguments, and
  ``assert``, ``abort`` and traps fail the vertex instead of the process;
* guards integer division: a zero divisor (or the most negative value over -1) fails the vertex
  instead of trapping the host.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..codelet.code_size import BYTES_PER_INSTRUCTION, ENTRY_BYTES
from ..codelet.exprs import COSTS
from ..errors import CodeletError
from .costs import (
    DIVIDE,
    ENDINGS,
    FLOAT_OPS,
    FREE,
    MAX_LOCAL_BYTES,
    ONE,
    VERTEX_OVERHEAD,
    call_cost,
    type_bytes,
)
from .ir_text import DEFINE, LABEL, RESULT
from .lanes import lockstep
from .lines import Lines
from .loops import Loops

#: how a vertex failed, in its error record (1-3 are the Python codelets')
ERR_RETURNED_FALSE, ERR_OUT_OF_BOUNDS, ERR_ASSERTION, ERR_TRAP, ERR_DIVIDE = 1, 2, 3, 4, 5
_TERMINATORS = ("br ", "ret ", "switch ", "unreachable", "indirectbr ", "resume ", "callbr ", "invoke ")
_CALLEE = re.compile(r"\bcall\b[^@%]*?(?:@([-\w.$]+)|(%[-\w.$]+))\(")
#: a floating-point type in an instruction, or in an intrinsic's name (``llvm.fabs.f32``)
_FLOAT_TYPE = re.compile(r"\b(?:half|bfloat|float|double)\b|\.(?:v\d+)?f(?:16|32|64)\b")
_ARGS = re.compile(r"%[-\w.$]+")


@dataclass
class Entry:
    """One vertex's entry function as text lines, and the names of its arguments."""

    header: str
    body: list[str]
    state: str
    worker: str
    context: str
    cycles: str
    offset: str
    buffers: str


def instrument(ir_text: str, entries: dict[str, int], file: str, checked: bool) -> str:
    """The module with every entry counted and its hooks replaced (see the module docstring),
    and each entry's lockstep twin ``<entry minus _entry>_lanes`` defined (:mod:`.lanes`) for
    ``entries[name]``-byte records, or a stub with ``_has_lanes`` 0 (stride 0: never in lanes)."""
    if "@llvm.global_ctors" in ir_text:
        raise CodeletError(f"{file}: global objects with constructors are not supported in codelets")
    lines = Lines.of(ir_text, file)
    defined = {m[1] for m in map(DEFINE.match, ir_text.split("\n")) if m is not None}
    out: list[str] = []
    flags: dict[str, int] = {}
    text = ir_text.split("\n")
    i = 0
    while i < len(text):
        line = text[i]
        name = DEFINE.match(line)
        if name is None or name[1] not in entries:
            out.append(line)
            i += 1
            continue
        end = text.index("}", i)
        entry = _entry(line, text[i + 1 : end])
        counted = _Rewriter(entry, lines, defined, checked).run()
        out += [*counted, "}"]
        symbol = name[1].removesuffix("_entry")
        together = lockstep(counted, f"{symbol}_lanes", entries[name[1]]) if entries[name[1]] else None
        out += (
            together + ["}"]
            if together
            else [re.sub(r"@[-\w.$]+\(", f"@{symbol}_lanes(", line, count=1), "  ret i64 0", "}"]
        )
        flags[symbol] = int(together is not None)
        i = end + 1
    text = "\n".join(out)
    for symbol, flag in flags.items():
        text = re.sub(rf"^declare [^@]*@{symbol}_lanes\(.*$", "", text, flags=re.MULTILINE)
        text = re.sub(
            rf"^@{symbol}_has_lanes = external .*$",
            f"@{symbol}_has_lanes = constant i8 {flag}",
            text,
            flags=re.MULTILINE,
        )
    return _strip_debug_locations(text)


def code_bytes(ir_text: str, entry: str) -> int:
    """Bytes of tile memory a vertex's code takes, as the Python codelets' model has it
    (:mod:`codelet.code_size`): an IPU instruction per instruction of its entry that costs cycles,
    loop control included, once through, plus the entry's set-up."""
    text = ir_text.split("\n")
    start = next(i for i, line in enumerate(text) if line.startswith("define") and f"@{entry}(" in line)
    rewriter = _Rewriter(
        _entry(text[start], text[start + 1 : text.index("}", start)]), Lines({}, {}, ""), set(), checked=False
    )
    def counted(line: str) -> bool:  # loop control is counted once below, whatever a turn costs
        m = RESULT.match(line)
        return line.startswith("  ") and (m is None or m[1] not in rewriter.loop_control)

    costs = [rewriter.cost(line) for line in rewriter.e.body if counted(line)]
    # one instruction per operation (a division or a maths call is one), less the loads the
    # headers' bookkeeping makes free (negative adjustments)
    working = sum(min(c, 1) for c in costs)
    return ENTRY_BYTES + BYTES_PER_INSTRUCTION * max(0, working + len(rewriter.loop_control))


def _strip_debug_locations(text: str) -> str:
    """The module without its instructions' and functions' debug locations: they served to name
    lines, and the calls written here have none (LLVM requires a location on a call it inlines
    into a function that has them)."""
    return re.sub(r",? !dbg !\d+", "", text)


def _operation(raw: str) -> tuple[str, str]:
    """An instruction line without its result's name, and its opcode."""
    m = RESULT.match(raw)
    rest = (m[2] if m else raw).strip()
    return rest, rest.split(" ", 1)[0].rstrip(",")


def _entry(header: str, body: list[str]) -> Entry:
    params = header[header.index("(") + 1 : header.rindex(")")]
    names = _ARGS.findall(params)
    if len(names) != 6:
        raise CodeletError(f"internal error: a vertex entry has {len(names)} arguments: {header}")
    return Entry(header, body, *names)


class _Rewriter:
    """Counts and rewrites one entry function."""

    def __init__(self, entry: Entry, lines: Lines, defined: set[str], checked: bool) -> None:
        self.e, self.lines, self.defined, self.checked = entry, lines, defined, checked
        self.serial = 0
        self.loops = Loops(entry.body)
        self.loop_control = self.loops.control
        self.block = ""  # the label of the block being rewritten

    def fresh(self, stem: str) -> str:
        self.serial += 1
        return f"%__pp.{stem}.{self.serial}"

    def where(self, instruction: str) -> str:
        line = self.lines.line(instruction)
        return f"{self.lines.file}:{line}" if line else self.lines.file

    def run(self) -> list[str]:
        e = self.e
        out = [
            e.header,
            "  %__pp.cycles = alloca i64, align 8",
            f"  store i64 {VERTEX_OVERHEAD}, ptr %__pp.cycles, align 8",
        ]
        block: list[str] = []
        main, aux, in_switch = self.loops.repeat_entries.get("", 0), 0, False
        for raw in e.body:
            stripped = raw.strip()
            if in_switch:  # a switch's list of cases, to its closing bracket
                block.append(raw)
                if stripped == "]":
                    out, block, in_switch = out + block, [], False
                continue
            if not stripped or stripped.startswith(";") or LABEL.match(raw):
                label = LABEL.match(raw)
                if label:
                    self.block = label[1]
                    main += self.loops.repeat_entries.get(self.block, 0)
                block.append(raw)
                continue
            cost = self.cost(raw)
            main, aux = (main, aux + cost) if self.auxiliary(raw) else (main + cost, aux)
            if not stripped.startswith(_TERMINATORS):
                block += self.rewrite(raw)
                continue
            # a worker issues a main-pipeline and a floating-point instruction together
            block += self.count(max(main, aux)) + self.terminator(raw)
            main = aux = 0
            if stripped.startswith("switch ") and stripped.endswith("["):
                in_switch = True
            else:
                out, block = out + block, []
        return out + block

    def count(self, cost: int) -> list[str]:
        if cost == 0:
            return []
        old, new = self.fresh("c"), self.fresh("c")
        return [
            f"  {old} = load i64, ptr %__pp.cycles, align 8",
            f"  {new} = add i64 {old}, {cost}",
            f"  store i64 {new}, ptr %__pp.cycles, align 8",
        ]

    def terminator(self, raw: str) -> list[str]:
        if raw.strip().startswith("ret "):
            total = self.fresh("total")
            return [
                f"  {total} = load i64, ptr %__pp.cycles, align 8",
                f"  store i64 {total}, ptr {self.e.cycles}, align 8",
                raw,
            ]
        return [raw]

    # costs --------------------------------------------------------------------------------------
    def cost(self, raw: str) -> int:
        m = RESULT.match(raw)
        if m is not None and m[1] in self.loop_control:
            return int(m[1] in self.loops.steps and m[1] not in self.loops.repeats)
        rest, opcode = _operation(raw)
        if opcode in ("tail", "musttail", "notail", "call") or " call " in f" {rest} ":
            return self.call_cost(raw)
        if opcode == "br":
            return 1 if rest.startswith("br i1") and not self.loops.repeats_branch(raw) else 0
        if opcode == "switch":
            return 1
        if opcode == "select" and rest.startswith(("select i1 true", "select i1 false")):
            return 0  # decided when compiling
        if opcode in ONE:
            return 1
        if opcode in DIVIDE:
            return COSTS["div"]
        if opcode in FREE:
            if opcode == "alloca":
                self.check_alloca(raw)
            return 0
        raise CodeletError(f"{self.where(raw)}: the simulator cannot run the instruction '{opcode}'")

    @staticmethod
    def auxiliary(raw: str) -> bool:
        """Whether an instruction issues on the auxiliary (floating-point) pipeline: float
        arithmetic, compares and conversions, selects of floats, float intrinsics and maths calls."""
        rest, opcode = _operation(raw)
        if opcode in FLOAT_OPS:
            return True
        if opcode == "select":
            return _FLOAT_TYPE.search(rest.split(",", 1)[1]) is not None
        callee = _CALLEE.search(raw)
        if callee is None or callee[1].startswith(("__poplar_py_", "llvm.mem")):
            return False
        name = callee[1]
        return _FLOAT_TYPE.search(name) is not None if name.startswith("llvm.") else name not in ENDINGS

    def call_cost(self, raw: str) -> int:
        if re.search(r"\bcall\b[^(]*\basm\b", raw):
            raise CodeletError(
                f"{self.where(raw)}: inline assembly: IPU assembly cannot run on the simulator; "
                "write the code in C++"
            )
        callee = _CALLEE.search(raw)
        if callee is None or callee[2] is not None:
            raise CodeletError(
                f"{self.where(raw)}: a call through a function pointer: the simulator counts "
                "cycles of code it can see, so codelets call functions directly"
            )
        name = callee[1]
        if name == "__poplar_py_cycles":
            return int(re.search(r"\(i64 (?:noundef )?(-?\d+)\)", raw)[1])  # type: ignore[index]
        if name.startswith("__poplar_py_"):
            return 0
        if name in self.defined:
            raise CodeletError(
                f"{self.where(raw)}: the call to {name} was not inlined (a recursive function?): the "
                "simulator counts the cycles of a vertex's code inlined into its compute"
            )
        return call_cost(name, raw)

    def check_alloca(self, raw: str) -> None:
        found = re.search(r"alloca (\[.*?\]|<.*?>|\S+)(?:, i\d+ (\d+))?", raw)
        if found is None:
            return
        size = type_bytes(found[1]) * (int(found[2]) if found[2] else 1)
        if size > MAX_LOCAL_BYTES:
            raise CodeletError(
                f"{self.where(raw)}: a local array of {size} bytes does not fit in a tile's "
                f"{MAX_LOCAL_BYTES} bytes"
            )

    # rewrites -----------------------------------------------------------------------------------
    def rewrite(self, raw: str) -> list[str]:
        callee = _CALLEE.search(raw)
        name = callee[1] if callee is not None else None
        if name in _FAILURES:
            return self.fail(raw, _FAILURES[name])
        if name is not None and name.startswith("__poplar_py_"):
            return self.hook(name, raw)
        m = RESULT.match(raw)
        if m is not None and m[2].split(" ", 1)[0] in ("sdiv", "udiv", "srem", "urem"):
            return self.guard_division(raw, m[2])
        return [raw]

    def hook(self, name: str, raw: str) -> list[str]:
        """A call to one of poplar_py/hooks.h's functions, replaced by what it stands for."""
        e = self.e
        args = raw[raw.index("(", raw.index("@")) + 1 : raw.rindex(")")]
        result = RESULT.match(raw)
        if name == "__poplar_py_cycles":
            return []  # counted
        if name == "__poplar_py_check":
            return self.check(raw, args) if self.checked else []
        if name == "__poplar_py_fail":
            code = re.search(r"i64 (?:noundef )?(-?\d+)", args)
            return self.fail(raw, int(code[1]) if code else ERR_TRAP)
        if result is None:
            raise CodeletError(f"{self.where(raw)}: internal error: {name} used without its value")
        if name == "__poplar_py_row":
            return [f"  {result[1]} = call ptr @__poplar_py_row_at({args}, i64 {e.offset}, i64 {e.buffers})"]
        if name == "__poplar_py_worker":
            return [f"  {result[1]} = trunc i64 {e.worker} to i32"]
        if name == "__poplar_py_vertex_base":
            return [f"  {result[1]} = getelementptr i8, ptr {e.state}, i64 0"]
        return [raw]  # the runtime's own helpers

    def check(self, raw: str, args: str) -> list[str]:
        """A bounds check; in a counted loop's body, told whether the loop's bound is within the
        size, so that LLVM can unswitch the loop on it (one version without checks)."""
        e = self.e
        field, index, size = (a.split()[-1] for a in args.split(","))
        bound = self.loops.bound(index, self.block)
        out, within = [], "0"
        if bound is not None:
            wide, test, within = self.fresh("bound"), self.fresh("within"), self.fresh("within64")
            cast = "sext" if bound.signed else "zext"
            widen = (
                f"{cast} {bound.type} {bound.value} to i64"
                if bound.type != "i64"
                else f"add i64 {bound.value}, 0"
            )
            out = [
                f"  {wide} = {widen}",
                f"  {test} = icmp ule i64 {wide}, {size}",
                f"  {within} = zext i1 {test} to i64",
            ]
        return out + [
            f"  call void @__poplar_py_checked(ptr {e.context}, ptr {e.state}, ptr {field}, "
            f"i64 {index}, i64 {size}, i64 {self.lines.line(raw)}, i64 {within})"
        ]

    def fail(self, raw: str, code: int) -> list[str]:
        """The vertex fails here with ``code`` (and the line of the codelet file)."""
        e = self.e
        return [
            f"  call void @__poplar_py_failed(ptr {e.context}, i64 {code}, ptr {e.state}, ptr null, "
            f"i64 -1, i64 -1, i64 {self.lines.line(raw)})"
        ]

    def guard_division(self, raw: str, rest: str) -> list[str]:
        m = re.match(r"(sdiv|udiv|srem|urem) (?:exact )?(i\d+) ([^,]+), (.+?)(?:, !.*)?$", rest)
        if m is None:  # a vector division: lanes of zero are the codelet's to avoid
            return [raw]
        op, ty, a, b = m.groups()
        if re.fullmatch(r"-?\d+", b) and int(b) not in (0, -1):
            return [raw]
        zero = self.fresh("zero")
        out = [f"  {zero} = icmp eq {ty} {b}, 0"]
        bad = zero
        if op in ("sdiv", "srem"):
            bits = int(ty[1:])
            least, minus, both, bad = (
                self.fresh("least"),
                self.fresh("minus"),
                self.fresh("both"),
                self.fresh("bad"),
            )
            out += [
                f"  {least} = icmp eq {ty} {a}, {-(1 << (bits - 1))}",
                f"  {minus} = icmp eq {ty} {b}, -1",
                f"  {both} = and i1 {least}, {minus}",
                f"  {bad} = or i1 {zero}, {both}",
            ]
        wide = self.fresh("bad64")
        e = self.e
        out += [
            f"  {wide} = zext i1 {bad} to i64",
            f"  call void @__poplar_py_divide_checked(ptr {e.context}, ptr {e.state}, i64 {wide}, "
            f"i64 {self.lines.line(raw)})",
            raw,
        ]
        return out


#: calls that would end the process, and the error they fail the vertex with instead
_FAILURES = {
    "__assert_fail": ERR_ASSERTION,
    "abort": ERR_TRAP,
    "exit": ERR_TRAP,
    "_Exit": ERR_TRAP,
    "llvm.trap": ERR_TRAP,
    "llvm.debugtrap": ERR_TRAP,
    "llvm.ubsantrap": ERR_TRAP,
}
