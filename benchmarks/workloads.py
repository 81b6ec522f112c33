"""Workloads several benchmarks run: each built, loaded and given random inputs, ready to run."""

from __future__ import annotations

import os
import runpy
import sys
from pathlib import Path

import numpy as np

import poplar_py as poplar
from poplar_py import program as prog
from poplibs_py import poplin, popops

ROOT = Path(__file__).resolve().parent.parent


def tut7(rows: int, cols: int, options: dict | None = None) -> tuple[poplar.Engine, np.ndarray, np.ndarray]:
    """Tutorial 7's matrix-vector program (its own codelets, default tiles): the engine, the
    matrix and the vector; the product is read with ``readTensor("out")``."""
    tut = ROOT / "tutorials" / "tut7_matrix_vector_opt"
    ns = runpy.run_path(str(tut / "tut7.py"), run_name="tut7")
    device = poplar.IPUModel().createDevice()
    graph = poplar.Graph(device)
    graph.addCodelets(str(tut / "matrix_mul_codelets.py"))
    matrix = graph.addVariable(poplar.FLOAT, [rows, cols], "matrix")
    inp = graph.addVariable(poplar.FLOAT, [cols], "inputVector")
    out = graph.addVariable(poplar.FLOAT, [rows], "outputVector")
    with open(os.devnull, "w") as quiet:  # the tutorial prints its cost model's choice
        stdout, sys.stdout = sys.stdout, quiet
        try:
            program = ns["buildMultiplyProgram"](graph, matrix, inp, out)
        finally:
            sys.stdout = stdout
    for name, t in (("matrix", matrix), ("in", inp)):
        graph.createHostWrite(name, t)
    graph.createHostRead("out", out)
    engine = poplar.Engine(graph, program, options)
    engine.load(device)
    rng = np.random.default_rng(0)
    m = rng.standard_normal((rows, cols)).astype(np.float32)
    v = rng.standard_normal(cols).astype(np.float32)
    engine.writeTensor("matrix", m)
    engine.writeTensor("in", v)
    return engine, m, v


def matmul(size: int, options: dict | None = None, replicas: int = 1
           ) -> tuple[poplar.Engine, np.ndarray, np.ndarray]:
    """poplin.matMul of two ``size``-square matrices (operands from createMatMulInputLHS/RHS), on
    ``replicas`` replicas of one IPU each: the engine and the operands, written to every replica;
    the product is read with ``readTensor("c")``."""
    model = poplar.IPUModel()
    model.numIPUs = replicas
    device = model.createDevice()
    graph = poplar.Graph(device.getTarget(), replication_factor=replicas)
    popops.addCodelets(graph)
    poplin.addCodelets(graph)
    seq = prog.Sequence()
    a = poplin.createMatMulInputLHS(graph, poplar.FLOAT, [size, size], [size, size], "A")
    b = poplin.createMatMulInputRHS(graph, poplar.FLOAT, [size, size], [size, size], "B")
    c = poplin.matMul(graph, a, b, seq, "C")
    graph.createHostWrite("a", a)
    graph.createHostWrite("b", b)
    graph.createHostRead("c", c)
    engine = poplar.Engine(graph, seq, options)
    engine.load(device)
    rng = np.random.default_rng(0)
    ha, hb = (rng.standard_normal((size, size)).astype(np.float32) for _ in range(2))
    engine.writeTensor("a", ha)
    engine.writeTensor("b", hb)
    return engine, ha, hb
