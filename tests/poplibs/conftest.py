"""Shared harness for PopLibs tests: build a graph, feed numpy inputs, run, read results."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest

import poplar_py as poplar
from poplar_py import program as prog
from poplibs_py import popops, poputil
from poplibs_py.codelets import add_library


class Cases(dict):
    """Named cases for ``Harness.check``: a name given twice is an error (it would hide a case)."""

    def __setitem__(self, name: str, case: tuple) -> None:
        if name in self:
            raise KeyError(f"case {name!r} given twice")
        super().__setitem__(name, case)


class Harness:
    """A small device and graph with popops codelets (and those of ``libs``); inputs come from
    numpy arrays.

    ``h.tensor(array)`` makes a variable holding ``array`` (mapped linearly, to one tile,
    or by a custom function); ops append to ``h.seq``; ``h.run(t1, t2)`` builds the
    engine, writes the inputs, runs ``h.seq`` and returns the outputs as numpy arrays.
    For the vertex-level tests, ``h.vertex(...)`` adds one library vertex alone, ``h.cases[name]
    = (output, reference)`` names a check and ``h.check()`` runs and compares every case.
    """

    def __init__(self, tiles: int = 16, mode: str = "native", libs: Sequence[str] = ()) -> None:
        model = poplar.IPUModel()
        model.tilesPerIPU = tiles
        self.device = model.createDevice()
        self.graph = poplar.Graph(self.device)
        popops.addCodelets(self.graph)
        for lib in libs:
            add_library(self.graph, lib)
        self.seq = prog.Sequence()
        self.mode = mode
        self._inputs: list[tuple[str, np.ndarray]] = []
        self._cs: poplar.ComputeSet | None = None
        self.cases = Cases()
        self.engine: poplar.Engine | None = None

    def tensor(self, array, type_=None, name: str | None = None, mapping="linear") -> poplar.Tensor:
        array = np.asarray(array)
        type_ = poplar.types.asType(type_ if type_ is not None else array.dtype)
        name = name or f"in{len(self._inputs)}"
        t = self.graph.addVariable(type_, list(array.shape), name)
        if mapping == "linear":
            poputil.mapTensorLinearly(self.graph, t)
        elif isinstance(mapping, int):
            self.graph.setTileMapping(t, mapping)
        else:
            mapping(self.graph, t)
        self.graph.createHostWrite(name, t)
        self._inputs.append((name, array.astype(type_.dtype)))
        return t

    def write(self, t: poplar.Tensor, array, name: str | None = None) -> poplar.Tensor:
        """Write ``array`` into an existing tensor ``t`` when the harness runs."""
        name = name or f"in{len(self._inputs)}"
        self.graph.createHostWrite(name, t)
        self._inputs.append((name, np.asarray(array).astype(t.elementType().dtype)))
        return t

    @property
    def num_inputs(self) -> int:
        return len(self._inputs)

    def run(self, *outputs: poplar.Tensor | list[poplar.Tensor], options: dict | None = None) -> list:
        """The outputs after one run of ``h.seq`` (a list of tensors gives a list of arrays)."""
        flat = [t for out in outputs for t in (out if isinstance(out, list) else [out])]
        for i, t in enumerate(flat):
            self.graph.createHostRead(f"out{i}", t)
        self.engine = poplar.Engine(self.graph, self.seq, {"codelets.mode": self.mode, **(options or {})})
        self.engine.load(self.device)
        for name, array in self._inputs:
            self.engine.writeTensor(name, array)
        self.engine.run()
        read = iter(self.engine.readTensor(f"out{i}") for i in range(len(flat)))
        return [[next(read) for _ in out] if isinstance(out, list) else next(read) for out in outputs]

    def vertex(self, vertexType: str, tile: int = 0, initial: dict | None = None, **fields) -> dict:
        """One ``vertexType`` vertex on ``tile``, in the compute set that ``h.seq`` runs: each
        field is connected to a new tensor on ``tile`` holding its value (a numpy array, whose
        dtype gives the element type; a 0-D array for a scalar edge; a list of them for a
        VectorList; a Tensor is connected as it is), and each vertex state field in ``initial``
        is set to its value.
        Returns the connected tensors by field name."""
        if self._cs is None:
            self._cs = self.graph.addComputeSet("vertices")
            self.seq.add(prog.Execute(self._cs))

        def tensor(value):
            return value if isinstance(value, poplar.Tensor) else self.tensor(value, mapping=tile)

        connections = {name: [tensor(v) for v in value] if isinstance(value, list) else tensor(value)
                       for name, value in fields.items()}
        v = self.graph.addVertex(self._cs, vertexType, connections)
        for name, value in (initial or {}).items():
            self.graph.setInitialValue(v[name], value)
        self.graph.setTileMapping(v, tile)
        return connections

    def check(self, rtol: float = 0.0, atol: float = 0.0) -> None:
        """Run once and compare the output of each of ``h.cases`` (a tensor or list of tensors)
        with its reference (an array or list of arrays): exactly (NaN equal to NaN), or within
        ``rtol``/``atol`` (a case ``(output, reference, rtol)`` has its own); a callable
        reference checks the output itself. One failure names every case that differs."""
        cases = self.cases
        outputs = list(cases.values())
        got = self.run(*(out for out, *_ in outputs))
        failures = []
        for name, (_, want, *tol), have in zip(cases, outputs, got):
            try:
                if callable(want):
                    want(have)
                    continue
                rows = zip(have, want, strict=True) if isinstance(have, list) else [(have, want)]
                for row, (h, w) in enumerate(rows):
                    w, where = np.asarray(w), f"row {row}: " if isinstance(have, list) else ""
                    assert h.shape == w.shape, f"{where}shape {h.shape}, expected {w.shape}"
                    np.testing.assert_allclose(h.astype(np.float64) if h.dtype.kind in "fb" else h, w,
                                               rtol=tol[0] if tol else rtol, atol=atol, err_msg=where)
            except (AssertionError, ValueError) as e:  # ValueError: a list of the wrong length
                failures.append(f"{name}: {e}")
        assert not failures, "\n".join(failures)


@pytest.fixture(params=["native", "interpreter"])
def mode(request) -> str:
    """Run a test with compiled codelets and again in the interpreter."""
    return request.param


@pytest.fixture
def harness(mode):
    return lambda tiles=16: Harness(tiles, mode)


@pytest.fixture
def vertices():
    """``vertices(*libs)``: a 4-tile native Harness with the codelets of ``libs`` too, for
    vertex-level tests (``h.vertex``, ``h.check``). Give each vertex instantiation two vertices or
    more: the engine then compiles the kernel with the lockstep path (codelet/lanes.py) that the
    operations' many vertices use, which the suite compiles once for both kinds of test."""
    return lambda *libs: Harness(4, "native", libs)
