"""Streaming Memory: remote buffer copies in the profile and on the host, and replica groups.

    python benchmarks/bench_streaming.py [--quick]

Prints, each measured in this run:

1. The simulated bandwidth of one remote copy (a row into a tensor spread over one IPU's 1472
   tiles, and back) for rows of 1 KB to 64 MB: bytes over the step's cycles (sync, the tiles'
   exchange, the transfer's latency and its bytes) against the target's Streaming Memory
   bandwidth. Target: 90-100% from 1 MB up, never more.
2. The host time of those copies per GB against a numpy copy of the same bytes (best of 7,
   one core: ``taskset -c 0``, ``POPLAR_PY_THREADS=1``). Target: at most 2x from 1 MB up (below,
   the fixed cost of running a step, about 10 us, outweighs the bytes).
3. Peak RSS of a program that declares 64 GB of remote buffers and writes and reads 100 MB
   of them, against the same program with a tensor copy in place of the remote copies (each in
   its own process). Target: at most 300 MB more.
4. ADD all-reduces of CONSECUTIVE and ORTHOGONAL groups of 4 on a Pod16 (16 replicas of one IPU)
   against the ring bound of the links each group uses (``bench_collectives.group_all_reduce``).
   Target: within 1.3x.

``--quick``: rows up to 4 MB, 40 MB touched, groups at 1 MB only.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import numpy as np
from bench_collectives import group_all_reduce
from timing import ROOT, best, child_json

MB = 2**20
ROWS = [1 << k for k in range(10, 27, 2)]  # 1 KB ... 64 MB
TILES = 1472


def _copy_engine(nbytes: int, remote: bool = True):
    """A graph of one IPU with a FLOAT tensor of ``nbytes`` spread over its tiles and programs
    copying it from (0) and to (1) row 0 of a remote buffer (``remote``), or from and to another
    tensor; the loaded engine and its device."""
    import poplar_py as poplar
    from poplar_py import program as prog
    from poplibs_py import poputil

    device = poplar.IPUModel().createDevice()
    graph = poplar.Graph(device)
    n = nbytes // 4
    t = graph.addVariable(poplar.FLOAT, [n], "t")
    poputil.mapTensorLinearly(graph, t)
    if remote:
        rb = graph.addRemoteBuffer("rows", poplar.FLOAT, n)
        programs = [prog.Copy(rb, t), prog.Copy(t, rb)]
    else:
        other = graph.addVariable(poplar.FLOAT, [n], "other")
        poputil.mapTensorLinearly(graph, other)
        programs = [prog.Copy(other, t), prog.Copy(t, other)]
    engine = poplar.Engine(graph, programs)
    engine.load(device)
    return engine, device


def _bandwidth_child(nbytes: int) -> None:
    """One row size: simulated bandwidths of a read and a write, host seconds of each and of numpy."""
    engine, device = _copy_engine(nbytes)
    target = device.getTarget()
    engine.copyToRemoteBuffer(np.ones(nbytes // 4, np.float32), "rows", 0)
    seconds = [best(lambda p=p: engine.run(p), repeat=7) for p in (0, 1)]
    steps = engine.getProfile()["execution"]["steps"]
    clock, peak = target.getTileClockFrequency(), target.getStreamingMemoryBandwidth()
    simulated = [nbytes / (s["cycles"] / clock) / peak for s in steps]
    src, dst = np.ones(nbytes, np.uint8), np.empty(nbytes, np.uint8)
    numpy = best(lambda: np.copyto(dst, src), repeat=7)
    print(json.dumps({"simulated": simulated, "host": seconds, "numpy": numpy}))


def _rss_child(declared: int, touched: int, remote: bool) -> None:
    """Peak RSS (MB) of a program with a tensor of ``touched`` bytes written to and read back from
    Streaming Memory, beside remote buffers declaring ``declared`` bytes in all (``remote``), or
    the same tensor copied to and from another tensor instead."""
    from resource import RUSAGE_SELF, getrusage

    import poplar_py as poplar
    from poplar_py import program as prog
    from poplibs_py import poputil

    device = poplar.IPUModel().createDevice()
    graph = poplar.Graph(device)
    n = touched // 4
    t = graph.addVariable(poplar.FLOAT, [n], "t")
    poputil.mapTensorLinearly(graph, t)
    graph.createHostWrite("t", t)
    if remote:
        rows = graph.addRemoteBuffer("rows", poplar.FLOAT, n, repeats=declared // touched)
        programs = [prog.Copy(t, rows), prog.Copy(rows, t)]
    else:
        other = graph.addVariable(poplar.FLOAT, [n], "other")
        poputil.mapTensorLinearly(graph, other)
        programs = [prog.Copy(t, other), prog.Copy(other, t)]
    engine = poplar.Engine(graph, prog.Sequence(programs))
    engine.load(device)
    engine.writeTensor("t", np.ones(n, np.float32))
    engine.run()
    print(json.dumps({"rss_mb": getrusage(RUSAGE_SELF).ru_maxrss / 1024}))


def _pinned(*args: str) -> dict | str:
    return child_json(["taskset", "-c", "0", sys.executable, __file__, *args])


def bandwidth_rows(quick: bool) -> None:
    print("1-2. one remote copy of a row into a tensor over 1472 tiles (read) and back (write)")
    print(f"{'row':>10} {'read %':>7} {'write %':>8} {'host/numpy read':>16} {'write':>7} {'ms per GB':>10}")
    for nbytes in (r for r in ROWS if r <= (4 * MB if quick else 64 * MB)):
        got = _pinned("--child-bandwidth", str(nbytes))
        if isinstance(got, str):
            print(f"{nbytes:>10,} failed:\n{got}")
            continue
        sim, host, numpy = got["simulated"], got["host"], got["numpy"]
        ratios = [h / numpy for h in host]
        flags = []
        if nbytes >= MB and not all(0.9 <= s <= 1.0 for s in sim):
            flags.append("bandwidth target 90-100%")
        if nbytes >= MB and max(ratios) > 2:
            flags.append("host target <= 2x")
        print(f"{nbytes:>10,} {100 * sim[0]:>7.1f} {100 * sim[1]:>8.1f} {ratios[0]:>16.2f} {ratios[1]:>7.2f} "
              f"{1e3 * max(host) / (nbytes / 2**30):>10.1f}  {'; '.join(flags)}", flush=True)


def rss_rows(quick: bool) -> None:
    declared, touched = 64 * 10**9, (40 if quick else 100) * MB
    print(f"\n3. peak RSS: {declared / 1e9:.0f} GB of remote buffers declared, {touched // MB} MB written "
          "and read back")
    got = {}
    for remote in (True, False):
        got[remote] = child_json([sys.executable, __file__, "--child-rss", str(declared), str(touched),
                                  str(int(remote))])
    if any(isinstance(g, str) for g in got.values()):
        print("failed:", *[g for g in got.values() if isinstance(g, str)], sep="\n")
        return
    more = got[True]["rss_mb"] - got[False]["rss_mb"]
    print(f"   with the buffers {got[True]['rss_mb']:,.0f} MB, with a tensor copy instead "
          f"{got[False]['rss_mb']:,.0f} MB: {more:+,.0f} MB (target <= +300 MB)")


def group_rows(quick: bool) -> None:
    print("\n4. ADD all-reduce within groups of 4 on a Pod16 (16 replicas of one IPU), against the ring "
          "bound of the links each group uses")
    print(f"{'group':>12} {'bytes':>10} {'cycles':>12} {'ring bound':>12} {'ratio':>6} {'host s':>7}")
    for nbytes in [MB] if quick else [MB, 4 * MB]:
        for kind in ("CONSECUTIVE", "ORTHOGONAL"):
            cycles, bound, host = group_all_reduce(kind, 4, 16, nbytes, TILES)
            flag = "  (target <= 1.3)" if cycles / bound > 1.3 else ""
            print(f"{kind:>12} {nbytes:>10,} {cycles:>12,} {bound:>12,.0f} {cycles / bound:>6.2f} "
                  f"{host:>7.1f}{flag}", flush=True)


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--child-bandwidth":
        _bandwidth_child(int(sys.argv[2]))
        return
    if len(sys.argv) > 1 and sys.argv[1] == "--child-rss":
        _rss_child(int(sys.argv[2]), int(sys.argv[3]), sys.argv[4] == "1")
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    start = time.perf_counter()
    bandwidth_rows(args.quick)
    rss_rows(args.quick)
    group_rows(args.quick)
    print(f"\n({time.perf_counter() - start:.0f} s; the checkout at {ROOT})")


if __name__ == "__main__":
    main()
