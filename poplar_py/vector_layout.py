"""Poplar's vector layouts (poplar/VectorLayout.hpp): how a vertex stores its vector fields.

In a Poplar codelet a field may name how its vector is stored, ``Vector<float,
VectorLayout::ONE_PTR>`` (a pointer, no size) or ``VectorList<float,
VectorListLayout::DELTANELEMENTS>``: a saving of a few bytes of vertex state each, with limits
on what the vertex may ask of the field. Python codelets write ``Vector[float,
VectorLayout.ONE_PTR]`` (also inside ``Input[...]``, and an alignment in bytes after the layout,
as C++'s third parameter). poplar-py checks the layout and lays every vector out the same way,
keeping its size, so ``len()`` works and bounds are checked under every layout.
"""

from __future__ import annotations

import enum

__all__ = ["VectorLayout", "VectorListLayout"]


class VectorLayout(enum.Enum):
    """The storage of a ``Vector`` field (C++'s ``Vector<T, L>``)."""

    ONE_PTR = "ONE_PTR"
    SCALED_PTR32 = "SCALED_PTR32"
    SCALED_PTR64 = "SCALED_PTR64"
    SCALED_PTR128 = "SCALED_PTR128"
    COMPACT_PTR = "COMPACT_PTR"
    SPAN = "SPAN"
    SHORT_SPAN = "SHORT_SPAN"


class VectorListLayout(enum.Enum):
    """The storage of a ``VectorList`` field (C++'s ``VectorList<T, L>``)."""

    ONE_PTR = "ONE_PTR"
    SCALED_PTR32 = "SCALED_PTR32"
    SCALED_PTR64 = "SCALED_PTR64"
    SCALED_PTR128 = "SCALED_PTR128"
    COMPACT_PTR = "COMPACT_PTR"
    DELTAN = "DELTAN"
    DELTANELEMENTS = "DELTANELEMENTS"
    COMPACT_DELTAN = "COMPACT_DELTAN"
