"""QUARTER: its types, QuarterMetadata, the host reference conversions, quarter variables and their
metadata tensors, and raw engine reads and writes."""

import numpy as np
import pytest

import poplar_py as poplar
from poplar_py import program as prog
from poplar_py.quarter import decodeQuarter, encodeQuarter

F143, F152 = poplar.QuarterMetadata.Format.F143, poplar.QuarterMetadata.Format.F152
CODES = np.arange(256, dtype=np.uint8)


def _graph(tiles: int = 2) -> tuple[poplar.Device, poplar.Graph]:
    model = poplar.IPUModel()
    model.tilesPerIPU = tiles
    device = model.createDevice()
    return device, poplar.Graph(device)


def test_types():
    assert poplar.QUARTER.size == poplar.QUARTER_METADATA.size == 1
    assert poplar.QUARTER.requiresMetadata() and not poplar.QUARTER_METADATA.requiresMetadata()
    assert not poplar.UNSIGNED_CHAR.requiresMetadata()
    assert poplar.types.asType("quarter") is poplar.QUARTER
    assert poplar.types.asType(np.uint8) is poplar.UNSIGNED_CHAR  # a uint8 dtype stays unsigned char
    assert poplar.QUARTER != poplar.UNSIGNED_CHAR
    assert repr(poplar.QUARTER_METADATA) == "poplar.QUARTER_METADATA"


def test_metadata_packing():
    for fmt, bit in ((F143, 0x80), (F152, 0)):
        for scale in range(-32, 32):
            md = poplar.QuarterMetadata(fmt, scale)
            assert (md.getFormat(), md.getScale()) == (fmt, scale)
            assert md.getBinary() == bit | (scale & 0x3F)
            assert poplar.QuarterMetadata(md.getBinary()) == md
    assert poplar.QuarterMetadata() == poplar.QuarterMetadata(F152, 0)
    assert poplar.QuarterMetadata(F143, -3) != poplar.QuarterMetadata(F143, 3)
    assert len({poplar.QuarterMetadata(F143, 1), poplar.QuarterMetadata(0x81)}) == 1
    assert poplar.QuarterMetadata(F143, -3).toString() == "F143 scale -3"
    bad = [((F143, 32), "scale"), ((F143, True), "scale"), (("F143", 1), "fmt"), ((256,), "binary")]
    for args, word in bad:
        with pytest.raises(poplar.InvalidArgumentError, match=word):
            poplar.QuarterMetadata(*args)


def test_decode_reference():
    f143, f152 = (decodeQuarter(CODES, poplar.QuarterMetadata(f, 0)) for f in (F143, F152))
    assert (f143[[0x01, 0x07, 0x08, 0x40, 0x7F, 0xC0]] == [2**-10, 7 * 2**-10, 2**-7, 1, 240, -1]).all()
    assert (f152[[0x01, 0x04, 0x40, 0x7F, 0xFF]] == [2**-17, 2**-15, 1, 57344, -57344]).all()
    assert np.isnan(f143[0x80]) and np.isnan(f152[0x80]) and np.isnan(f143).sum() == 1
    assert f143[0] == 0 and f143[0x81] == -(2**-10)
    scaled = decodeQuarter(CODES, poplar.QuarterMetadata(F152, -5))
    np.testing.assert_array_equal(scaled, f152 * 2.0**-5)


@pytest.mark.parametrize("fmt", [F143, F152], ids=str)
def test_encode_reference(fmt):
    for scale in (-32, -7, 0, 9, 31):
        md = poplar.QuarterMetadata(fmt, scale)
        values = decodeQuarter(CODES, md)
        np.testing.assert_array_equal(encodeQuarter(values, md), CODES)  # every code round-trips
        mids = (values[:127] + values[1:128]) / 2  # ties go to the even code
        even = np.arange(127) + np.arange(127) % 2
        np.testing.assert_array_equal(encodeQuarter(mids, md), even)
        np.testing.assert_array_equal(encodeQuarter(-mids, md), np.where(even == 0, 0, even | 0x80))
        above = np.nextafter(mids, np.inf)
        np.testing.assert_array_equal(encodeQuarter(above, md), np.arange(1, 128))


def test_encode_specials():
    # PopLibs' expectations for F143 (largest 240) at scales 0, -10 and 31, with and without nanoo
    big, small, nan, inf = 2.0**33, 2.0**-12, np.nan, np.inf
    x = np.array([small, -small, big, -big, 8, -8, nan, -inf, inf, -0.0])
    for scale, nanoo_want, saturate_want in [
            (0, [0, 0, nan, nan, 8, -8, nan, nan, nan, 0], [0, 0, 240, -240, 8, -8, nan, nan, nan, 0]),
            (-10, [0.25, -0.25] + [nan] * 7 + [0], [0.25, -0.25, 240, -240, 240, -240, nan, nan, nan, 0]),
            (31, [0, 0, 4, -4, 0, 0, nan, nan, nan, 0], [0, 0, 4, -4, 0, 0, nan, nan, nan, 0])]:
        md, unscaled = poplar.QuarterMetadata(F143, scale), poplar.QuarterMetadata(F143, 0)
        for nanoo, want in ((True, nanoo_want), (False, saturate_want)):
            got = decodeQuarter(encodeQuarter(x, md, nanoo), unscaled)
            np.testing.assert_array_equal(got, np.array(want, np.float64))
    md = poplar.QuarterMetadata(F143, 0)
    x = np.array([247.9, 248, -248, 1e300, -0.0, -1e-300])  # 248 ties between 240 and the overflow
    assert list(encodeQuarter(x, md)) == [127, 128, 128, 128, 0, 0]


def test_host_conversions():
    md = poplar.QuarterMetadata(F152, 2)
    raw = bytearray(4)
    poplar.convertToDeviceType(poplar.QUARTER, md, [4.0, -6.0, 1e9, 0.0], raw)
    assert list(raw) == [0x40, 0xC2, 0x80, 0]
    out = np.zeros(4, np.float32)
    poplar.convertFromDeviceType(poplar.QUARTER, md, raw, out)
    np.testing.assert_array_equal(out, [4.0, -6.0, np.nan, 0.0])
    dst = np.zeros(2, np.uint16)  # any dtype: its bytes
    poplar.convertToDeviceType(poplar.QUARTER, md, np.array([1e9, -1e9]), dst, False)
    assert list(dst.view(np.uint8)) == [0x7F, 0xFF, 0, 0]
    halves = np.zeros(256, np.float16)
    poplar.convertFromDeviceType(poplar.QUARTER, poplar.QuarterMetadata(F152, 4), CODES, halves)
    assert np.isinf(halves[0x7F])  # 57344 * 16 is beyond half's range
    h = np.zeros(2, np.uint16)
    poplar.convertToDeviceType(poplar.HALF, [1.5, -2.0], h)  # the overload without metadata
    back = np.zeros(2, np.float64)
    poplar.convertFromDeviceType(poplar.HALF, h, back)
    np.testing.assert_array_equal(back, [1.5, -2.0])


def test_host_conversion_errors():
    md, q, f = poplar.QuarterMetadata(F143, 0), poplar.QUARTER, poplar.FLOAT
    cases = [
        (lambda: poplar.convertToDeviceType(q, [1.0], bytearray(1)), "metadata"),
        (lambda: poplar.convertToDeviceType(q, 0x80, [1.0], bytearray(1)), "metadata must be"),
        (lambda: poplar.convertToDeviceType(q, md, [1.0, 2.0], bytearray(1)), "dst holds 1 bytes"),
        (lambda: poplar.convertToDeviceType(q, md, [1.0], b"\0"), "dst must be a writable"),
        (lambda: poplar.convertToDeviceType(q, md, ["a"], bytearray(1)), "src"),
        (lambda: poplar.convertToDeviceType(q, md, [1.0], bytearray(1), "yes"), "nanoo"),
        (lambda: poplar.convertToDeviceType(f, md, [1.0], bytearray(4)), "metadata is for QUARTER"),
        (lambda: poplar.convertFromDeviceType(q, md, b"\0", [0.0]), "dst must be a writable"),
        (lambda: poplar.convertFromDeviceType(q, md, b"\0", np.zeros(2)), "src holds 1 bytes"),
        (lambda: poplar.convertFromDeviceType(q, md, b"\0\0", np.zeros(4)[::2]), "C-contiguous"),
        (lambda: poplar.convertFromDeviceType("fp8", md, b"\0", np.zeros(1)), "element type"),
    ]
    for call, word in cases:
        with pytest.raises(poplar.InvalidArgumentError, match=word):
            call()


def test_quarter_variables_carry_metadata():
    _, g = _graph()
    md = poplar.createVariableMetadataTensor(g, F143, -2, "md")
    a = g.addVariable(poplar.QUARTER, md, [4, 3], "a")  # Poplar's argument order
    b = g.addVariable(poplar.QUARTER, [2], md, "b")  # the metadata after the shape
    plain = g.addVariable(poplar.QUARTER, [2], "plain")
    assert a.getMetadata() == md and b.getMetadata() == md and a.name == "a" and b.name == "b"
    bytes_view = a.reinterpret(poplar.UNSIGNED_CHAR)
    for view in (a[1], a.transpose().slice(1, 2, 1), bytes_view.reinterpret(poplar.QUARTER),
                 poplar.concat([a.flatten(), b]), g.clone(a), g.clone(poplar.QUARTER, a)):
        assert view.hasMetadata() and view.getMetadata() == md
    assert not plain.hasMetadata() and not bytes_view.hasMetadata()
    other = poplar.createConstantMetadataTensor(g, F152, 0)
    assert g.clone(poplar.QUARTER, other, a).getMetadata() == other
    with pytest.raises(poplar.TensorArgumentError, match=r"'plain'.*no metadata"):
        plain.getMetadata()
    with pytest.raises(poplar.TensorArgumentError, match="different metadata"):
        poplar.concat([b, g.addVariable(poplar.QUARTER, other, [1])]).getMetadata()
    with pytest.raises(poplar.TensorCreationError, match="QUARTER variables only, not float"):
        g.addVariable(poplar.FLOAT, md, [2])
    with pytest.raises(poplar.PoplarTypeError, match="one QUARTER_METADATA element"):
        g.addVariable(poplar.QUARTER, a, [2])
    with pytest.raises(poplar.PoplarError, match="another graph"):
        g.addVariable(poplar.QUARTER, poplar.createVariableMetadataTensor(_graph()[1], F143, 0), [2])
    for call, word in [(lambda: poplar.createVariableMetadataTensor(g, F143, 32), "fp8Scale"),
                       (lambda: poplar.createConstantMetadataTensor(g, F143, -32), "fp8Scale"),
                       (lambda: poplar.createVariableMetadataTensor(g, "F143", 0), "fp8Format"),
                       (lambda: poplar.createVariableMetadataTensor(g, F143, md), "fp8Scale as a tensor")]:
        with pytest.raises(poplar.InvalidArgumentError, match=word):
            call()


def test_engine_reads_and_writes_raw_codes():
    device, g = _graph()
    variable = poplar.createVariableMetadataTensor(g, F152, -3)
    constant = poplar.createConstantMetadataTensor(g, F143, 31)
    q = g.addVariable(poplar.QUARTER, variable, [256], "q")
    g.setTileMapping(q, 1)
    r = g.addVariable(poplar.QUARTER, variable, [256], "r")
    g.setTileMapping(r, 0)
    g.createHostWrite("q", q)
    for handle, t in (("r", r), ("variable", variable), ("constant", constant)):
        g.createHostRead(handle, t)
    engine = poplar.Engine(g, prog.Copy(q, r))
    engine.load(device)
    engine.writeTensor("q", CODES[::-1].copy())
    engine.run()
    got = engine.readTensor("r")
    assert got.dtype == np.uint8 and (got == CODES[::-1]).all()
    assert poplar.QuarterMetadata(int(engine.readTensor("variable"))) == poplar.QuarterMetadata(F152, -3)
    assert poplar.QuarterMetadata(int(engine.readTensor("constant"))) == poplar.QuarterMetadata(F143, 31)
    with pytest.raises(poplar.StreamError, match="float32"):
        engine.writeTensor("q", np.ones(256, np.float32))  # values need convertToDeviceType first
