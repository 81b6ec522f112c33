"""Shared helpers: small simulated devices, element ids of views, and a reference model of
tile memory by element id."""

from __future__ import annotations

import numpy as np

import poplar_py as poplar


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
