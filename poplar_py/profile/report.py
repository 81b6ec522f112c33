"""Cycle and memory accounting, the JSON report and the printed summary.

Every leaf step of a lowered program is costed per tile in three phases:

* sync: ``Target.syncCycles`` per barrier (plus ``minIPUSyncDelay``; with
  ``relativeSyncDelay`` AUTO, tiles further from tile 0 wait longer). A copy or stream
  copy has one barrier; ``Execute`` one before its exchange in, one before compute
  when data came in, one before its exchange out.
* exchange: on-chip bytes each tile sends or receives at ``exchangeBytesPerCycle``
  (a broadcast is sent once); host transfers at ``hostExchangeBytesPerCycle`` for the
  whole transfer, every tile waiting, plus each tile taking its share off the exchange;
  remote buffer copies (Streaming Memory) likewise, at the bandwidth the IPUs of an
  IPU-Machine share after a fixed latency (``streamingMemory``).
* compute: vertex cycles spread over the worker contexts (a tile's plain vertices go
  round-robin to its 6 workers; the tile takes 6 x the busiest worker), MultiVertex
  cycles as given, on-tile copies at ``memcpyBytesPerCycle``.

A step takes sync + the slowest tile's exchange + the slowest tile's compute, since
every tile waits at the barrier. The engine counts how often each step runs; the
report multiplies. The summary is printed from the report alone, so
``poplar-py profile FILE`` shows what ``engine.printProfileSummary()`` showed.

For the HTML viewer (:mod:`poplar_py.profile.html`) the report also lists, per tile, the
bytes of each variable and constant (by name, largest first) and, per step, the cycles of
each phase on every tile (``tileCycles``: one number when every tile takes the same, else
a list, or ``{"runs": [value, count, ...]}`` when that is much shorter).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np

from ..compiler.graph_compiler import CompiledGraph
from ..compiler.layout import MemoryLayout
from ..compiler.steps import ExecuteStep, Step
from ..cycles.costs import CostModel, RunRecord, StepCost
from ..cycles.timeline import Span, Timeline, replay
from ..ir import GraphIR, VerticesIR
from ..regions.arrays import unique_sorted
from .flops import add_flops, run_flops, share_rows, summary_lines

# Per tile, the largest variables (and constants) listed by name; the rest are summed.
MAX_NAMES_PER_TILE = 48
# Per-tile cycle arrays of the steps, in numbers: later steps go without once it is spent.
TILE_CYCLES_BUDGET = 400_000
# The runs whose places on every IPU the report keeps (cycles/timeline.py), in IPUs involved.
TIMELINE_BUDGET = 50_000
_PHASES = ("sync", "exchange", "host", "compute")
KIB, MIB = 1024, 1024 * 1024  # the summary's units, as Poplar's (KiB, MiB)


class Profile:
    """An engine's compilation figures and run record, turned into the report on demand."""

    def __init__(self, graph: GraphIR, exe: CompiledGraph, record: RunRecord) -> None:
        self.exe = exe
        self.record = record
        self.model = CostModel(exe.target, exe.replication)
        self.graph_counts = {"numVertices": len(graph.vertices), "numEdges": graph.vertices.num_edges,
                             "numVariables": len(graph.variables), "numComputeSets": len(graph.compute_sets)}
        self.compute_sets = [{"name": name, "vertices": _vertex_counts(graph.vertices, cs)}
                             for cs, name in enumerate(graph.compute_sets)]
        self.graph = graph
        self._holdings: list[dict] | None = None

    def holdings(self) -> list[dict]:
        """What each of the device's tiles holds, by variable name (computed once: the layout
        does not change; every replica holds the same)."""
        if self._holdings is None:
            self._holdings = tile_holdings(self.graph, self.exe.layout) * self.exe.replication.factor
        return self._holdings

    def usage(self) -> dict[str, np.ndarray]:
        """Bytes per device tile, by category (every replica uses the same memory)."""
        return {k: self.exe.replication.device_tiles(v) for k, v in self.exe.layout.usage.items()}

    def liveness(self) -> dict:
        """Always-live and not-always-live bytes (the packed variables') and the liveness chart
        over the program's steps (every replica's bytes)."""
        layout, liveness, replicas = self.exe.layout, self.exe.liveness, self.exe.replication.factor
        shared = 0 if layout.not_always_live is None else int(layout.not_always_live.sum()) * replicas
        fixed = int(layout.usage["variables"].sum() + layout.usage["constants"].sum()) * replicas
        out = {"alwaysLive": fixed - shared, "notAlwaysLive": shared}
        if liveness is not None:
            v = self.graph.variables
            var_bytes = v.sizes * v.element_sizes() * self.exe.replication.factor
            out["liveness"] = liveness.over_steps(var_bytes)
        return out

    def costs(self) -> Iterator[tuple[Step, StepCost]]:
        """Each leaf step that ran and what one run of it costs, one at a time (a cost holds arrays
        over the device's tiles: a Pod's are too many to keep for every step)."""
        for step in self.exe.lowered.leaves:
            if self.record.counts[step.id]:
                yield step, step.cost(self.model, self.record)

    def span(self, cost: StepCost) -> Span:
        """How a step's runs occupy the IPUs (:mod:`~poplar_py.cycles.timeline`)."""
        return Span(self.model.every_ipu if cost.ipus is None else cost.ipus, cost.syncs, cost.cycles)

    def timeline(self, spans: dict[int, Span], keep: int = 0) -> Timeline:
        """Every IPU's clock over the runs the record holds, each step as ``spans`` says; one IPU's is
        the sum of every run's cycles, with no runs' places kept (they follow each other)."""
        ipus = self.exe.target.getNumIPUs()
        if ipus == 1:
            total = sum(self.record.counts[step] * span.cycles for step, span in spans.items())
            return Timeline(np.asarray([total]), np.asarray([total]), np.zeros(1, np.int64))
        return replay(self.record.trace, spans, ipus, ipus // self.exe.replication.factor, keep)

    def total_cycles(self) -> int:
        """The cycles of everything the record holds (the report's ``totalCycles``): the latest IPU's
        clock."""
        return self.timeline({step.id: self.span(cost) for step, cost in self.costs()}).total

    def report(self) -> dict:
        """The profile as plain data (key names after libpva's where it has one)."""
        t = self.exe.target
        layout = self.exe.layout
        n = t.getNumTiles()
        replicas = self.exe.replication.factor
        by_tile = {k: np.zeros(n) for k in ("compute", "computeActive", "exchange", "globalExchange", "host",
                                            "streamingMemory", "sync")}
        per_ipu = t.getTilesPerIPU()
        step_rows = []
        budget = TILE_CYCLES_BUDGET
        rows: dict[int, int] = {}  # step id -> its row
        spans: dict[int, Span] = {}
        waits_are_sync = t.calibration.wait_is_sync
        for step, cost in self.costs():
            spans[step.id] = self.span(cost)
            count = self.record.counts[step.id]
            # a tile's figures count the runs of steps its IPU takes part in
            runs = count if cost.ipus is None else \
                count * np.repeat(np.isin(self.model.every_ipu, cost.ipus), per_ipu)
            sync = cost.sync + cost.waits() if waits_are_sync else cost.sync
            for key, values in (("compute", cost.compute), ("computeActive", cost.compute_active),
                                ("exchange", cost.exchange), ("host", cost.host), ("sync", sync),
                                ("globalExchange", cost.global_exchange),
                                ("streamingMemory", cost.streaming)):
                by_tile[key] += runs * values
            rows[step.id] = len(step_rows)
            step_rows.append({"name": step.label, "type": cost.kind, "count": count, "cycles": cost.cycles,
                              "sync": int(cost.sync.max(initial=0)),
                              "exchange": int(cost.exchange.max(initial=0)),
                              "globalExchange": cost.global_exchange,
                              "host": int(cost.host.max(initial=0)), "streamingMemory": cost.streaming,
                              "compute": int(cost.compute.max(initial=0)), "streamCopyBegin": cost.prepare})
            if isinstance(step, ExecuteStep):
                step_rows[-1]["computeSet"] = step.compute_set.name
                if step.compute_set.flops:  # one run on one replica: every replica runs it
                    add_flops(step_rows[-1], step.compute_set.flops, replicas)
            tile_cycles = {key: compact(sync if key == "sync" else getattr(cost, key)) for key in _PHASES}
            numbers = sum(len(v) if isinstance(v, list) else len(v["runs"]) if isinstance(v, dict) else 1
                          for v in tile_cycles.values())
            if numbers <= budget:
                budget -= numbers
                step_rows[-1]["tileCycles"] = tile_cycles
        timeline = self.timeline(spans, TIMELINE_BUDGET)
        total = timeline.total
        if timeline.waiting.any():
            by_tile["waiting"] = np.repeat(timeline.waiting, per_ipu).astype(float)
        device = self.exe.replication.device_tiles
        used, usage = device(layout.tile_total), self.usage()
        shared = np.zeros(n, np.int64) if layout.not_always_live is None else device(layout.not_always_live)
        ipus = [slice(k * per_ipu, (k + 1) * per_ipu) for k in range(t.getNumIPUs())]
        averages = [{key: float(v[tiles].mean()) for key, v in by_tile.items()} for tiles in ipus]
        compute_sets = _compute_set_rows(step_rows)
        share_rows(compute_sets, self._peak)
        flops = run_flops(compute_sets, float(by_tile["compute"].mean()) if n else 0.0, int(total),
                          t.getTileClockFrequency(), self._peak)
        return {
            "poplarVersion": {"string": "poplar-py 0.1.0"},
            "compilation": {
                "target": {"type": "Ipu" if t.calibration.hardware else "IpuModel",
                           "architecture": t.getTargetArchString(),
                           "numIPUs": t.getNumIPUs(), "tilesPerIpu": t.getTilesPerIPU(), "numTiles": n,
                           "bytesPerTile": t.getBytesPerTile(), "clockFrequency": t.getTileClockFrequency(),
                           "numReplicas": replicas, "ipusPerReplica": t.getNumIPUs() // replicas,
                           "tilesPerReplica": n // replicas,
                           "memoryPerReplica": n // replicas * t.getBytesPerTile()},
                "graph": self.graph_counts,
                "computeSets": self.compute_sets,
                "autoMappedVariables": list(self.exe.mapping.auto_mapped),
                "memory": {"byCategory": {k: int(v.sum()) for k, v in usage.items()},
                           "total": int(used.sum()), **self.liveness(),
                           "streamingMemory": self.streaming_memory(),
                           "perReplica": {"byCategory": {k: int(v.sum()) for k, v in layout.usage.items()},
                                          "total": int(layout.tile_total.sum())}},
                "ipus": [{"ipu": k, "memory": int(used[tiles].sum())} for k, tiles in enumerate(ipus)],
                "tiles": [{"tile": i, "memory": {"total": int(used[i]), "outOfMemory": bool(
                    used[i] > t.getBytesPerTile()), "byCategory": {
                        k: int(v[i]) for k, v in usage.items() if v[i]},
                    "notAlwaysLive": int(shared[i]), **holds}}
                    for i, holds in zip(range(n), self.holdings())],
            },
            "execution": {
                "runs": [{"program": p} for p in self.record.runs],
                "totalCycles": int(total),
                "tileAverages": {k: float(v.mean()) if n else 0.0 for k, v in by_tile.items()},
                "cyclesByTile": {k: v.astype(np.int64).tolist() for k, v in by_tile.items()},
                "ipus": [{"ipu": k, "tileAverages": avg, "cycles": int(timeline.clocks[k]),
                          "busy": int(timeline.busy[k]), "waiting": int(timeline.waiting[k])}
                         for k, avg in enumerate(averages)],
                "timeline": _timeline_rows(timeline, rows),
                "steps": step_rows,
                "computeSets": compute_sets,
                **({"flops": flops} if flops else {}),
                "vertexTypes": [{"type": k, "instances": v[0], "cycles": v[1]}
                                for k, v in sorted(self.record.vertex_cycles.items())],
            },
        }


    def streaming_memory(self) -> dict:
        """The remote buffers, in Streaming Memory (not tile memory): bytes of every replica's rows
        (``total``), of one replica's, and each buffer's (one replica's rows), largest first."""
        buffers = sorted(self.exe.remote_buffers.values(), key=lambda b: (-b.nbytes, b.handle()))
        per_replica = sum(b.nbytes for b in buffers)
        target, replicas = self.exe.target, self.exe.replication.factor
        return {"total": per_replica * replicas, "perReplica": per_replica,
                "capacity": target.getStreamingMemoryBytesPerIPU() * target.getNumIPUs() // replicas,
                "buffers": [{"handle": b.handle(), "type": str(b.elementType()),
                             "numElements": b.numElements(), "repeats": b.getRepeats(), "bytes": b.nbytes}
                            for b in buffers]}

    def _peak(self, kind: str) -> int:
        """The device's peak FLOPs per cycle for ``kind``: a type, or input.partials types."""
        return self.exe.target.getPeakFlopsPerCycle(*kind.split("."))


def tile_holdings(graph: GraphIR, layout: MemoryLayout) -> list[dict]:
    """Per tile: ``variables`` and ``constants`` as {name: bytes} (largest first, at most
    MAX_NAMES_PER_TILE each; ``variablesOmitted``/``constantsOmitted`` sum the rest), over one
    replica's tiles."""
    out: list[dict] = [{} for _ in range(layout.num_tiles)]
    starts = layout.intervals.starts
    if not starts.size or not len(graph.variables):
        return out
    nbytes = (layout.intervals.ends - starts) * layout.elem_size
    var = np.searchsorted(layout.bases, starts, side="right") - 1
    names, name_of = np.unique(np.asarray(graph.variables.names, dtype=object), return_inverse=True)
    constant = graph.variables.constant[var].astype(np.int64)
    key = (layout.tile.astype(np.int64) * len(names) + name_of[var]) * 2 + constant
    keys, inverse = np.unique(key, return_inverse=True)
    sizes = np.bincount(inverse, weights=nbytes).astype(np.int64)
    order = np.lexsort((-sizes, keys // (2 * len(names))))  # by tile, then largest first
    keys, sizes = keys[order], sizes[order]
    keys, sizes = keys[sizes > 0], sizes[sizes > 0]
    group = keys // len(names) // 2 * 2 + keys % 2  # (tile, kind)
    by_group = np.argsort(group, kind="stable")
    rank = np.empty(keys.size, np.int64)  # within its tile and kind, largest first
    rank[by_group] = np.arange(keys.size) - np.searchsorted(group[by_group], group[by_group])
    omitted = rank >= MAX_NAMES_PER_TILE
    groups = 2 * layout.num_tiles
    count = np.bincount(group[omitted], minlength=groups).tolist()
    dropped = np.bincount(group[omitted], weights=sizes[omitted], minlength=groups).astype(np.int64)
    # the names kept and each group's first name left out, in order (the dicts' order)
    for k, size, r in zip(*(a[rank <= MAX_NAMES_PER_TILE].tolist() for a in (keys, sizes, rank))):
        tile, rest = divmod(k, 2 * len(names))
        kind = "constants" if rest % 2 else "variables"
        if r < MAX_NAMES_PER_TILE:
            out[tile].setdefault(kind, {})[str(names[rest // 2])] = size
        else:
            g = 2 * tile + rest % 2
            out[tile][kind + "Omitted"] = {"count": count[g], "bytes": int(dropped[g])}
    return out


def _timeline_rows(timeline: Timeline, rows: dict[int, int]) -> dict:
    """The first runs of the trace, each its step's row in ``steps`` and, per IPU it involves, when
    it arrived, started (later where it waited for other IPUs) and ended."""
    entries = [{"step": rows[step], "ipus": ipus.tolist(), "arrive": arrive.tolist(), "start": start.tolist(),
                "end": end.tolist()} for step, ipus, arrive, start, end in timeline.entries]
    return {"entries": entries, "truncated": timeline.truncated}


def compact(values: np.ndarray) -> int | list | dict:
    """Per-tile numbers compactly: one number when all agree, else runs or the list."""
    v = np.asarray(values, dtype=np.int64).ravel()
    if not v.size or (v == v[0]).all():
        return int(v[0]) if v.size else 0
    change = np.flatnonzero(np.diff(v)) + 1
    if 2 * (change.size + 1) <= v.size // 2:
        first = np.concatenate(([0], change))
        counts = np.diff(np.append(first, v.size))
        return {"runs": np.column_stack((v[first], counts)).ravel().tolist()}
    return v.tolist()


def expand(values: int | list | dict, n: int) -> np.ndarray:
    """The per-tile numbers that :func:`compact` wrote."""
    if isinstance(values, dict):
        runs = np.asarray(values["runs"], dtype=np.int64).reshape(-1, 2)
        return np.repeat(runs[:, 0], runs[:, 1])
    if isinstance(values, list):
        return np.asarray(values, dtype=np.int64)
    return np.full(n, values, dtype=np.int64)


def _compute_set_rows(steps: list[dict]) -> list[dict]:
    """Cycles of every compute set executed (all its steps and runs), in order of first run."""
    rows: dict[str, dict] = {}
    for s in steps:
        if "computeSet" not in s:
            continue
        row = rows.setdefault(s["computeSet"], {"name": s["computeSet"], "steps": 0, "runs": 0, "cycles": 0,
                                                "sync": 0, "exchange": 0, "globalExchange": 0,
                                                "compute": 0})
        row["steps"] += 1
        row["runs"] += s["count"]
        for key in ("cycles", "sync", "exchange", "globalExchange", "compute"):
            row[key] += s["count"] * s[key]
        if "flopsByType" in s:
            add_flops(row, s["flopsByType"], s["count"])
    return list(rows.values())


def _vertex_counts(vertices: VerticesIR, cs: int) -> list[dict]:
    members = vertices.cls[vertices.in_compute_set(cs)]
    if not members.size:
        return []
    _, first, counts = np.unique(members, return_index=True, return_counts=True)
    order = np.argsort(first)
    classes = unique_sorted(members)[order]
    return [{"type": vertices.classes[c].vertexName, "count": int(k)}
            for c, k in zip(classes.tolist(), counts[order].tolist())]


def summary(report: Mapping[str, Any], options: Mapping[str, Any] | None = None) -> str:
    """Poplar's profile summary text (Target, Graph, Memory Usage, Execution) from a report."""
    options = options or {}
    comp, ex = report["compilation"], report["execution"]
    t = comp["target"]
    tiles = t["numTiles"]
    per_tile = t["bytesPerTile"]
    lines = ["Target:",
             f"  Number of IPUs:         {t['numIPUs']:,}",
             f"  Tiles per IPU:          {t['tilesPerIpu']:,}",
             f"  Total Tiles:            {tiles:,}",
             f"  Memory Per-Tile:        {per_tile / KIB:,.1f} KiB",
             f"  Total Memory:           {per_tile * tiles / MIB:,.1f} MiB",
             f"  Clock Speed (approx):   {t['clockFrequency'] / 1e6:,.1f} MHz",
             f"  Number of Replicas:     {t.get('numReplicas', 1):,}",
             f"  IPUs per Replica:       {t.get('ipusPerReplica', t['numIPUs']):,}",
             f"  Tiles per Replica:      {t.get('tilesPerReplica', tiles):,}",
             f"  Memory per Replica:     {t.get('memoryPerReplica', per_tile * tiles) / MIB:,.1f} MiB",
             "", "Graph:"]
    g = comp["graph"]
    for label, key in (("vertices", "numVertices"), ("edges", "numEdges"), ("variables", "numVariables"),
                       ("compute sets", "numComputeSets")):
        lines.append(f"  {'Number of ' + label + ':':<26}{g[key]:>10,}")
    used = [tile["memory"]["total"] for tile in comp["tiles"]]
    worst = int(np.argmax(used)) if used else 0
    top = used[worst] if used else 0
    lines += ["", "Memory Usage:", "  Total:", f"    Including Gaps:         {comp['memory']['total']:,} B",
              "    By Data Type:"]
    for category, size in comp["memory"]["byCategory"].items():
        lines.append(f"        {category.capitalize() + ':':<30}{size:>14,} B")
    memory = comp["memory"]
    if "alwaysLive" in memory:
        lines += ["    By Liveness (variables and constants):",
                  f"        {'Always live:':<30}{memory['alwaysLive']:>14,} B",
                  f"        {'Not always live (packed):':<30}{memory['notAlwaysLive']:>14,} B"]
    chart = memory.get("liveness")
    if chart and chart["steps"]:
        step = chart["steps"][chart["peakStep"]]
        lines.append(f"        {'Peak live:':<30}{chart['peak']:>14,} B at step {chart['peakStep']} ({step})")
    per_replica = memory.get("perReplica")
    if per_replica is not None and t.get("numReplicas", 1) > 1:
        lines += [f"  Per Replica (each of {t['numReplicas']:,} alike):",
                  f"    Including Gaps:         {per_replica['total']:,} B"]
    streaming = memory.get("streamingMemory")
    if streaming and streaming["buffers"]:
        lines += ["  Streaming Memory (remote buffers, beside the IPUs):",
                  f"    Total:                  {streaming['total']:,} B in {len(streaming['buffers']):,} "
                  f"buffer(s), {streaming['perReplica']:,} B a replica "
                  f"(capacity {streaming['capacity']:,} B)"]
    lines += ["", "  By Tile:", *_histogram(used, per_tile),
              "", f"    Maximum: {top:,} B ({top / KIB:,.1f} KiB) on tile {worst}",
              f"    {sum(tile['memory']['outOfMemory'] for tile in comp['tiles'])} tile(s) out of memory", ""]
    total = ex["totalCycles"]
    avg = ex["tileAverages"]
    clock = t["clockFrequency"]

    def row(label: str, value: float) -> str:
        pct = 100.0 * value / total if total else 0.0
        return f"  {label:<54}{value:,.1f} ({pct:.1f}% of total)"

    lines += ["Execution:", "", "Programs executed:", "",
              *(f"Program {p}." for p in sorted({r['program'] for r in ex["runs"]})), "",
              f"  {'Total cycles:':<54}{total:,} (approx {total / clock * 1e6:,.1f} microseconds)",
              row("Tile average compute cycles (including idle threads):", avg["compute"]),
              row("Tile average compute cycles (excluding idle threads):", avg["computeActive"]),
              *_busiest(ex.get("cyclesByTile", {}).get("compute"), total),
              row("Tile average IPU exchange cycles:", avg["exchange"]),
              row("Tile average global exchange cycles:", avg.get("globalExchange", 0.0)),
              row("Tile average host exchange cycles:", avg["host"]),
              *([row("Tile average Streaming Memory cycles:", avg["streamingMemory"])]
                if streaming and streaming["buffers"] else []),
              row("Tile average sync cycles:", avg["sync"]),
              *([row("Tile average waiting cycles (for other IPUs):", avg["waiting"])]
                if "waiting" in avg else []),
              *summary_lines(ex.get("flops"))]
    if len(ex.get("ipus", [])) > 1:
        memory = {i["ipu"]: i["memory"] for i in comp.get("ipus", [])}
        lines += ["", "  Per IPU (memory; tile average compute, IPU exchange, global exchange, sync cycles):"]
        for i in ex["ipus"]:
            a = i["tileAverages"]
            lines.append(f"    IPU {i['ipu']}: {memory.get(i['ipu'], 0):,} B; {a['compute']:,.1f}, "
                         f"{a['exchange']:,.1f}, {a['globalExchange']:,.1f}, {a['sync']:,.1f}")
        clocks = [(i["ipu"], i.get("cycles", total), i.get("waiting", 0)) for i in ex["ipus"]]
        if any(c != total or w for _, c, w in clocks):  # the IPUs' timelines part
            lines += ["", "  Per IPU timeline (when its last step ends; cycles waiting for other IPUs):",
                      *(f"    IPU {k}: {c:,}; waited {w:,}" for k, c, w in clocks)]
    if ex["vertexTypes"]:
        lines += ["", "  Cycles by vertex type (estimated):"]
        width = max(len(v["type"]) for v in ex["vertexTypes"])
        for v in ex["vertexTypes"]:
            lines.append(f"    {v['type']:<{width}}  ({v['instances']:,} runs): {v['cycles']:>14,}")
    if str(options.get("showExecutionSteps", "false")).lower() == "true":
        # the host preparing stream data (StreamCopyBegin) has a column where it takes time: hardware
        begin = any(s.get("streamCopyBegin") for s in ex["steps"])
        lines += ["", "  Execution steps:", f"    {'Step':<48}{'Type':<17}{'Runs':>7}{'Sync':>9}"
                  f"{'Exchange':>11}{'Host':>11}" + (f"{'Host prep':>12}" if begin else "")
                  + f"{'Compute':>11}{'Cycles':>14}"]
        for s in ex["steps"]:
            lines.append(f"    {s['name'][:47]:<48}{s['type']:<17}{s['count']:>7,}{s['sync']:>9,}"
                         f"{s['exchange']:>11,}{s['host']:>11,}"
                         + (f"{s.get('streamCopyBegin', 0):>12,}" if begin else "")
                         + f"{s['compute']:>11,}{s['cycles']:>14,}")
    return "\n".join(lines) + "\n"


def _histogram(used: list[int], per_tile: int) -> list[str]:
    """Tiles counted by memory use in eight bins up to the largest tile (or the tile size)."""
    if not used:
        return []
    top = max(max(used), 1)
    edges = np.linspace(0, top, 9)
    counts, _ = np.histogram(used, bins=edges)
    widest = max(counts.max(), 1)
    out = ["    Range (KiB)         Histogram                               Count (tiles)"]
    for lo, hi, c in zip(edges[:-1], edges[1:], counts):
        bar = "*" * round(40 * c / widest) if c else ""
        out.append(f"    {lo / KIB:7.1f} - {hi / KIB:7.1f}  {bar:<40}{c:>8,}")
    return out


def _busiest(compute: list[int] | None, total: int) -> list[str]:
    """The line naming the tile with the most compute cycles (the lowest on a tie; none for a
    report without per-tile cycles)."""
    if not compute:
        return []
    tile = int(np.argmax(compute))
    pct = 100.0 * compute[tile] / total if total else 0.0
    return [f"  {f'Busiest tile compute cycles (tile {tile:,}):':<54}{compute[tile]:,} ({pct:.1f}% of total)"]
