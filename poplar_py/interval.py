"""Poplar's ``Interval`` (poplar/Interval.hpp): a half-open range of element indices."""

from __future__ import annotations

from .checks.arguments import is_int
from .errors import InvalidArgumentError


class Interval(tuple):
    """Half-open interval ``[begin, end)``; compares equal to the tuple ``(begin, end)``."""

    def __new__(cls, begin: int, end: int) -> Interval:
        if not (is_int(begin) and is_int(end)):
            raise InvalidArgumentError(f"Interval(begin, end) takes integers, got ({begin!r:.30}, "
                                       f"{end!r:.30})")
        return super().__new__(cls, (int(begin), int(end)))

    def begin(self) -> int:
        return self[0]

    def end(self) -> int:
        return self[1]

    def size(self) -> int:
        return self[1] - self[0]

    def __repr__(self) -> str:
        return f"[{self[0]}, {self[1]})"
