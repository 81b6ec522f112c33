"""Operators on edge values against numpy scalar arithmetic, in both modes, bit for bit."""

from __future__ import annotations

import operator

import numpy as np
import pytest
from codelet_harness import MODES, STRICT, isolated_cache, load_module, run_one, same_bits  # noqa: F401

from poplar_py import types as T  # noqa: N812
from poplar_py.codelet.type_rules import binop_type, cast_value, scalar_of, type_of_value

INT_EDGES = [0, 1, -1, 3, -3, 7, -7, 31, 32, 33, 64, -64, -(2**31), 2**31 - 1, 2**63 - 1, -(2**63)]
FLOAT_EDGES = [0.0, -0.0, 1.5, -1.5, 3.0, -3.0, 7.0, -7.0, 2.5, 1e-8, 1e30, -1e30, np.inf, -np.inf, np.nan]
OPS = {
    "+": operator.add,
    "-": operator.sub,
    "*": operator.mul,
    "/": operator.truediv,
    "//": operator.floordiv,
    "%": operator.mod,
    "&": operator.and_,
    "|": operator.or_,
    "^": operator.xor,
    "<<": operator.lshift,
    ">>": operator.rshift,
    "<": operator.lt,
    "<=": operator.le,
    "==": operator.eq,
    "!=": operator.ne,
    ">": operator.gt,
    "**": None,
    "min": min,
    "max": max,
}
PAIRS = [
    (T.INT, T.INT),
    (T.UNSIGNED_INT, T.UNSIGNED_INT),
    (T.CHAR, T.CHAR),
    (T.UNSIGNED_CHAR, T.UNSIGNED_CHAR),
    (T.SHORT, T.UNSIGNED_SHORT),
    (T.INT, T.UNSIGNED_INT),
    (T.LONGLONG, T.LONGLONG),
    (T.FLOAT, T.FLOAT),
    (T.HALF, T.HALF),
    (T.FLOAT, T.INT),
    (T.HALF, T.FLOAT),
    (T.HALF, T.CHAR),
    (T.BOOL, T.BOOL),
    (T.FLOAT, "literal"),
    (T.INT, "literal"),
    (T.HALF, "literal"),
]
_BY_DTYPE = {t.dtype: t for t in T.ALL_TYPES if t is not T.SIGNED_CHAR}


def edges(t: T.Type) -> np.ndarray:
    if t.dtype.kind == "b":
        return np.array([False, True])
    with np.errstate(all="ignore"):
        if t.dtype.kind == "f":
            return np.array(FLOAT_EDGES, dtype=t.dtype)
        return np.array([cast_value(v, t.dtype) for v in INT_EDGES], dtype=t.dtype)


def name(t: T.Type) -> str:
    return repr(t).split(".")[1]


def expression(op: str, rhs: str) -> str:
    if op in ("min", "max"):
        return f"{op}(x, {rhs})"
    return "x ** 2" if op == "**" else f"x {op} {rhs}"


def apply(op: str, x, y):
    if op == "**":
        return x**2
    return OPS[op](x, y)


@pytest.mark.parametrize("pair", PAIRS, ids=lambda p: f"{p[0]}-{p[1]}")
@pytest.mark.parametrize("mode", MODES)
def test_binary_operators_match_numpy(pair, mode, tmp_path):
    ta, tb = pair
    literal = tb == "literal"
    xs = edges(ta)
    ys = np.array([2, 5, 0] if ta.dtype.kind in "iu" else [0.1, 2.0, -0.0]) if literal else edges(tb)
    a, b = np.repeat(xs, len(ys)), np.tile(ys, len(xs))
    rhs_type = type_of_value(ys[0].item()) if literal else scalar_of(tb)
    ops, lines, fields, expected = [], [], [], {}
    for op in OPS:
        try:
            rt = binop_type(ast_op(op), scalar_of(ta), rhs_type) if ast_op(op) else scalar_of(ta)
        except TypeError:
            continue
        if op == "**" and rt.dtype.kind == "b":
            continue
        if op in ("<", "<=", "==", "!=", ">"):
            rt = scalar_of(T.BOOL)
        out_t = _BY_DTYPE.get(rt.dtype, T.FLOAT)
        k = len(ops)
        ops.append(op)
        fields.append(f"    o{k}: Output[Vector[{name(out_t)}]]")
        with np.errstate(all="ignore"):
            values = []
            for x, y in zip(a, b):
                lhs = x
                r = y.item() if literal else y
                values.append(cast_value(apply(op, lhs, r), out_t.dtype))
            expected[k] = np.array(values, dtype=out_t.dtype)
    for k, op in enumerate(ops):
        if literal:
            lines += [
                f"            if k % 3 == {j}:\n"
                + f"                self.o{k}[k] = {expression(op, repr(v.item()))}"
                for j, v in enumerate(ys)
            ]
        else:
            lines.append(f"            self.o{k}[k] = {expression(op, 'y')}")
    b_field = "" if literal else f"    b: Input[Vector[{name(tb)}]]\n"
    source = (
        f"class S(Vertex):\n    a: Input[Vector[{name(ta)}]]\n{b_field}"
        + "\n".join(fields)
        + "\n\n    def compute(self):\n        for k in range(len(self.a)):\n            x = self.a[k]\n"
        + ("" if literal else "            y = self.b[k]\n")
        + "\n".join(lines)
        + "\n"
    )
    module = load_module(tmp_path, source)
    values = {"a": a} if literal else {"a": a, "b": b}
    values.update({f"o{k}": np.zeros(len(a), e.dtype) for k, e in expected.items()})
    r = run_one(module.S, mode, **values)
    assert r.err is None
    for k, op in enumerate(ops):
        got = r.fields[0][f"o{k}"]
        bad = [
            (a[i], b[i], got[i], expected[k][i])
            for i in range(len(a))
            if not same_bits(got[i : i + 1], expected[k][i : i + 1])
        ]
        assert not bad, f"{ta} {op} {tb}: (x, y, got, numpy) {bad[:6]}"


def ast_op(op: str):
    import ast

    return {
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
        "**": ast.Pow,
        "<": ast.Add,
        "<=": ast.Add,
        "==": ast.Add,
        "!=": ast.Add,
        ">": ast.Add,
        "min": ast.Add,
        "max": ast.Add,
    }[op]


@pytest.mark.parametrize("mode", MODES)
def test_conversions_saturate_and_round(mode, tmp_path):
    module = load_module(
        tmp_path,
        """
class C(Vertex):
    x: Input[Vector[FLOAT]]
    i: Output[Vector[INT]]
    u: Output[Vector[UNSIGNED_CHAR]]
    b: Output[Vector[BOOL]]
    h: Output[Vector[HALF]]
    n: Output[Vector[LONGLONG]]

    def compute(self):
        for k in range(len(self.x)):
            v = self.x[k]
            self.i[k] = v
            self.u[k] = v
            self.b[k] = v
            self.h[k] = float(v) * 1.0000001
            self.n[k] = int(v) + math.floor(v) - math.ceil(v) + math.trunc(v)
""",
    )
    x = np.array(
        [0.0, -0.5, 2.7, -2.7, 300.0, -300.0, 1e10, -1e10, 65519.0, 65520.0, np.inf, -np.inf, np.nan],
        np.float32,
    )
    dtypes = {"i": np.int32, "u": np.uint8, "b": np.bool_, "h": np.float16, "n": np.int64}
    r = run_one(module.C, mode, x=x, **{k: np.zeros(len(x), t) for k, t in dtypes.items()})
    assert r.err is None
    got = r.fields[0]
    for k in "iub":
        assert list(got[k]) == [cast_value(v, np.dtype(dtypes[k])) for v in x], k
    with np.errstate(over="ignore"):
        assert same_bits(got["h"], np.array([np.float16(float(v) * 1.0000001) for v in x]))
    i64 = np.dtype(np.int64)

    def sat(v):
        return int(cast_value(v, i64))

    with np.errstate(invalid="ignore"):
        expect = [sat(v) * 2 + sat(np.floor(v)) - sat(np.ceil(v)) for v in x]
    assert list(got["n"]) == [cast_value(e, i64) for e in expect]
