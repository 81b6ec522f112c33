"""Streaming Memory as the running device holds it: every remote buffer's rows, per replica.

On hardware each replica's IPUs have their own rows in the DRAM of their IPU-Machine. Here a
row is a host array made when the row is first written (by a remote copy or
``Engine.copyToRemoteBuffer``), so a program may declare far more Streaming Memory than the
host has and touch a few rows; a row never written reads as zeros. Under MPI a process holds
the rows of the replicas it runs (a replica split over ranks: every one of them, each a copy).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from ..checks.arguments import checked_str, is_int
from ..errors import InvalidArgumentError, RemoteBufferError
from ..handles import RemoteBuffer


class StreamingMemory:
    """The rows of ``buffers`` (by handle) that this process holds, each replica's its own."""

    def __init__(self, buffers: Mapping[str, RemoteBuffer]) -> None:
        self.buffers = buffers
        self._rows: dict[tuple[str, int, int], np.ndarray] = {}
        self._zeros: dict[str, np.ndarray] = {}
        self._addresses: dict[tuple[str, int, int] | str, int] = {}  # of the rows and the zero rows

    def read(self, handle: str, replica: int, row: int) -> np.ndarray:
        """A row's bytes (zeros, never to be written, if it was never written)."""
        found = self._rows.get((handle, replica, row))
        if found is not None:
            return found
        zeros = self._zeros.get(handle)
        if zeros is None:  # calloc'd: the pages are the kernel's zero page until written
            zeros = self._zeros[handle] = np.zeros(self.buffers[handle].row_bytes, np.uint8)
            zeros.flags.writeable = False
        return zeros

    def address(self, handle: str, replica: int, row: int) -> int:
        """Where :meth:`read`'s bytes are (kept: ctypes takes a microsecond to tell it)."""
        key: tuple[str, int, int] | str = (handle, replica, row)
        if key not in self._rows:
            key = handle  # the buffer's zero row
        found = self._addresses.get(key)
        if found is None:
            found = self._addresses[key] = self.read(handle, replica, row).ctypes.data
        return found

    def write(self, handle: str, replica: int, row: int) -> np.ndarray:
        """A row's bytes to write, made now if it was never written."""
        key = (handle, replica, row)
        found = self._rows.get(key)
        if found is None:
            found = self._rows[key] = np.empty(self.buffers[handle].row_bytes, np.uint8)
        return found


def checked_row(buffers: Mapping[str, RemoteBuffer], handle: Any, repeatIndex: Any, what: str
                ) -> tuple[RemoteBuffer, int]:
    """The buffer ``handle`` names and its row ``repeatIndex``, for a host access ``what``."""
    checked_str(handle, f"{what}: the handle")
    buffer = buffers.get(handle)
    if buffer is None:
        raise RemoteBufferError(f"{what}: no remote buffer '{handle}' (remote buffers: "
                                f"{', '.join(buffers) or 'none'})")
    rows = buffer.getRepeats()
    if not is_int(repeatIndex) or not 0 <= repeatIndex < rows:
        raise RemoteBufferError(f"{what}('{handle}'): row {repeatIndex!r:.40} is out of range: the buffer "
                                f"has {rows} row(s), 0..{rows - 1}")
    return buffer, int(repeatIndex)


def row_array(buffer: RemoteBuffer, array: Any, what: str) -> np.ndarray:
    """``array`` if it holds one row of ``buffer``: a numpy array of its element type and size."""
    dtype, n = buffer.elementType().dtype, buffer.numElements()
    if not isinstance(array, np.ndarray):
        raise InvalidArgumentError(f"{what}('{buffer.handle()}'): the host buffer must be a numpy array, got "
                                   f"{type(array).__name__} {array!r:.40}")
    if array.dtype != dtype or array.size != n:
        raise RemoteBufferError(f"{what}('{buffer.handle()}'): a row is {n} {buffer.elementType()} "
                                f"({dtype}) element(s), got an array of {array.size} {array.dtype}")
    return array
