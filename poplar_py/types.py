"""Element types: Poplar's names, their numpy dtypes, sizes and LLVM types."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .errors import InvalidArgumentError


@dataclass(frozen=True)
class Type:
    """A Poplar element type (``poplar.FLOAT``, ``poplar.INT`` ...).

    ``str(t)`` gives Poplar's ``Type::toString()`` spelling, used in templated
    vertex names such as ``"popops::Fill<float>"``.
    """

    name: str
    dtype: np.dtype
    llvm: str  # LLVM scalar type used for storage: "float", "half", "i32", ...
    signed: bool
    is_float: bool

    @property
    def size(self) -> int:
        """Bytes per element on the tile."""
        return self.dtype.itemsize

    @property
    def is_integral(self) -> bool:
        return not self.is_float

    def requiresMetadata(self) -> bool:
        """True for QUARTER, whose format and scale live in a QUARTER_METADATA tensor."""
        return self.name == "quarter"

    def toString(self) -> str:
        return self.name

    def __str__(self) -> str:
        return self.name

    def __repr__(self) -> str:
        return f"poplar.{_CONSTANT_NAMES.get(self.name, self.name)}"


FLOAT = Type("float", np.dtype(np.float32), "float", True, True)
HALF = Type("half", np.dtype(np.float16), "half", True, True)
INT = Type("int", np.dtype(np.int32), "i32", True, False)
UNSIGNED_INT = Type("unsigned int", np.dtype(np.uint32), "i32", False, False)
SHORT = Type("short", np.dtype(np.int16), "i16", True, False)
UNSIGNED_SHORT = Type("unsigned short", np.dtype(np.uint16), "i16", False, False)
CHAR = Type("char", np.dtype(np.int8), "i8", True, False)
SIGNED_CHAR = Type("signed char", np.dtype(np.int8), "i8", True, False)
UNSIGNED_CHAR = Type("unsigned char", np.dtype(np.uint8), "i8", False, False)
BOOL = Type("bool", np.dtype(np.bool_), "i8", False, False)
LONGLONG = Type("long long", np.dtype(np.int64), "i64", True, False)
UNSIGNED_LONGLONG = Type("unsigned long long", np.dtype(np.uint64), "i64", False, False)
# An 8-bit float whose format and scale are a QUARTER_METADATA value (poplar_py.quarter); on the
# tiles and the host both are raw bytes, which only the quarter conversions interpret
QUARTER = Type("quarter", np.dtype(np.uint8), "i8", False, True)
QUARTER_METADATA = Type("quarter_metadata", np.dtype(np.uint8), "i8", False, False)

ALL_TYPES = (FLOAT, HALF, INT, UNSIGNED_INT, SHORT, UNSIGNED_SHORT, CHAR, SIGNED_CHAR,
             UNSIGNED_CHAR, BOOL, LONGLONG, UNSIGNED_LONGLONG)

_CONSTANT_NAMES = {
    "float": "FLOAT", "half": "HALF", "int": "INT", "unsigned int": "UNSIGNED_INT",
    "short": "SHORT", "unsigned short": "UNSIGNED_SHORT", "char": "CHAR",
    "signed char": "SIGNED_CHAR", "unsigned char": "UNSIGNED_CHAR", "bool": "BOOL",
    "long long": "LONGLONG", "unsigned long long": "UNSIGNED_LONGLONG", "quarter": "QUARTER",
    "quarter_metadata": "QUARTER_METADATA",
}
# (not in ALL_TYPES, whose types every numeric path handles; a uint8 dtype stays UNSIGNED_CHAR)
_BY_NAME = {t.name: t for t in (*ALL_TYPES, QUARTER, QUARTER_METADATA)}
_BY_DTYPE = {
    np.dtype(np.float32): FLOAT, np.dtype(np.float16): HALF, np.dtype(np.int32): INT,
    np.dtype(np.uint32): UNSIGNED_INT, np.dtype(np.int16): SHORT,
    np.dtype(np.uint16): UNSIGNED_SHORT, np.dtype(np.int8): SIGNED_CHAR,
    np.dtype(np.uint8): UNSIGNED_CHAR, np.dtype(np.bool_): BOOL,
    np.dtype(np.int64): LONGLONG, np.dtype(np.uint64): UNSIGNED_LONGLONG,
}
_PYTHON_TYPES = {float: FLOAT, int: INT, bool: BOOL}


def asType(t: object) -> Type:
    """Turn a Poplar type, its name, a numpy dtype or a Python scalar type into a Type."""
    if isinstance(t, Type):
        return t
    if t is None or not isinstance(t, (type, str, np.dtype)):
        raise InvalidArgumentError(f"not a poplar element type: {t!r:.60}")
    if t in _PYTHON_TYPES:
        return _PYTHON_TYPES[t]  # type: ignore[index]
    if isinstance(t, str) and t in _BY_NAME:
        return _BY_NAME[t]
    try:
        return _BY_DTYPE[np.dtype(t)]  # type: ignore[arg-type]
    except (TypeError, KeyError):
        raise InvalidArgumentError(f"not a poplar element type: {t!r:.60}") from None


class equivalent_device_type:  # noqa: N801 (Poplar's name)
    """Poplar's ``equivalent_device_type<T>().value``: the element type of host type ``T``
    (``equivalent_device_type(np.float32).value`` is FLOAT, ``(int)`` INT, ``(np.uint16)``
    UNSIGNED_SHORT)."""

    def __init__(self, hostType: object) -> None:
        self.value = asType(hostType)
