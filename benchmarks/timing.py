"""The timing helper every benchmark uses."""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def best(fn: Callable[[], object], repeat: int = 7) -> float:
    """Best wall time of ``repeat`` runs after one warm-up, in seconds (minima are stable on a
    noisy machine)."""
    fn()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def child_json(cmd: list[str]) -> dict | str:
    """Run a benchmark's child (one core's worth of threads, the checkout on the path): the JSON
    of its last output line, or the tail of its error output."""
    env = dict(os.environ, POPLAR_PY_THREADS="1", OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1",
               PYTHONPATH=str(ROOT))
    out = subprocess.run(cmd, env=env, capture_output=True, text=True)
    lines = out.stdout.strip().splitlines()
    if out.returncode != 0 or not lines:
        return "\n".join((out.stderr or out.stdout).strip().splitlines()[-30:])
    return json.loads(lines[-1])
