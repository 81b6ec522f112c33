"""A hand-built pipeline over IPUs, the program the per-IPU timeline tests and the viewer's
tests run: GPipe's forward schedule, each stage a virtual graph of its own IPU."""

from __future__ import annotations

import poplar_py as poplar
from poplar_py import Input, Output, Vector, Vertex
from poplar_py import program as prog

STAGE_CYCLES = 100_000


class Stage(Vertex):
    x: Input[Vector[float]]
    y: Output[Vector[float]]

    def compute(self):
        for i in range(len(self.x)):
            self.y[i] = self.x[i] * 2.0 + 1.0
        return True


def pipeline_report(stages: int = 4, micro: int = 8, tiles: int = 4, copies: bool = True) -> dict:
    """``stages`` stages on as many IPUs running ``micro`` micro-batches: in time slot t stage s runs
    micro-batch t - s (a compute set of one Stage vertex of STAGE_CYCLES per tile), then (with
    ``copies``) each stage's output is copied to the next stage's IPU. The profile report."""
    m = poplar.IPUModel()
    m.numIPUs, m.tilesPerIPU = stages, tiles
    device = m.createDevice()
    graph = poplar.Graph(device)
    graph.addCodelets(Stage)
    ins, outs, runs = [], [], []
    for s in range(stages):
        v = graph.createVirtualGraph(s * tiles, (s + 1) * tiles)
        x = v.addVariable(poplar.FLOAT, [tiles, 4], f"in{s}")
        y = v.addVariable(poplar.FLOAT, [tiles, 4], f"out{s}")
        cs = v.addComputeSet(f"stage{s}")
        for k in range(tiles):
            v.setTileMapping(x[k], k)
            v.setTileMapping(y[k], k)
            vertex = v.addVertex(cs, "Stage", {"x": x[k], "y": y[k]})
            v.setTileMapping(vertex, k)
            v.setPerfEstimate(vertex, STAGE_CYCLES)
        ins.append(x)
        outs.append(y)
        runs.append(prog.Execute(cs))
    seq = prog.Sequence()
    for t in range(micro + stages - 1):
        live = [s for s in range(stages) if 0 <= t - s < micro]
        seq.add(prog.Sequence([runs[s] for s in live]))
        if copies:
            seq.add(prog.Sequence([prog.Copy(outs[s], ins[s + 1]) for s in live if s + 1 < stages]))
    engine = poplar.Engine(graph, seq)
    engine.load(device)
    engine.run()
    return engine.getProfile()
