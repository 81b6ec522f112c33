"""Host ends of data streams: circular host arrays, functions and Poplar's StreamCallback.

Each stream copy (``prog.Copy(stream, t)`` or ``prog.Copy(t, stream)``) moves one
transfer of ``numElements`` elements between tile memory and what the host connected to
the stream with ``engine.connectStream`` or ``engine.connectStreamToCallback``.

A :class:`StreamCallback` is told about each host-to-device transfer as Poplar tells it:
``fetch(p)`` fills the transfer buffer ``p`` when the data is needed, ``complete()``
follows once the device has taken it. With prefetching on (engine options
``exchange.enablePrefetch=true`` and ``exchange.streamBufferOverlap=none``), right after a
transfer the next one is asked for ahead of time with ``prefetch(p)``: ``Result.Success``
means ``p`` holds it and the next transfer uses it without calling ``fetch``;
``Result.NotAvailable`` means the next transfer calls ``fetch`` as usual. Prefetched data
that will not be used (the callback is replaced) is dropped after
``invalidatePrefetched()``. For device-to-host streams ``fetch(p)`` receives the
transfer's data (read-only), then ``complete()`` is called.
"""

from __future__ import annotations

import enum
from collections.abc import Callable

import numpy as np

from .errors import StreamError


class StreamCallback:
    """Base class of stream callbacks with prefetching, as Poplar's ``poplar::StreamCallback``."""

    class Result(enum.Enum):
        Success = "Success"
        NotAvailable = "NotAvailable"

    def prefetch(self, p: np.ndarray) -> StreamCallback.Result:
        """Fill ``p`` with the next transfer's data ahead of time, if it is available."""
        return StreamCallback.Result.NotAvailable

    def fetch(self, p: np.ndarray) -> None:
        """Fill ``p`` with the data of the transfer happening now (host-to-device), or take the
        transfer's data from it (device-to-host)."""
        raise NotImplementedError(f"{type(self).__name__}.fetch")

    def complete(self) -> None:
        """The transfer of the data last fetched (or prefetched) is done."""

    def invalidatePrefetched(self) -> None:
        """Data prefetched earlier will not be used."""


class HostStream:
    """The host end of one stream: what a transfer reads or writes."""

    def to_device(self, n: int, dtype: np.dtype) -> np.ndarray:
        """The ``n`` elements of the next host-to-device transfer."""
        raise NotImplementedError

    def transferred(self) -> None:
        """The device has taken the data ``to_device`` returned."""

    def from_device(self, data: np.ndarray) -> None:
        """Take one device-to-host transfer's data."""
        raise NotImplementedError

    def disconnect(self) -> None:
        """Another host end replaces this one."""


class ArrayStream(HostStream):
    """A host array used as a circular buffer: each transfer takes (or fills) the next
    elements, wrapping at the end."""

    def __init__(self, array: np.ndarray) -> None:
        self.array = array
        self.position = 0

    def _window(self, n: int) -> slice | np.ndarray:
        size, pos = self.array.size, self.position
        self.position = (pos + n) % size if size else 0
        return np.arange(pos, pos + n) % size if pos + n > size else slice(pos, pos + n)

    def to_device(self, n: int, dtype: np.dtype) -> np.ndarray:
        return np.ascontiguousarray(self.array[self._window(n)])

    def from_device(self, data: np.ndarray) -> None:
        self.array[self._window(data.size)] = data


class FunctionStream(HostStream):
    """A function called with each transfer's buffer: it fills it, or reads it."""

    def __init__(self, fn: Callable[[np.ndarray], object]) -> None:
        self.fn = fn

    def to_device(self, n: int, dtype: np.dtype) -> np.ndarray:
        data = np.empty(n, dtype=dtype)
        self.fn(data)
        return data

    def from_device(self, data: np.ndarray) -> None:
        self.fn(data)


class CallbackStream(HostStream):
    """A StreamCallback, prefetching the next host-to-device transfer when ``prefetch``."""

    def __init__(self, callback: StreamCallback, handle: str, prefetch: bool) -> None:
        self.callback, self.handle, self.prefetch = callback, handle, prefetch
        self.prefetched: np.ndarray | None = None
        self.shape: tuple[int, np.dtype] | None = None  # of a transfer, once one has happened

    def to_device(self, n: int, dtype: np.dtype) -> np.ndarray:
        self.shape = (n, dtype)
        data, self.prefetched = self.prefetched, None
        if data is None:
            data = np.empty(n, dtype=dtype)
            self.callback.fetch(data)
        return data

    def transferred(self) -> None:
        self.callback.complete()
        if self.prefetch and self.shape is not None:
            buffer = np.empty(*self.shape)
            result = self.callback.prefetch(buffer)
            if result is StreamCallback.Result.Success:
                self.prefetched = buffer
            elif result is not StreamCallback.Result.NotAvailable:
                raise StreamError(f"stream '{self.handle}': {type(self.callback).__name__}.prefetch returned "
                                  f"{result!r}, not StreamCallback.Result.Success or NotAvailable")

    def from_device(self, data: np.ndarray) -> None:
        view = data.view()
        view.flags.writeable = False
        self.callback.fetch(view)
        self.callback.complete()

    def disconnect(self) -> None:
        if self.prefetched is not None:
            self.prefetched = None
            self.callback.invalidatePrefetched()
