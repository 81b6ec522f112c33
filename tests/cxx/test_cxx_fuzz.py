"""Hundreds of malformed C++ codelet sources (fuzz_cxx.py): each works or raises a PoplarError.
They run in a subprocess, so that a crash names the case that crashed instead of ending the run."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import fuzz_cxx
import pytest

HERE = Path(__file__).resolve().parent
CASES = fuzz_cxx.cases()


def test_the_fuzz_suite_is_large_enough():
    assert len(CASES) >= 200
    assert len({c.name for c in CASES}) == len(CASES)


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory) -> dict[str, str]:
    """Every case's line (OK or FAIL); after a crash, the case it died in is reported with its exit
    status and the rest run in a fresh process."""
    results: dict[str, str] = {}
    names = [c.name for c in CASES]
    env = dict(os.environ, POPLAR_PY_CACHE_DIR=str(tmp_path_factory.mktemp("fuzz-cache")))
    while names:
        proc = subprocess.run([sys.executable, str(HERE / "fuzz_cxx.py"), *names], capture_output=True,
                              text=True, env=env, cwd=HERE, timeout=900)
        started = None
        for line in proc.stdout.splitlines():
            kind, _, rest = line.partition(" ")
            name = rest.split(" ", 1)[0]
            if kind == "START":
                started = name
            elif kind in ("OK", "FAIL") and name == started:
                results[name] = line
                started = None
        if started is not None:
            results[started] = f"CRASH {started} exit status {proc.returncode}: {proc.stderr[-500:]}"
        names = [n for n in names if n not in results]
        if proc.returncode == 0 and names:
            results.update({n: f"MISSING {n}" for n in names})
            break
    return results


@pytest.mark.parametrize("name", [c.name for c in CASES])
def test_case(outcomes, name):
    assert outcomes[name] == f"OK {name}"
