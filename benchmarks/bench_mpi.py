"""One simulation over K MPI ranks: run time, memory and MPI traffic at K = 1 and K = 2.

    python benchmarks/bench_mpi.py [--quick] [tut7|matmul ...]

Under ``mpiexec -n K`` every rank builds the same graph, holds the memories of one contiguous
block of tiles (whole IPUs when the device has at least K, else an even split) and runs only
its own vertices; data crossing ranks moves in one MPI ``Alltoallv`` per exchange phase
(``poplar_py/runtime/mpi_world.py``, ``partition.py``).

Workloads:

* ``tut7``: tutorial 7's matrix-vector program at 10000x1000 (its own codelets, one IPU of
  1472 tiles, so at K=2 each rank holds 736 tiles and the exchanges cross ranks);
* ``matmul``: "matmul x8", a graph replicated 8 times (one IPU of 1472 tiles per replica)
  running poplin.matMul 512^3 with operands from createMatMulInputLHS/RHS: at K=2 each rank
  holds 4 whole replicas and nothing crosses ranks. Replicas 0 and 7 are checked against numpy.

``--quick``: tut7 at 2000x500, matmul x8 at 256^3.

Each workload runs in a child ``mpiexec -n K`` (K = 1, 2) with ``POPLAR_PY_THREADS=1`` and
``OPENBLAS_NUM_THREADS=1``: one core per rank. At K=1 ``PMI_SIZE`` is 1, so the engine runs
single-process (no mpi4py). Printed per row:

* ``build s``: graph construction, compilation and ``load`` on rank 0 (not parallel: every rank
  builds and compiles the whole graph);
* ``run ms``: wall time of one ``engine.run()``, best of several, each followed by a barrier
  so that it ends when the slowest rank ends; and its speed-up over K=1;
* ``RSS MB``: peak resident set size (``ru_maxrss``) of each rank, the largest, then all ranks;
* ``MPI bytes/run``: bytes sent between ranks during one run, summed over ranks (the growth of
  each rank's ``world.traffic``; 0 at K=1).
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from timing import child_json

HERE = Path(__file__).resolve().parent
RANKS = (1, 2)
REPLICAS = 8
TARGET = ("matmul", 2, 1.6)  # matmul x8 at K=2: at least 1.6x faster than at K=1


def _tut7(quick: bool) -> tuple:
    """(engine, check, repeat): tutorial 7's program, loaded and given its inputs."""
    import numpy as np
    from workloads import tut7

    engine, m, v = tut7(*((2000, 500) if quick else (10000, 1000)))

    def check() -> None:
        np.testing.assert_allclose(engine.readTensor("out"), m @ v, rtol=1e-4, atol=1e-3)

    return engine, check, 20


def _matmul(quick: bool) -> tuple:
    """(engine, check, repeat): matMul on each of 8 replicas, one IPU each."""
    import numpy as np
    from workloads import matmul

    engine, ha, hb = matmul(256 if quick else 512, replicas=REPLICAS)

    def check() -> None:
        want = ha @ hb
        for r in (0, REPLICAS - 1):  # at K=2, replica 0 is on rank 0 and replica 7 on rank 1
            np.testing.assert_allclose(engine.readTensor("c", replicaIndex=r), want, rtol=1e-3, atol=1e-3)

    return engine, check, 10


WORKLOADS = {"tut7": _tut7, "matmul": _matmul}
LABELS = {"tut7": "tut7", "matmul": f"matmul x{REPLICAS}"}


def _child(workload: str, quick: bool) -> None:
    """One rank: build, time, check; rank 0 prints one JSON line with every rank's figures."""
    sys.path.insert(0, str(HERE))
    from resource import RUSAGE_SELF, getrusage

    from timing import best

    from poplar_py.compiler.partition import launched_ranks

    comm = None
    if launched_ranks() > 1:
        from mpi4py import MPI

        comm = MPI.COMM_WORLD

    def sync() -> None:
        if comm is not None:
            comm.Barrier()

    start = time.perf_counter()
    engine, check, repeat = WORKLOADS[workload](quick)
    sync()
    build = time.perf_counter() - start
    world = engine._machine.world  # private: this benchmark's window onto the MPI traffic
    before = world.traffic
    engine.run()
    traffic = world.traffic - before  # one run, this rank
    check()
    run = best(lambda: (engine.run(), sync()), repeat)
    check()  # still right after the timed runs
    mine = {"rank": world.rank, "traffic": traffic, "run": run,
            "rss": getrusage(RUSAGE_SELF).ru_maxrss * 1024}  # Linux: ru_maxrss is in KiB
    ranks = [mine] if comm is None else comm.gather(mine, root=0)
    if ranks is not None:
        print(json.dumps({"build": build, "run": max(r["run"] for r in ranks),
                          "traffic": sum(r["traffic"] for r in ranks),
                          "rss": [r["rss"] for r in sorted(ranks, key=lambda r: r["rank"])]}), flush=True)


def measure(workload: str, ranks: int, quick: bool) -> dict | str:
    """The child's JSON result, or the tail of its error output."""
    cmd = ["mpiexec", "-n", str(ranks), sys.executable, __file__, "--child", workload]
    return child_json(cmd + (["--quick"] if quick else []))


def main() -> None:
    quick = "--quick" in sys.argv
    chosen = [w for w in WORKLOADS if w in sys.argv[1:]] or list(WORKLOADS)
    print(f"{'workload':10} {'K':>2} {'build s':>8} {'run ms':>9} {'speed-up':>9} {'RSS MB':>7} "
          f"{'(each rank)':14} {'MPI bytes/run':>14}")
    failed = False
    for workload in chosen:
        one = None
        for k in RANKS:
            r = measure(workload, k, quick)
            if isinstance(r, str):
                failed = True
                print(f"{LABELS[workload]:10} {k:2} FAILED:\n{r}")
                continue
            one = one or (r if k == 1 else None)
            speed = f"{one['run'] / r['run']:8.2f}x" if one else f"{'?':>9}"
            rss = [x / 2**20 for x in r["rss"]]
            each = ", ".join(f"{x:.0f}" for x in rss)
            print(f"{LABELS[workload]:10} {k:2} {r['build']:8.1f} {r['run'] * 1e3:9.2f} {speed} "
                  f"{max(rss):7.0f} {'(' + each + ')':14} {r['traffic']:14,d}")
    name, k, factor = TARGET
    print(f"target: {LABELS[name]} at K={k} >= {factor}x faster than K=1")
    if quick:
        print("(--quick: tut7 2000x500, matmul x8 256^3)")
    if failed:
        sys.exit(1)


if __name__ == "__main__":
    if "--child" in sys.argv:
        _child(sys.argv[sys.argv.index("--child") + 1], "--quick" in sys.argv)
    else:
        main()
