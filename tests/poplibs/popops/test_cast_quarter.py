"""popops casts to and from QUARTER on the tiles, bit for bit against poplar_py.quarter's numpy
reference, in both codelet modes: every code of both formats at several scales, one engine whose
metadata variable the host rewrites between runs."""

import numpy as np
import pytest

import poplar_py as poplar
from poplar_py import program as prog
from poplar_py.quarter import decodeQuarter, encodeQuarter
from poplibs_py import popops, poputil

F143, F152 = poplar.QuarterMetadata.Format.F143, poplar.QuarterMetadata.Format.F152
SCALES = [(F143, 0), (F143, -7), (F152, 3), (F152, -31), (F143, 31)]
METADATA = [poplar.QuarterMetadata(fmt, scale) for fmt, scale in SCALES]
CODES = np.arange(256, dtype=np.uint8)


def _inputs(md: poplar.QuarterMetadata, rng: np.random.Generator) -> np.ndarray:
    """Every code's value, the ties between neighbours and their neighbours, random magnitudes
    across the format's range and beyond, and the special values."""
    values = decodeQuarter(CODES, md)
    finite = values[np.isfinite(values)]
    mids = (values[:127] + values[1:128]) / 2
    scale = 2.0 ** md.getScale()
    spread = np.ldexp(rng.uniform(-1, 1, 200), rng.integers(-22, 20, 200)) * scale
    specials = np.array([np.nan, np.inf, -np.inf, -0.0, 1e30, -1e30, 1e-30])
    near = [np.nextafter(mids, 0), np.nextafter(mids, np.inf)]
    x = np.concatenate([finite, mids, -mids, *near, spread, specials])
    return x.astype(np.float32)


def test_cast_quarter_every_code(mode):
    model = poplar.IPUModel()
    model.tilesPerIPU = 4
    device = model.createDevice()
    g = poplar.Graph(device)
    popops.addCodelets(g)
    seq = prog.Sequence()
    md = poplar.createVariableMetadataTensor(g, F143, 0, "md")
    q = g.addVariable(poplar.QUARTER, md, [256], "q")
    poputil.mapTensorLinearly(g, q)
    n = _inputs(METADATA[0], np.random.default_rng(0)).size
    x = g.addVariable(poplar.FLOAT, [n], "x")
    poputil.mapTensorLinearly(g, x)
    xh = g.addVariable(poplar.HALF, [n], "xh")
    g.setTileMapping(xh, 3)
    outs = [popops.cast(g, q, poplar.FLOAT, seq), popops.cast(g, q, poplar.HALF, seq, "toHalf"),
            popops.cast(g, x, poplar.QUARTER, md, seq),
            popops.cast(g, xh, poplar.QUARTER, md, seq, "fromHalf")]  # PopLibs' overload with metadata
    assert all(t.getMetadata() == md for t in outs[2:])
    for handle, t in (("md", md), ("q", q), ("x", x), ("xh", xh)):
        g.createHostWrite(handle, t)
    for i, t in enumerate(outs):
        g.createHostRead(f"out{i}", t)
    engine = poplar.Engine(g, seq, {"codelets.mode": mode})
    engine.load(device)
    for k, meta in enumerate(METADATA):
        values = _inputs(meta, np.random.default_rng(k))
        with np.errstate(over="ignore"):  # beyond half's range: inf, as every half conversion
            halves, decoded_half = values.astype(np.float16), decodeQuarter(CODES, meta).astype(np.float16)
        engine.writeTensor("md", np.array([meta.getBinary()], np.uint8))
        engine.writeTensor("q", CODES)
        engine.writeTensor("x", values)
        engine.writeTensor("xh", halves)
        engine.run()
        got = [engine.readTensor(f"out{i}") for i in range(4)]
        decoded = decodeQuarter(CODES, meta)
        np.testing.assert_array_equal(got[0], decoded.astype(np.float32), err_msg=str(meta))
        np.testing.assert_array_equal(got[1].view(np.uint16), decoded_half.view(np.uint16), err_msg=str(meta))
        np.testing.assert_array_equal(got[2], encodeQuarter(values, meta), err_msg=str(meta))
        np.testing.assert_array_equal(got[3], encodeQuarter(halves, meta), err_msg=str(meta))


def test_cast_quarter_errors():
    model = poplar.IPUModel()
    model.tilesPerIPU = 2
    g = poplar.Graph(model.createDevice())
    popops.addCodelets(g)
    seq = prog.Sequence()
    md = poplar.createConstantMetadataTensor(g, F152, 1)
    x = g.addVariable(poplar.FLOAT, [4], "x")
    g.setTileMapping(x, 0)
    q = popops.cast(g, x, poplar.QUARTER, md, seq)
    plain = g.addVariable(poplar.QUARTER, [4], "plain")
    g.setTileMapping(plain, 0)
    ints = g.addVariable(poplar.INT, [4], "ints")
    g.setTileMapping(ints, 1)
    argument, error = poputil.PoplibsArgumentError, poputil.PoplibsError
    cases = [
        (lambda: popops.cast(g, x, poplar.QUARTER, seq), argument, "needs its metadata"),
        (lambda: popops.cast(g, x, poplar.HALF, md, seq), argument, "only for casts to QUARTER"),
        (lambda: popops.cast(g, ints, poplar.QUARTER, md, seq), error, "from int to quarter"),
        (lambda: popops.cast(g, q, poplar.INT, seq), error, "QUARTER casts to and from float, half"),
        (lambda: popops.cast(g, plain, poplar.FLOAT, seq), error, "'plain' has no metadata"),
        (lambda: popops.cast(g, x, poplar.QUARTER, x, seq), poplar.PoplarTypeError, "one QUARTER_METADATA"),
    ]
    for call, error, word in cases:
        with pytest.raises(error, match=word):
            call()
    with pytest.raises(poputil.PoplibsError, match="from quarter to quarter"):
        popops.castWithOutput(g, q, q, seq)
