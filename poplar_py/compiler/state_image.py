"""The bytes Engine.load writes into the vertex state every replica shares
(``MemoryLayout.shared``): vector-list tables and state vectors, gathered while the compute sets'
state tables are built, and the plan that writes them."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..codelet.codelet_compiler import VECTOR_LIST_ENTRY_DTYPE
from ..regions.arrays import exclusive_cumsum
from .exchange import CopyPlan, TileTraffic

_I64 = np.int64


@dataclass
class ImageData:
    """The bytes Engine.load writes into the shared vertex state, the plan that writes them, and
    the byte offsets of the absolute addresses among them (list entries point into the first
    replica's memories in the arena)."""

    data: np.ndarray
    plan: CopyPlan | None
    pointers: np.ndarray

    def rebase(self, delta: int) -> None:
        """Move the addresses by ``delta`` bytes (the arena moved)."""
        if self.pointers.size:
            at = self.pointers[:, None] + np.arange(8)
            values = self.data[at].view(np.uint64).reshape(-1) + np.uint64(delta % 2**64)
            self.data[at] = values.view(np.uint8).reshape(-1, 8)


class Image:
    """Bytes to write into the shared vertex state when the engine loads (list tables, state
    vectors)."""

    def __init__(self, base: int) -> None:
        self.base = base
        self.addresses: list[np.ndarray] = []
        self.sizes: list[np.ndarray] = []
        self.data: list[np.ndarray] = []
        self.pointers: list[tuple[int, np.ndarray]] = []  # (block, byte offsets of addresses in it)

    def add(self, addresses: np.ndarray, counts: np.ndarray, values: list[np.ndarray] | np.ndarray,
            dtype: np.dtype) -> None:
        """Write ``values[i]`` (``counts[i]`` elements of ``dtype``) at absolute address ``addresses[i]``
        (``values`` may also be given back to back, as one array)."""
        if isinstance(values, np.ndarray):
            data = values
        else:
            data = np.concatenate(values) if len(values) else np.zeros(0, dtype)
        data = np.ascontiguousarray(data, dtype=dtype)
        if data.size == 0:
            return
        if dtype == VECTOR_LIST_ENTRY_DTYPE:  # each entry starts with an address
            offset = VECTOR_LIST_ENTRY_DTYPE.fields["ptr"][1]
            self.pointers.append((len(self.data), np.arange(data.size, dtype=_I64) * dtype.itemsize + offset))
        self.addresses.append(addresses - self.base)
        self.sizes.append(counts * dtype.itemsize)
        self.data.append(data.view(np.uint8).reshape(-1))

    def plan(self) -> ImageData:
        """The bytes, and the plan copying them (as one host buffer) into the shared vertex state."""
        if not self.data:
            return ImageData(np.zeros(0, np.uint8), None, np.zeros(0, _I64))
        dst, nbytes = np.concatenate(self.addresses), np.concatenate(self.sizes)
        keep = nbytes > 0
        dst, nbytes = dst[keep], nbytes[keep]
        one = np.ones(dst.size, _I64)
        starts = exclusive_cumsum(np.asarray([d.size for d in self.data], dtype=_I64))
        pointers = np.concatenate([starts[b] + offsets for b, offsets in self.pointers]) if self.pointers \
            else np.zeros(0, _I64)
        plan = CopyPlan.build(exclusive_cumsum(nbytes), dst, nbytes, one, one, one, TileTraffic.empty(0))
        return ImageData(np.concatenate(self.data), plan, pointers)
