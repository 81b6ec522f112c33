"""Simulated cycles of gcl.allReduceCrossReplica (ADD, float) against the ring bound.

For 2, 4, 8 and 16 replicas of one IPU each and 1 KB to 64 MB per replica, prints the cycles
of the all-reduce program beside the ring bound ``2 (R - 1) / R x bytes / link bandwidth``
plus the sync of each of the 2 (R - 1) ring steps (an internal barrier and a global sync,
``syncCycles + globalSyncCycles``), their ratio, and the host time of building and running
the case. The link bandwidth is that of the ring's slowest hop in one
direction (the ring follows the ladder: a rung of 4 IPU-Links for 2 replicas, rails of 2
links for more). Target: within 1.3x of the bound from 1 MB up.

    python benchmarks/bench_collectives.py [--tiles N] [--max-mb M] [--replicas 2,4,8,16]

``--tiles`` sets tilesPerIPU (default 1472, a Mk2 IPU); the 16-replica cases with 64 MB use a
model of 736 tiles per IPU (half an IPU) unless ``--tiles`` is given, to keep host memory and
time sane; the output says so on those lines.
"""

import argparse
import time

import poplar_py as poplar
from poplar_py import program as prog
from poplar_py.compiler.fabric import fabric_graph
from poplibs_py import gcl, popops, poputil

SIZES = [1 << k for k in range(10, 27, 2)]  # 1 KB ... 64 MB
SMALL_MODEL_TILES = 736


def ring_link_bytes_per_cycle(target: poplar.Target, replicas: int) -> float:
    """The one-direction bandwidth of the ring's slowest hop, in bytes per cycle."""
    links = fabric_graph(target.getNumIPUs(), target.ipuLinkTopology)
    if replicas == 2:
        slowest = links.edges[0, 1]["links"]
    else:
        slowest = min(d["links"] for _, _, d in links.edges(data=True))
    return slowest * target.ipuLinkBandwidth / target.getTileClockFrequency()


def run_case(replicas: int, nbytes: int, tiles: int) -> tuple[int, float, float]:
    """(cycles, bound, host seconds) of one all-reduce."""
    start = time.perf_counter()
    m = poplar.IPUModel()
    m.numIPUs, m.tilesPerIPU = replicas, tiles
    device = m.createDevice()
    graph = poplar.Graph(device, replication_factor=replicas)
    popops.addCodelets(graph)
    n = nbytes // 4
    t = graph.addVariable(poplar.FLOAT, [n], "t")
    poputil.mapTensorLinearly(graph, t)
    program = prog.Sequence()
    gcl.allReduceInPlaceCrossReplica(graph, t, gcl.CollectiveOperator.ADD, program)
    engine = poplar.Engine(graph, program)
    engine.load(device)
    engine.run(0)
    cycles = engine.getProfile()["execution"]["totalCycles"]
    target = device.getTarget()
    steps = 2 * (replicas - 1)
    bound = steps / replicas * nbytes / ring_link_bytes_per_cycle(target, replicas) \
        + steps * (target.syncCycles + target.globalSyncCycles)
    return cycles, bound, time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tiles", type=int, default=None)
    parser.add_argument("--max-mb", type=float, default=64)
    parser.add_argument("--replicas", default="2,4,8,16")
    args = parser.parse_args()
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
