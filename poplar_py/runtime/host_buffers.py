"""Host buffers of ``readTensor``, ``writeTensor`` and stream ends, taken as Poplar takes a ``void*``.

Poplar's host calls take the bytes of any buffer. Here a numpy array of the tensor's element type
is used as it is. Data of another type is converted value by value when it has the tensor's number
of elements but another element size (``np.arange(4)``, int64, into a FLOAT tensor; lists and
scalars too). Any other numpy array with the tensor's number of bytes is taken as raw bytes, as
C++ does: ``readTensor("r", np.zeros(8, np.uint32))`` on an INT tensor, a ``np.uint16`` array of
bit patterns into a HALF tensor. A stream end is a C-contiguous array of elements of the stream
type's size, viewed as that type.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..checks.arguments import checked_values
from ..errors import InvalidArgumentError, StreamArgumentError, StreamError


def host_values(data: Any, dtype: np.dtype, size: int, what: str) -> np.ndarray:
    """``data`` as a contiguous 1-D array of ``size`` elements of ``dtype``, to write to a tensor."""
    if isinstance(data, (str, bytes)):
        raise InvalidArgumentError(f"{what}: data must be numbers, got {data!r:.40}")
    arr = checked_values(data, what)
    nbytes = size * dtype.itemsize
    if arr.dtype == dtype and arr.size == size:
        return np.ascontiguousarray(arr).reshape(-1)
    raw = arr.size != size or arr.itemsize == dtype.itemsize  # (same count, other size: values)
    if isinstance(data, np.ndarray) and arr.nbytes == nbytes and raw:
        return np.ascontiguousarray(arr).reshape(-1).view(np.uint8).view(dtype)
    if arr.size != size:
        raise StreamError(f"{what}: {arr.size} values ({arr.nbytes} bytes) for a tensor of {size} elements "
                          f"({nbytes} bytes)")
    if not np.can_cast(arr.dtype, dtype, casting="same_kind"):
        raise StreamError(f"{what}: cannot convert {arr.dtype} data to the tensor's {dtype}")
    return np.ascontiguousarray(arr.reshape(-1).astype(dtype, copy=False))


def read_into(values: np.ndarray, out: Any, what: str) -> np.ndarray:
    """Fill ``out`` with ``values`` (a fresh contiguous array): the same elements, or the same bytes."""
    if not isinstance(out, np.ndarray):
        raise InvalidArgumentError(f"{what}: out must be a numpy array, got {type(out).__name__} {out!r:.40}")
    if not out.flags.writeable:
        raise StreamError(f"{what}: out is read-only")
    if out.dtype == values.dtype and out.size == values.size:
        out[...] = values.reshape(out.shape)
    elif out.nbytes == values.nbytes:
        out[...] = values.reshape(-1).view(out.dtype).reshape(out.shape)
    else:
        raise StreamError(f"{what}: out must hold the tensor's {values.size} {values.dtype} elements "
                          f"({values.nbytes} bytes), got {out.size} {out.dtype} ({out.nbytes} bytes)")
    return out


def stream_array(buffer: Any, dtype: np.dtype, what: str) -> np.ndarray:
    """The flattened view of ``buffer`` as elements of ``dtype`` (the host end of a stream)."""
    if not isinstance(buffer, np.ndarray):
        raise StreamArgumentError(f"{what}: connect a numpy array, got {type(buffer).__name__}")
    if not buffer.flags.c_contiguous:
        raise StreamError(f"{what}: the host array must be C-contiguous")
    if buffer.dtype != dtype and (buffer.dtype.itemsize != dtype.itemsize or buffer.dtype.kind not in "biuf"):
        raise StreamError(f"{what} carries {dtype} ({dtype.itemsize}-byte elements) but the array is "
                          f"{buffer.dtype} ({buffer.dtype.itemsize}-byte elements)")
    return buffer.reshape(-1).view(dtype)
