"""Host-side half conversion, as Poplar's ``copyFloatToDeviceHalf`` family (poplar/Target.hpp).

A C++ host program converts its floats into the bytes of the device's half type before a
``writeTensor`` and back after a ``readTensor``: ``copyFloatToDeviceHalf(target, src, dst, n)``.
Here ``src`` is a numpy array (or a sequence) of at least ``n`` values and ``dst`` any writable
buffer of at least ``n`` elements' bytes: a numpy array of any dtype (``np.float16``, ``np.uint16``,
bytes as ``np.uint8``) or a ``bytearray``. Nothing runs on the tiles.

Every IPU target's half is IEEE 754 binary16 (denormals kept) and the host conversion rounds to
nearest, ties to even, as the tiles' ``f32tof16`` does with stochastic rounding off; values beyond
the half range become infinities and NaNs stay NaN. ``target`` names the device whose format is
meant, as in Poplar, and must be a :class:`~poplar_py.Target`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .errors import InvalidArgumentError
from .target import Target

__all__ = ["copyDeviceHalfToDouble", "copyDeviceHalfToFloat", "copyDoubleToDeviceHalf",
           "copyFloatToDeviceHalf"]

_HALF = np.dtype(np.float16)


def copyFloatToDeviceHalf(target: Target, src: Any, dst: Any, numElements: int) -> None:
    """Write the first ``numElements`` floats of ``src`` into ``dst`` as device halves (2 bytes each)."""
    _to_half(target, src, np.float32, dst, numElements, "copyFloatToDeviceHalf")


def copyDoubleToDeviceHalf(target: Target, src: Any, dst: Any, numElements: int) -> None:
    """Write the first ``numElements`` doubles of ``src`` into ``dst`` as device halves, each
    rounded once from double to half."""
    _to_half(target, src, np.float64, dst, numElements, "copyDoubleToDeviceHalf")


def copyDeviceHalfToFloat(target: Target, src: Any, dst: Any, numElements: int) -> None:
    """Read ``numElements`` device halves from the bytes of ``src`` into the floats of ``dst``."""
    _from_half(target, src, dst, np.float32, numElements, "copyDeviceHalfToFloat")


def copyDeviceHalfToDouble(target: Target, src: Any, dst: Any, numElements: int) -> None:
    """Read ``numElements`` device halves from the bytes of ``src`` into the doubles of ``dst``."""
    _from_half(target, src, dst, np.float64, numElements, "copyDeviceHalfToDouble")


def _to_half(target: Target, src: Any, host: type, dst: Any, n: Any, what: str) -> None:
    count = _checked(target, n, what)
    values = _host_values(src, host, count, what)
    with np.errstate(over="ignore"):  # beyond the half range is infinity, as documented
        # numpy's float64 -> float16 rounds once (no double rounding through float32)
        halves = values.astype(_HALF)
    _bytes_of(dst, count * _HALF.itemsize, "dst", what)[:] = halves.view(np.uint8)


def _from_half(target: Target, src: Any, dst: Any, host: type, n: Any, what: str) -> None:
    count = _checked(target, n, what)
    raw = _bytes_of(src, count * _HALF.itemsize, "src", what, writable=False)
    out = _host_array(dst, "dst", what, writable=True)
    if out.dtype != np.dtype(host):
        raise InvalidArgumentError(f"{what}: dst must be an array of {np.dtype(host).name}, "
                                   f"got {out.dtype.name}")
    if out.size < count:
        raise InvalidArgumentError(f"{what}: dst holds {out.size} elements, numElements is {count}")
    out.reshape(-1)[:count] = raw.view(_HALF)


def _checked(target: Any, n: Any, what: str) -> int:
    if not isinstance(target, Target):
        raise InvalidArgumentError(f"{what}: target must be a poplar.Target, got {type(target).__name__}")
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 0:
        raise InvalidArgumentError(f"{what}: numElements must be a non-negative integer, got {n!r}")
    return int(n)


def _host_values(src: Any, host: type, count: int, what: str) -> np.ndarray:
    if isinstance(src, (str, bytes, bytearray, memoryview)):
        raise InvalidArgumentError(f"{what}: src must hold numbers, got {type(src).__name__}")
    try:
        arr = np.asarray(src)
    except (TypeError, ValueError) as e:
        raise InvalidArgumentError(f"{what}: src must hold numbers: {e}") from None
    if arr.dtype.kind not in "biuf":
        raise InvalidArgumentError(f"{what}: src must hold numbers, got an array of {arr.dtype}")
    if arr.size < count:
        raise InvalidArgumentError(f"{what}: src holds {arr.size} elements, numElements is {count}")
    return arr.reshape(-1)[:count].astype(host, copy=False)


def _host_array(buffer: Any, name: str, what: str, writable: bool) -> np.ndarray:
    if isinstance(buffer, np.ndarray):
        if writable and not buffer.flags.writeable:
            raise InvalidArgumentError(f"{what}: {name} is read-only")
        return buffer if buffer.flags.c_contiguous else _not_contiguous(name, what)
    if isinstance(buffer, (bytes, bytearray, memoryview)):
        view = memoryview(buffer)
        if writable and view.readonly:
            raise InvalidArgumentError(f"{what}: {name} is read-only")
        return np.frombuffer(view, dtype=np.uint8)
    raise InvalidArgumentError(f"{what}: {name} must be a numpy array or a bytes-like buffer, "
                               f"got {type(buffer).__name__}")


def _not_contiguous(name: str, what: str) -> np.ndarray:
    raise InvalidArgumentError(f"{what}: {name} must be C-contiguous (its bytes are read in order)")


def _bytes_of(buffer: Any, nbytes: int, name: str, what: str, writable: bool = True) -> np.ndarray:
    """The first ``nbytes`` bytes of ``buffer`` as a uint8 view (writes go through to it)."""
    arr = _host_array(buffer, name, what, writable)
    if arr.nbytes < nbytes:
        raise InvalidArgumentError(f"{what}: {name} has {arr.nbytes} bytes, {nbytes} needed "
                                   f"({nbytes // _HALF.itemsize} halves)")
    return arr.reshape(-1).view(np.uint8)[:nbytes]
