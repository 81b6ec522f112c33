"""The Engine build's progress bar on stderr."""

import pytest

import poplar_py as poplar
from poplar_py import program as prog


def _build() -> None:
    device = poplar.IPUModel().createDevice()
    graph = poplar.Graph(device)
    x = graph.addVariable(poplar.FLOAT, [4], "x")
    graph.setTileMapping(x, 0)
    poplar.Engine(graph, prog.Copy(x, x))


@pytest.mark.parametrize("setting, shown", [("1", True), ("0", False), (None, False)])
def test_progress_bar_is_forced_on_off_or_shown_only_on_a_terminal(setting, shown, monkeypatch, capfd):
    if setting is None:
        monkeypatch.delenv("POPLAR_PY_PROGRESS", raising=False)  # stderr is not a terminal here
    else:
        monkeypatch.setenv("POPLAR_PY_PROGRESS", setting)
    _build()
    assert ("Building the engine" in capfd.readouterr().err) == shown
