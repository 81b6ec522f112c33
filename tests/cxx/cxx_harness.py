"""Helpers for C++ codelet tests: write a source file, build a one-compute-set graph of its
vertices, run it on the engine and read back every output and the cycles each vertex type took."""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

import poplar_py as poplar
from poplar_py import program as prog
from poplar_py.types import asType

HEADER = "#include <poplar/Vertex.hpp>\nusing namespace poplar;\n"
_serial = itertools.count()


def write_source(folder: Path, text: str, header: bool = True) -> Path:
    """A fresh .cpp file holding ``text`` (after the usual include and using-directive)."""
    path = folder / f"codelets_{next(_serial)}.cpp"
    path.write_text((HEADER if header else "") + text)
    return path


@dataclass
class Vertex:
    """One vertex to add: its type, tile, its edges' values (arrays, written before the run), its
    outputs (name -> (shape, type), read after it), its state (setInitialValue) and field sizes."""

    type: str
    inputs: Mapping[str, Any] = field(default_factory=dict)
    outputs: Mapping[str, tuple[Any, poplar.Type]] = field(default_factory=dict)
    state: Mapping[str, Any] = field(default_factory=dict)
    tile: int = 0


@dataclass
class Result:
    outputs: list[dict[str, np.ndarray]]
    cycles: dict[str, int]  # per vertex type: the cycles its vertices took (the profile's count)
    profile: dict


def run(codelets: Any, vertices: list[Vertex], tiles: int = 4, options: Mapping[str, str] | None = None,
        flags: str = "") -> Result:
    """Add ``codelets`` (a path, CppSource text or a list), run one compute set of ``vertices``."""
    model = poplar.IPUModel()
    model.tilesPerIPU = tiles
    device = model.createDevice()
    graph = poplar.Graph(device.getTarget())
    for src in codelets if isinstance(codelets, list) else [codelets]:
        if isinstance(src, Path):
            graph.addCodelets(str(src), poplar.CodeletFileType.Auto, flags)
        else:
            graph.addCodelets(src)
    cs = graph.addComputeSet("cs")
    seq = prog.Sequence()
    reads: list[dict[str, tuple[str, Any, poplar.Type]]] = []
    writes: list[tuple[str, np.ndarray]] = []
    for k, spec in enumerate(vertices):
        v = graph.addVertex(cs, spec.type)
        graph.setTileMapping(v, spec.tile)
        mine = {}
        for name, values in spec.inputs.items():
            if isinstance(values, list) and values and isinstance(values[0], np.ndarray):  # a list of rows
                rows = []
                for r, row in enumerate(values):
                    t = graph.addVariable(asType(row.dtype), list(row.shape), f"{name}{k}_{r}")
                    graph.setTileMapping(t, spec.tile)
                    graph.createHostWrite(f"w{k}{name}{r}", t)
                    writes.append((f"w{k}{name}{r}", row))
                    rows.append(t)
                graph.connect(v[name], rows)
                continue
            data = np.asarray(values)
            t = graph.addVariable(asType(data.dtype), list(data.shape), f"{name}{k}")
            graph.setTileMapping(t, spec.tile)
            graph.createHostWrite(f"w{k}{name}", t)
            writes.append((f"w{k}{name}", data))
            graph.connect(v[name], t)
        for name, (shape, dtype) in spec.outputs.items():
            t = graph.addVariable(dtype, list(np.atleast_1d(shape)) if shape != () else [], f"out_{name}{k}")
            graph.setTileMapping(t, spec.tile)
            graph.createHostRead(f"r{k}{name}", t)
            graph.connect(v[name], t)
            mine[name] = (f"r{k}{name}", shape, dtype)
        for name, value in spec.state.items():
            graph.setInitialValue(v[name], value)
        reads.append(mine)
    seq.add(prog.Execute(cs))
    engine = poplar.Engine(graph, seq, dict(options or {}))
    engine.load(device)
    for handle, data in writes:
        engine.writeTensor(handle, data)
    engine.run(0)
    outputs = []
    for mine in reads:
        got = {}
        for name, (handle, shape, dtype) in mine.items():
            out = np.zeros(shape, dtype.dtype)
            engine.readTensor(handle, out)
            got[name] = out
        outputs.append(got)
    profile = engine.getProfile()
    cycles = {v["type"]: v["cycles"] for v in profile["execution"]["vertexTypes"]}
    return Result(outputs, cycles, profile)
