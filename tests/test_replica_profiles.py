"""A replicated graph is compiled once and run on every replica's memories: results and every
figure of the profile are exactly those of the compiler that expanded each replica into the
graph (goldens written by it: tests/replica_programs.py)."""

import pytest

from tests.replica_programs import PROGRAMS, load_goldens, normalised

GOLDENS = load_goldens()


def _differences(got, want, path="") -> list[str]:
    if isinstance(want, dict) and isinstance(got, dict):
        out = [f"{path}.{k}: missing" for k in want if k not in got]
        for k in want:
            if k in got:
                out += _differences(got[k], want[k], f"{path}.{k}")
        return out
    if isinstance(want, list) and isinstance(got, list) and len(want) == len(got):
        return [d for i, (g, w) in enumerate(zip(got, want)) for d in _differences(g, w, f"{path}[{i}]")]
    return [] if got == want else [f"{path}: {str(got)[:120]} != {str(want)[:120]}"]


@pytest.mark.parametrize("name", list(PROGRAMS))
def test_results_and_profiles_are_unchanged(name):
    results, profile = normalised(*PROGRAMS[name]())
    golden = GOLDENS[name]
    assert results == golden["results"]
    differences = _differences(profile, golden["profile"])
    assert not differences, "\n".join(differences[:20])
