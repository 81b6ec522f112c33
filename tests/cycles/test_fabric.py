"""The IPU-Link fabric: link groups, routes, and the global exchange and sync of bytes that
cross IPUs."""

from __future__ import annotations

import math

import numpy as np

import poplar_py as poplar
from poplar_py import program as prog
from poplar_py.cycles.fabric import RAIL_LINKS, RUNG_LINKS, Fabric, fabric_graph


def _target(ipus: int, topology: str = "ladder", tiles: int = 4) -> poplar.Target:
    m = poplar.IPUModel()
    m.numIPUs, m.tilesPerIPU, m.ipuLinkTopology = ipus, tiles, topology
    return m.createDevice().getTarget()


def test_ladder_and_torus_links():
    ladder = fabric_graph(6, "ladder")
    assert ladder.edges[0, 1]["links"] == RUNG_LINKS and ladder.edges[2, 0]["links"] == RAIL_LINKS
    assert not ladder.has_edge(4, 0) and not ladder.has_edge(0, 3)
    torus = fabric_graph(6, "torus")
    assert torus.edges[4, 0]["links"] == RAIL_LINKS and torus.edges[1, 5]["links"] == RAIL_LINKS


def test_bytes_follow_the_fewest_hops_and_the_busiest_group_sets_the_time():
    fabric = Fabric(_target(8))
    assert fabric.route(0, 1) == ((0, 1),)
    assert len(fabric.route(0, 7)) == 4  # three rails and a rung
    per_link = fabric.link_bytes_per_cycle
    flows = np.zeros((8, 8), np.int64)
    flows[0, 2] = 1_000_000
    assert fabric.cycles(flows) == math.ceil(1_000_000 / RAIL_LINKS / per_link)
    flows[0, 4] = 1_000_000  # shares the 0 -> 2 rail
    assert fabric.cycles(flows) == math.ceil(2_000_000 / RAIL_LINKS / per_link)
    torus = Fabric(_target(8, "torus"))
    assert len(torus.route(0, 6)) == 1  # the wrap-around rail


def _copy_cycles(ipus: int, dst_tile: int) -> dict:
    m = poplar.IPUModel()
    m.numIPUs, m.tilesPerIPU = ipus, 4
    device = m.createDevice()
    graph = poplar.Graph(device)
    a = graph.addVariable(poplar.FLOAT, [4096], "a")
    b = graph.addVariable(poplar.FLOAT, [4096], "b")
    graph.setTileMapping(a, 0)
    graph.setTileMapping(b, dst_tile)
    engine = poplar.Engine(graph, prog.Copy(a, b))
    engine.load(device)
    engine.run()
    (step,) = engine.getProfile()["execution"]["steps"]
    return step


def test_a_copy_that_crosses_ipus_pays_the_links_and_a_global_sync():
    target = _target(2)
    within, across = _copy_cycles(2, 1), _copy_cycles(2, 5)
    assert within["globalExchange"] == 0
    link = target.ipuLinkBandwidth / target.getTileClockFrequency()
    assert across["globalExchange"] == math.ceil(4096 * 4 / RUNG_LINKS / link)
    assert across["sync"] == within["sync"] + target.globalSyncCycles > within["sync"]
    assert across["cycles"] == within["cycles"] + across["globalExchange"] + target.globalSyncCycles


def test_the_profile_has_memory_and_cycles_per_ipu():
    m = poplar.IPUModel()
    m.numIPUs, m.tilesPerIPU = 2, 4
    device = m.createDevice()
    graph = poplar.Graph(device)
    a = graph.addVariable(poplar.FLOAT, [1000], "a")
    b = graph.addVariable(poplar.FLOAT, [10], "b")
    graph.setTileMapping(a, 6)
    graph.setTileMapping(b, 0)
    engine = poplar.Engine(graph, prog.Copy(a[:10], b))
    engine.load(device)
    engine.run()
    report = engine.getProfile()
    memory = [ipu["memory"] for ipu in report["compilation"]["ipus"]]
    assert memory[1] >= 4000 > memory[0] >= 40 and sum(memory) == report["compilation"]["memory"]["total"]
    averages = [ipu["tileAverages"]["globalExchange"] for ipu in report["execution"]["ipus"]]
    assert averages[0] == averages[1] == report["execution"]["tileAverages"]["globalExchange"] > 0
