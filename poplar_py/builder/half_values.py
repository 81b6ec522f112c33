"""Graph.setInitialValueHalf and Graph.addConstantHalf: half values given as their 16 bits.

A C++ program holding device halves as ``uint16_t`` (from ``copyFloatToDeviceHalf``, say) gives
them to the graph as they are; here they are integers 0..65535 (a ``np.uint16`` array, a list, a
scalar), each the IEEE binary16 bit pattern of one element, NaN payloads and signed zeros kept.
They become the tensor's memory when the engine loads.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..checks.arguments import checked_values
from ..errors import InvalidArgumentError, PoplarTypeError
from ..types import HALF, Type, asType


def half_bits(values: Any, what: str) -> np.ndarray:
    """``values`` (integers 0..65535) as the float16 array whose bits they are, flattened."""
    arr = checked_values(values, f"{what}: values")
    if arr.dtype.kind not in "iu":
        raise InvalidArgumentError(f"{what}: values must be the halves' 16-bit patterns (integers), got "
                                   f"{arr.dtype} {values!r:.40}")
    if arr.size and (arr.min() < 0 or arr.max() > 0xFFFF):
        raise InvalidArgumentError(f"{what}: values must be 16-bit patterns in 0..65535, got "
                                   f"{arr.min()}..{arr.max()}")
    return arr.reshape(-1).astype(np.uint16).view(np.float16)


def checked_half(type_: Type | object, what: str) -> Type:
    t = asType(type_)
    if t != HALF:
        raise PoplarTypeError(f"{what}: the type must be HALF (the values are halves' bits), got {t}")
    return t
