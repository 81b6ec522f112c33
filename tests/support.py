"""Shared helpers: small simulated devices, element ids of views, and a reference model of
tile memory by element id."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

import poplar_py as poplar


def spread(graph: poplar.Graph, t: poplar.Tensor) -> None:
    """Map ``t`` in chunks of 5 elements dealt round the tiles (rows split between tiles, regions
    not aligned to anything)."""
    n, tiles = t.numElements(), graph.getTarget().getNumTiles()
    flat = t.flatten()
    for k, b in enumerate(range(0, n, 5)):
        graph.setTileMapping(flat.slice(b, min(b + 5, n)), k % tiles)


def make_device(tiles: int = 8) -> poplar.Device:
    """An ipu2 model with few tiles (fast to compile)."""
    m = poplar.IPUModel()
    m.tilesPerIPU = tiles
    return m.createDevice()


def make_graph(tiles: int = 8) -> tuple[poplar.Device, poplar.Graph]:
    device = make_device(tiles)
    return device, poplar.Graph(device.getTarget())


def element_ids(t: poplar.Tensor) -> np.ndarray:
    """The global id of every element of ``t``, shaped like ``t`` (one entry per element: for
    checking views of small tensors against numpy)."""
    var, offset = t.runs().elements()
    return (t.variables.bases[var] + offset).reshape(t.shape())


class IdModel:
    """What the device memory should hold: one value per element id, updated as numpy would."""

    def __init__(self, graph: poplar.Graph) -> None:
        self.values = np.zeros(graph.freeze().variables.num_elements, dtype=np.float64)

    def write(self, t: poplar.Tensor, data: np.ndarray) -> None:
        self.values[element_ids(t).reshape(-1)] = np.asarray(data, dtype=np.float64).reshape(-1)

    def copy(self, src: poplar.Tensor, dst: poplar.Tensor) -> None:
        """Copy semantics: read every source element, then write the destination."""
        self.values[element_ids(dst).reshape(-1)] = self.values[element_ids(src).reshape(-1)].copy()

    def read(self, t: poplar.Tensor) -> np.ndarray:
        return self.values[element_ids(t)]


def isolated_outcomes(script: Path, names: list[str], cache: Path, timeout: int = 600) -> dict[str, str]:
    """Run the cases ``names`` of a fuzz script in subprocesses, one share of them per core this
    process may use: the script prints ``START name`` before each case and ``OK name`` or
    ``FAIL name why`` after it. Each case's line by name; a case during which the process died
    is reported with its exit status, and the rest of its share run in a fresh process."""
    env = dict(os.environ, POPLAR_PY_CACHE_DIR=str(cache))
    shares = max(1, min(len(os.sched_getaffinity(0)), len(names)))
    with ThreadPoolExecutor(shares) as pool:
        parts = pool.map(lambda k: _outcomes(script, names[k::shares], env, timeout), range(shares))
        return {name: line for part in parts for name, line in part.items()}


def _outcomes(script: Path, names: list[str], env: dict[str, str], timeout: int) -> dict[str, str]:
    """:func:`isolated_outcomes` for one share of the cases, run one after another."""
    results: dict[str, str] = {}
    while names:
        proc = subprocess.run([sys.executable, str(script), *names], capture_output=True, text=True, env=env,
                              cwd=script.parent, timeout=timeout)
        started = None
        for line in proc.stdout.splitlines():
            kind, _, rest = line.partition(" ")
            name = rest.split(" ", 1)[0]
            if kind == "START":
                started = name
            elif kind in ("OK", "FAIL"):
                results[name] = line
                started = None
        if started is not None:  # the process died in this case: note it and go on after it
            results[started] = f"CRASH {started} (exit status {proc.returncode}): {proc.stderr[-2000:]}"
        elif proc.returncode:
            raise AssertionError(f"fuzz runner failed: {proc.stderr[-3000:]}")
        names = [n for n in names if n not in results]
    return results


@pytest.fixture(autouse=True, scope="session")
def isolated_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """Compiled kernels go to a temporary cache, not ~/.cache (autouse where imported)."""
    path = tmp_path_factory.mktemp("kernel-cache")
    old = os.environ.get("POPLAR_PY_CACHE_DIR")
    os.environ["POPLAR_PY_CACHE_DIR"] = str(path)
    yield path
    if old is None:
        os.environ.pop("POPLAR_PY_CACHE_DIR", None)
    else:
        os.environ["POPLAR_PY_CACHE_DIR"] = old
