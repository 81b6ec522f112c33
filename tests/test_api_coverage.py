"""benchmarks/api_coverage.py: reads its committed data and resolves names as issue 41 defines."""

import importlib.util
import os

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _module():
    path = os.path.join(ROOT, "benchmarks", "api_coverage.py")
    spec = importlib.util.spec_from_file_location("api_coverage", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_resolution_rules():
    cov = _module()
    import poplar_py

    assert cov.resolve("poplar::Graph::addVariable") is poplar_py.Graph.addVariable
    assert cov.resolve("poplar::program::Copy") is poplar_py.program.Copy
    assert cov.resolve("popops::expr::BinaryOpType::ADD") is not None
    assert cov.resolve("poplar::NoSuchName") is None
    assert cov.resolve("popnn::no_such_namespace::f") is None


def test_figures_are_shares(capsys):
    cov = _module()
    data = cov.load()
    assert data["files"] > 1000 and len(data["corpus"]) >= 20
    res = cov.measure(data)
    for lib in (*cov.LIBS, "all"):
        r = res[lib]
        assert r["names"] > 0
        assert 0 <= r["covered"] <= r["names"]
        assert 0 <= r["covered_uses"] <= r["uses"] + 1e-6
    assert res["all"]["names"] == sum(res[lib]["names"] for lib in cov.LIBS)
    cov.main(["--missing", "gcl", "--limit", "3"])
    assert len(capsys.readouterr().out.splitlines()) <= 3
