"""The IPU-Link fabric: how long the bytes that cross IPUs take, in a global exchange phase.

IPUs are joined by IPU-Links (Mk2: 10 per IPU at 32 GB/s each way, ``IPUModel.ipuLinkBandwidth``)
in the topology PopLibs' multi-IPU test model describes (``poplibs_test/Util.cpp``): a **ladder** of
rungs of two IPUs, ``2r`` and ``2r + 1``, joined by 4 links, each IPU joined to the same side of
the next rung by 2 links; a **torus** (``IPUModel.ipuLinkTopology = "torus"``) also joins the
last rung to the first. Bytes from IPU ``a`` to IPU ``b`` follow a shortest path (fewest hops,
fixed per pair) and load every link group on it; a step's global exchange takes as long as its
most loaded group needs at ``links x bandwidth``, since every group carries its bytes in parallel,
after the latency of its longest route's hops (the target's calibration: none on the IPU Model).
"""

from __future__ import annotations

import functools
import itertools

import networkx as nx
import numpy as np

from ..target import Target

#: links between rung partners, and along each side of the ladder
RUNG_LINKS, RAIL_LINKS = 4, 2


def fabric_graph(num_ipus: int, topology: str) -> nx.DiGraph:
    """The directed link groups between IPUs, each with its number of links."""
    g = nx.DiGraph()
    g.add_nodes_from(range(num_ipus))

    def join(a: int, b: int, links: int) -> None:
        g.add_edge(a, b, links=links)
        g.add_edge(b, a, links=links)

    rungs = (num_ipus + 1) // 2
    for ipu in range(num_ipus):
        if ipu % 2 == 0 and ipu + 1 < num_ipus:
            join(ipu, ipu + 1, RUNG_LINKS)
        if ipu + 2 < num_ipus:
            join(ipu, ipu + 2, RAIL_LINKS)
        elif topology == "torus" and rungs > 2 and ipu - 2 * (rungs - 1) >= 0:
            join(ipu, ipu - 2 * (rungs - 1), RAIL_LINKS)  # the last rung back to the first
    return g


class Fabric:
    """Global exchange cycles of the bytes that cross IPUs, on one target's links."""

    def __init__(self, target: Target) -> None:
        self.num_ipus = target.getNumIPUs()
        self.graph = fabric_graph(self.num_ipus, target.ipuLinkTopology)
        self.link_bytes_per_cycle = target.ipuLinkBandwidth / target.getTileClockFrequency()
        self.hop_cycles = target.calibration.link_latency * target.getTileClockFrequency()

    @functools.cache  # noqa: B019 (one Fabric per cost model; the routes are few)
    def route(self, src: int, dst: int) -> tuple[tuple[int, int], ...]:
        """The link groups the bytes from ``src`` to ``dst`` cross, in order."""
        path = nx.shortest_path(self.graph, src, dst)
        return tuple(itertools.pairwise(path))

    def cycles(self, flows: np.ndarray) -> int:
        """Cycles to move ``flows[a, b]`` bytes from IPU a to IPU b, all at once."""
        load: dict[tuple[int, int], int] = {}
        hops = 0
        for a, b in zip(*np.nonzero(flows)):
            route = self.route(int(a), int(b))
            hops = max(hops, len(route))
            for edge in route:
                load[edge] = load.get(edge, 0) + int(flows[a, b])
        worst = max((nbytes / self.graph.edges[edge]["links"] for edge, nbytes in load.items()), default=0.0)
        return int(np.ceil(worst / self.link_bytes_per_cycle + hops * self.hop_cycles))
