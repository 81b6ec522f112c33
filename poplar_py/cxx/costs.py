"""What each LLVM instruction of a C++ codelet costs: the Python codelets' cycle model
(``codelet/codegen.py``, ``docs/cycle_model.md``) said for clang's IR.

1 per arithmetic, bitwise, comparison, select, float conversion, load, store, conditional branch
and switch; 10 per division or remainder (``COSTS["div"]``); a maths call what the Python
codelets' ``math`` function of the same name costs (``llvm.sqrt`` and ``sqrtf`` as
``math.sqrt``); ``llvm.fmuladd`` 2, a multiply and an add; ``memcpy`` of ``n`` bytes
``1 + n / 8``. Free: address arithmetic, phis, integer width changes, unconditional branches,
returns, and the intrinsics that only inform the optimiser.
"""

from __future__ import annotations

import re

from ..codelet.exprs import COSTS, MATH_COST

VERTEX_OVERHEAD = 10
#: bytes of local arrays one vertex may hold (a tile's memory)
MAX_LOCAL_BYTES = 624 * 1024

ONE = frozenset((
    "add", "sub", "mul", "and", "or", "xor", "shl", "lshr", "ashr", "fadd", "fsub", "fmul", "fneg", "icmp",
    "fcmp", "select", "load", "store", "fptrunc", "fpext", "fptoui", "fptosi", "uitofp", "sitofp",
    "shufflevector", "atomicrmw", "cmpxchg"))
DIVIDE = frozenset(("udiv", "sdiv", "urem", "srem", "fdiv", "frem"))
#: what issues on the auxiliary (floating-point) pipeline, beside the main one
FLOAT_OPS = frozenset(("fadd", "fsub", "fmul", "fdiv", "frem", "fneg", "fcmp", "fptrunc", "fpext", "fptoui",
                       "fptosi", "uitofp", "sitofp"))
FREE = frozenset((
    "phi", "getelementptr", "alloca", "bitcast", "ptrtoint", "inttoptr", "addrspacecast", "freeze", "trunc",
    "zext", "sext", "extractvalue", "insertvalue", "extractelement", "insertelement", "ret", "unreachable",
    "fence", "va_arg"))
_FREE_INTRINSICS = (
    "llvm.dbg.", "llvm.lifetime.", "llvm.assume", "llvm.expect", "llvm.experimental.noalias",
    "llvm.invariant.", "llvm.prefetch", "llvm.pseudoprobe", "llvm.stacksave", "llvm.stackrestore",
    "llvm.fake.use")
_ONE_INTRINSICS = tuple(f"llvm.{name}" for name in (
    "fabs", "copysign", "minnum", "maxnum", "minimum", "maximum", "smin", "smax", "umin", "umax", "abs",
    "floor", "ceil", "trunc", "round", "rint", "nearbyint", "is.fpclass", "ctpop", "ctlz", "cttz", "bswap",
    "bitreverse", "fshl", "fshr", "sadd.sat", "uadd.sat", "ssub.sat", "usub.sat", "lround", "llround",
    "lrint", "llrint", "canonicalize", "vector.reduce"))
#: calls that would end the process, counted as nothing (they fail the vertex instead)
ENDINGS = frozenset(("__assert_fail", "abort", "exit", "_Exit", "__cxa_pure_virtual", "__cxa_throw"))


def call_cost(name: str, instruction: str) -> int | None:
    """The cycles of a call to ``name`` (an intrinsic, a C library function), or None for a
    function the codelet defines (which should have been inlined)."""
    if name.startswith(_FREE_INTRINSICS) or name in ENDINGS:
        return 0
    if name.startswith(_ONE_INTRINSICS):
        return 1
    if name.startswith(("llvm.fmuladd", "llvm.fma")):
        return 2  # a multiply and an add, as the Python codelets count a * b + c
    if name.startswith(("llvm.memcpy", "llvm.memmove", "llvm.memset")):
        size = re.search(r", i64 (\d+), i1", instruction)
        return 1 + (int(size[1]) + 7) // 8 if size else 1
    if name.startswith("llvm."):
        return math_cost(name.split(".")[1])
    return math_cost(name)


def math_cost(name: str) -> int:
    """A libm function's cost as the Python codelets' ``math`` call of the same name has it."""
    base = name.removeprefix("__").removesuffix("_finite")
    if base.endswith(("f", "l")) and base[:-1] in COSTS | {"exp": 0, "log": 0}:
        base = base[:-1]
    return COSTS.get(base, MATH_COST)


_SCALAR_BYTES = {"i1": 1, "i8": 1, "i16": 2, "i32": 4, "i64": 8, "i128": 16, "half": 2, "bfloat": 2,
                 "float": 4, "double": 8, "x86_fp80": 16, "fp128": 16, "ptr": 8}


def type_bytes(t: str) -> int:
    """Bytes of an IR type of arrays and vectors of scalars (0 for what it cannot tell)."""
    t = t.strip()
    m = re.fullmatch(r"[\[<](\d+) x (.*)[\]>]", t)
    if m:
        return int(m[1]) * type_bytes(m[2])
    return _SCALAR_BYTES.get(t, 0)
