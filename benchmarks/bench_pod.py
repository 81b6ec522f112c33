"""Pods at model scale: a BERT-base encoder layer replicated over R IPUs, compiled once.

    python benchmarks/bench_pod.py [--quick] [--no-mpi]

The workload (``workloads.bert_layer``): hidden 768, 12 heads, FFN 3072 with GELU,
post-layer-norm, sequence 128, float; the forward pass, the FFN's second weight gradient
``a1^T z`` averaged over replicas with ``gcl.allReduceInPlaceCrossReplica(MEAN)`` and one
``scaledAddTo`` SGD step, on ``Graph(target, replication_factor=R)`` with one IPU of 1472 tiles
per replica. Every row is checked against numpy (every replica's output and the updated weight).

Each row runs in its own child process pinned to one core (``taskset -c 0``,
``POPLAR_PY_THREADS=1``, ``OPENBLAS_NUM_THREADS=1``) at R = 1, 4 and 16 (a Bow Pod16), and at
R = 64 (a Bow Pod64) under ``mpiexec -n 2`` (each rank owning 32 whole replicas, unpinned: a
core per rank). Printed per row: graph build, Engine build, one run (best of 3), peak RSS (per
rank under MPI) and one replica's tile memory (the profile's per-replica total); then the
targets, as ratios measured in this run:

* Engine build at R=16 <= 1.3x the one at R=1;
* peak RSS at R=16 <= 4 GB and <= RSS(R=1) + 1.25 x 16 x the replica's tile memory;
* run at R=16 <= 1.15 x 16 x the run at R=1;
* R=64 under ``mpiexec -n 2``: correct, <= 8 GB per rank.

``--quick``: a small layer (hidden 256, 4 heads, FFN 1024, sequence 64) at R = 1, 2 and 4, and
R = 8 under MPI; ``--no-mpi`` leaves the MPI row out.
"""

from __future__ import annotations

import json
import sys
import time

from timing import best, child_json

GB = 2**30


def _child(replicas: int, quick: bool) -> None:
    """Build, load, run and check one row; rank 0 prints one JSON line."""
    from resource import RUSAGE_SELF, getrusage

    from workloads import BERT_BASE, BertSizes, bert_layer

    import poplar_py as poplar
    from poplar_py.compiler.partition import launched_ranks

    comm = None
    if launched_ranks() > 1:
        from mpi4py import MPI

        comm = MPI.COMM_WORLD
    sizes = BertSizes(hidden=256, heads=4, ffn=1024, seq=64) if quick else BERT_BASE
    model = poplar.IPUModel()
    model.numIPUs = replicas
    device = model.createDevice()
    start = time.perf_counter()
    layer = bert_layer(device.getTarget(), replicas, sizes)
    graph_s = time.perf_counter() - start
    start = time.perf_counter()
    engine = poplar.Engine(layer.graph, layer.program)
    engine_s = time.perf_counter() - start
    engine.load(device)
    layer.write(engine)
    engine.run()
    layer.check(engine)  # every replica's output and the averaged update, against numpy
    run_s = best(lambda: (layer.write(engine), engine.run()), 3)
    rss = getrusage(RUSAGE_SELF).ru_maxrss * 1024  # Linux: ru_maxrss is in KiB
    ranks = [rss] if comm is None else comm.gather(rss, root=0)
    if ranks is not None:
        memory = engine.getProfile()["compilation"]["memory"]["perReplica"]["total"]
        print(json.dumps({"graph": graph_s, "engine": engine_s, "run": run_s, "rss": ranks,
                          "replica": memory}), flush=True)


def measure(replicas: int, quick: bool, ranks: int = 1) -> dict | str:
    """The child's JSON result, or the tail of its error output."""
    child = [sys.executable, __file__, "--child", str(replicas), *(["--quick"] if quick else [])]
    return child_json(["mpiexec", "-n", str(ranks), *child] if ranks > 1 else ["taskset", "-c", "0", *child])


def main() -> None:
    quick = "--quick" in sys.argv
    rows = [(1, 1), (2, 1), (4, 1), (8, 2)] if quick else [(1, 1), (4, 1), (16, 1), (64, 2)]
    if "--no-mpi" in sys.argv:
        rows = [r for r in rows if r[1] == 1]
    print(f"{'replicas':>8} {'ranks':>5} {'graph s':>8} {'Engine s':>9} {'run s':>8} "
          f"{'RSS MB (each rank)':>20} {'replica MB':>10}")
    results: dict[tuple[int, int], dict] = {}
    failed = False
    for replicas, ranks in rows:
        r = measure(replicas, quick, ranks)
        if isinstance(r, str):
            failed = True
            print(f"{replicas:8} {ranks:5} FAILED:\n{r}")
            continue
        results[replicas, ranks] = r
        rss = ", ".join(f"{x / 2**20:.0f}" for x in r["rss"])
        print(f"{replicas:8} {ranks:5} {r['graph']:8.1f} {r['engine']:9.1f} {r['run']:8.2f} {rss:>20} "
              f"{r['replica'] / 2**20:10.1f}", flush=True)
    one_core = sorted(k for k in results if k[1] == 1)
    if len(one_core) >= 2 and one_core[0][0] == 1:
        base, (big, _) = results[one_core[0]], one_core[-1]
        top = results[one_core[-1]]
        limit = base["rss"][0] + 1.25 * big * base["replica"]
        print(f"Engine build R={big} / R=1: {top['engine'] / base['engine']:.2f}x (target <= 1.3x)")
        print(f"peak RSS R={big}: {top['rss'][0] / GB:.2f} GB (target <= 4 GB and <= RSS(1) + 1.25 x {big} x "
              f"replica memory = {limit / GB:.2f} GB)")
        print(f"run R={big} / ({big} x run R=1): {top['run'] / (big * base['run']):.2f}x (target <= 1.15x)")
    for (replicas, ranks), r in results.items():
        if ranks > 1:
            print(f"R={replicas} under mpiexec -n {ranks}: correct, {max(r['rss']) / GB:.2f} GB per rank "
                  "at most (target <= 8 GB)")
    if quick:
        print("(--quick: hidden 256, 4 heads, FFN 1024, sequence 64)")
    if failed:
        sys.exit(1)


if __name__ == "__main__":
    if "--child" in sys.argv:
        _child(int(sys.argv[sys.argv.index("--child") + 1]), "--quick" in sys.argv)
    else:
        main()
