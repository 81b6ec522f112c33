"""popops' Cast, Cast2d, Fill, Fill2d, CastToQuarter and CastFromQuarter vertices, each alone on a
tile, against numpy (codelets/popops/cast.py, fill.py, cast_quarter.py)."""

import math

import numpy as np

import poplar_py as poplar
from poplibs_py.poputil import templateVertex

nan, inf = math.nan, math.inf
F143, F152 = poplar.QuarterMetadata.Format.F143, poplar.QuarterMetadata.Format.F152

# SrcT, DstT, source, expected: float to integer truncates and saturates (NaN gives 0),
# integer to integer wraps, to bool is != 0, to a float type rounds to nearest even
CASTS = [
    (poplar.FLOAT, poplar.INT, [1.7, -1.7, 3e9, -3e9, nan, -0.5, inf],
     [1, -1, 2**31 - 1, -2**31, 0, 0, 2**31 - 1]),
    (poplar.FLOAT, poplar.UNSIGNED_INT, [2.9, -5.0, 5e9, nan], [2, 0, 2**32 - 1, 0]),
    (poplar.FLOAT, poplar.HALF, [1 / 3, 65519.0, 65520.0, 1e-8, 3e-8, -0.0, nan],
     [np.float16(1 / 3), 65504, inf, 0.0, 2.0**-24, -0.0, nan]),
    (poplar.HALF, poplar.FLOAT, np.float16([0.1, -65504, 6e-8]),
     np.float16([0.1, -65504, 6e-8]).astype(np.float32)),
    (poplar.INT, poplar.UNSIGNED_CHAR, [259, -1, 255], [3, 255, 255]),
    (poplar.INT, poplar.SHORT, [70000, -32769, -5], [70000 - 65536, 32767, -5]),
    (poplar.UNSIGNED_INT, poplar.FLOAT, [2**32 - 1, 2**24 + 1, 7], [2.0**32, 2.0**24, 7.0]),
    (poplar.FLOAT, poplar.BOOL, [0.0, -0.0, 0.25, nan], [False, False, True, True]),
]

# T, value, expected element (the state value converted to T)
FILLS = [(poplar.FLOAT, 1.5, 1.5), (poplar.HALF, 0.1, np.float16(0.1)), (poplar.INT, -7, -7),
         (poplar.UNSIGNED_CHAR, 200, 200), (poplar.BOOL, True, True)]

# Cast2d and Fill2d rows (worker w handles row w): empty rows, and a second vertex with seven
# rows, whose seventh no worker writes
ROWS = [(0, 2), (2, 2), (2, 5), (5, 7)]
SEVEN = [(k, k + 1) for k in range(6)] + [(0, 1)]


def test_cast_and_cast2d_convert_each_element(vertices):
    """Two vertices of each: Cast2d on rows, then on seven rows; Cast (which popops' operations do
    not use) on each half of the values, for the first two type pairs."""
    h = vertices()
    cases = h.cases
    for c, (src_t, dst_t, src, want) in enumerate(CASTS):
        src, want = np.asarray(src, src_t.dtype), np.asarray(want, dst_t.dtype)
        name, half = f"{src_t}->{dst_t}", len(src) // 2
        for k, part in enumerate((slice(0, half), slice(half, None)) if c < 2 else ()):
            one = h.vertex(templateVertex("popops::Cast", src_t, dst_t), src=src[part],
                           dst=np.zeros_like(want[part]))
            cases[f"Cast {name} part {k}"] = (one["dst"], want[part])
        for k, runs in enumerate((ROWS, SEVEN)):
            rows = [slice(b, min(e, src.size)) for b, e in runs]
            two = h.vertex(templateVertex("popops::Cast2d", src_t, dst_t), tile=1 + k,
                           src=[src[r] for r in rows], dst=[np.zeros_like(want[r]) for r in rows])
            expected = [want[r] for r in rows]
            expected[6:] = [np.zeros_like(w) for w in expected[6:]]  # the seventh row: not written
            cases[f"Cast2d {name} rows {k}"] = (two["dst"], expected)
    h.check()


def test_fill_and_fill2d_write_the_value_everywhere(vertices):
    """Fill2d on rows, then on seven rows; Fill (which popops' operations do not use) on 5 and 1
    elements, for the first two types."""
    h = vertices()
    cases = h.cases
    for f, (t, value, want) in enumerate(FILLS):
        for n in (5, 1) if f < 2 else ():
            one = h.vertex(templateVertex("popops::Fill", t), out=np.zeros(n, t.dtype),
                           initial={"value": value})
            cases[f"Fill<{t}> of {n}"] = (one["out"], np.full(n, want, t.dtype))
        for k, runs in enumerate((ROWS, SEVEN)):
            two = h.vertex(templateVertex("popops::Fill2d", t), tile=1 + k, initial={"value": value},
                           out=[np.zeros(e - b, t.dtype) for b, e in runs])
            expected = [np.full(e - b, want, t.dtype) for b, e in runs]
            expected[6:] = [np.zeros(1, t.dtype) for _ in expected[6:]]  # the seventh row: not written
            cases[f"Fill2d<{t}> rows {k}"] = (two["out"], expected)
    h.check()


def quarter_values(fmt, scale: int) -> np.ndarray:
    """The value of each code 0..127 (positive; code | 0x80 is its negative, 0x80 NaN): the
    format's mantissa bits m and bias b give ``(2**m + mantissa) * 2**(exponent - b - m)``,
    a subnormal (exponent 0) ``mantissa * 2**(1 - b - m)``, times ``2**scale``."""
    m, bias = (3, 8) if fmt == F143 else (2, 16)
    codes = np.arange(128)
    exponent, mantissa = codes >> m, codes & ((1 << m) - 1)
    significand = np.where(exponent == 0, mantissa, mantissa + (1 << m))
    return np.ldexp(significand.astype(np.float64), np.maximum(exponent, 1) - bias - m + scale)


def quarter_decode(codes: np.ndarray, fmt, scale: int) -> np.ndarray:
    v = quarter_values(fmt, scale)[codes & 0x7F]
    return np.where(codes == 0x80, nan, np.where(codes >= 0x80, -v, v))


def quarter_encode(x: np.ndarray, fmt, scale: int) -> np.ndarray:
    """The nearest code (ties to the even code); past the largest value by half a step or more,
    infinities and NaN give 0x80; zero is 0x00 whatever its sign."""
    values = quarter_values(fmt, scale)
    values = np.append(values, 2 * values[127] - values[126])  # "code 128": out of range
    a = np.abs(x.astype(np.float64))
    hi = np.clip(np.searchsorted(values, np.nan_to_num(a, posinf=values[-1])), 1, 128)
    lo = hi - 1
    below, above = a - values[lo], values[hi] - a
    code = np.where((above < below) | ((above == below) & (hi % 2 == 0)), hi, lo)
    code = np.where(code >= 128, 0x80, np.where((x < 0) & (code > 0), code + 0x80, code))
    return np.where(np.isfinite(x), code, 0x80).astype(np.uint8)


def test_quarter_casts_follow_the_metadata_on_the_tile(vertices):
    """Both formats at a scale each: every code decoded (float and half), and values around
    every code, ties, overflow, NaN and both zeros encoded (from float and half)."""
    h = vertices()
    cases = h.cases
    for tile, (fmt, scale) in enumerate([(F143, 0), (F152, -3)]):
        md = poplar.createConstantMetadataTensor(h.graph, fmt, scale)
        h.graph.setTileMapping(md, tile)
        codes = np.arange(256, dtype=np.uint8)
        src = h.graph.addVariable(poplar.QUARTER, md, [256], f"codes{tile}")
        h.graph.setTileMapping(src, tile)
        h.write(src, codes)
        for t in (poplar.FLOAT, poplar.HALF):
            want = quarter_decode(codes, fmt, scale).astype(t.dtype)
            dec = h.vertex(templateVertex("popops::CastFromQuarter", t), tile=tile, metadata=md,
                           src=[src.slice(0, 100), src.slice(100, 256)],
                           dst=[np.zeros(100, t.dtype), np.zeros(156, t.dtype)])
            cases[f"from quarter to {t}, {fmt} scale {scale}"] = (dec["dst"], [want[:100], want[100:]])
        values = quarter_values(fmt, scale)
        mids = (values[:-1] + values[1:]) / 2
        x = np.concatenate([values, mids, np.nextafter(mids, 0), np.nextafter(mids, inf), -values[1:], -mids,
                            [2 * values[-1], 1.5 * values[-1], nan, inf, -inf, -0.0]]).astype(np.float32)
        for t in (poplar.FLOAT, poplar.HALF):
            xt = x.astype(t.dtype)
            out = h.graph.addVariable(poplar.QUARTER, md, [xt.size], f"q{tile}{t}")
            h.graph.setTileMapping(out, tile)
            enc = h.vertex(templateVertex("popops::CastToQuarter", t), tile=tile, metadata=md,
                           src=[xt[:7], xt[7:]], dst=[out.slice(0, 7), out.slice(7, xt.size)])
            want = np.split(quarter_encode(xt, fmt, scale), [7])
            cases[f"{t} to quarter, {fmt} scale {scale}"] = (enc["dst"], want)
    h.check()
