"""popops HostSliceTensor.hpp: tensors laid out for transfers to and from the host.

A host transfer moves packets of 1 KiB; PopLibs spreads a tensor's packets evenly over the
tiles, so every tile streams its share at once, and gives the remaining packets to tiles
of different exchange blocks, those nearest the IPU's edge first. poplar-py lays tensors out
the same way (the exchange-block order of a tile follows PopLibs' tile numbering); the
simulator costs a stream copy by its bytes whatever the layout, so the layout only matters
for the tiles' memory and for what runs on them afterwards. No program is added.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from poplar_py import UNSIGNED_INT, Graph, Tensor
from poplar_py.debug import debug_name
from poplar_py.types import asType

from ..poputil import PoplibsError

__all__ = ["IndicesAndTensor", "createHostSliceableTensor", "createHostTransferableTensor"]

PACKET_BYTES = 1024
NUM_XBS = 32


@dataclass
class IndicesAndTensor:
    """createHostSliceableTensor's result: the ``[rows]`` UNSIGNED_INT ``indices`` and the tensor."""

    indices: Tensor
    tensor: Tensor


def _xb_distance(tile: int) -> int:
    """How far tile's exchange block is from the edge (PopLibs' ordering of the blocks)."""
    bits = tile % 64
    xb = 2 * (bits >> 2) + bits % 2
    return 2 * xb if xb < NUM_XBS // 2 else 2 * (NUM_XBS - 1 - xb) + 1


def _extra_tile_order(num_tiles: int) -> list[int]:
    """The tiles that take the packets left over after an even share: one from each exchange
    block in turn (nearest the edge first), then the next of each block."""
    blocks: dict[int, list[int]] = {}
    for tile in range(num_tiles):
        blocks.setdefault(_xb_distance(tile), []).append(tile)
    for distance, tiles in blocks.items():
        if distance % 2:  # odd blocks: the higher tiles are nearer the spine
            tiles.reverse()
    order = [blocks[d] for d in sorted(blocks)]
    return [tiles[i] for i in range(max(map(len, order))) for tiles in order if i < len(tiles)]


def _args(graph: Graph, type_: object, shape: Sequence[int], args: tuple, debugContext: object,
          what: str) -> tuple[list[int], int, str]:
    if len(args) > 2:
        raise PoplibsError(f"{what}: expected (graph, type, shape, isRead[, offset][, debugContext])")
    offset = 0
    if args and isinstance(args[0], int) and not isinstance(args[0], bool):
        offset, args = args[0], args[1:]
    if args:
        debugContext = args[0]
    try:
        shape = [int(s) for s in shape]
    except (TypeError, ValueError) as e:
        raise PoplibsError(f"{what}: shape must be a list of integers, not {shape!r:.40}") from e
    if min(shape, default=0) < 0 or offset < 0:
        raise PoplibsError(f"{what}: negative shape {shape} or offset {offset}")
    asType(type_)
    return shape, offset, debug_name(debugContext, f"{what}: debugContext")


def createHostSliceableTensor(graph: Graph, type_: object, shape: Sequence[int], isRead: bool, *args: object,
                              debugContext: object = "") -> IndicesAndTensor:
    """``createHostSliceableTensor(graph, type, shape, isRead[, offset][, debugContext])``: a
    ``[rows, columns]`` tensor whose rows are cut into packets of 1 KiB, the packets shared
    evenly over the tiles in order (the ``offset`` bytes, in packets, rotate which tiles take
    the left-over ones), and ``indices``, one UNSIGNED_INT per row on the first tile holding
    that row. ``isRead`` is PopLibs' (reads and writes use the same packets)."""
    shape, offset, name = _args(graph, type_, shape, args, debugContext, "createHostSliceableTensor")
    if len(shape) != 2:
        raise PoplibsError(f"createHostSliceableTensor: host sliceable tensors must have rank 2, "
                           f"not {len(shape)}")
    prefix = f"{name}/" if name else ""
    t = graph.addVariable(type_, shape, f"{prefix}HostSliceAble")
    indices = graph.addVariable(UNSIGNED_INT, [shape[0]], f"{prefix}HostSliceIndices")
    per_packet = max(1, PACKET_BYTES // t.elementType().size)
    packets = [(row, begin, min(begin + per_packet, shape[1]))
               for row in range(shape[0]) for begin in range(0, shape[1], per_packet)]
    num_tiles = graph.getTarget().getNumTiles()
    counts = [len(packets) // num_tiles] * num_tiles
    rotate = -(-offset // PACKET_BYTES) % num_tiles
    for tile in _extra_tile_order(num_tiles)[:len(packets) % num_tiles]:
        counts[(rotate + tile) % num_tiles] += 1
    first = 0
    last_row = -1
    for tile, count in enumerate(counts):
        for row, begin, end in packets[first:first + count]:
            graph.setTileMapping(t[row].slice(begin, end), tile)
            if row != last_row:
                graph.setTileMapping(indices[row], tile)
                last_row = row
        first += count
    for row in range(last_row + 1, shape[0]):  # rows without elements
        graph.setTileMapping(indices[row], 0)
    return IndicesAndTensor(indices, t)


def createHostTransferableTensor(graph: Graph, type_: object, shape: Sequence[int], isRead: bool,
                                 *args: object, debugContext: object = "") -> Tensor:
    """``createHostTransferableTensor(graph, type, shape, isRead[, offset][, debugContext])``: a
    tensor of ``shape`` laid out as the one row of a host sliceable tensor (its packets of
    1 KiB shared evenly over the tiles)."""
    shape, offset, name = _args(graph, type_, shape, args, debugContext, "createHostTransferableTensor")
    n = 1
    for s in shape:
        n *= s
    result = createHostSliceableTensor(graph, type_, [1, n], isRead, offset, name)
    return result.tensor.reshape(shape)
