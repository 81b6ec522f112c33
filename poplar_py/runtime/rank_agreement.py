"""What MPI ranks plan and agree on when they take up a compiled graph: every plan it moves, by
kind of move (each cut by rank once), and a digest of what every rank must have built alike."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from ..compiler.graph_compiler import CompiledGraph
from ..compiler.partition import GATHER, SCATTER, Move, ir_digest
from ..ir import GraphIR
from ..vertex_types.backends import codelet_fingerprint


def compiled_moves(compiled: CompiledGraph) -> Iterator[Move]:
    """Every plan the engine runs, with its kind of move (for the world to plan over ranks)."""
    for leaf in compiled.lowered.leaves:
        yield from leaf.moves()
    for transfer in compiled.host_transfers.values():
        yield SCATTER if transfer.write else GATHER, transfer.plan, True
    yield from ((SCATTER, plan, True) for _, plan in compiled.initial_values)
    if compiled.index_constants is not None:
        yield SCATTER, compiled.index_constants, True
    yield from ((SCATTER, tables.tile_state.plan, True) for tables in compiled.lowered.tables
                if tables.tile_state.plan is not None)


def compiled_digest(ir: GraphIR, compiled: CompiledGraph) -> str:
    """What every MPI rank must have built alike: the frozen IR's columns, initial values, vertex
    state and codelet code, the step trees and the layout."""
    v = ir.vertices
    values = [(var, values) for var, values in ir.initial]
    remote = sorted((b.handle(), str(b.elementType()), b.numElements(), b.getRepeats())
                    for b in compiled.remote_buffers.values())
    state = [x for field, vids, rows in v.store.items() for x in (np.asarray([field]), vids, rows)]
    return ir_digest([ir.variables.names, ir.variables.sizes, [c.__qualname__ for c in v.classes], v.cls,
                      v.tile, v.compute_set, compiled.edges_digest, ir.compute_sets,
                      [codelet_fingerprint(c) for c in v.classes], *(x for pair in values for x in pair),
                      *state, np.frombuffer(v.store.heap, np.uint8),
                      [step.outline() for step in compiled.lowered.programs + compiled.lowered.functions],
                      compiled.layout.tile_base, remote])
