"""Hundreds of malformed C++ codelet sources (fuzz_cxx.py): each works or raises a PoplarError.
They run in a subprocess, so that a crash names the case that crashed instead of ending the run."""

from __future__ import annotations

from pathlib import Path

import fuzz_cxx
import pytest
from support import isolated_outcomes

HERE = Path(__file__).resolve().parent
CASES = fuzz_cxx.cases()


def test_the_fuzz_suite_is_large_enough():
    assert len(CASES) >= 200
    assert len({c.name for c in CASES}) == len(CASES)


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory) -> dict[str, str]:
    """Every case's line (OK or FAIL, or CRASH for the case a process died in)."""
    names = [c.name for c in CASES]
    return isolated_outcomes(HERE / "fuzz_cxx.py", names, tmp_path_factory.mktemp("fuzz-cache"), timeout=900)


@pytest.mark.parametrize("name", [c.name for c in CASES])
def test_case(outcomes, name):
    assert outcomes[name] == f"OK {name}"
