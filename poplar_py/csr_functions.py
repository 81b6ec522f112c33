"""The tiles' floating-point control state, and Poplar's functions setting it
(poplar/CSRFunctions.hpp): ``FloatingPointBehaviour``, ``setFloatingPointBehaviour``,
``setStochasticRounding``, ``getAndModifyFloatingPointBehaviour`` and
``restoreFloatingPointBehaviour``.

Every tile holds a floating-point control word (the IPU's ``$FP_ICTL`` register), one bit per
flag: ``inv`` (1), ``div0`` (2), ``oflo`` (4), ``esr`` (8, stochastic rounding) and ``nanoo``
(16). The functions add a step to a program that sets the word on every tile of the graph (a
virtual graph's tiles only), as Poplar's add a compute set of one supervisor vertex per tile;
the step costs a sync and ``CSR_CYCLES`` on those tiles. The word persists across compute sets
and ``engine.run`` calls, as the register does, until the next such step; ``engine.load`` resets
it to the engine's initial state.

Initial state: every flag off, so programs that never call these functions compute as before:
IEEE results with round-to-nearest-even, no exceptions. Poplar documents the same for
stochastic rounding ("disabled by default") and enables exceptions only through the engine
options ``debug.floatPointOpException`` (``inv`` and ``oflo``), ``debug.divideByZeroException``
(``div0``) and ``debug.nanOverflowException`` (``nanoo``), which poplar-py reads too (default
false). The ``FloatingPointBehaviour`` struct's own defaults are Poplar's: every flag true.

What the flags do to codelets (Python codelets, in both codelet modes; see
:mod:`poplar_py.codelet.fp_rules` for the exact rules):

* ``esr``: half results round stochastically: half ``+ - * / // % **``, explicit conversions to
  half (``HALF(x)``, stores into half fields, vector elements and locals declared ``HALF``).
  Each such rounding draws one number from the worker's hardware generator (the state
  ``poplar.getHwSeeds`` copies, started from the engine option ``random.seed``), so results
  repeat for a seed and the mean of many roundings is unbiased.
* ``inv``, ``div0``, ``oflo``: a half or float operation with a NaN operand or result (invalid),
  a finite non-zero value divided by zero, or a finite result rounded to infinity (overflow)
  fails its vertex with a ``VertexError`` naming the vertex, tile, codelet, the exception and
  the line.
* ``nanoo``: a half result that overflows is NaN, and is an invalid operation (an exception
  when ``inv`` is on). With ``nanoo`` off the IPU saturates half overflow to +-65504; poplar-py
  keeps IEEE's infinity (as numpy), so that results without these functions stay numpy's.

Comparisons, ``math`` functions, short vector types and C++ codelets run as without these flags.
Vertex classes whose tiles all have a zero word run their usual kernels (no cost); the others run
a kernel compiled for the flags their words use, one vertex after another (the generators they
share are drawn from in vertex order, as in the interpreter).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from . import program as prog_
from .checks.arguments import checked_bool
from .codelet.fp_rules import DIV0, ESR, INV, NANOO, OFLO
from .debug import debug_name
from .errors import InvalidArgumentError
from .graph import Graph
from .random_seed import hwSeedState
from .tensor import Tensor
from .types import UNSIGNED_INT

__all__ = [
    "CSR_CYCLES",
    "FloatingPointBehaviour",
    "FloatingPointControl",
    "getAndModifyFloatingPointBehaviour",
    "restoreFloatingPointBehaviour",
    "setFloatingPointBehaviour",
    "setStochasticRounding",
]

_FLAGS = (("inv", INV), ("div0", DIV0), ("oflo", OFLO), ("esr", ESR), ("nanoo", NANOO))
ALL = INV | DIV0 | OFLO | ESR | NANOO
#: compute cycles of a control step on each of its tiles (a supervisor vertex: a load and a put)
CSR_CYCLES = 6


class FloatingPointBehaviour:
    """Which floating-point exceptions are enabled and whether stochastic rounding is on (see the
    module's documentation). Every flag defaults to True, as Poplar's struct; ``~behaviour`` is
    Poplar's ``operator!`` (every flag negated)."""

    def __init__(self, inv: bool = True, div0: bool = True, oflo: bool = True, esr: bool = True,
                 nanoo: bool = True) -> None:
        given = {"inv": inv, "div0": div0, "oflo": oflo, "esr": esr, "nanoo": nanoo}
        for name, value in given.items():
            setattr(self, name, checked_bool(value, f"FloatingPointBehaviour: {name}"))

    def word(self) -> int:
        """The control word of these flags (poplar-py's encoding: inv 1, div0 2, oflo 4, esr 8,
        nanoo 16)."""
        return sum(bit for name, bit in _FLAGS if getattr(self, name))

    def __invert__(self) -> FloatingPointBehaviour:
        return FloatingPointBehaviour(*(not getattr(self, name) for name, _ in _FLAGS))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, FloatingPointBehaviour) and other.word() == self.word()

    def __hash__(self) -> int:
        return self.word()

    def __repr__(self) -> str:
        flags = ", ".join(f"{name}={getattr(self, name)}" for name, _ in _FLAGS)
        return f"FloatingPointBehaviour({flags})"


class FloatingPointControl(prog_.Program):
    """A program step setting the control word of ``tiles`` (absolute tile ids): ``(word &
    ~clear) | set``, or, given ``source`` (one UNSIGNED_INT per tile, in the order of
    ``tiles``), the source's words. Given ``save``, the old words go there first (same order).
    ``seeds`` is the top-level graph's hardware generator state, the stochastic rounding's
    random state. The functions of this module make these; the engine lowers them to a step."""

    def __init__(self, tiles: np.ndarray, clear: int, set_: int, seeds: Tensor, save: Tensor | None = None,
                 source: Tensor | None = None, name: str = "") -> None:
        self.tiles, self.clear, self.set, self.seeds = tiles, clear, set_, seeds
        self.save, self.source, self.name = save, source, name


def _sequence(prog: object, what: str) -> prog_.Sequence:
    if not isinstance(prog, prog_.Sequence):
        raise InvalidArgumentError(f"{what}: prog must be a program.Sequence, got {type(prog).__name__} "
                                   f"{prog!r:.40}")
    return prog


def _graph(graph: object, what: str) -> Graph:
    if not isinstance(graph, Graph):
        raise InvalidArgumentError(f"{what}: graph must be a Graph, got {type(graph).__name__} {graph!r:.40}")
    return graph


def _behaviour(b: object, what: str) -> FloatingPointBehaviour:
    if not isinstance(b, FloatingPointBehaviour):
        raise InvalidArgumentError(f"{what} must be a FloatingPointBehaviour, got {type(b).__name__} "
                                   f"{b!r:.40}")
    return b


def _tiles(graph: Graph) -> tuple[np.ndarray, Tensor]:
    """The graph's tiles (absolute ids, in the order of its own) and the top-level graph's
    generator state."""
    top = graph.getTopLevelGraph()
    rows = hwSeedState(graph)
    per_row = rows[0].numElements()
    mapping = top.getTileMapping(rows)
    tile_of_row = np.empty(rows.dim(0), np.int64)
    for tile, intervals in enumerate(mapping):
        for interval in intervals:
            tile_of_row[interval.begin() // per_row] = tile
    return tile_of_row, hwSeedState(top)


def _add(graph: Graph, prog: prog_.Sequence, clear: int, set_: int, name: str, save: Tensor | None = None,
         source: Tensor | None = None) -> None:
    tiles, seeds = _tiles(graph)
    prog.add(FloatingPointControl(tiles, clear, set_, seeds, save, source, name))


def _words_tensor(graph: Graph, t: object, what: str) -> Tensor:
    n = graph.getTarget().getNumTiles()
    if not isinstance(t, Tensor):
        raise InvalidArgumentError(f"{what} must be the Tensor getAndModifyFloatingPointBehaviour returned, "
                                   f"got {type(t).__name__} {t!r:.40}")
    if t.shape() != [n] or t.elementType() != UNSIGNED_INT:
        raise InvalidArgumentError(f"{what}: tensor '{t.name}' must be UNSIGNED_INT of shape [{n}] (one word "
                                   f"per tile), as getAndModifyFloatingPointBehaviour returns; has "
                                   f"{t.elementType()} {t.shape()}")
    return t


def setFloatingPointBehaviour(graph: Graph, prog: prog_.Sequence, behaviour: FloatingPointBehaviour | Tensor,
                              debugContext: Any = "") -> None:
    """Add to ``prog`` a step that sets the control word of every tile of ``graph`` to
    ``behaviour``'s flags, or (a tensor ``getAndModifyFloatingPointBehaviour`` returned) to the
    words it holds, each tile its own."""
    what = "setFloatingPointBehaviour"
    _graph(graph, what)
    _sequence(prog, what)
    name = debug_name(debugContext, f"{what}: debugContext") or what
    if isinstance(behaviour, Tensor):
        _add(graph, prog, ALL, 0, name, source=_words_tensor(graph, behaviour, f"{what}: behaviour"))
        return
    _add(graph, prog, ALL, _behaviour(behaviour, f"{what}: behaviour").word(), name)


def setStochasticRounding(graph: Graph, prog: prog_.Sequence, enable: bool, debugContext: Any = "") -> None:
    """Add to ``prog`` a step that turns stochastic rounding on (``enable``) or off on every tile
    of ``graph``, leaving the other flags as they are."""
    what = "setStochasticRounding"
    _graph(graph, what)
    _sequence(prog, what)
    on = checked_bool(enable, f"{what}: enable")
    _add(graph, prog, ESR, ESR if on else 0, debug_name(debugContext, f"{what}: debugContext") or what)


def getAndModifyFloatingPointBehaviour(graph: Graph, prog: prog_.Sequence, clear: FloatingPointBehaviour,
                                       set: FloatingPointBehaviour,  # noqa: A002 (Poplar's name)
                                       debugContext: Any = "") -> Tensor:
    """Add to ``prog`` a step that saves every tile's control word into a new tensor (UNSIGNED_INT,
    one element per tile of ``graph``, element ``k`` on tile ``k``), then clears the flags that
    are true in ``clear`` and sets those true in ``set``. Returns the tensor, for
    :func:`restoreFloatingPointBehaviour`."""
    what = "getAndModifyFloatingPointBehaviour"
    _graph(graph, what)
    _sequence(prog, what)
    clear_word = _behaviour(clear, f"{what}: clear").word()
    set_word = _behaviour(set, f"{what}: set").word()
    name = debug_name(debugContext, f"{what}: debugContext") or what
    n = graph.getTarget().getNumTiles()
    saved = graph.addVariable(UNSIGNED_INT, [n], f"{name}/saved")
    graph.setTileMapping(saved, [[(k, k + 1)] for k in range(n)])
    graph.setInitialValue(saved, np.zeros(n, np.uint32))  # (written by a step liveness does not see)
    _add(graph, prog, clear_word, set_word, name, save=saved)
    return saved


def restoreFloatingPointBehaviour(graph: Graph, prog: prog_.Sequence, behaviour: Tensor,
                                  debugContext: Any = "") -> None:
    """Add to ``prog`` a step that sets every tile's control word back to what
    ``getAndModifyFloatingPointBehaviour`` saved in ``behaviour``."""
    what = "restoreFloatingPointBehaviour"
    _graph(graph, what)
    _sequence(prog, what)
    source = _words_tensor(graph, behaviour, f"{what}: behaviour")
    _add(graph, prog, ALL, 0, debug_name(debugContext, f"{what}: debugContext") or what, source=source)


def initial_word(inv_oflo: bool, div0: bool, nanoo: bool) -> int:
    """The control word ``engine.load`` gives every tile, from the engine options
    ``debug.floatPointOpException`` (``inv`` and ``oflo``), ``debug.divideByZeroException`` and
    ``debug.nanOverflowException``."""
    return (INV | OFLO if inv_oflo else 0) | (DIV0 if div0 else 0) | (NANOO if nanoo else 0)
