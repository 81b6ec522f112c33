"""Per-IPU timelines: each IPU runs its own steps between syncs, so work on different IPUs
overlaps, a pipeline's bubble is the GPipe schedule's, and syncs wait for the latest IPU."""

import numpy as np
import pytest
from pipelines import STAGE_CYCLES, pipeline_report

import poplar_py as poplar
from poplar_py import InOut, Vector, Vertex
from poplar_py import program as prog
from poplar_py.cycles.timeline import Span, replay


class Bump(Vertex):
    x: InOut[Vector[float]]

    def compute(self):
        for i in range(len(self.x)):
            self.x[i] = self.x[i] + 1.0
        return True


def device(ipus: int, tiles: int = 4) -> poplar.Device:
    m = poplar.IPUModel()
    m.numIPUs, m.tilesPerIPU = ipus, tiles
    return m.createDevice()


def bump_on(
    graph: poplar.Graph, ipu: int, name: str, cycles: int = STAGE_CYCLES
) -> tuple[prog.Execute, poplar.Tensor]:
    """A compute set of one Bump vertex per tile of IPU ``ipu`` (each ``cycles``), on its own tensor."""
    tiles = graph.getTarget().getTilesPerIPU()
    x = graph.addVariable(poplar.FLOAT, [tiles, 4], name)
    cs = graph.addComputeSet(name)
    for k in range(tiles):
        tile = ipu * tiles + k
        graph.setTileMapping(x[k], tile)
        v = graph.addVertex(cs, "Bump", {"x": x[k]})
        graph.setTileMapping(v, tile)
        graph.setPerfEstimate(v, cycles)
    return prog.Execute(cs), x


def total(graph: poplar.Graph, d: poplar.Device, program: prog.Program) -> dict:
    engine = poplar.Engine(graph, program)
    engine.load(d)
    engine.run()
    return engine.getProfile()["execution"]


def test_compute_sets_on_two_ipus_overlap():
    d = device(2)
    graph = poplar.Graph(d)
    graph.addCodelets(Bump)
    a, _ = bump_on(graph, 0, "a")
    b, _ = bump_on(graph, 1, "b")
    one = total(graph, d, a)["totalCycles"]
    both = total(graph, d, prog.Sequence([a, b]))
    assert one > STAGE_CYCLES and both["totalCycles"] <= 1.05 * one  # was 2 x one: a global clock
    assert both["totalCycles"] == one
    assert [i["cycles"] for i in both["ipus"]] == [one, one] and [i["waiting"] for i in both["ipus"]] == [
        0,
        0,
    ]


@pytest.mark.parametrize(
    "sync,waits",
    [(poplar.SyncType.INTERNAL, False), (poplar.SyncType.EXTERNAL, True), (poplar.SyncType.GLOBAL, True)],
)
def test_an_external_sync_waits_for_every_ipu(sync, waits):
    d = device(2)
    graph = poplar.Graph(d)
    graph.addCodelets(Bump)
    a, _ = bump_on(graph, 0, "a")
    b, _ = bump_on(graph, 1, "b", cycles=10)
    one = total(graph, d, a)["totalCycles"]
    small = total(graph, d, b)["totalCycles"]
    barrier = d.getTarget().syncCycles
    ex = total(graph, d, prog.Sequence([a, prog.Sync(sync), b]))
    assert ex["totalCycles"] == (one + barrier + small if waits else one + barrier)
    assert (ex["ipus"][1]["waiting"] > 0) == waits


def test_ipus_wait_for_the_one_holding_a_predicate():
    d = device(2)
    graph = poplar.Graph(d)
    graph.addCodelets(Bump)
    a, _ = bump_on(graph, 1, "a")
    flag = graph.addConstant(poplar.BOOL, [], False, "flag")
    graph.setTileMapping(flag, 4)  # on IPU 1, behind a's work
    b, _ = bump_on(graph, 0, "b", cycles=10)
    ex = total(graph, d, prog.Sequence([a, prog.If(flag, prog.Sequence(), b)]))
    assert ex["ipus"][0]["waiting"] > STAGE_CYCLES  # IPU 0 waited for IPU 1 to know the branch


def pipeline(copies: bool) -> tuple[dict, int, int]:
    """The execution profile of a 4-stage pipeline of 8 micro-batches (tests/pipelines.py),
    stages and micro-batches."""
    return pipeline_report(copies=copies)["execution"], 4, 8


def test_a_pipeline_has_the_gpipe_bubble():
    ex, stages, micro = pipeline(copies=True)
    stage = next(s["cycles"] for s in ex["steps"] if s["name"] == "stage0")
    bubble = 1 - micro * stage / ex["totalCycles"]
    theory = (stages - 1) / (micro + stages - 1)
    assert abs(bubble - theory) < 0.02, (bubble, theory)
    assert ex["totalCycles"] < 0.4 * stages * micro * stage  # the stages overlap


def test_stages_that_pass_nothing_never_wait():
    ex, _, micro = pipeline(copies=False)
    stage = next(s["cycles"] for s in ex["steps"] if s["name"] == "stage0")
    assert ex["totalCycles"] == micro * stage and not any(i["waiting"] for i in ex["ipus"])


def test_a_copy_between_stages_syncs_its_two_ipus_and_no_other():
    ex, stages, _ = pipeline(copies=True)
    names = [s["name"] for s in ex["steps"]]
    seen = set()
    for entry in ex["timeline"]["entries"]:
        name = names[entry["step"]]
        if name.startswith("Copy(out"):
            s = int(name[len("Copy(out")])
            assert entry["ipus"] == [s, s + 1], name
            assert entry["start"][0] == entry["start"][1]  # both start together: synchronised
            seen.add(s)
        elif name.startswith("stage"):
            assert entry["ipus"] == [int(name[5:])] and entry["arrive"] == entry["start"]  # no wait
    assert seen == set(range(stages - 1)) and ex["timeline"]["truncated"] == 0


def test_replay_waits_only_at_syncs():
    spans = {
        0: Span(np.array([0]), False, 10),
        1: Span(np.array([1]), False, 3),
        2: Span(np.array([0, 1]), True, 5),
        3: Span(np.array([0, 1]), False, 2),
    }
    t = replay([0, 1, 2, 3, 1, -2], spans, 2, 2, keep=100)
    # IPU 1 waits 7 at the sync; the predicate on IPU 1 makes IPU 0 wait for its last 3 cycles
    assert t.clocks.tolist() == [20, 20] and t.waiting.tolist() == [3, 7] and t.busy.tolist() == [17, 13]
    assert len(t.entries) == 5 and t.truncated == 0
    assert replay([0, 1, 2, 0], spans, 2, 2, keep=2).truncated == 2  # none kept after the sync's two IPUs


@pytest.mark.parametrize("bad", ["GLOBAL", 2, None])
def test_a_sync_of_an_unknown_type_is_named(bad):
    with pytest.raises(poplar.ProgramArgumentError, match="Sync needs a SyncType"):
        prog.Sync(bad)
