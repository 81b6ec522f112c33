"""popops::embedding (DynamicSlice.hpp): plans for looking rows up in an embedding matrix.

``plan(graph, dataType, [groupSize,] numEntries, outputSize, numLookups, options)`` gives a
:class:`~.slice_plan.SlicePlan` that ``createSliceableTensor``, ``createSliceTensor``,
``createIndicesTensor``, their grouped forms and the multi-slice operations follow. poplar-py
plans one way: each group gets an equal share of the tiles, and the matrix's
``outputSize`` columns are cut into equal runs, one per tile of the group (rounded to
whole 32-bit words, so no two tiles write parts of one word); every lookup of a column
runs on the column's tile. The options are PopLibs' embedding options, checked; only
``usedForSlice``/``usedForUpdate``/``operationForUpdate`` are recorded (in the plan,
and so in its comparison), the others change nothing here.
"""

from __future__ import annotations

from collections.abc import Sequence

from poplar_py import Graph, Type
from poplar_py.types import asType

from ..poputil import PoplibsError, checkOptions
from .slice_plan import SlicePlan

__all__ = ["SlicePlanningParameters", "plan", "planMultiple"]

_BOOL_OPTIONS = ("usedForSlice", "usedForUpdate", "indicesAreSorted", "validateIndices",
                 "remapOutOfBoundIndices", "paddingIndexUsed", "internal.alwaysIncludeBaseRearrangementCost")
_CHOICES = {"operationForUpdate": ("none", "add", "max", "mul"), "partialType": ("half", "float"),
            "indicesDistribution": ("uniform", "onePoint")}
_OPTIONS = frozenset((*_BOOL_OPTIONS, *_CHOICES, "availableMemoryProportion", "planConstraints"))


def _flag(options: dict, name: str, default: bool) -> bool:
    value = options.get(name, default)
    if isinstance(value, bool):
        return value
    if str(value).lower() not in ("true", "false"):
        raise PoplibsError(f"embedding.plan: option {name} must be true or false, not {value!r}")
    return str(value).lower() == "true"


def _check_options(options: dict) -> tuple[bool, bool, str]:
    for name in _BOOL_OPTIONS:
        _flag(options, name, False)
    for name, choices in _CHOICES.items():
        if name in options and str(options[name]) not in choices:
            raise PoplibsError(f"embedding.plan: option {name} must be one of {', '.join(choices)}, "
                               f"not {options[name]!r}")
    if "availableMemoryProportion" in options:
        try:
            amp = float(options["availableMemoryProportion"])
        except (TypeError, ValueError):
            amp = -1.0
        if not 0 <= amp <= 1:
            raise PoplibsError("embedding.plan: option availableMemoryProportion must be a number in [0, 1], "
                               f"not {options['availableMemoryProportion']!r}")
    forSlice, forUpdate = _flag(options, "usedForSlice", True), _flag(options, "usedForUpdate", True)
    if not (forSlice or forUpdate):
        raise PoplibsError("embedding.plan: usedForSlice and usedForUpdate cannot both be false")
    return forSlice, forUpdate, str(options.get("operationForUpdate", "add"))


def _count(value: object, name: str) -> int:
    try:
        n = int(value)
    except (TypeError, ValueError) as e:
        raise PoplibsError(f"embedding.plan: {name} must be an integer, not {value!r:.40}") from e
    if n < 0 or n != value:
        raise PoplibsError(f"embedding.plan: {name} must be a non-negative integer, not {value!r:.40}")
    return n


def plan(graph: Graph, dataType: Type | object, *args: object) -> SlicePlan:
    """``plan(graph, dataType, numEntries, outputSize, numLookups, options)`` or ``plan(graph,
    dataType, groupSize, numEntries, outputSize, numLookups, options)``: the layout of a
    ``[groupSize,] [numEntries, outputSize]`` embedding matrix over ``graph``'s tiles
    (nothing is added to the graph). ``numLookups`` lists the numbers of indices the
    operations will look up."""
    if len(args) not in (4, 5):
        raise PoplibsError(f"embedding.plan: expected (numEntries, outputSize, numLookups, options), "
                           f"optionally after groupSize; got {len(args)} arguments")
    groupSize, numEntries, outputSize, numLookups, options = (1, *args) if len(args) == 4 else args
    dataType = asType(dataType)
    opts = checkOptions(options, _OPTIONS, "embedding.plan")
    forSlice, forUpdate, operation = _check_options(opts)
    groups, entries, columns = (_count(groupSize, "groupSize"), _count(numEntries, "numEntries"),
                                _count(outputSize, "outputSize"))
    if groups == 0:
        raise PoplibsError("embedding.plan: groupSize must be at least 1")
    if isinstance(numLookups, (int, str)) or not isinstance(numLookups, Sequence):
        raise PoplibsError(f"embedding.plan: numLookups must be a list of counts, not {numLookups!r:.40}")
    lookups = tuple(_count(n, "numLookups") for n in numLookups)
    num_tiles = graph.getTarget().getNumTiles()
    tiles_per_group = max(1, num_tiles // groups)
    word = max(1, 4 // dataType.size)  # elements per 32-bit word: runs never split a word
    per_tile = -(-max(columns, 1) // tiles_per_group)
    per_tile = -(-per_tile // word) * word
    return SlicePlan(str(dataType), num_tiles, groups, entries, columns, lookups, tiles_per_group, per_tile,
                     forSlice, forUpdate, operation)


class SlicePlanningParameters:
    """The arguments of one :func:`plan` call, for :func:`planMultiple`: ``(graph, dataType,
    [groupSize,] numEntries, outputSize, numLookups, optionFlags)`` as PopLibs' two constructors."""

    def __init__(self, graph: Graph, dataType: Type | object, *args: object) -> None:
        if len(args) not in (4, 5):
            raise PoplibsError("SlicePlanningParameters: expected (graph, dataType, [groupSize,] numEntries, "
                               f"outputSize, numLookups, optionFlags); got {len(args) + 2} arguments")
        self.graph, self.dataType = graph, dataType
        (self.groupSize, self.numEntries, self.outputSize, self.numLookups,
         self.optionFlags) = (1, *args) if len(args) == 4 else args


def planMultiple(spds: Sequence[SlicePlanningParameters]) -> list[SlicePlan]:
    """One plan for each set of parameters, as :func:`plan` makes them."""
    return [plan(p.graph, p.dataType, p.groupSize, p.numEntries, p.outputSize, p.numLookups, p.optionFlags)
            for p in spds]
