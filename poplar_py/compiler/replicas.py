"""One compiled replica, R replica memories.

A replicated graph is compiled once, for one replica's tiles (as Poplar loads one binary on every
replica): tile mapping, liveness, layout, compute-set and exchange plans, vertex tables and
lowered steps exist once. The arena holds R copies of that replica's tile memories back to back:
replica ``r``'s tile ``t`` is device tile ``r * T + t`` at byte ``r * stride + tile_base[t]``,
which is exactly where an expanded device would put it. Each leaf step runs its replica-level
plan on every replica's memory in turn; a ``CrossReplicaCopy`` is the one plan written over the
whole device (replica ``r``'s source to replica ``map[r]``'s destination).

Costs follow the same split: a replica-level step records its traffic for one replica, and
:meth:`Replication.device_traffic` turns it into the device's (every replica moving the same
bytes, their IPU-Link flows side by side), so every figure of the profile is the device's.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..target import Target
from .exchange import TileTraffic

_I64 = np.int64


@dataclass(frozen=True)
class Replication:
    """``factor`` replicas of ``tiles`` tiles each, on ``device``; the variables in
    ``index_constants`` hold ``r`` on replica ``r``; ``stride``: the bytes of one replica's
    memories (fixed with the layout's addresses)."""

    factor: int
    tiles: int
    device: Target
    index_constants: tuple[int, ...] = ()
    stride: int = 0

    def offset(self, replica: int) -> int:
        """Where replica ``replica``'s memories start in the arena."""
        return replica * self.stride

    def device_tile_base(self, tile_base: np.ndarray) -> np.ndarray:
        """Every device tile's first arena byte, and the end (``tile_base``: one replica's)."""
        replica = np.arange(self.factor, dtype=_I64)[:, None] * self.stride
        starts = (replica + tile_base[None, :-1]).reshape(-1)
        return np.append(starts, self.factor * self.stride).astype(_I64)

    def device_tiles(self, per_tile: np.ndarray) -> np.ndarray:
        """A per-tile figure of one replica as the device's (every replica alike); a figure
        already over the device's tiles is returned as it is."""
        per_tile = np.asarray(per_tile)
        return np.tile(per_tile, self.factor) if per_tile.shape[0] == self.tiles and self.factor > 1 \
            else per_tile

    def device_traffic(self, traffic: TileTraffic) -> TileTraffic:
        """One replica's traffic as the device's: every replica moves the same bytes on its own
        tiles and IPUs (traffic over the device's tiles is returned as it is)."""
        if self.factor == 1 or traffic.bytes_in.shape[0] != self.tiles:
            return traffic
        ipus = traffic.ipu_bytes
        if ipus is not None:
            ipus = np.kron(np.eye(self.factor, dtype=_I64), ipus)
        return TileTraffic(self.device_tiles(traffic.bytes_out), self.device_tiles(traffic.bytes_in),
                           self.device_tiles(traffic.bytes_local), ipus)

    def first_only(self, traffic: TileTraffic) -> TileTraffic:
        """One replica's traffic as the device's when only replica 0 moves it (PrintTensor)."""
        if self.factor == 1:
            return traffic
        pad = (0, (self.factor - 1) * self.tiles)
        ipus = traffic.ipu_bytes
        if ipus is not None:
            ipus = np.pad(ipus, (0, (self.factor - 1) * ipus.shape[0]))
        return TileTraffic(np.pad(traffic.bytes_out, pad), np.pad(traffic.bytes_in, pad),
                           np.pad(traffic.bytes_local, pad), ipus)
