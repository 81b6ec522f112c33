"""The HTML profile viewer: a self-contained page, checked in a real headless browser (chromium).

The browser tests skip, saying why, on a machine without chromium, chromedriver or selenium.
Each saves a screenshot into its pytest tmp dir.
"""

from __future__ import annotations

import contextlib
import copy
import gc
import io
import json
import os
import re
import runpy
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from pipelines import Stage, pipeline_report

import poplar_py as poplar
from poplar_py import InOut, Vertex, target
from poplar_py import program as prog
from poplar_py.profile.html import render_html, write_html
from poplar_py.profile.report import MAX_NAMES_PER_TILE, expand
from poplar_py.profile.report_files import write_profile_reports

ROOT = Path(__file__).resolve().parents[1]
TUT7 = ROOT / "tutorials" / "tut7_matrix_vector_opt" / "tut7.py"
CHROMIUM, CHROMEDRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--window-size=1360,1000"]


def run_tutorial7(directory: Path, rows: int, cols: int, tiles: int | None = None) -> dict:
    """Run tutorial 7 in this process with its JSON report going to ``directory``; the report."""
    path = directory / "tut7.json"
    saved = os.environ.get("POPLAR_PY_PROFILE_FILE"), sys.argv, list(sys.path)
    os.environ["POPLAR_PY_PROFILE_FILE"] = str(path)
    target.setModelDefaults(tilesPerIPU=tiles)
    sys.argv = [str(TUT7), str(rows), str(cols)]
    sys.path.insert(0, str(TUT7.parent))
    try:
        with contextlib.redirect_stdout(io.StringIO()), pytest.raises(SystemExit) as done:
            runpy.run_path(str(TUT7), run_name="__main__")
        assert not done.value.code
    finally:
        target.setModelDefaults()
        sys.argv, sys.path[:] = saved[1], saved[2]
        if saved[0] is None:
            del os.environ["POPLAR_PY_PROFILE_FILE"]
        else:
            os.environ["POPLAR_PY_PROFILE_FILE"] = saved[0]
    gc.collect()
    write_profile_reports()
    with open(path) as f:
        return json.load(f)


class Bump(Vertex):
    x: InOut[int]

    def compute(self):
        self.x += 1


def two_ipu_report() -> dict:
    """A program on 2 IPUs of 8 tiles: a copy across the IPUs, then a compute set on both."""
    m = poplar.IPUModel()
    m.numIPUs = 2
    m.tilesPerIPU = 8
    device = m.createDevice()
    graph = poplar.Graph(device)
    graph.addCodelets(Bump)
    a = graph.addVariable(poplar.INT, [16], "a")
    b = graph.addVariable(poplar.INT, [16], "b")
    for i in range(16):
        graph.setTileMapping(a[i], i)
        graph.setTileMapping(b[i], 15 - i)
    cs = graph.addComputeSet("bump")
    for i in range(16):
        v = graph.addVertex(cs, "Bump", {"x": b[i]})
        graph.setTileMapping(v, 15 - i)
        graph.setPerfEstimate(v, 10 + i)
    engine = poplar.Engine(graph, prog.Sequence([prog.Copy(a, b), prog.Repeat(3, prog.Execute(cs))]))
    engine.load(device)
    engine.run()
    return engine.getProfile()


@pytest.fixture(scope="module")
def tut7_small(tmp_path_factory) -> dict:
    return run_tutorial7(tmp_path_factory.mktemp("tut7"), 200, 100, tiles=32)


# ---- without a browser ------------------------------------------------------------------------------

def test_tutorial_7_page_is_self_contained_and_under_5_mb(tmp_path):
    report = run_tutorial7(tmp_path, 10000, 1000)
    assert report["compilation"]["target"]["numTiles"] == 1472
    page = tmp_path / "tut7.html"
    size = write_html(report, page)
    text = page.read_text(encoding="utf-8")
    assert size == page.stat().st_size < 5 * 1024 * 1024
    assert not re.search(r"""(src|href)\s*=\s*["']?\s*(https?:)?//""", text, re.IGNORECASE)
    assert "<link" not in text and not re.search(r"<script[^>]*\bsrc\b", text)
    assert "/*@css*/" not in text and "/*@js*/" not in text and "@data@" not in text
    assert text.count("</script>") == 2  # the data and the viewer: nothing in the report closes one


def test_report_text_cannot_close_the_script(tut7_small):
    report = copy.deepcopy(tut7_small)
    report["execution"]["steps"][0]["name"] = "</script><script>alert(1)</script>"
    text = render_html(report)
    assert text.count("</script>") == 2 and "\\u003c/script>" in text


def test_report_lists_what_each_tile_holds_and_per_tile_step_cycles(tut7_small):
    comp, ex = tut7_small["compilation"], tut7_small["execution"]
    n = comp["target"]["numTiles"]
    held = sum(sum(t["memory"].get("variables", {}).values()) for t in comp["tiles"])
    assert held == comp["memory"]["byCategory"]["variables"] > 0
    tile = comp["tiles"][5]["memory"]
    assert list(tile["variables"].values()) == sorted(tile["variables"].values(), reverse=True)
    assert "matrix" in tile["variables"]
    for step in ex["steps"]:
        for phase in ("sync", "exchange", "host", "compute"):
            values = expand(step["tileCycles"][phase], n)
            assert values.size == n and values.max() == step[phase]
    rows = {c["name"]: c for c in ex["computeSets"]}
    assert set(rows) == {"mulCS", "reduceCS"}
    assert sum(c["cycles"] for c in rows.values()) == sum(
        s["cycles"] * s["count"] for s in ex["steps"] if s["type"] == "OnTileExecute")


def test_cli_profile_html_and_run_profile_html(tmp_path, tut7_small):
    report = tmp_path / "r.json"
    report.write_text(json.dumps(tut7_small))
    env = dict(os.environ, POPLAR_PY_CACHE_DIR=str(tmp_path / "kernels"))
    out = subprocess.run([sys.executable, "-m", "poplar_py.cli", "profile", str(report), "--html",
                          str(tmp_path / "p.html")], capture_output=True, text=True, timeout=300, env=env)
    assert out.returncode == 0, out.stderr
    assert '"totalCycles":' in (tmp_path / "p.html").read_text()
    out = subprocess.run([sys.executable, "-m", "poplar_py.cli", "run", str(TUT7), "100", "50", "--tiles",
                          "16", "--profile-html", str(tmp_path / "run.html")], capture_output=True, text=True,
                         timeout=300, env=env, cwd=tmp_path)
    assert out.returncode == 0, out.stdout + out.stderr
    saved = json.loads((tmp_path / "run.json").read_text())
    assert saved["execution"]["totalCycles"] > 0 and len(saved["execution"]["steps"]) == 5
    assert f'"totalCycles":{saved["execution"]["totalCycles"]}' in (tmp_path / "run.html").read_text()


# ---- in the browser ---------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    missing = [p for p in (CHROMIUM, CHROMEDRIVER) if not (os.path.exists(p) or shutil.which(p))]
    if missing:
        pytest.skip(f"no headless browser here ({', '.join(missing)} missing: apt-get install chromium "
                    "chromium-driver)")
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        pytest.skip("selenium is not installed (pip install selenium)")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in [*FLAGS, f"--user-data-dir={tmp_path_factory.mktemp('chromium-profile')}"]:
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    yield driver
    driver.quit()


def open_page(driver, report: dict, directory: Path, name: str):
    page = directory / f"{name}.html"
    write_html(report, page)
    driver.get_log("browser")  # drop what earlier pages logged
    driver.get(page.as_uri())
    driver.find_element("id", "cards")
    return driver


def no_console_errors(driver) -> None:
    errors = [e for e in driver.get_log("browser") if e["level"] in ("SEVERE", "ERROR")]
    assert not errors, errors


def screenshot(driver, directory: Path, name: str) -> None:
    driver.execute_script("window.scrollTo({top: 0, behavior: 'instant'})")
    height = driver.execute_script("return document.body.scrollHeight")
    driver.set_window_size(1360, min(height + 40, 8000))
    assert driver.save_screenshot(str(directory / f"{name}.png"))
    print(f"screenshot: {directory / name}.png")
    driver.set_window_size(1360, 1000)


def text_of(driver, css: str) -> str:
    return driver.find_element("css selector", css).text


def click(driver, css: str) -> None:
    """Scroll the element to the middle of the window (clear of the sticky header) and click it."""
    element = driver.find_element("css selector", css)
    driver.execute_script("arguments[0].scrollIntoView({block: 'center', behavior: 'instant'})", element)
    element.click()


def click_tile(driver, chart_id: str, tile: int) -> None:
    """Click the bar of ``tile`` on a tile chart's canvas, as a person would."""
    from selenium.webdriver.common.action_chains import ActionChains

    canvas = driver.find_element("css selector", f"#{chart_id} canvas")
    driver.execute_script("arguments[0].scrollIntoView({block: 'center', behavior: 'instant'})", canvas)
    d = canvas.get_dom_attribute
    left, right = float(d("data-plot-left")), float(d("data-plot-right"))
    first, last = int(d("data-first-tile")), int(d("data-last-tile"))
    x = left + (tile - first + 0.5) * (right - left) / (last - first + 1)
    y = (float(d("data-plot-top")) + float(d("data-plot-bottom"))) / 2
    rect = canvas.rect
    ActionChains(driver).move_to_element_with_offset(canvas, round(x - rect["width"] / 2),
                                                     round(y - rect["height"] / 2)).click().perform()


def test_summary_figures_match_the_report(browser, tut7_small, tmp_path):
    open_page(browser, tut7_small, tmp_path, "summary")
    ex, comp = tut7_small["execution"], tut7_small["compilation"]
    assert text_of(browser, "#card-total-cycles .value") == f"{ex['totalCycles']:,}"
    assert text_of(browser, "#execution-total") == f"{ex['totalCycles']:,}"
    assert text_of(browser, "#memory-total") == f"{comp['memory']['total']:,} B"
    assert text_of(browser, "#graph-vertices") == f"{comp['graph']['numVertices']:,}"
    compute = ex["tileAverages"]["compute"]
    assert text_of(browser, "#avg-compute").startswith(f"{compute:,.1f} (")
    rows = browser.find_elements("css selector", "tr.step-row")
    assert len(rows) == len(ex["steps"])
    live = comp["memory"]["liveness"]  # from the compiler's liveness pass
    assert f"({live['peak']:,} B)" in text_of(browser, "#liveness .totals")
    no_console_errors(browser)
    screenshot(browser, tmp_path, "summary")


def test_clicking_a_tile_lists_what_it_holds(browser, tut7_small, tmp_path):
    open_page(browser, tut7_small, tmp_path, "tile")
    click_tile(browser, "memory-chart", 7)
    detail = browser.find_element("id", "tile-detail")
    assert detail.is_displayed() and detail.get_dom_attribute("data-tile") == "7"
    memory = tut7_small["compilation"]["tiles"][7]["memory"]
    assert text_of(browser, "#tile-detail-total") == f"{memory['total']:,} B"
    rows = browser.find_elements("css selector", "#tile-items tbody tr")
    sizes = [int(r.get_dom_attribute("data-bytes")) for r in rows]
    assert sizes == sorted(sizes, reverse=True)
    named = {r.get_dom_attribute("data-name"): int(r.get_dom_attribute("data-bytes")) for r in rows}
    assert named["matrix"] == memory["variables"]["matrix"]
    assert named["Vertex state"] == memory["byCategory"]["vertex state"]
    assert sum(sizes) == memory["total"]  # with the alignment gaps, everything on the tile
    no_console_errors(browser)
    screenshot(browser, tmp_path, "tile")


def test_dragging_zooms_into_a_range_of_tiles(browser, tut7_small, tmp_path):
    from selenium.webdriver.common.action_chains import ActionChains

    open_page(browser, tut7_small, tmp_path, "zoom")
    canvas = browser.find_element("css selector", "#memory-chart canvas")
    browser.execute_script("arguments[0].scrollIntoView({block: 'center', behavior: 'instant'})", canvas)
    left, right = (float(canvas.get_dom_attribute(k)) for k in ("data-plot-left", "data-plot-right"))
    width = canvas.rect["width"]
    x = lambda tile: round(left + (tile + 0.5) * (right - left) / 32 - width / 2)  # noqa: E731
    ActionChains(browser).move_to_element_with_offset(canvas, x(8), 0).click_and_hold() \
        .move_to_element_with_offset(canvas, x(12), 0).move_to_element_with_offset(canvas, x(15), 0) \
        .release().perform()
    lo = browser.find_element("id", "memory-from").get_property("value")
    hi = browser.find_element("id", "memory-to").get_property("value")
    assert (lo, hi) == ("8", "15")
    assert canvas.get_dom_attribute("data-first-tile") == "8"
    click(browser, "#memory-reset")
    assert canvas.get_dom_attribute("data-last-tile") == "31"
    no_console_errors(browser)


def test_clicking_a_step_shows_its_cycles_per_tile(browser, tut7_small, tmp_path):
    open_page(browser, tut7_small, tmp_path, "step")
    steps = tut7_small["execution"]["steps"]
    index = next(i for i, s in enumerate(steps) if s["name"] == "mulCS")
    click(browser, f'tr.step-row[data-step="{index}"]')
    assert browser.find_element("id", "step-detail").get_dom_attribute("data-step") == str(index)
    step = steps[index]
    assert text_of(browser, "#step-cycles") == f"{step['cycles']:,}"
    assert text_of(browser, '#step-figures td[data-phase="compute"]') == f"{step['compute']:,}"
    n = tut7_small["compilation"]["target"]["numTiles"]
    per_tile = sum(expand(step["tileCycles"][k], n) for k in ("sync", "exchange", "host", "compute"))
    assert text_of(browser, "#step-busiest") == str(int(np.argmax(per_tile)))
    # hovering a tile's bar shows its cycles
    click_tile(browser, "step-chart", 3)
    tip = browser.find_element("id", "tooltip")
    assert tip.is_displayed() and "Tile 3" in tip.text and f"{int(per_tile[3]):,}" in tip.text
    # the timeline's segment selects the same step
    click(browser, '.timeline .seg[data-step="0"]')
    assert browser.find_element("id", "step-detail").get_dom_attribute("data-step") == "0"
    no_console_errors(browser)
    screenshot(browser, tmp_path, "step")


def test_tables_sort_by_a_column(browser, tut7_small, tmp_path):
    open_page(browser, tut7_small, tmp_path, "tables")
    head = browser.find_element("css selector", '#compute-set-table th[data-key="cycles"]')
    browser.execute_script("arguments[0].scrollIntoView({block: 'center', behavior: 'instant'})", head)
    head.click()
    names = [r.get_dom_attribute("data-name") for r in
             browser.find_elements("css selector", "#compute-set-table tbody tr")]
    by_cycles = sorted(tut7_small["execution"]["computeSets"], key=lambda c: -c["cycles"])
    assert names == [c["name"] for c in by_cycles]
    head.click()
    names = [r.get_dom_attribute("data-name") for r in
             browser.find_elements("css selector", "#compute-set-table tbody tr")]
    assert names == [c["name"] for c in reversed(by_cycles)]
    types = [r.get_dom_attribute("data-name") for r in
             browser.find_elements("css selector", "#vertex-type-table tbody tr")]
    assert types == [v["type"] for v in tut7_small["execution"]["vertexTypes"]]
    no_console_errors(browser)


def test_liveness_chart_with_its_peak(browser, tut7_small, tmp_path):
    live = tut7_small["compilation"]["memory"]["liveness"]
    assert len(live["steps"]) == len(live["notAlwaysLive"]) > 0
    assert live["peak"] == live["alwaysLive"][live["peakStep"]] + max(live["notAlwaysLive"])
    open_page(browser, tut7_small, tmp_path, "liveness")
    assert f"({live['peak']:,} B)" in text_of(browser, "#liveness .totals")
    assert not browser.find_elements("id", "liveness-missing")
    canvas = browser.find_element("css selector", "#liveness-chart canvas")
    assert canvas.size["height"] > 100
    no_console_errors(browser)
    screenshot(browser, tmp_path, "liveness")


def test_a_report_without_liveness_says_so(browser, tut7_small, tmp_path):
    report = copy.deepcopy(tut7_small)
    del report["compilation"]["memory"]["liveness"]
    open_page(browser, report, tmp_path, "no-liveness")
    assert "not in this report" in text_of(browser, "#liveness-missing")
    no_console_errors(browser)


def test_two_ipus(browser, tmp_path):
    report = two_ipu_report()
    assert len(report["execution"]["ipus"]) == 2
    open_page(browser, report, tmp_path, "ipus")
    from selenium.webdriver.support.ui import Select

    select = Select(browser.find_element("id", "ipu-select"))
    assert [o.text.split(" (")[0] for o in select.options] == ["All 2 IPUs", "IPU 0", "IPU 1"]
    select.select_by_value("1")
    assert browser.find_element("id", "memory-from").get_property("value") == "8"
    assert browser.find_element("id", "memory-to").get_property("value") == "15"
    click_tile(browser, "memory-chart", 12)
    assert browser.find_element("id", "tile-detail").get_dom_attribute("data-tile") == "12"
    assert "IPU 1" in text_of(browser, "#tile-detail .head")
    step = next(i for i, s in enumerate(report["execution"]["steps"]) if s["type"] == "DoExchange")
    click(browser, f'tr.step-row[data-step="{step}"]')
    chart = browser.find_element("css selector", "#step-chart canvas")
    assert chart.get_dom_attribute("data-first-tile") == "8"
    assert "Per IPU" in text_of(browser, "#summary-tables")
    no_console_errors(browser)
    screenshot(browser, tmp_path, "ipus")


def test_replicas_copies_count_under_their_variables_name():
    m = poplar.IPUModel()
    m.numIPUs = 2
    m.tilesPerIPU = 4
    device = m.createDevice()
    graph = poplar.Graph(device, replication_factor=2)
    w = graph.addVariable(poplar.FLOAT, [6], "w")
    graph.setTileMapping(w, 1)
    c = graph.addConstant(poplar.INT, [3], [1, 2, 3], "k")
    graph.setTileMapping(c, 2)
    engine = poplar.Engine(graph, prog.Sequence([]))
    tiles = engine.getProfile()["compilation"]["tiles"]
    for replica in range(2):
        assert tiles[1 + 4 * replica]["memory"]["variables"] == {"w": 24}
        assert tiles[2 + 4 * replica]["memory"]["constants"] == {"k": 12}
    assert "variables" not in tiles[0]["memory"]


def test_a_tile_lists_its_largest_variables_and_sums_the_rest():
    m = poplar.IPUModel()
    m.tilesPerIPU = 2
    device = m.createDevice()
    graph = poplar.Graph(device)
    for i in range(MAX_NAMES_PER_TILE + 3):
        graph.setTileMapping(graph.addVariable(poplar.FLOAT, [i + 1], f"v{i}"), 0)
    memory = poplar.Engine(graph, prog.Sequence([])).getProfile()["compilation"]["tiles"][0]["memory"]
    assert len(memory["variables"]) == MAX_NAMES_PER_TILE
    assert next(iter(memory["variables"])) == f"v{MAX_NAMES_PER_TILE + 2}"
    assert memory["variablesOmitted"] == {"count": 3, "bytes": 4 * (1 + 2 + 3)}
    assert sum(memory["variables"].values()) + 24 == memory["byCategory"]["variables"]


def streaming_report() -> dict:
    """A program that loads a row of a remote buffer into a tensor, bumps it and stores it back."""
    m = poplar.IPUModel()
    m.tilesPerIPU = 8
    device = m.createDevice()
    graph = poplar.Graph(device)
    graph.addCodelets(Bump)
    rb = graph.addRemoteBuffer("state", poplar.INT, 16, repeats=4)
    x = graph.addVariable(poplar.INT, [16], "x")
    cs = graph.addComputeSet("bump")
    for i in range(16):
        graph.setTileMapping(x[i], i % 8)
        graph.setTileMapping(graph.addVertex(cs, "Bump", {"x": x[i]}), i % 8)
    engine = poplar.Engine(graph, prog.Sequence([prog.Copy(rb, x), prog.Execute(cs), prog.Copy(x, rb)]))
    engine.load(device)
    engine.run()
    return engine.getProfile()


def test_streaming_memory_in_the_summary_and_the_steps(browser, tmp_path):
    report = streaming_report()
    open_page(browser, report, tmp_path, "streaming")
    avg = report["execution"]["tileAverages"]["streamingMemory"]
    assert avg > 0 and text_of(browser, "#avg-streamingMemory").startswith(f"{avg:,.1f} (")
    assert text_of(browser, "#streaming-total") == "256 B"
    assert "state" in text_of(browser, "#summary-tables")
    assert "Streaming Memory" in text_of(browser, "#phase-legend")
    step = next(i for i, s in enumerate(report["execution"]["steps"]) if s["type"] == "RemoteBufferCopy")
    click(browser, f'tr.step-row[data-step="{step}"]')
    cycles = report["execution"]["steps"][step]["streamingMemory"]
    assert text_of(browser, '#step-figures td[data-phase="streamingMemory"]') == f"{cycles:,}"
    assert f"Streaming Memory {cycles:,} cycles" in text_of(browser, "#step-streaming")
    no_console_errors(browser)
    screenshot(browser, tmp_path, "streaming")


# ---- per-IPU timelines ------------------------------------------------------------------------------

def replicated_report() -> dict:
    """2 replicas of 2 IPUs: a long compute set on each replica's first IPU, its result copied to the
    second IPU (which waits for it), then a short compute set there."""
    m = poplar.IPUModel()
    m.numIPUs, m.tilesPerIPU = 4, 4
    device = m.createDevice()
    graph = poplar.Graph(device, replication_factor=2)
    graph.addCodelets(Stage)
    x, y = graph.addVariable(poplar.FLOAT, [4, 4], "x"), graph.addVariable(poplar.FLOAT, [4, 4], "y")
    a, b = graph.addVariable(poplar.FLOAT, [4, 4], "a"), graph.addVariable(poplar.FLOAT, [4, 4], "b")
    first, second = graph.addComputeSet("first"), graph.addComputeSet("second")
    for k in range(4):
        for tensor, tile in ((x, k), (y, k), (a, 4 + k), (b, 4 + k)):
            graph.setTileMapping(tensor[k], tile)
        for cs, (i, o), tile, cycles in ((first, (x, y), k, 5000), (second, (a, b), 4 + k, 500)):
            vertex = graph.addVertex(cs, "Stage", {"x": i[k], "y": o[k]})
            graph.setTileMapping(vertex, tile)
            graph.setPerfEstimate(vertex, cycles)
    engine = poplar.Engine(graph, prog.Sequence([prog.Execute(first), prog.Copy(y, a), prog.Execute(second)]))
    engine.load(device)
    engine.run()
    return engine.getProfile()


@pytest.fixture(scope="module")
def pipelined() -> dict:
    return pipeline_report()


def lanes_of(driver) -> list[str]:
    lanes = driver.find_elements("css selector", "#ipu-timeline .lane")
    return [lane.get_dom_attribute("data-ipu") for lane in lanes]


def runs_on(driver, ipu: int, what: str = ".entry") -> list:
    return driver.find_elements("css selector", f'#ipu-timeline .lane[data-ipu="{ipu}"] {what}')


def test_a_pipeline_has_a_lane_per_ipu_with_its_runs_and_waits(browser, pipelined, tmp_path):
    from selenium.webdriver.common.action_chains import ActionChains

    ex = pipelined["execution"]
    entries = ex["timeline"]["entries"]
    assert ex["timeline"]["truncated"] == 0
    open_page(browser, pipelined, tmp_path, "pipeline")
    assert lanes_of(browser) == ["0", "1", "2", "3"]
    assert not browser.find_elements("id", "timeline-replica")  # one replica: no choice to make
    for k in range(4):
        assert len(runs_on(browser, k)) == sum(k in e["ipus"] for e in entries)
        ipu = ex["ipus"][k]
        assert text_of(browser, f'.lane-total[data-ipu="{k}"] .lane-cycles') == f"{ipu['cycles']:,}"
        assert text_of(browser, f'.lane-total[data-ipu="{k}"] .lane-waiting') == f"{ipu['waiting']:,}"
    # the last stage waits for the pipeline to fill: a quarter of the run or so, hatched
    waits = runs_on(browser, 3, ".wait")
    lane = browser.find_element("css selector", '#ipu-timeline .lane[data-ipu="3"]')
    assert waits and max(w.rect["width"] for w in waits) > 0.2 * lane.rect["width"]
    assert not runs_on(browser, 0, ".wait") or max(w.rect["width"] for w in runs_on(browser, 0, ".wait")) < 5
    widest = max(waits, key=lambda w: w.rect["width"])
    browser.execute_script("arguments[0].scrollIntoView({block: 'center', behavior: 'instant'})", widest)
    ActionChains(browser).move_to_element(widest).perform()
    tip = browser.find_element("id", "tooltip")
    assert tip.is_displayed() and "IPU 3 waiting" in tip.text and "for IPU 2" in tip.text
    # the summary's waiting, overall and per IPU
    avg = ex["tileAverages"]["waiting"]
    shown = text_of(browser, "#avg-waiting").split(" (")[0]
    assert avg > 0 and abs(float(shown.replace(",", "")) - avg) < 0.051  # JavaScript rounds halves up
    for k in range(4):
        row = f'#ipu-table tr[data-ipu="{k}"]'
        assert text_of(browser, f'{row} td[data-key="waiting"]') == f"{ex['ipus'][k]['waiting']:,}"
        assert text_of(browser, f'{row} td[data-key="cycles"]') == f"{ex['ipus'][k]['cycles']:,}"
    # clicking a run selects its step, and every run of it
    stage2 = next(i for i, s in enumerate(ex["steps"]) if s["name"] == "stage2")
    click(browser, f'#ipu-timeline .lane[data-ipu="2"] .entry[data-step="{stage2}"]')
    assert browser.find_element("id", "step-detail").get_dom_attribute("data-step") == str(stage2)
    assert "stage2" in text_of(browser, "#step-detail-title")
    selected = browser.find_elements("css selector", "#ipu-timeline .entry.selected")
    assert len(selected) == ex["steps"][stage2]["count"] == 8
    no_console_errors(browser)
    screenshot(browser, tmp_path, "pipeline")


def test_dragging_across_the_lanes_zooms_into_a_range_of_cycles(browser, pipelined, tmp_path):
    from selenium.webdriver.common.action_chains import ActionChains

    open_page(browser, pipelined, tmp_path, "pipeline-zoom")
    box = browser.find_element("id", "ipu-timeline")
    end = int(box.get_dom_attribute("data-to"))
    assert end == pipelined["execution"]["totalCycles"]
    lane = browser.find_element("css selector", '#ipu-timeline .lane[data-ipu="1"]')
    browser.execute_script("arguments[0].scrollIntoView({block: 'center', behavior: 'instant'})", lane)
    width = lane.rect["width"]
    ActionChains(browser).move_to_element_with_offset(lane, round(-0.3 * width), 0).click_and_hold() \
        .move_to_element_with_offset(lane, round(-0.2 * width), 0) \
        .move_to_element_with_offset(lane, round(-0.1 * width), 0).release().perform()
    lo, hi = int(box.get_dom_attribute("data-from")), int(box.get_dom_attribute("data-to"))
    assert abs(lo - 0.2 * end) < 0.02 * end and abs(hi - 0.4 * end) < 0.02 * end
    assert browser.find_element("id", "step-detail").get_dom_attribute("data-step") is None  # no pick
    entries = pipelined["execution"]["timeline"]["entries"]
    in_view = [e for e in entries if 1 in e["ipus"] and e["end"][e["ipus"].index(1)] >= lo
               and e["start"][e["ipus"].index(1)] <= hi]
    assert len(runs_on(browser, 1)) == len(in_view) < sum(1 in e["ipus"] for e in entries)
    click(browser, "#timeline-reset")
    assert (box.get_dom_attribute("data-from"), box.get_dom_attribute("data-to")) == ("0", str(end))
    no_console_errors(browser)


def test_a_replicated_run_shows_one_replica_at_a_time(browser, tmp_path):
    from selenium.webdriver.support.ui import Select

    report = replicated_report()
    target_ = report["compilation"]["target"]
    assert (target_["numReplicas"], target_["ipusPerReplica"]) == (2, 2)
    entries = report["execution"]["timeline"]["entries"]
    open_page(browser, report, tmp_path, "replicas-timeline")
    assert lanes_of(browser) == ["0", "1"]
    select = Select(browser.find_element("id", "timeline-replica"))
    assert [o.text for o in select.options] == ["Replica 0 (IPUs 0\u20131)", "Replica 1 (IPUs 2\u20133)"]
    select.select_by_value("1")
    assert lanes_of(browser) == ["2", "3"]
    for k in (2, 3):
        assert len(runs_on(browser, k)) == sum(k in e["ipus"] for e in entries) > 0
    assert runs_on(browser, 3, ".wait")  # the second IPU waits for the first's copy
    assert browser.find_element("id", "ipu-timeline").get_dom_attribute("data-replica") == "1"
    # the header's IPU picker brings its replica back
    Select(browser.find_element("id", "ipu-select")).select_by_value("1")
    assert lanes_of(browser) == ["0", "1"] and select.first_selected_option.get_attribute("value") == "0"
    no_console_errors(browser)
    screenshot(browser, tmp_path, "replicas-timeline")


def test_a_report_without_timelines_says_so(browser, pipelined, tmp_path):
    report = copy.deepcopy(pipelined)
    del report["execution"]["timeline"]
    for ipu in report["execution"]["ipus"]:
        for key in ("cycles", "busy", "waiting"):
            del ipu[key]
    open_page(browser, report, tmp_path, "no-timeline")
    assert "not in this report" in text_of(browser, "#ipu-timeline-missing")
    assert not browser.find_elements("css selector", "#ipu-timeline .lane")
    assert "Waiting" not in text_of(browser, "#ipu-table thead")
    click(browser, 'tr.step-row[data-step="0"]')
    assert browser.find_element("id", "step-detail").get_dom_attribute("data-step") == "0"
    no_console_errors(browser)


def test_one_ipu_has_no_lanes_its_runs_follow_one_another(browser, tut7_small, tmp_path):
    assert tut7_small["execution"]["timeline"]["entries"] == []  # nothing to replay on one IPU
    open_page(browser, tut7_small, tmp_path, "one-ipu")
    assert "One IPU runs every step in turn" in text_of(browser, "#ipu-timeline-missing")
    assert not browser.find_elements("css selector", "#ipu-timeline .lane")
    no_console_errors(browser)


def test_a_truncated_timeline_says_how_many_runs_are_not_drawn(browser, pipelined, tmp_path):
    report = copy.deepcopy(pipelined)
    timeline = report["execution"]["timeline"]
    kept = timeline["entries"][:20]
    timeline["entries"], timeline["truncated"] = kept, len(timeline["entries"]) - 20
    open_page(browser, report, tmp_path, "truncated")
    assert f"{timeline['truncated']} later runs are not drawn" in text_of(browser, "#timeline-truncated")
    for k in range(4):
        assert len(runs_on(browser, k)) == sum(k in e["ipus"] for e in kept)
    no_console_errors(browser)
