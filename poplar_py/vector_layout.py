"""Poplar's vector layouts (poplar/VectorLayout.hpp): how a vertex stores its vector fields.

In a Poplar codelet a field may name how its vector is stored, ``Vector<float,
VectorLayout::ONE_PTR>`` (a pointer, no size) or ``VectorList<float,
VectorListLayout::DELTANELEMENTS>``: a saving of a few bytes of vertex state each, with limits
on what the vertex may ask of the field. Python codelets write ``Vector[float,
VectorLayout.ONE_PTR]`` (also inside ``Input[...]``, and an alignment in bytes after the layout,
as C++'s third parameter). poplar-py checks the layout and lays every vector out the same way
on the host, keeping its size, so ``len()`` works and bounds are checked under every layout; the
tile memory a vertex's state takes is counted as the IPU stores each layout
(:func:`reference_bytes`).
"""

from __future__ import annotations

import enum

__all__ = ["VectorLayout", "VectorListLayout", "reference_bytes"]


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


# Bytes of one reference on a Mk2 IPU: SPAN a 32-bit pointer and a 32-bit count, SHORT_SPAN both
# in 32 bits, the SCALED_PTRs 16-bit pointers; COMPACT_PTR counted as ONE_PTR (what it resolves to
# for data aligned below 16 bytes); a DeltaN list one 32-bit (offset, size) word per row.
_REFERENCE_BYTES = {
    VectorLayout.SPAN: 8, VectorLayout.SHORT_SPAN: 4, VectorLayout.ONE_PTR: 4, VectorLayout.COMPACT_PTR: 4,
    VectorLayout.SCALED_PTR32: 2, VectorLayout.SCALED_PTR64: 2, VectorLayout.SCALED_PTR128: 2,
    VectorListLayout.DELTAN: 4, VectorListLayout.DELTANELEMENTS: 4, VectorListLayout.COMPACT_DELTAN: 4,
    VectorListLayout.ONE_PTR: 4, VectorListLayout.COMPACT_PTR: 4,
    VectorListLayout.SCALED_PTR32: 2, VectorListLayout.SCALED_PTR64: 2, VectorListLayout.SCALED_PTR128: 2,
}


def reference_bytes(layout: VectorLayout | VectorListLayout) -> int:
    """Bytes the IPU's vertex state takes to refer to one vector in ``layout`` (for a VectorList
    layout: each row's entry in the list's table)."""
    return _REFERENCE_BYTES[layout]
