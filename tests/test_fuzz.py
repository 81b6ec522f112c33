"""A seeded fuzz suite: several hundred bad inputs, each a PoplarError naming its culprit that
leaves the graph unchanged, and valid programs around replication, replica groups, remote buffers
and executables, each
equal to numpy or to the directly built Engine. Cases that compile codelets that might crash
the process run in subprocesses (a crash there fails the case instead of the test run)."""

from __future__ import annotations

from pathlib import Path

import fuzz_executables
import fuzz_groups
import fuzz_remote_buffers
import fuzz_replicas
import pytest
from fuzz_cases import cases, check
from support import isolated_outcomes

ALL = (cases() + fuzz_replicas.cases() + fuzz_groups.cases() + fuzz_remote_buffers.cases()
       + fuzz_executables.cases())
IN_PROCESS = [c for c in ALL if not c.isolated]
ISOLATED = [c for c in ALL if c.isolated]
HERE = Path(__file__).resolve().parent


def test_the_suite_is_large_enough():
    assert len(ALL) >= 600
    assert len(fuzz_replicas.cases()) + len(fuzz_executables.cases()) >= 200
    assert len(fuzz_groups.cases()) >= 200
    assert len(fuzz_remote_buffers.cases()) >= 200
    assert sum(c.culprit is None for c in ALL) >= 50  # valid programs checked against a reference
    assert len({c.name for c in ALL}) == len(ALL)


@pytest.mark.parametrize("case", IN_PROCESS, ids=[c.name for c in IN_PROCESS])
def test_case(case, tmp_path):
    problem = check(case, tmp_path)
    assert problem is None, problem


@pytest.fixture(scope="module")
def isolated_results(tmp_path_factory):
    """Run the isolated cases in subprocesses (two batches), each case's outcome by name; a
    case during which the process died is reported with its exit status."""
    names = [c.name for c in ISOLATED]
    return isolated_outcomes(HERE / "fuzz_cases.py", names, tmp_path_factory.mktemp("kernels"))


@pytest.mark.parametrize("case", ISOLATED, ids=[c.name for c in ISOLATED])
def test_bad_input_in_a_subprocess(case, isolated_results):
    outcome = isolated_results[case.name]
    assert outcome.startswith("OK"), outcome
