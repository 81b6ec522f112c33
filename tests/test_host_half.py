"""Host half converters (``copyFloatToDeviceHalf`` family) against numpy's IEEE binary16."""

import numpy as np
import pytest

import poplar_py as poplar
from poplar_py import program as prog

TARGET = poplar.IPUModel().createDevice().getTarget()


def test_float_to_half_rounds_to_nearest_even_into_raw_bytes():
    src = np.array([1.0, 1.0 + 2.0**-11, 1.0 + 3 * 2.0**-11, 70000.0, -1e-7, np.nan], np.float32)
    dst = np.zeros(len(src) * 2, np.uint8)
    poplar.copyFloatToDeviceHalf(TARGET, src, dst, len(src))
    got = dst.view(np.float16)
    with np.errstate(over="ignore"):
        want = src.astype(np.float16)
    np.testing.assert_array_equal(got[:-1], want[:-1])
    assert got[1] == 1.0 and got[2] == 1.0 + 2.0**-9  # ties to even, both ways
    assert np.isinf(got[3]) and np.isnan(got[5])
    assert got[4] == np.float16(-1e-7) and got[4] != 0  # denormals kept


def test_only_num_elements_written_and_buffers_of_any_type():
    dst = bytearray(b"\xff" * 8)
    poplar.copyFloatToDeviceHalf(TARGET, [0.5, 2.0, 9.0], dst, 2)
    assert np.frombuffer(dst, np.float16)[:2].tolist() == [0.5, 2.0]
    assert dst[4:] == b"\xff" * 4
    bits = np.zeros(3, np.uint16)
    poplar.copyDoubleToDeviceHalf(TARGET, np.array([1 / 3, 2.5, -4.0]), bits, 3)
    np.testing.assert_array_equal(bits, np.array([1 / 3, 2.5, -4.0]).astype(np.float16).view(np.uint16))


def test_double_rounds_once():
    x = 1.0 + 2.0**-11 + 2.0**-40  # just above a tie: float32 would round it to the tie, then to even
    out = np.zeros(1, np.float16)
    poplar.copyDoubleToDeviceHalf(TARGET, [x], out, 1)
    assert out[0] == 1.0 + 2.0**-10


def test_half_to_float_and_double():
    halves = np.array([0.1, -3.5, 65504, 6e-8], np.float16)
    f = np.zeros(4, np.float32)
    poplar.copyDeviceHalfToFloat(TARGET, halves.tobytes(), f, 4)
    np.testing.assert_array_equal(f, halves.astype(np.float32))
    d = np.full(5, 7.0)
    poplar.copyDeviceHalfToDouble(TARGET, halves.view(np.uint16), d, 4)
    np.testing.assert_array_equal(d, np.append(halves.astype(np.float64), 7.0))


def test_round_trip_through_a_half_tensor():
    g = poplar.Graph(TARGET)
    t = g.addVariable(poplar.HALF, [6], "t")
    g.setTileMapping(t, 0)
    g.createHostWrite("w", t)
    g.createHostRead("r", t)
    e = poplar.Engine(g, prog.Sequence())
    e.load(poplar.IPUModel().createDevice())
    values = np.linspace(-2, 3, 6, dtype=np.float32)
    raw = bytearray(12)
    poplar.copyFloatToDeviceHalf(TARGET, values, raw, 6)
    e.writeTensor("w", np.frombuffer(raw, np.uint8))
    back = np.zeros(6, np.float32)
    poplar.copyDeviceHalfToFloat(TARGET, e.readTensor("r", np.zeros(12, np.uint8)), back, 6)
    np.testing.assert_array_equal(back, values.astype(np.float16).astype(np.float32))


@pytest.mark.parametrize("call, match", [
    (lambda: poplar.copyFloatToDeviceHalf("ipu", [1.0], bytearray(2), 1), "target must be a poplar.Target"),
    (lambda: poplar.copyFloatToDeviceHalf(TARGET, [1.0], bytearray(2), -1), "numElements"),
    (lambda: poplar.copyFloatToDeviceHalf(TARGET, [1.0], bytearray(2), 2), "src holds 1 elements"),
    (lambda: poplar.copyFloatToDeviceHalf(TARGET, [1.0, 2.0], bytearray(2), 2), "dst has 2 bytes, 4 needed"),
    (lambda: poplar.copyFloatToDeviceHalf(TARGET, [1.0], b"\0\0", 1), "dst is read-only"),
    (lambda: poplar.copyFloatToDeviceHalf(TARGET, ["a"], bytearray(2), 1), "src must hold numbers"),
    (lambda: poplar.copyFloatToDeviceHalf(TARGET, [1.0], [0, 0], 1), "dst must be a numpy array"),
    (lambda: poplar.copyDeviceHalfToFloat(TARGET, b"\0\0", np.zeros(1, np.float64), 1), "array of float32"),
    (lambda: poplar.copyDeviceHalfToFloat(TARGET, b"\0\0", np.zeros(0, np.float32), 1), "dst holds 0"),
    (lambda: poplar.copyDeviceHalfToFloat(TARGET, np.zeros((2, 2), np.uint16)[:, 0],
                                          np.zeros(2, np.float32), 2), "src must be C-contiguous"),
])
def test_bad_arguments_name_the_argument(call, match):
    with pytest.raises(poplar.InvalidArgumentError, match=match):
        call()
