"""Linear tile mappings, with PopLibs' algorithm (lib/poputil/TileMapping.cpp, splitRegions), and
the questions asked of a mapping (TileMapping.hpp): how unbalanced it is, whether a dimension is
split over tiles or IPUs, where an offset mapping puts a tile.

The flattened tensor is cut into grains (the target's vector width, so vectors are
never split) and the grains into at most one partition per tile, each at least
``minElementsPerTile`` elements (128 bytes by default, to keep exchange cheap);
partition k goes to tile k, or to tile ``offset + k`` (wrapping round), or, in descending order,
to tile ``numTiles - 1 - offset - k``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from poplar_py import Graph, Interval, Target, Tensor, Type
from poplar_py.checks.arguments import checked_int

from .errors import PoplibsArgumentError, PoplibsError, tensorArgument

__all__ = ["calcLinearTileMapping", "calcLinearTileMappingAndNewOffset", "chooseMappingOffset",
           "dimIsSplitOverIPUs", "dimIsSplitOverTiles", "getTileImbalance", "invTransformTileIndex",
           "mapTensorLinearly", "mapTensorLinearlyWithOffset", "transformTileIndex"]

_MASK64 = (1 << 64) - 1


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def _target_of(where: Any, what: str) -> Target:
    """The target of a Graph, or a Target itself."""
    if isinstance(where, Graph):
        return where.getTarget()
    if isinstance(where, Target):
        return where
    raise PoplibsArgumentError(f"{what}: the first argument must be a poplar Graph or Target, got "
                               f"{type(where).__name__} {where!r:.40}")


def _uint(value: Any, what: str) -> int:
    """An unsigned argument (a C++ ``unsigned``): a non-negative int, else PoplibsArgumentError."""
    try:
        return checked_int(value, what)
    except Exception as e:  # (an InvalidArgumentError: raised again as PopLibs' own)
        raise PoplibsArgumentError(str(e)) from None


def _shape(shape: Any, what: str) -> tuple[int, ...]:
    """A shape: a list of non-negative integers, else PoplibsArgumentError naming ``what``."""
    if isinstance(shape, (str, bytes)) or not isinstance(shape, (Sequence, np.ndarray)):
        raise PoplibsArgumentError(f"{what} must be a list of dimensions, got {type(shape).__name__} "
                                   f"{shape!r:.40}")
    return tuple(_uint(d, f"{what} {list(shape)!r:.40}: a dimension") for d in shape)


def _bool(value: Any, what: str) -> bool:
    if not isinstance(value, (bool, np.bool_)):
        raise PoplibsArgumentError(f"{what} must be a bool, got {type(value).__name__} {value!r:.40}")
    return bool(value)


def _defaults_for(target: Target, type_: Type) -> tuple[int, int]:
    """PopLibs' defaults for a type: (at least 128 bytes per tile, the vector width as the grain)."""
    return _ceil_div(128, target.getTypeSize(type_)), target.getVectorWidth(type_)


def _linear_args(what: str, where: Any, t: Any, args: Sequence[Any], minElementsPerTile: Any, grainSize: Any,
                 offset: Any, ascendingOrder: Any) -> tuple[Target, int, int, int, int, bool]:
    """The overloads of calcLinearTileMapping as (target, numElements, minElementsPerTile,
    grainSize, offset, ascendingOrder):

    - ``(graph, t[, offset[, ascendingOrder]])``: a tensor, with its type's defaults;
    - ``(target, shape, elementType[, offset[, ascendingOrder]])``: the type's defaults;
    - ``(graph or target, shape, minElementsPerTile, grainSize[, offset[, ascendingOrder]])``.

    ``minElementsPerTile`` and ``grainSize`` may also be given by keyword with a tensor (a
    poplar-py convenience), as may ``offset`` and ``ascendingOrder`` with any form.
    """
    target = _target_of(where, what)
    rest = list(args)
    if isinstance(t, Tensor):
        n, type_ = t.numElements(), t.elementType()
        tail = ("offset", "ascendingOrder")
    else:
        n = int(np.prod(_shape(t, f"{what}: shape"), dtype=np.int64)) if _is_shape(t) else None
        if n is None:
            raise PoplibsArgumentError(f"{what}: the second argument must be a tensor or a shape (a list of "
                                       f"dimensions), got {type(t).__name__} {t!r:.40}")
        if rest and isinstance(rest[0], Type):
            type_ = rest.pop(0)
            tail = ("offset", "ascendingOrder")
        else:
            type_ = None
            tail = ("minElementsPerTile", "grainSize", "offset", "ascendingOrder")
    if len(rest) > len(tail):
        raise PoplibsArgumentError(f"{what}: {len(rest) - len(tail)} argument(s) too many after "
                                   f"{', '.join(tail)}: {rest[len(tail):]!r:.60}")
    given = {"minElementsPerTile": minElementsPerTile, "grainSize": grainSize, "offset": offset,
             "ascendingOrder": ascendingOrder}
    for name, value in zip(tail, rest):
        if given[name] is not None:
            raise PoplibsArgumentError(f"{what}: {name} given both positionally and by keyword")
        given[name] = value
    if type_ is not None:
        default_min, default_grain = _defaults_for(target, type_)
        given["minElementsPerTile"] = default_min if given["minElementsPerTile"] is None else \
            given["minElementsPerTile"]
        given["grainSize"] = default_grain if given["grainSize"] is None else given["grainSize"]
    for name in ("minElementsPerTile", "grainSize"):
        if given[name] is None:
            raise PoplibsArgumentError(f"{what}: {name} is needed with a shape (give the element type "
                                       f"instead for its defaults)")
    min_elems = _uint(given["minElementsPerTile"], f"{what}: minElementsPerTile")
    grain = _uint(given["grainSize"], f"{what}: grainSize")
    if grain == 0:
        raise PoplibsArgumentError(f"{what}: grainSize must be at least 1, got 0")
    off = _uint(0 if given["offset"] is None else given["offset"], f"{what}: offset")
    asc = _bool(True if given["ascendingOrder"] is None else given["ascendingOrder"],
                f"{what}: ascendingOrder")
    return target, n, min_elems, grain, off, asc


def _is_shape(x: Any) -> bool:
    return isinstance(x, (list, tuple, np.ndarray)) and not isinstance(x, Interval)


def _partitions(n: int, num_tiles: int, min_elems: int, grain: int) -> tuple[np.ndarray, np.ndarray]:
    """PopLibs' ``splitRegions({{0, n}}, grain, numTiles, minElementsPerTile)``: the intervals
    ``[begin[k], end[k])`` of partition k (none empty), grains shared out as evenly as possible."""
    num_grains = _ceil_div(n, grain)
    if num_grains == 0 or num_tiles == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    grains_per_partition = _ceil_div(num_grains, num_tiles)
    min_grains = _ceil_div(min_elems, grain)
    if min_grains:
        grains_per_partition = max(grains_per_partition,
                                   _ceil_div(num_grains, max(1, num_grains // min_grains)))
    partitions = _ceil_div(num_grains, grains_per_partition)
    k = np.arange(partitions + 1, dtype=np.int64)
    bounds = np.minimum(k * num_grains // partitions * grain, n)
    return bounds[:-1], bounds[1:]


def _tiles_for(count: int, num_tiles: int, offset: int, ascending: bool) -> np.ndarray:
    """The tiles of partitions 0..count-1 of a mapping with this offset and order (PopLibs'
    remapWithOffset: each partition one tile further on, wrapping round)."""
    k = np.arange(count, dtype=np.int64)
    return (offset + k) % num_tiles if ascending else (num_tiles - 1 - offset - k) % num_tiles


def linear_partitions(graph: Graph, t: Tensor | list[int], minElementsPerTile: int | None,
                      grainSize: int | None) -> tuple[np.ndarray, np.ndarray]:
    """The intervals ``[begin[k], end[k])`` of partition k (for tile k) of a linear mapping (none
    empty: each partition holds at least one grain). A tensor's type gives the defaults of
    ``None`` arguments; a shape's are 0 and 1."""
    target = graph.getTarget()
    if isinstance(t, Tensor):
        default_min, default_grain = _defaults_for(target, t.elementType())
        n = t.numElements()
    else:
        default_min, default_grain = 0, 1
        n = int(np.prod(_shape(t, "calcLinearTileMapping: shape"), dtype=np.int64))
    min_elems = default_min if minElementsPerTile is None else \
        _uint(minElementsPerTile, "calcLinearTileMapping: minElementsPerTile")
    grain = default_grain if grainSize is None else _uint(grainSize, "calcLinearTileMapping: grainSize")
    return _partitions(n, target.getNumTiles(), min_elems, max(grain, 1))


def calcLinearTileMapping(where: Graph | Target, t: Tensor | Sequence[int], *args: Any,
                          minElementsPerTile: int | None = None, grainSize: int | None = None,
                          offset: int | None = None,
                          ascendingOrder: bool | None = None) -> list[list[Interval]]:
    """Per tile, the intervals of the flattened tensor that a linear mapping puts there, for
    every overload of PopLibs:

    - ``calcLinearTileMapping(graph, t, offset=0, ascendingOrder=True)``: grains of the type's
      vector width, at least 128 bytes a tile;
    - ``calcLinearTileMapping(target, shape, elementType, offset=0, ascendingOrder=True)``: the same
      for a shape;
    - ``calcLinearTileMapping(graph or target, shape, minElementsPerTile, grainSize, offset=0,
      ascendingOrder=True)``.

    With an ``offset`` the first partition goes on tile ``offset`` and the next ones on the
    following tiles, wrapping round; with ``ascendingOrder=False`` on tile ``numTiles - 1 -
    offset`` and the ones before it. The list has one entry per tile of the target.
    """
    what = "calcLinearTileMapping"
    target, n, min_elems, grain, off, asc = _linear_args(what, where, t, args, minElementsPerTile, grainSize,
                                                         offset, ascendingOrder)
    num_tiles = target.getNumTiles()
    begin, end = _partitions(n, num_tiles, min_elems, grain)
    mapping: list[list[Interval]] = [[] for _ in range(num_tiles)]
    for tile, b, e in zip(_tiles_for(begin.size, num_tiles, off, asc).tolist(), begin.tolist(), end.tolist()):
        mapping[tile].append(Interval(b, e))
    return mapping


def calcLinearTileMappingAndNewOffset(graph: Graph, t: Tensor,
                                      offset: int = 0) -> tuple[list[list[Interval]], int]:
    """``calcLinearTileMapping(graph, t)`` started at tile ``offset``, and the tile after the last
    one it uses (wrapping round): the offset at which a following tensor would start. On 8 tiles,
    a mapping over 4 tiles gives 6 for offset 2 and 2 for offset 6."""
    what = "calcLinearTileMappingAndNewOffset"
    if not isinstance(graph, Graph):
        raise PoplibsArgumentError(f"{what}: graph must be a poplar Graph, got {type(graph).__name__}")
    t = tensorArgument(graph, t, f"{what}: t")
    num_tiles = graph.getTarget().getNumTiles()
    off = _uint(offset, f"{what}: offset")
    if off >= num_tiles:
        raise PoplibsError(f"{what}: offset {off} for tensor '{t.name}' is not a tile of the graph "
                           f"(0 to {num_tiles - 1})")
    begin, end = _partitions(t.numElements(), num_tiles, *_defaults_for(graph.getTarget(), t.elementType()))
    mapping: list[list[Interval]] = [[] for _ in range(num_tiles)]
    tiles = _tiles_for(begin.size, num_tiles, off, True)
    for tile, b, e in zip(tiles.tolist(), begin.tolist(), end.tolist()):
        mapping[tile].append(Interval(b, e))
    return mapping, (off + begin.size) % num_tiles


def _map_linearly(what: str, graph: Graph, t: Tensor, args: Sequence[Any], keywords: dict[str, Any]) -> None:
    if not isinstance(graph, Graph):
        raise PoplibsArgumentError(f"{what}: graph must be a poplar Graph, got {type(graph).__name__}")
    t = tensorArgument(graph, t, f"{what}: t")
    target, n, min_elems, grain, off, asc = _linear_args(what, graph, t, args, **keywords)
    begin, end = _partitions(n, target.getNumTiles(), min_elems, grain)
    graph.map_intervals(t, begin, end, _tiles_for(begin.size, target.getNumTiles(), off, asc))


def mapTensorLinearly(graph: Graph, t: Tensor, minElementsPerTile: int | None = None,
                      grainSize: int | None = None) -> None:
    """Spread ``t`` evenly over the tiles, low elements on low tiles (PopLibs' algorithm):
    ``mapTensorLinearly(graph, t)`` with the type's defaults (grains of its vector width, at least
    128 bytes a tile), or ``mapTensorLinearly(graph, t, minElementsPerTile, grainSize)``."""
    if (minElementsPerTile is None) != (grainSize is None):
        raise PoplibsArgumentError("mapTensorLinearly takes both minElementsPerTile and grainSize, or "
                                   "neither")
    _map_linearly("mapTensorLinearly", graph, t, (),
                  {"minElementsPerTile": minElementsPerTile, "grainSize": grainSize, "offset": None,
                   "ascendingOrder": None})


def mapTensorLinearlyWithOffset(graph: Graph, t: Tensor, *args: Any, minElementsPerTile: int | None = None,
                                grainSize: int | None = None, offset: int | None = None,
                                ascendingOrder: bool | None = None) -> None:
    """``mapTensorLinearly`` starting at tile ``offset`` (wrapping round), or, with
    ``ascendingOrder=False``, at tile ``numTiles - 1 - offset`` going down. Both PopLibs overloads:

    - ``mapTensorLinearlyWithOffset(graph, t, offset=0, ascendingOrder=True)``: the type's defaults;
    - ``mapTensorLinearlyWithOffset(graph, t, minElementsPerTile, grainSize, offset,
      ascendingOrder=True)``.

    As in C++, two positional arguments after ``t`` are ``offset, ascendingOrder``; three or four
    are ``minElementsPerTile, grainSize, offset[, ascendingOrder]``.
    """
    what = "mapTensorLinearlyWithOffset"
    keywords = {"minElementsPerTile": minElementsPerTile, "grainSize": grainSize, "offset": offset,
                "ascendingOrder": ascendingOrder}
    if len(args) >= 3 or (minElementsPerTile is not None or grainSize is not None):
        # the explicit overload: it is the shape form of calcLinearTileMapping's arguments
        names = ("minElementsPerTile", "grainSize", "offset", "ascendingOrder")
        if len(args) > len(names):
            raise PoplibsArgumentError(f"{what}: {len(args) - len(names)} argument(s) too many after "
                                       f"{', '.join(names)}")
        for name, value in zip(names, args):
            if keywords[name] is not None:
                raise PoplibsArgumentError(f"{what}: {name} given both positionally and by keyword")
            keywords[name] = value
        for name in ("minElementsPerTile", "grainSize", "offset"):
            if keywords[name] is None:
                raise PoplibsArgumentError(f"{what}: {name} is needed with minElementsPerTile and grainSize "
                                           f"(PopLibs' (graph, t, minElementsPerTile, grainSize, offset[, "
                                           f"ascendingOrder]))")
        args = ()
    _map_linearly(what, graph, t, args, keywords)


def chooseMappingOffset(numTiles: int, shape: Sequence[int], seed: int = 0x9E3779B9) -> int:
    """An offset in ``[0, numTiles)`` from a hash of ``shape`` (and ``seed``), to spread tensors
    of different shapes over different tiles: boost's ``hash_range`` (its classic
    ``hash_combine``, on 64-bit ``size_t``) modulo ``numTiles``, as PopLibs."""
    what = "chooseMappingOffset"
    num_tiles = _uint(numTiles, f"{what}: numTiles")
    if num_tiles == 0:
        raise PoplibsError(f"{what}: cannot choose an offset from zero tiles (numTiles is 0)")
    dims = _shape(shape, f"{what}: shape")
    h = _uint(seed, f"{what}: seed") & _MASK64
    for d in dims:
        h ^= (int(d) + 0x9E3779B9 + (h << 6) + (h >> 2)) & _MASK64
    return h % num_tiles


def _per_tile_counts(mapping: Any, what: str) -> list[int]:
    if not isinstance(mapping, (list, tuple)):
        raise PoplibsArgumentError(f"{what}: mapping must be a list of interval lists (one per tile), got "
                                   f"{type(mapping).__name__}")
    counts = []
    for tile, ivs in enumerate(mapping):
        try:
            counts.append(sum(int(e) - int(b) for b, e in ivs))
        except (TypeError, ValueError):
            raise PoplibsArgumentError(f"{what}: the mapping of tile {tile} must be a list of intervals "
                                       f"(begin, end), got {ivs!r:.60}") from None
    return counts


def getTileImbalance(*args: Any, minElementsPerTile: int | None = None, grainSize: int | None = None) -> int:
    """How many more elements the fullest tile holds than a balanced mapping would put there (at
    least ``minElementsPerTile`` and ``grainSize`` elements a tile); 0 when none holds more.

    ``getTileImbalance(mapping, minElementsPerTile=0, grainSize=1)`` for a tile mapping, or
    ``getTileImbalance(graph, t, minElementsPerTile=0, grainSize=1)`` for a mapped tensor."""
    what = "getTileImbalance"
    if args and isinstance(args[0], Graph):
        if len(args) < 2:
            raise PoplibsArgumentError(f"{what}(graph, t, ...) needs the tensor t")
        graph, t, rest = args[0], tensorArgument(args[0], args[1], f"{what}: t"), list(args[2:])
        mapping: Any = graph.getTileMapping(t)
    elif args:
        mapping, rest = args[0], list(args[1:])
    else:
        raise PoplibsArgumentError(f"{what} takes (mapping[, minElementsPerTile, grainSize]) or (graph, t[, "
                                   "minElementsPerTile, grainSize])")
    if len(rest) > 2:
        raise PoplibsArgumentError(f"{what}: {len(rest) - 2} argument(s) too many after minElementsPerTile, "
                                   "grainSize")
    values = {"minElementsPerTile": minElementsPerTile, "grainSize": grainSize}
    for name, value in zip(values, rest):
        if values[name] is not None:
            raise PoplibsArgumentError(f"{what}: {name} given both positionally and by keyword")
        values[name] = value
    min_elems = _uint(0 if values["minElementsPerTile"] is None else values["minElementsPerTile"],
                      f"{what}: minElementsPerTile")
    grain = _uint(1 if values["grainSize"] is None else values["grainSize"], f"{what}: grainSize")
    counts = _per_tile_counts(mapping, what)
    if not counts:
        return 0
    balanced = max(_ceil_div(sum(counts), len(counts)), min_elems, grain)
    return max(0, max(counts) - balanced)


def transformTileIndex(tile: int, numTiles: int, offset: int, ascending: bool) -> int:
    """The position of ``tile`` in the order of a mapping starting at tile ``offset`` and going up
    (``ascending``), or going down: ``(tile - offset) % numTiles`` or ``(2 * numTiles - offset -
    tile) % numTiles``. As in PopLibs' code, the descending order starts at tile ``numTiles -
    offset`` (position 0), one above where a descending linear mapping starts (``numTiles - 1 -
    offset``)."""
    what = "transformTileIndex"
    tile, n, off = (_uint(v, f"{what}: {name}") for v, name in ((tile, "tile"), (numTiles, "numTiles"),
                                                                 (offset, "offset")))
    if n == 0:
        raise PoplibsArgumentError(f"{what}: numTiles must be at least 1")
    return (n + tile - off) % n if _bool(ascending, f"{what}: ascending") else (2 * n - off - tile) % n


def invTransformTileIndex(tile: int, numTiles: int, offset: int, ascending: bool) -> int:
    """The inverse of :func:`transformTileIndex`: the tile at position ``tile`` of a mapping
    starting at ``offset`` going up, or at ``numTiles - offset`` (modulo ``numTiles``) going down,
    as PopLibs computes them."""
    what = "invTransformTileIndex"
    tile, n, off = (_uint(v, f"{what}: {name}") for v, name in ((tile, "tile"), (numTiles, "numTiles"),
                                                                 (offset, "offset")))
    if n == 0:
        raise PoplibsArgumentError(f"{what}: numTiles must be at least 1")
    return (tile + off) % n if _bool(ascending, f"{what}: ascending") else (2 * n - off - tile) % n


def element_tiles(graph: Graph, t: Tensor) -> np.ndarray:
    """The tile of each element of flattened ``t`` (relative to ``graph``), as an array; ``t``
    must be completely mapped."""
    begin, end, tiles = graph.tile_intervals(t)
    return np.repeat(tiles, end - begin)


def _dim_argument(t: Tensor, dimension: Any, what: str) -> int:
    d = _uint(dimension, f"{what}: dimension")
    if d >= t.rank():
        raise PoplibsArgumentError(f"{what}: dimension {d} is out of range for tensor '{t.name}' of rank "
                                   f"{t.rank()}")
    return d


def dimIsSplitOverTiles(graph: Graph, t: Tensor, dimension: int) -> bool:
    """Whether the slices of ``t`` along ``dimension`` are mapped differently: some element of one
    slice lives on another tile than the same element of another slice."""
    what = "dimIsSplitOverTiles"
    t = tensorArgument(graph, t, f"{what}: t")
    d = _dim_argument(t, dimension, what)
    if t.dim(d) == 0:
        return False
    tiles = element_tiles(graph, t.dimRoll(d, 0)).reshape(t.dim(d), -1)
    return bool((tiles != tiles[0]).any())


def dimIsSplitOverIPUs(graph: Graph, t: Tensor, dimension: int) -> bool:
    """Whether some line of ``t`` along ``dimension`` (all its elements with the other indices
    fixed) has elements on more than one IPU."""
    what = "dimIsSplitOverIPUs"
    t = tensorArgument(graph, t, f"{what}: t")
    d = _dim_argument(t, dimension, what)
    target = graph.getTarget()
    if target.getNumIPUs() == 1 or t.numElements() == 0:
        return False
    ipus = element_tiles(graph, t.dimRoll(d, t.rank() - 1)) // target.getTilesPerIPU()
    lines = ipus.reshape(-1, t.dim(d))
    return bool((lines != lines[:, :1]).any())
