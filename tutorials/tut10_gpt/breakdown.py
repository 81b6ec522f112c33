"""Where a training step's time goes, read from the profile report (``engine.getProfile()``).

* The work: every step run's cycles split into compute, exchange on the IPUs, IPU-Link traffic by
  purpose (a step's global exchange, by the collective or copy it belongs to), Streaming Memory,
  host transfers and syncs (shares of all the cycles the IPUs were busy).
* The pipeline bubble: over the span of the pipelined forward and backward passes on replica 0's
  IPUs, the share in which its busiest stage did nothing (waiting for the others): GPipe's
  ``(P - 1) / (G + P - 1)`` when that stage sets the pace.
* The steady state: a step with more micro-batches than were run, each further one at the
  busiest stage's pace.
* Per IPU of a replica: its tile memory (SRAM) and its Streaming Memory (remote buffers).
"""

from __future__ import annotations

#: IPU-Link traffic by purpose: the words that name a step's collective
PURPOSES = (
    ("tp all-reduce", "allReduce"),
    ("dp reduce-scatter", "reduceScatter"),
    ("dp all-gather", "allGather"),
)


def purpose(name: str) -> str:
    """What a step that crosses IPUs is for: a collective's name, else a pipeline send."""
    return next((label for label, word in PURPOSES if word in name), "pipeline sends")


def work(execution: dict) -> dict[str, float]:
    """Shares of the cycles the steps ran (each step's phases, times its runs)."""
    steps = execution["steps"]
    total = sum(s["count"] * s["cycles"] for s in steps) or 1
    out = dict.fromkeys(("compute", "exchange", "streaming memory", "host", "sync"), 0.0)
    links = {label: 0.0 for label, _ in (*PURPOSES, ("pipeline sends", ""))}
    for s in steps:
        n = s["count"] / total
        for key, field in (
            ("compute", "compute"),
            ("exchange", "exchange"),
            ("streaming memory", "streamingMemory"),
            ("host", "host"),
            ("sync", "sync"),
        ):
            out[key] += n * s.get(field, 0)
        if s["globalExchange"]:
            links[purpose(s["name"])] += n * s["globalExchange"]
    return {**out, **{f"links: {k}": v for k, v in links.items()}}


def pipeline_busy(execution: dict, pipeline: set[str], ipus: range) -> tuple[int, dict[int, int]]:
    """(the span from the first start to the last end of the steps named in ``pipeline`` on
    ``ipus``, the cycles each of ``ipus`` ran any step in that span: the functions the pipelined
    passes call included): (0, {}) when none of them ran."""
    names = [s["name"] for s in execution["steps"]]
    entries = execution.get("timeline", {}).get("entries", [])
    bounds = [
        (start, end)
        for entry in entries
        if names[entry["step"]] in pipeline
        for ipu, start, end in zip(entry["ipus"], entry["start"], entry["end"])
        if ipu in ipus
    ]
    if not bounds:
        return 0, {}
    first, last = min(b[0] for b in bounds), max(b[1] for b in bounds)
    busy = dict.fromkeys(ipus, 0)
    for entry in entries:
        for ipu, start, end in zip(entry["ipus"], entry["start"], entry["end"]):
            if ipu in busy:
                busy[ipu] += max(0, min(end, last) - max(start, first))
    return last - first, busy


def pipeline_span(execution: dict, pipeline: set[str], ipus: range) -> tuple[int, int]:
    """(the pipelined passes' span, the cycles the busiest of ``ipus`` ran in it): (0, 0) when
    none of them ran (:func:`pipeline_busy`)."""
    span, busy = pipeline_busy(execution, pipeline, ipus)
    return span, max(busy.values(), default=0)


def bubble(execution: dict, pipeline: set[str], ipus: range) -> float:
    """The share of the pipelined passes' span in which the busiest of ``ipus`` did nothing (0
    when none of the steps named in ``pipeline`` ran)."""
    span, busiest = pipeline_span(execution, pipeline, ipus)
    return 1 - busiest / span if span else 0.0


def steady_state(execution: dict, pipeline: set[str], ipus: range, micros: int, target: int) -> int:
    """The cycles of a step of ``target`` micro-batches, from one of ``micros``: the step's cycles
    outside the pipelined passes (the optimiser, the host) as they were, and the passes' span with
    each further micro-batch at the pace of the busiest stage (its busy cycles a micro-batch): in a
    full pipeline the busiest stage never waits."""
    _, busiest = pipeline_span(execution, pipeline, ipus)
    return execution["totalCycles"] + (target - micros) * busiest // micros


def memory(compilation: dict, ipus: int) -> list[tuple[int, int]]:
    """(SRAM bytes, Streaming Memory bytes) of each IPU of replica 0 (stage k on IPU k)."""
    sram = {i["ipu"]: i["memory"] for i in compilation.get("ipus", [])}
    remote = [0] * ipus
    for b in compilation["memory"].get("streamingMemory", {}).get("buffers", []):
        stage = int(b["handle"].split("/")[0].removeprefix("stage"))
        remote[stage] += b["bytes"]
    return [(sram.get(k, 0), remote[k]) for k in range(ipus)]
