"""Checks of the arguments user programs pass: shapes, counts, tiles, values, mappings.

Python would take ``2.5`` or ``"1"`` for an int in many places (``int(2.5)`` is 2, ``[2.0, 2]``
iterates), and numpy turns ``None`` into a NaN constant. Poplar's C++ types rule those out,
so the graph API checks them here and raises a PoplarError naming the argument.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..errors import InvalidArgumentError, InvalidTileMappingError, TensorArgumentError, TensorCreationError


def is_int(x: object) -> bool:
    """An integer (Python or numpy), not a bool."""
    return isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_))


def checked_int(x: object, what: str, minimum: int | None = 0) -> int:
    """``x`` as an int; InvalidArgumentError unless it is one (at least ``minimum``)."""
    if not is_int(x):
        raise InvalidArgumentError(f"{what} must be an integer, got {type(x).__name__} {x!r:.60}")
    if minimum is not None and x < minimum:  # type: ignore[operator]
        raise InvalidArgumentError(f"{what} must be at least {minimum}, got {x}")
    return int(x)  # type: ignore[call-overload]


def checked_bool(x: object, what: str) -> bool:
    """``x`` if it is a bool (Python's or numpy's); InvalidArgumentError otherwise."""
    if not isinstance(x, (bool, np.bool_)):
        raise InvalidArgumentError(f"{what} must be a bool, got {type(x).__name__} {x!r:.60}")
    return bool(x)


def checked_str(x: object, what: str) -> str:
    """``x`` if it is a string (a handle, a name); InvalidArgumentError otherwise."""
    if not isinstance(x, str):
        raise InvalidArgumentError(f"{what} must be a string, got {type(x).__name__} {x!r:.60}")
    return x


def checked_file(file: object, what: str, method: str = "write") -> Any:
    """``file`` if it is an open file (it has ``write``, or ``read`` for ``method="read"``)."""
    if not callable(getattr(file, method, None)):
        raise InvalidArgumentError(f"{what}: expected a path or an open file, got {type(file).__name__} "
                                   f"{file!r:.40}")
    return file


def checked_ints(values: object, what: str) -> tuple[int, ...]:
    """A list of integers (a shape, dimensions, a permutation); any of them may be negative."""
    if type(values) in (list, tuple) and all(type(v) is int for v in values):  # type: ignore[union-attr]
        return tuple(values)  # type: ignore[arg-type]
    if isinstance(values, (str, bytes)) or not isinstance(values, (Sequence, np.ndarray)):
        raise TensorArgumentError(f"{what} must be a list of integers, got {type(values).__name__} "
                                   f"{values!r:.60}")
    items = list(values)
    for v in items:
        if not is_int(v):
            raise TensorArgumentError(f"{what} {items!r:.80}: {v!r} is not an integer")
    return tuple(int(v) for v in items)


def checked_shape(shape: object, what: str) -> tuple[int, ...]:
    """A shape: a list of non-negative integers."""
    dims = checked_ints(shape, f"{what}: the shape")
    if any(d < 0 for d in dims):
        raise TensorCreationError(f"{what}: shape {list(dims)} has a negative dimension")
    return dims


def checked_values(values: Any, what: str) -> np.ndarray:
    """Numbers (a scalar, a list or an array) to store in a tensor: no None, strings or objects."""
    if values is None:
        raise InvalidArgumentError(f"{what}: values must be numbers, got None")
    try:
        arr = values if isinstance(values, np.ndarray) else np.asarray(values)
    except ValueError:  # ragged lists
        raise InvalidArgumentError(f"{what}: values must be numbers in a regular array, got "
                                   f"{values!r:.60}") from None
    if arr.dtype.kind not in "biuf":
        raise InvalidArgumentError(f"{what}: values must be numbers, got {arr.dtype} ({values!r:.60})")
    return arr


def cast_values(values: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """``values`` flattened and converted to ``dtype`` as C converts them (integers wrap, floats
    out of range become infinities), without numpy's warnings."""
    with np.errstate(all="ignore"):
        return values.reshape(-1).astype(dtype)


def checked_tile(tile: object, num_tiles: int, what: str) -> int:
    """A tile number in ``[0, num_tiles)``."""
    if not is_int(tile):
        raise InvalidArgumentError(f"{what}: a tile must be an integer, got {type(tile).__name__} "
                                   f"{tile!r:.60}")
    if not 0 <= tile < num_tiles:  # type: ignore[operator]
        raise InvalidTileMappingError(f"{what}: tile {tile} is out of range "
                                      f"(the target has {num_tiles} tiles)")
    return int(tile)  # type: ignore[call-overload]


def checked_intervals(mapping: object, what: str) -> list[list[tuple[int, int]]]:
    """A per-tile list of ``(begin, end)`` intervals (or Intervals), as integers."""
    if isinstance(mapping, (str, bytes)) or not isinstance(mapping, (Sequence, np.ndarray)):
        raise InvalidArgumentError(f"{what}: a mapping is a tile number or a list, per tile, of "
                                   f"(begin, end) intervals; got {type(mapping).__name__} {mapping!r:.60}")
    out = []
    for tile, intervals in enumerate(mapping):
        if isinstance(intervals, (str, bytes)) or not isinstance(intervals, (Sequence, np.ndarray)):
            raise InvalidArgumentError(f"{what}: the mapping of tile {tile} must be a list of (begin, end) "
                                       f"intervals, got {intervals!r:.60}")
        mine = []
        for iv in intervals:
            if isinstance(iv, (str, bytes)) or not isinstance(iv, (Sequence, np.ndarray)) or len(iv) != 2 \
                    or not (is_int(iv[0]) and is_int(iv[1])):
                raise InvalidArgumentError(f"{what}: tile {tile}: {iv!r:.60} is not a (begin, end) "
                                           "interval of integers")
            mine.append((int(iv[0]), int(iv[1])))
        out.append(mine)
    return out
