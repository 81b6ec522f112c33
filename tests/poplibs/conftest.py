"""Shared harness for PopLibs tests: build a graph, feed numpy inputs, run, read results."""

from __future__ import annotations

import numpy as np
import pytest

import poplar_py as poplar
from poplar_py import program as prog
from poplibs_py import popops, poputil


class Harness:
    """A small device and graph with popops codelets; inputs come from numpy arrays.

    ``h.tensor(array)`` makes a variable holding ``array`` (mapped linearly, to one tile,
    or by a custom function); ops append to ``h.seq``; ``h.run(t1, t2)`` builds the
    engine, writes the inputs, runs ``h.seq`` and returns the outputs as numpy arrays.
    """

    def __init__(self, tiles: int = 16, mode: str = "native") -> None:
        model = poplar.IPUModel()
        model.tilesPerIPU = tiles
        self.device = model.createDevice()
        self.graph = poplar.Graph(self.device)
        popops.addCodelets(self.graph)
        self.seq = prog.Sequence()
        self.mode = mode
        self._inputs: list[tuple[str, np.ndarray]] = []
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

    def run(self, *outputs: poplar.Tensor, options: dict | None = None) -> list[np.ndarray]:
        for i, t in enumerate(outputs):
            self.graph.createHostRead(f"out{i}", t)
        self.engine = poplar.Engine(self.graph, self.seq, {"codelets.mode": self.mode, **(options or {})})
        self.engine.load(self.device)
        for name, array in self._inputs:
            self.engine.writeTensor(name, array)
        self.engine.run()
        return [self.engine.readTensor(f"out{i}") for i in range(len(outputs))]


@pytest.fixture(params=["native", "interpreter"])
def mode(request) -> str:
    """Run a test with compiled codelets and again in the interpreter."""
    return request.param


@pytest.fixture
def harness(mode):
    return lambda tiles=16: Harness(tiles, mode)
