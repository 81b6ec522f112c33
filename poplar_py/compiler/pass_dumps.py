"""What the compiler passes produced, as text (``POPLAR_PY_DUMP_AFTER=<pass>``).

The IR after the passes that change it (with the complete tile mapping once it is made), the
liveness, the memory layout's use per tile, the compute-set plans and the lowered step trees;
every list is cut at ``limit`` entries.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from ..ir import GraphIR
from .computeset import ComputeSetPlans
from .layout import MemoryLayout
from .liveness import Liveness
from .lower import LoweredPrograms
from .mapping import TileMapping

LIMIT = 20


def _more(total: int, limit: int) -> list[str]:
    return [f"  ... {total - limit:,} more"] if total > limit else []


def ir_text(graph: GraphIR, mapping: TileMapping | None = None, limit: int = LIMIT) -> str:
    """The IR as text, with the complete tile mapping when there is one."""
    if mapping is not None:
        graph = dataclasses.replace(graph, mapping=mapping.intervals, mapping_tiles=mapping.tiles)
    auto = "" if mapping is None else \
        f"mapped by the compiler: {', '.join(mapping.auto_mapped[:limit]) or '-'}\n"
    return graph.text(limit) + auto


def liveness_text(graph: GraphIR, liveness: Liveness, limit: int = LIMIT) -> str:
    """Which variables are always live; the lives of the others, in program points."""
    names = graph.variables.names
    packed = np.flatnonzero(~liveness.always)
    lines = [f"liveness: {int(liveness.always.sum()):,} of {liveness.always.size:,} variables always live; "
             f"{liveness.steps.size:,} steps"]
    for v in packed[:limit].tolist():
        a, b = int(liveness.bounds[v]), int(liveness.bounds[v + 1])
        lo, hi = liveness.lo[a:b][:6].tolist(), liveness.hi[a:b][:6].tolist()
        lives = " ".join(f"[{x},{y})" for x, y in zip(lo, hi))
        lines.append(f"  '{names[v % len(names)]}' live at {lives}{' ...' if b - a > 6 else ''}")
    return "\n".join(lines + _more(packed.size, limit)) + "\n"


def layout_text(layout: MemoryLayout, limit: int = LIMIT) -> str:
    """Bytes per category, then each used tile's bytes by category (the fullest tiles first)."""
    total = layout.tile_total
    used = np.flatnonzero(total)
    lines = [f"memory layout: {layout.intervals.starts.size:,} intervals on {layout.num_tiles:,} tiles, "
             f"{int(total.sum()):,} B in all, {used.size:,} tiles used"]
    lines += [f"  {name}: {int(b.sum()):,} B" for name, b in layout.usage.items()]
    if layout.tile_base is not None:
        lines.append(f"  arena: {layout.arena_size:,} B a replica, {layout.replicas:,} replica(s)")
    fullest = used[np.argsort(-total[used], kind="stable")][:limit]
    for tile in fullest.tolist():
        parts = ", ".join(f"{name} {int(b[tile]):,}" for name, b in layout.usage.items() if b[tile])
        lines.append(f"  tile {tile}: {int(total[tile]):,} B ({parts})")
    return "\n".join(lines + _more(used.size, limit)) + "\n"


def plans_text(layout: MemoryLayout, plans: ComputeSetPlans, limit: int = LIMIT) -> str:
    """Each compute set planned: its vertices, tiles, fields and exchange buffers; then the layout."""
    lines = [f"compute sets planned: {len(plans.plans):,}"]
    for plan in list(plans.plans.values())[:limit]:
        seg = plan.segments
        staged = (seg.buffer >= 0) & (seg.length > 0)
        staged_bytes = int((seg.length[staged] * seg.size[staged]).sum())
        types = ", ".join(f"{cls.vertexName} x{members.size:,}" for cls, members in plan.groups.items())
        lines.append(f"  {plan.cs_id} '{plan.name}': {plan.vertices.size:,} vertices on "
                     f"{np.unique(plan.tiles).size:,} tiles ({types or 'none'}); "
                     f"{len(seg):,} field segments, "
                     f"{int(staged.sum()):,} through exchange buffers ({staged_bytes:,} B)")
    return "\n".join(lines + _more(len(plans.plans), limit)) + "\n" + layout_text(layout, limit)


def lowered_text(lowered: LoweredPrograms, limit: int = LIMIT) -> str:
    """The programs' and functions' step trees (outlined), then the leaf steps."""
    lines = [f"lowered: {len(lowered.programs):,} programs, {len(lowered.functions):,} functions, "
             f"{len(lowered.leaves):,} leaf steps, {len(lowered.tables):,} compute sets"]
    for kind, steps in (("program", lowered.programs), ("function", lowered.functions)):
        for k, step in enumerate(steps[:limit]):
            outline = step.outline()
            lines.append(f"  {kind} {k}: {outline[:200]}{' ...' if len(outline) > 200 else ''}")
    lines += [f"  step {leaf.id}: {leaf.kind or type(leaf).__name__} '{leaf.label}'"
              for leaf in lowered.leaves[:limit]]
    return "\n".join(lines + _more(len(lowered.leaves), limit)) + "\n"
