"""Simulated cycles of gcl.allReduceCrossReplica (ADD, float) against the ring bound.

For 2, 4, 8 and 16 replicas of one IPU each and 1 KB to 64 MB per replica, prints the cycles
of the all-reduce program beside the ring bound ``2 (R - 1) / R x bytes / link bandwidth``
plus the sync of each of the 2 (R - 1) ring steps (an internal barrier and a global sync,
``syncCycles + globalSyncCycles``), their ratio, and the host time of building and running
the case. The link bandwidth is that of the ring's slowest hop in one
direction (the ring follows the ladder: a rung of 4 IPU-Links for 2 replicas, rails of 2
links for more). Target: within 1.3x of the bound from 1 MB up.

    python benchmarks/bench_collectives.py [--tiles N] [--max-mb M] [--replicas 2,4,8,16] [--groups]

``--tiles`` sets tilesPerIPU (default 1472, a Mk2 IPU); the 16-replica cases with 64 MB use a
model of 736 tiles per IPU (half an IPU) unless ``--tiles`` is given, to keep host memory and
time sane; the output says so on those lines.

``--groups`` prints instead all-reduces within replica groups (gcl.CommGroup) on a Pod16 (16
replicas of one IPU): CONSECUTIVE and ORTHOGONAL groups of 4, 1 MB to 16 MB per replica, against
the ring bound of a group: ``2 (k - 1) / k x bytes / (the per-flow bandwidth of the most loaded
directed link group)`` plus the sync of each of the 2 (k - 1) steps, where every group's ring hop
runs at once and a link group of ``links`` links carries ``links x ipuLinkBandwidth / flows`` per
flow crossing it (routes as cycles/fabric.py takes them); 1472 tiles per IPU unless ``--tiles``
says otherwise (about 8 s and 1.1 GB in all). ``group_all_reduce`` gives one such figure to
other scripts.
"""

import argparse
import time

import poplar_py as poplar
from poplar_py import program as prog
from poplar_py.cycles.fabric import Fabric, fabric_graph
from poplibs_py import gcl, popops, poputil
from poplibs_py.gcl.ring import Ring

SIZES = [1 << k for k in range(10, 27, 2)]  # 1 KB ... 64 MB
SMALL_MODEL_TILES = 736
GROUP_SIZES = [1 << k for k in range(20, 25)]  # 1 MB ... 16 MB


def ring_link_bytes_per_cycle(target: poplar.Target, replicas: int) -> float:
    """The one-direction bandwidth of the ring's slowest hop, in bytes per cycle."""
    links = fabric_graph(target.getNumIPUs(), target.ipuLinkTopology)
    if replicas == 2:
        slowest = links.edges[0, 1]["links"]
    else:
        slowest = min(d["links"] for _, _, d in links.edges(data=True))
    return slowest * target.ipuLinkBandwidth / target.getTileClockFrequency()


def ring_flow_bytes_per_cycle(target: poplar.Target, forward: dict[int, int]) -> float:
    """The bandwidth each flow of a ring hop gets on its most loaded directed link group, in bytes
    per cycle, when replica r sends to ``forward[r]`` (one IPU per replica) all at once."""
    fabric = Fabric(target)
    flows: dict[tuple[int, int], int] = {}
    for a, b in forward.items():
        for edge in fabric.route(a, b):
            flows[edge] = flows.get(edge, 0) + 1
    slowest = min(fabric.graph.edges[edge]["links"] / n for edge, n in flows.items())
    return slowest * target.ipuLinkBandwidth / target.getTileClockFrequency()


def all_reduce(replicas: int, nbytes: int, tiles: int, group: gcl.CommGroup | None = None,
               device: poplar.Device | None = None) -> tuple[int, poplar.Graph, poplar.Target]:
    """The cycles of an ADD all-reduce of ``nbytes`` of floats per replica (within ``group``) on
    ``replicas`` replicas of one IPU of ``tiles`` tiles (an ``IPUModel()`` unless ``device`` is
    given), its graph and its target."""
    if device is None:
        m = poplar.IPUModel()
        m.numIPUs, m.tilesPerIPU = replicas, tiles
        device = m.createDevice()
    graph = poplar.Graph(device, replication_factor=replicas)
    popops.addCodelets(graph)
    t = graph.addVariable(poplar.FLOAT, [nbytes // 4], "t")
    poputil.mapTensorLinearly(graph, t)
    program = prog.Sequence()
    gcl.allReduceInPlaceCrossReplica(graph, t, gcl.CollectiveOperator.ADD, program, group=group)
    engine = poplar.Engine(graph, program)
    engine.load(device)
    engine.run(0)
    return engine.getProfile()["execution"]["totalCycles"], graph, device.getTarget()


def run_case(replicas: int, nbytes: int, tiles: int) -> tuple[int, float, float]:
    """(cycles, bound, host seconds) of one all-reduce."""
    start = time.perf_counter()
    cycles, _, target = all_reduce(replicas, nbytes, tiles)
    steps = 2 * (replicas - 1)
    bound = steps / replicas * nbytes / ring_link_bytes_per_cycle(target, replicas) \
        + steps * (target.syncCycles + target.globalSyncCycles)
    return cycles, bound, time.perf_counter() - start


def group_all_reduce(kind: str, size: int, replicas: int, nbytes: int,
                     tiles: int) -> tuple[int, float, float]:
    """(cycles, ring bound, host seconds) of an ADD all-reduce of ``nbytes`` of floats per replica
    within ``gcl.CommGroup(CommGroupType[kind], size)`` groups, on ``replicas`` replicas of one
    IPU of ``tiles`` tiles."""
    start = time.perf_counter()
    group = gcl.CommGroup(gcl.CommGroupType[kind], size)
    cycles, graph, target = all_reduce(replicas, nbytes, tiles, group)
    ring = Ring.of(graph, group.groups(replicas))  # the rings the collective ran on
    steps = 2 * (ring.size - 1)
    bound = steps / ring.size * nbytes / ring_flow_bytes_per_cycle(target, ring.forward) \
        + steps * (target.syncCycles + target.globalSyncCycles)
    return cycles, bound, time.perf_counter() - start


def groups_main(tiles: int, max_mb: float) -> None:
    """CONSECUTIVE and ORTHOGONAL groups of 4 on a Pod16, against the ring bound of a group."""
    print(f"Pod16 (16 replicas x 1 IPU of {tiles} tiles), ADD all-reduce within groups of 4")
    print("ring bound = 2 (k - 1) / k x bytes / (per-flow bandwidth of the most loaded directed link group")
    print("             when every group's hop runs at once) + 2 (k - 1) x (syncCycles + globalSyncCycles)")
    print(f"{'group':>13} {'bytes':>11} {'cycles':>10} {'ring bound':>11} {'ratio':>6} {'host s':>7}")
    for kind in ("CONSECUTIVE", "ORTHOGONAL"):
        for nbytes in (s for s in GROUP_SIZES if s <= max_mb * 2**20):
            cycles, bound, host = group_all_reduce(kind, 4, 16, nbytes, tiles)
            over = "  (target <= 1.3)" if cycles / bound > 1.3 else ""
            print(f"{kind:>13} {nbytes:>11,} {cycles:>10,} {bound:>11,.0f} {cycles / bound:>6.2f} "
                  f"{host:>7.1f}{over}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tiles", type=int, default=None)
    parser.add_argument("--max-mb", type=float, default=64)
    parser.add_argument("--replicas", default="2,4,8,16")
    parser.add_argument("--groups", action="store_true", help="groups of 4 on a Pod16 instead")
    args = parser.parse_args()
    if args.groups:
        groups_main(args.tiles or 1472, min(args.max_mb, 16))
        return
    print("ring bound = 2 (R - 1) / R x bytes / (one direction of the ring's slowest hop)"
          " + 2 (R - 1) x (syncCycles + globalSyncCycles)")
    print(f"{'replicas':>8} {'bytes':>10} {'cycles':>12} {'ring bound':>12} {'ratio':>6} {'host s':>7}  note")
    for replicas in (int(r) for r in args.replicas.split(",")):
        for nbytes in (s for s in SIZES if s <= args.max_mb * 2**20):
            tiles = args.tiles or (SMALL_MODEL_TILES if replicas >= 16 and nbytes >= 64 * 2**20 else 1472)
            cycles, bound, host = run_case(replicas, nbytes, tiles)
            note = f"{tiles} tiles per IPU" if tiles != 1472 else ""
            target = "  (target <= 1.3)" if nbytes >= 2**20 and cycles / bound > 1.3 else ""
            print(f"{replicas:>8} {nbytes:>10,} {cycles:>12,} {bound:>12,.0f} {cycles / bound:>6.2f} "
                  f"{host:>7.1f}  {note}{target}", flush=True)


if __name__ == "__main__":
    main()
