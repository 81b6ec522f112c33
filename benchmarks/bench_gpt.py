"""Tutorial 10's targets: each command as a user runs it, its time and peak memory.

    python benchmarks/bench_gpt.py [--long] [--no-mpi]

Rows (each a fresh process; one core, ``taskset -c 0`` and ``POPLAR_PY_THREADS=1``, unless under
MPI, where each rank has a core):

* the default command (a Bow Pod16: tp 2, pp 2, dp 4; 3 steps): at most 120 s and 4 GB;
* ``--pod 64`` under ``mpiexec -n 2`` (2 steps): at most 8 GB a rank;
* ``--pod 256`` under ``mpiexec -n 2`` (2 steps): at most 15 minutes and 10 GB a rank, and its first
  loss the same as a run of the same seed on 32 IPUs without tensor or pipeline parallelism
  (``--tp 1 --pp 1 --dp 32 --accum 2``, the same micro-batches);
* ``--phased`` on a Pod of 2 IPUs of 96 tiles training a model bigger than their SRAM;
* ``--long``: ``--steps 200`` of the default command, whose loss must end below the text's unigram
  entropy (about 20 minutes).
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import time

from timing import ROOT

GPT = str(ROOT / "tutorials" / "tut10_gpt" / "gpt.py")


def run(args: list[str], ranks: int = 1) -> tuple[str, float, float]:
    """(output, seconds, peak RSS of its largest process in GB) of ``poplar-py run gpt.py args``."""
    env = dict(os.environ, POPLAR_PY_THREADS="1", OPENBLAS_NUM_THREADS="1", PYTHONPATH=str(ROOT))
    command = ["poplar-py", "run", GPT, *args]
    command = ["mpiexec", "-n", str(ranks), *command] if ranks > 1 else ["taskset", "-c", "0", *command]
    start = time.perf_counter()
    # a process of its own measures the command's peak (its own children's: no other row's)
    done = subprocess.run([sys.executable, "-c", MEASURE, *command], capture_output=True, text=True, env=env,
                          cwd=ROOT)
    seconds = time.perf_counter() - start
    if done.returncode:
        return done.stdout + done.stderr[-2000:], seconds, 0.0
    return done.stdout, seconds, int(done.stderr.strip().splitlines()[-1]) / 2**20


MEASURE = ("import resource, subprocess, sys; code = subprocess.run(sys.argv[1:]).returncode; "
           "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, file=sys.stderr); sys.exit(code)")


def losses(out: str) -> list[float]:
    return [float(m) for m in re.findall(r"^step \d+ loss ([\d.]+)", out, re.M)]


def row(name: str, out: str, seconds: float, gb: float, targets: str) -> None:
    found = losses(out)
    print(f"{name:<34} {seconds:>8.1f} s {gb:>6.2f} GB  losses {', '.join(f'{x:.4f}' for x in found[:3])}"
          f"{' ...' if len(found) > 3 else ''}  ({targets})", flush=True)
    if not found:
        print(out[-1500:])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--long", action="store_true")
    parser.add_argument("--no-mpi", action="store_true")
    args = parser.parse_args()
    out, s, gb = run([])
    row("default (Pod16), 3 steps", out, s, gb, "target <= 120 s, <= 4 GB")
    print("  " + next((line for line in out.splitlines() if line.startswith("parameters")), ""))
    if not args.no_mpi:
        out, s, gb = run(["--pod", "64", "--steps", "2"], ranks=2)
        row("--pod 64, mpiexec -n 2, 2 steps", out, s, gb, "target <= 8 GB a rank")
        big, s, gb = run(["--pod", "256", "--steps", "2"], ranks=2)
        row("--pod 256, mpiexec -n 2, 2 steps", big, s, gb, "target <= 15 min, <= 10 GB a rank")
        small, s, gb = run(["--tp", "1", "--pp", "1", "--dp", "32", "--accum", "2", "--steps", "1"])
        row("  same seed, tp 1 pp 1 dp 32", small, s, gb, "its first loss against Pod256's")
        if losses(big) and losses(small):
            print(f"  first losses: Pod256 {losses(big)[0]:.4f}, 32 IPUs {losses(small)[0]:.4f}")
    out, s, gb = run(["--tp", "1", "--pp", "1", "--dp", "2", "--phased", "--tiles", "96", "--hidden", "512",
                      "--heads", "8", "--layers", "12", "--seq", "16", "--steps", "3"])
    row("--phased, 2 IPUs of 96 tiles", out, s, gb, "a model bigger than the Pod's SRAM trains")
    print("  " + next((line for line in out.splitlines() if line.startswith("parameters")), ""))
    if args.long:
        out, s, gb = run(["--steps", "200"])
        entropy = float(re.search(r"unigram entropy ([\d.]+)", out).group(1)) if "entropy" in out else 0.0
        found = losses(out)
        print(f"--steps 200: {s:.0f} s; last loss {found[-1] if found else float('nan'):.4f} against the "
              f"unigram entropy {entropy:.3f} (target: below)")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
