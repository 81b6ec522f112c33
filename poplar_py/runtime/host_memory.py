"""Giving the host back the heap memory a build has freed.

A build allocates and frees many medium-sized arrays and Python objects; glibc keeps the freed
heap for reuse, so without a trim an Engine's resident memory stays near the compiler's peak
for as long as it runs. ``malloc_trim`` returns the free heap pages to the operating system.
"""

from __future__ import annotations

import ctypes
import ctypes.util
from collections.abc import Callable


def _malloc_trim() -> Callable[[int], int] | None:
    """glibc's ``malloc_trim``, or None on a C library without it."""
    name = ctypes.util.find_library("c")
    try:
        return ctypes.CDLL(name).malloc_trim if name else None
    except (OSError, AttributeError):
        return None


_TRIM = _malloc_trim()


def release_freed_heap() -> None:
    """Hand the heap's free pages back to the operating system (nothing without glibc)."""
    if _TRIM is not None:
        _TRIM(0)
