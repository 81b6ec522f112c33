"""Random codelets: compiled kernels must agree with the interpreter (bit for bit in strict mode).

A seeded generator writes codelets over vector fields of many element types, with locals, loops,
ifs, helpers and math, fed with NaN, inf, -0.0 and extreme integers. It only writes programs whose
static types equal their dynamic ones (see poplar_py/codelet/type_rules.py: a local, an ``a if c else b`` or a
``min`` of mixed types has a joined static type, while Python keeps the chosen value's type) and
that never take Python-int/-float paths where CPython raises (``1 // 0`` on Python ints).
"""

from __future__ import annotations

import ast
import random
import textwrap

import numpy as np
import pytest
from codelet_harness import STRICT, isolated_cache, load_module, run_one, same_bits  # noqa: F401

from poplar_py.codelet.codelet_compiler import KernelOptions
from poplar_py.codelet.type_rules import (
    BOOL,
    PY_FLOAT,
    PY_INT,
    ScalarType,
    binop_type,
    math_result,
    scalar_of,
)
from poplar_py.types import BOOL as P_BOOL
from poplar_py.types import CHAR, FLOAT, HALF, INT, SHORT, UNSIGNED_CHAR, UNSIGNED_INT

FIELD_TYPES = {
    "f": FLOAT,
    "h": HALF,
    "i": INT,
    "u": UNSIGNED_INT,
    "s": SHORT,
    "c": UNSIGNED_CHAR,
    "b": P_BOOL,
    "q": CHAR,
}
N, M = 8, 6
HELPERS = """
def hadd(a, b):
    return a + b

def hdiff(a, b):
    if a > b:
        return a - b
    return b - a
"""
_OPS = {
    "+": ast.Add,
    "-": ast.Sub,
    "*": ast.Mult,
    "/": ast.Div,
    "//": ast.FloorDiv,
    "%": ast.Mod,
    "&": ast.BitAnd,
    "|": ast.BitOr,
    "^": ast.BitXor,
    "<<": ast.LShift,
    ">>": ast.RShift,
}
FLOAT_LITERALS = [
    "0.5",
    "1.5",
    "-2.25",
    "3.0",
    "1e10",
    "0.001",
    "0.0",
    "-0.0",
    "math.inf",
    "-math.inf",
    "math.nan",
]


def _name(t) -> str:
    return repr(t).split(".")[1]  # poplar.FLOAT -> FLOAT


class Generator:
    """Writes one random codelet class body; expressions carry their codelet type."""

    def __init__(self, seed: int, fast: bool) -> None:
        self.r = random.Random(seed)
        self.fast = fast
        self.locals: list[tuple[str, ScalarType]] = []
        self.loop_vars: list[str] = []
        self.count = 0

    def source(self) -> str:
        fields = [f"    x{k}: Input[Vector[{_name(t)}]]" for k, t in FIELD_TYPES.items()]
        fields += [f"    o{k}: InOut[Vector[{_name(t)}]]" for k, t in FIELD_TYPES.items()]
        fields += ["    sc: Input[FLOAT]", "    st: INT"]
        body = self.block(self.r.randint(4, 8), depth=0)
        return (
            HELPERS
            + "\n\nclass R(Vertex):\n"
            + "\n".join(fields)
            + "\n\n    def compute(self):\n"
            + textwrap.indent("\n".join(body), " " * 8)
            + "\n"
        )

    # statements ---------------------------------------------------------------------------------
    def block(self, n: int, depth: int) -> list[str]:
        scope = len(self.locals)
        lines: list[str] = []
        for _ in range(n):
            lines += self.statement(depth)
        del self.locals[scope:]  # locals of a nested block are not visible after it
        return lines

    def statement(self, depth: int) -> list[str]:
        choice = self.r.random()
        if choice < 0.15 and depth < 2 and not self.fast:
            var = f"i{depth}"
            self.loop_vars.append(var)
            body = self.block(self.r.randint(1, 3), depth + 1)
            self.loop_vars.pop()
            return [f"for {var} in range({N}):"] + ["    " + b for b in body]
        if choice < 0.3 and depth < 2:
            cond, _ = self.expr(2, want_bool=True)
            then = self.block(self.r.randint(1, 2), depth + 1)
            other = self.block(self.r.randint(1, 2), depth + 1)
            return [f"if {cond}:"] + ["    " + b for b in then] + ["else:"] + ["    " + b for b in other]
        if choice < 0.55:
            src, t = self.expr(3)
            name = f"t{self.count}"
            self.count += 1
            self.locals.append((name, t))
            return [f"{name} = {src}"]
        key = self.r.choice(list(FIELD_TYPES))
        ft = scalar_of(FIELD_TYPES[key])
        target = f"self.o{key}[{self.r.randrange(M)}]"
        src, t = self.expr(3)
        if choice < 0.7 and ft != BOOL and t != BOOL:
            op = self.r.choice(["+", "-", "*"])
            if self.valid(op, ft, t):
                return [f"{target} {op}= {src}"]
        return [f"{target} = {src}"]

    # expressions --------------------------------------------------------------------------------
    def leaf(self) -> tuple[str, ScalarType]:
        c = self.r.random()
        if c < 0.45:
            key = self.r.choice(list(FIELD_TYPES) if not self.fast else ["f", "h", "i", "u"])
            index = self.r.choice(self.loop_vars + [str(self.r.randrange(N))])
            return f"self.x{key}[{index}]", scalar_of(FIELD_TYPES[key])
        if c < 0.6 and self.locals:
            return self.r.choice(self.locals)
        if c < 0.65:
            return "self.sc", scalar_of(FLOAT)
        if c < 0.7:
            return "self.st", scalar_of(INT)
        if c < 0.8 and self.loop_vars:
            return self.r.choice(self.loop_vars), PY_INT
        if c < 0.9 and not self.fast:
            return str(self.r.randint(0, 100)), PY_INT
        return self.r.choice(FLOAT_LITERALS[:6] if self.fast else FLOAT_LITERALS), PY_FLOAT

    def valid(self, op: str, a: ScalarType, b: ScalarType) -> bool:
        try:
            r = binop_type(_OPS[op], a, b)
        except TypeError:
            return False
        if a.weak and b.weak:  # Python int/float arithmetic: unbounded ints, raising divisions
            return op in "+-*" and a.is_float and b.is_float
        if self.fast:
            return (op in ("+", "*", "/") and r.is_float) or (op in "+-*&|^" and r.is_int)
        return True

    def expr(self, depth: int, want_bool: bool = False) -> tuple[str, ScalarType]:
        if want_bool:
            a, at = self.expr(depth - 1)
            b, bt = self.expr(depth - 1)
            op = self.r.choice(["<", "<=", ">", ">=", "==", "!="])
            src = f"({a} {op} {b})"
            if self.r.random() < 0.3:
                c, _ = self.expr(1, want_bool=True) if depth > 1 else ("True", BOOL)
                src = f"({src} {self.r.choice(['and', 'or'])} not {c})"
            return src, BOOL
        if depth <= 0:
            return self.leaf()
        c = self.r.random()
        a, at = self.expr(depth - 1)
        if c < 0.5:
            b, bt = self.expr(depth - 1)
            ops = [op for op in _OPS if self.valid(op, at, bt)]
            if not ops:
                return a, at
            op = self.r.choice(ops)
            return f"({a} {op} {b})", binop_type(_OPS[op], at, bt)
        if at == BOOL:
            return (f"(not {a})", BOOL) if c < 0.6 else (a, at)
        if c < 0.55 and not (at.is_int and at.weak):
            return f"(-{a})", at
        if c < 0.6:
            return f"abs({a})", at
        if c < 0.65 and not at.weak and not self.fast:
            return (f"({a} ** 2)", at)
        if c < 0.7 and at.is_int and not at.weak:
            return f"(~{a})", at
        if c < 0.8:
            b, bt = self.expr(depth - 1)
            if bt == at:
                form = self.r.choice(
                    [
                        "min({a}, {b})",
                        "max({a}, {b})",
                        "hadd({a}, {b})",
                        "hdiff({a}, {b})",
                        "({a} if {c} else {b})",
                    ]
                )
                if ("hadd" in form or "hdiff" in form) and (not self.valid("+", at, at) or at.weak):
                    return a, at
                cond = self.expr(1, want_bool=True)[0] if "{c}" in form else ""
                return form.format(a=a, b=b, c=cond), at
            return a, at
        if c < 0.9:
            fn = self.r.choice(["exp", "sqrt", "tanh", "log", "sin"] if not self.fast else ["exp", "sqrt"])
            if self.fast and (at.weak or not at.is_float):
                return a, at
            return f"math.{fn}({a})", math_result(fn, [at])
        return f"float({a})", PY_FLOAT


def inputs(r: np.random.Generator) -> dict[str, np.ndarray]:
    values = {}
    for key, t in FIELD_TYPES.items():
        dt = t.dtype
        if dt.kind == "f":
            x = r.standard_normal(N) * r.choice([1, 100, 1e4])
            x[r.integers(0, N, 3)] = r.choice([np.nan, np.inf, -np.inf, -0.0, 0.0, 1e30], 3)
        elif dt.kind == "b":
            x = r.integers(0, 2, N)
        else:
            info = np.iinfo(dt)
            x = r.integers(info.min, info.max, N, endpoint=True)
            x[r.integers(0, N, 2)] = r.choice([info.min, info.max, 0, -1 if info.min else 1], 2)
        with np.errstate(over="ignore"):
            values[f"x{key}"] = np.asarray(x).astype(dt)
        values[f"o{key}"] = np.asarray(r.integers(0, 5, M)).astype(dt)
    values["sc"] = np.float32(r.choice([0.5, -3.0, np.nan, np.inf]))
    values["st"] = int(r.integers(-5, 5))
    return values


def positive_inputs(r: np.random.Generator) -> dict[str, np.ndarray]:
    values = inputs(r)
    for key in "fh":
        values[f"x{key}"] = r.uniform(0.5, 2.0, N).astype(FIELD_TYPES[key].dtype)
    values["sc"] = np.float32(1.25)
    return values


def ulp_close(a: np.ndarray, b: np.ndarray, ulps: int) -> bool:
    if a.dtype.kind != "f":
        return bool(np.array_equal(a, b))
    same = (a == b) | (np.isnan(a) & np.isnan(b))
    with np.errstate(invalid="ignore", over="ignore"):
        spacing = np.spacing(np.maximum(np.abs(a), np.abs(b)).astype(a.dtype))
        near = np.abs(a.astype(np.float64) - b.astype(np.float64)) <= ulps * spacing.astype(np.float64)
    return bool(np.all(same | near))


def check(tmp_path, seed: int, fast: bool, opt_level: int = 3) -> None:
    source = Generator(seed, fast).source()
    module = load_module(tmp_path, source)
    r = np.random.default_rng(seed)
    values = positive_inputs(r) if fast else inputs(r)
    options = KernelOptions(fast_math=fast, opt_level=opt_level)
    native = run_one(module.R, "native", options, **{k: np.copy(v) for k, v in values.items()})
    interp = run_one(module.R, "interp", options, **{k: np.copy(v) for k, v in values.items()})
    assert native.err is None and interp.err is None, source
    for key in FIELD_TYPES:
        a, b = native.fields[0][f"o{key}"], interp.fields[0][f"o{key}"]
        ok = ulp_close(a, b, 4) if fast else same_bits(a, b)
        assert ok, f"o{key}: native {a} != interpreter {b}\n{source}"


@pytest.mark.parametrize("seed", range(40))
def test_random_codelets_strict_bit_exact(tmp_path, seed):
    check(tmp_path, seed, fast=False)


@pytest.mark.parametrize("seed", range(6))
def test_random_codelets_debug_build(tmp_path, seed):
    check(tmp_path, seed, fast=False, opt_level=0)  # no optimiser: every conversion must link and agree


@pytest.mark.parametrize("seed", range(100, 112))
def test_random_codelets_fast_math_within_ulps(tmp_path, seed):
    check(tmp_path, seed, fast=True)


def test_generated_codelets_use_the_interesting_constructs(tmp_path):
    text = "".join(Generator(seed, False).source() for seed in range(40))
    for construct in (
        "for i0",
        "if ",
        "math.",
        "//",
        "%",
        "<<",
        "hadd(",
        "min(",
        " if ",
        "** 2",
        "self.xh",
        "self.xu",
        "math.nan",
        "+=",
    ):
        assert construct in text, construct
    assert PY_INT.weak and PY_FLOAT.weak
