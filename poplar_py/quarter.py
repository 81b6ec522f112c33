"""Poplar's 8-bit float: ``QuarterMetadata``, metadata tensors and the host conversions
(poplar/Quarter.hpp, poplar/MetadataCreation.hpp, poplar/TypeConversion.hpp).

A QUARTER element is one byte whose meaning a QUARTER_METADATA byte gives: a format and a scale.

* Formats (the IPU's, as Graphcore's 8-bit float paper defines them): ``F143`` has 1 sign, 4
  exponent (bias 8) and 3 mantissa bits; ``F152`` 1 sign, 5 exponent (bias 16) and 2 mantissa
  bits. Exponent field 0 holds subnormals, every other code is a normal number (no infinities), and
  the code 0x80 (what would be -0) is the only NaN, so zero is unsigned. F143 spans 2^-10 to 240,
  F152 2^-17 to 57344.
* Scale: a signed power of two, ``value = decode(code) * 2**scale``.
* The metadata byte: bit 7 is the format (1 F143, 0 F152), bits 0-5 the scale in two's complement
  (-32 to 31; Poplar's metadata-creating functions take -31 to 31).

Encoding rounds to nearest, ties to even, once, from the exact scaled value. A NaN or infinity gives
NaN; a finite value whose rounded magnitude exceeds the format's largest gives NaN with ``nanoo``
(Poplar's IPUModel behaves so: it has no ``$FP_CTL``), or saturates to +-largest without. Decoding
is exact into float and double; into half it rounds to nearest even (beyond half's range: +-inf).
On the host nothing runs on the tiles; popops' cast converts on the tiles by these same rules.
"""

from __future__ import annotations

import enum
from typing import Any

import numpy as np

from .checks.arguments import cast_values, checked_values
from .errors import InvalidArgumentError
from .tensor import Tensor
from .types import QUARTER_METADATA, Type, asType

__all__ = ["QuarterMetadata", "convertFromDeviceType", "convertToDeviceType", "createConstantMetadataTensor",
           "createVariableMetadataTensor"]

_FORMAT_BIT, _SCALE_MASK = 0x80, 0x3F
_NAN_CODE = 0x80


class QuarterMetadata:
    """A quarter format and scale, packed into one byte as the tiles read it.

    ``QuarterMetadata(QuarterMetadata.Format.F143, scale)``, ``QuarterMetadata(binaryValue)`` or
    ``QuarterMetadata()`` (the byte 0: F152, scale 0)."""

    class Format(enum.Enum):
        """F143: 1 sign, 4 exponent, 3 mantissa bits; F152: 1 sign, 5 exponent, 2 mantissa bits."""

        F143 = "F143"
        F152 = "F152"

    def __init__(self, fmt: QuarterMetadata.Format | int = 0, scale: int | None = None) -> None:
        if isinstance(fmt, QuarterMetadata.Format):
            scale = _checked_int(0 if scale is None else scale, -32, 31, "QuarterMetadata: the scale")
            self._value = (_FORMAT_BIT if fmt is QuarterMetadata.Format.F143 else 0) | (scale & _SCALE_MASK)
        elif scale is None:
            self._value = _checked_int(fmt, 0, 255, "QuarterMetadata: the binary value (or a Format)")
        else:
            raise InvalidArgumentError(f"QuarterMetadata: fmt must be a QuarterMetadata.Format, "
                                       f"got {fmt!r:.40}")

    def getFormat(self) -> QuarterMetadata.Format:
        return QuarterMetadata.Format.F143 if self._value & _FORMAT_BIT else QuarterMetadata.Format.F152

    def getScale(self) -> int:
        scale = self._value & _SCALE_MASK
        return scale - 64 if scale & 0x20 else scale

    def getBinary(self) -> int:
        """The metadata byte."""
        return self._value

    def toString(self) -> str:
        return f"{self.getFormat().name} scale {self.getScale()}"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, QuarterMetadata) and other._value == self._value

    def __hash__(self) -> int:
        return hash(("QuarterMetadata", self._value))

    def __str__(self) -> str:
        return self.toString()

    def __repr__(self) -> str:
        return f"QuarterMetadata(QuarterMetadata.Format.{self.getFormat().name}, {self.getScale()})"


def createVariableMetadataTensor(graph: Any, fp8Format: QuarterMetadata.Format, fp8Scale: int,
                                 debugContext: Any = "") -> Tensor:
    """A QUARTER_METADATA variable (0-D, mapped to the graph's tile 0) whose initial value holds
    ``fp8Format`` and ``fp8Scale`` (-31 to 31); programs may overwrite it."""
    value = _metadata_byte(fp8Format, fp8Scale, "createVariableMetadataTensor")
    t = graph.addVariable(QUARTER_METADATA, [], debugContext or "metadata")
    graph.setTileMapping(t, 0)
    graph.setInitialValue(t, value)
    return t


def createConstantMetadataTensor(graph: Any, fp8Format: QuarterMetadata.Format, fp8Scale: int,
                                 debugContext: Any = "") -> Tensor:
    """A QUARTER_METADATA constant (0-D, mapped to the graph's tile 0) holding ``fp8Format`` and
    ``fp8Scale`` (-31 to 31)."""
    value = _metadata_byte(fp8Format, fp8Scale, "createConstantMetadataTensor")
    t = graph.addConstant(QUARTER_METADATA, [], value, debugContext or "metadata")
    graph.setTileMapping(t, 0)
    return t


def convertToDeviceType(type_: Type | object, *args: Any) -> None:
    """Host values into device bytes.

    ``convertToDeviceType(QUARTER, metadata, src, dst[, nanoo=True])`` encodes every value of
    ``src`` (numbers, any shape) as quarter codes of ``metadata`` into the first bytes of ``dst``
    (a writable numpy array of any dtype, or a bytearray). ``convertToDeviceType(type, src, dst)``
    writes ``src`` converted to another type's elements (half rounds to nearest even)."""
    type_ = asType(type_)
    if type_.requiresMetadata():
        if len(args) not in (3, 4):
            raise InvalidArgumentError("convertToDeviceType(QUARTER, metadata, src, dst[, nanoo]): "
                                       f"got {len(args) + 1} arguments")
        metadata, src, dst, nanoo = *args[:3], args[3] if len(args) > 3 else True
        md = _checked_metadata(metadata, "convertToDeviceType")
        if not isinstance(nanoo, (bool, np.bool_)):
            raise InvalidArgumentError(f"convertToDeviceType: nanoo must be a bool, got {nanoo!r:.40}")
        codes = encodeQuarter(checked_values(src, "convertToDeviceType: src").reshape(-1), md, bool(nanoo))
    else:
        if len(args) != 2:
            hint = " (metadata is for QUARTER only)" if args and isinstance(args[0], QuarterMetadata) else ""
            raise InvalidArgumentError(f"convertToDeviceType({type_}, src, dst): got {len(args) + 1} "
                                       f"arguments{hint}")
        src, dst = args
        codes = cast_values(checked_values(src, "convertToDeviceType: src"), type_.dtype)
    raw = codes.view(np.uint8)
    _writable_bytes(dst, raw.size, "convertToDeviceType: dst")[:] = raw


def convertFromDeviceType(type_: Type | object, *args: Any) -> None:
    """Device bytes into host values.

    ``convertFromDeviceType(QUARTER, metadata, src, dst)`` decodes as many quarter codes from the
    bytes of ``src`` (a numpy array of any dtype, bytes or a bytearray) as ``dst`` (a writable
    numpy array of float32, float64 or float16) holds. ``convertFromDeviceType(type, src, dst)``
    reads elements of another type likewise."""
    type_ = asType(type_)
    if type_.requiresMetadata():
        if len(args) != 3:
            raise InvalidArgumentError("convertFromDeviceType(QUARTER, metadata, src, dst): "
                                       f"got {len(args) + 1} arguments")
        metadata, src, dst = args
        md = _checked_metadata(metadata, "convertFromDeviceType")
    elif len(args) != 2:
        raise InvalidArgumentError(f"convertFromDeviceType({type_}, src, dst): got {len(args) + 1} arguments")
    else:
        src, dst = args
    if not (isinstance(dst, np.ndarray) and dst.flags.writeable and dst.flags.c_contiguous
            and dst.dtype.kind in "biuf"):
        raise InvalidArgumentError(f"convertFromDeviceType: dst must be a writable C-contiguous numpy array "
                                   f"of numbers, got {type(dst).__name__} {dst!r:.40}")
    raw = _bytes(src, dst.size * type_.size, "convertFromDeviceType: src")
    values = decodeQuarter(raw, md) if type_.requiresMetadata() else raw.view(type_.dtype)
    with np.errstate(over="ignore", invalid="ignore"):
        dst.reshape(-1)[...] = values.astype(dst.dtype)


# ---- the numeric reference ---------------------------------------------------------------------

def formatParameters(fmt: QuarterMetadata.Format) -> tuple[int, int]:
    """(mantissa bits, exponent bias) of a format."""
    return (3, 8) if fmt is QuarterMetadata.Format.F143 else (2, 16)


def decodeQuarter(codes: np.ndarray, metadata: QuarterMetadata) -> np.ndarray:
    """The float64 values of quarter ``codes`` (uint8) under ``metadata``: exact."""
    mbits, bias = formatParameters(metadata.getFormat())
    c = np.arange(256)
    exponent, mantissa = (c & 0x7F) >> mbits, c & ((1 << mbits) - 1)
    significand = np.where(exponent == 0, mantissa, mantissa + (1 << mbits))
    power = np.maximum(exponent, 1) - bias - mbits + metadata.getScale()  # subnormals: exponent 1
    table = np.ldexp(significand.astype(np.float64), power)
    table = np.where(c & 0x80, -table, table)
    table[_NAN_CODE] = np.nan
    return table[np.asarray(codes, np.uint8)]


def encodeQuarter(values: np.ndarray, metadata: QuarterMetadata, nanoo: bool = True) -> np.ndarray:
    """The quarter codes (uint8) of float ``values`` under ``metadata``, rounded to nearest even
    once from ``value * 2**-scale``."""
    mbits, bias = formatParameters(metadata.getFormat())
    emax = (1 << (7 - mbits)) - 1  # largest biased exponent: 15 or 31
    y = np.ldexp(np.asarray(values, np.float64), -metadata.getScale())  # exact
    a = np.abs(y)
    special = ~np.isfinite(y)
    with np.errstate(over="ignore", invalid="ignore"):
        over = ~special & (a >= np.ldexp(1.0, emax + 1 - bias))  # beyond the top binade
        # the binade's biased exponent (1 for subnormals); a / quantum is exact, rint ties to even
        exponent = np.where(a > 0, np.clip(np.frexp(a)[1] - 1 + bias, 1, emax), 1)
        steps = np.rint(np.ldexp(a, mbits + bias - exponent))
    steps = np.where(special | over, 0, steps).astype(np.int64)
    code = ((exponent.astype(np.int64) - 1) << mbits) + steps  # rounding up carries into the exponent
    over |= code > 0x7F
    negative = (y < 0) & (code != 0)  # no -0: 0x80 is NaN
    code = np.where(over, 0x7F if not nanoo else _NAN_CODE, code)
    code = np.where(negative & ~(over & nanoo), code | 0x80, code)
    return np.where(special, _NAN_CODE, code).astype(np.uint8)


# ---- arguments ---------------------------------------------------------------------------------

def _checked_int(value: Any, lo: int, hi: int, what: str) -> int:
    integer = isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))
    if not integer or not lo <= value <= hi:
        raise InvalidArgumentError(f"{what} must be an integer from {lo} to {hi}, got {value!r:.40}")
    return int(value)


def _metadata_byte(fmt: Any, scale: Any, what: str) -> int:
    if not isinstance(fmt, QuarterMetadata.Format):
        raise InvalidArgumentError(f"{what}: fp8Format must be a QuarterMetadata.Format, got {fmt!r:.40}")
    if isinstance(scale, Tensor):
        raise InvalidArgumentError(f"{what}: fp8Scale as a tensor is not supported; give an integer")
    return QuarterMetadata(fmt, _checked_int(scale, -31, 31, f"{what}: fp8Scale")).getBinary()


def _checked_metadata(metadata: Any, what: str) -> QuarterMetadata:
    if not isinstance(metadata, QuarterMetadata):
        raise InvalidArgumentError(f"{what}: metadata must be a QuarterMetadata, got {metadata!r:.40}")
    return metadata


def _bytes(buffer: Any, nbytes: int, what: str) -> np.ndarray:
    """The first ``nbytes`` bytes of a numpy array, bytes, bytearray or memoryview, as uint8."""
    if isinstance(buffer, np.ndarray):
        raw = np.ascontiguousarray(buffer).reshape(-1).view(np.uint8)
    elif isinstance(buffer, (bytes, bytearray, memoryview)):
        raw = np.frombuffer(buffer, np.uint8)
    else:
        raise InvalidArgumentError(f"{what} must be a numpy array or a bytes buffer, "
                                   f"got {type(buffer).__name__}")
    if raw.size < nbytes:
        raise InvalidArgumentError(f"{what} holds {raw.size} bytes, {nbytes} are needed")
    return raw[:nbytes]


def _writable_bytes(buffer: Any, nbytes: int, what: str) -> np.ndarray:
    """The first ``nbytes`` bytes of a writable C-contiguous array, bytearray or memoryview."""
    writable = (buffer.flags.c_contiguous and buffer.flags.writeable) if isinstance(buffer, np.ndarray) \
        else isinstance(buffer, bytearray) or (isinstance(buffer, memoryview) and not buffer.readonly)
    if not writable:
        raise InvalidArgumentError(f"{what} must be a writable C-contiguous numpy array or a bytearray, "
                                   f"got {type(buffer).__name__}")
    return _bytes(buffer, nbytes, what)
