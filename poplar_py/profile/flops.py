"""FLOPs in the profile: what the perf estimators reported, against the device's peak.

PopLibs' estimators report the floating-point operations of the vertices they cost (poplin's
matMul and convolution blocks: ``2 x rows x inner x cols``), by the types they run on (a kind:
``"float"``, ``"half"``, or ``"half.float"`` for half accumulated in float). Per compute set the
profile gives them (``flops``, ``flopsByType``) and ``peakShare``: the share of the device's peak
for each kind, on the conv units it runs on (``Target.getPeakFlopsPerCycle``), that the compute
set's compute phase reached. For the run, ``execution.flops`` gives the total, the throughput
over the tile average compute cycles and over all cycles (at the tile clock), and the same two
shares of the peak.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

PeakPerCycle = Callable[[str], int]  # device FLOPs per cycle for a kind (0: no peak)


def peak_cycles(by_type: Mapping[str, int], peak: PeakPerCycle) -> float:
    """Cycles the whole device would take for these FLOPs at its peak (types without one count 0)."""
    return sum(n / peak(kind) for kind, n in by_type.items() if kind and peak(kind))


def add_flops(row: dict, by_type: Mapping[str, int], count: int = 1) -> None:
    """Add ``count`` times ``by_type`` to a profile row's ``flopsByType`` and ``flops``."""
    held = row.setdefault("flopsByType", {})
    for kind, n in by_type.items():
        held[kind] = held.get(kind, 0) + count * n
    row["flops"] = sum(held.values())


def share_rows(rows: list[dict], peak: PeakPerCycle) -> None:
    """Give each compute-set row with FLOPs its ``peakShare`` of its compute phase."""
    for row in rows:
        if "flopsByType" in row and row["compute"]:
            row["peakShare"] = peak_cycles(row["flopsByType"], peak) / row["compute"]


def run_flops(rows: list[dict], tile_average_compute: float, total_cycles: int, clock: float,
              peak: PeakPerCycle) -> dict[str, Any] | None:
    """The run's FLOPs over the compute-set rows, with throughputs and shares of the peak (None when
    no estimator reported any)."""
    out: dict[str, Any] = {}
    for row in rows:
        if "flopsByType" in row:
            add_flops(out, row["flopsByType"])
    if not out:
        return None
    at_peak = peak_cycles(out["flopsByType"], peak)
    for key, cycles in (("compute", tile_average_compute), ("all", float(total_cycles))):
        out[key] = {"throughput": out["flops"] * clock / cycles if cycles else 0.0,
                    "peakShare": at_peak / cycles if cycles else 0.0}
    out["peakFlopsPerCycle"] = {kind: peak(kind) for kind in out["flopsByType"] if kind}
    return out


def summary_lines(flops: Mapping[str, Any] | None) -> list[str]:
    """The summary's FLOPs lines."""
    if not flops:
        return []
    kinds = ", ".join(f"{kind} {n:,}" for kind, n in flops["flopsByType"].items() if kind)
    lines = [f"  {'FLOPs (estimated vertices):':<54}{flops['flops']:,}" + (f" ({kinds})" if kinds else "")]
    for key, label in (("compute", "over tile average compute cycles"), ("all", "over total cycles")):
        f = flops[key]
        lines.append(f"  {'Throughput ' + label + ':':<54}{f['throughput'] / 1e12:,.2f} TFLOPS "
                     f"({100 * f['peakShare']:.1f}% of peak)")
    return lines
