"""Graph dumps, as Poplar's ``Graph.outputVertexGraph``, ``outputComputeGraph`` and ``serialize``.

All three read the frozen IR (``graph.freeze()``); nothing runs on the tiles.

* The **vertex graph** (Graphviz dot) has a box per vertex (its type and tile), in a cluster per
  compute set, and an ellipse per variable a vertex is connected to (name, type, shape); an arrow
  per field and variable, from the variable for an Input, to it for an Output, both ways for an
  InOut, labelled with the field's name.
* The **compute graph** (dot) has a box per compute set (its name and number of vertices) and an
  ellipse per variable: an arrow from each variable a compute set reads, to each it writes.

Given programs, both keep only the compute sets those programs execute (functions they call
included).

**Serialized graph** (``SerializationFormat.JSON``, the default: UTF-8 text;
``SerializationFormat.Binary``: the same text, zlib-compressed). One JSON object:

- ``"format"``: ``"poplar-py graph"``, ``"version"``: 1;
- ``"target"``: ``arch``, ``numIPUs``, ``tilesPerIPU``, ``bytesPerTile``, ``numWorkerContexts``;
  ``"replicationFactor"``;
- ``"variables"``: per variable (ids are list positions) ``name``, ``type`` (Poplar's spelling),
  ``shape``, ``constant``, ``mapping`` (``[begin, end, tile]`` intervals of its flattened elements;
  tile -1: not mapped yet), and ``initialValue`` (flattened) for constants and variables given one;
- ``"computeSets"``: per compute set ``name`` and ``vertices`` (vertex ids);
- ``"vertices"``: per vertex ``type``, ``computeSet``, ``tile`` (-1: not mapped yet),
  ``perfEstimate`` (cycles, or null), ``edges`` (``[field, row, variable, offset, count, stride]``:
  the field (``row`` of a list field, else -1) is connected to ``count`` elements of the variable
  from ``offset``, every ``stride``) and ``state`` (field: values);
- ``"hostHandles"`` (``name``, ``write``, ``type``, ``shape``), ``"streams"`` (``name``, ``type``,
  ``numElements``, ``toDevice``), ``"remoteBuffers"`` (``name``, ``type``, ``numElements``,
  ``repeats``), ``"functions"`` (their programs) and ``"programs"`` (the
  programs given): each program is ``{"type", "name", ...}`` with ``children``, and ``computeSet``
  (Execute), ``count`` (Repeat), ``function`` (Call), ``cases`` (Switch values) where they apply.
"""

from __future__ import annotations

import enum
import io
import json
import os
import zlib
from collections.abc import Sequence
from typing import IO, Any

import numpy as np

from ..checks.arguments import checked_file
from ..errors import InvalidArgumentError
from ..ir import GraphIR
from ..program import Call, Execute, Program, Repeat, Switch, children, walk

File = str | os.PathLike | IO


class SerializationFormat(enum.Enum):
    """How ``Graph.serialize`` writes: JSON text, or the same text compressed (Binary)."""

    Binary = "Binary"
    JSON = "JSON"


def vertex_graph(ir: GraphIR, programs: Sequence[Program] | None) -> str:
    """The vertex graph of ``ir`` as Graphviz dot."""
    keep = _executed(ir, programs)
    v = ir.vertices
    lines = ["digraph vertexGraph {", "  node [fontsize=10];"]
    for cs in np.flatnonzero(keep).tolist():
        lines.append(f"  subgraph {_quote(f'cluster_cs{cs}')} {{")
        lines.append(f"    label={_quote(ir.compute_sets[cs])};")
        for vid in v.in_compute_set(cs).tolist():
            tile = int(v.tile[vid])
            label = _quote(f"{v.type_name(vid)}\n{f'tile {tile}' if tile >= 0 else 'not mapped'}")
            lines.append(f"    v{vid} [shape=box, label={label}];")
        lines.append("  }")
    edges = _edges(ir, keep)
    lines += _variable_nodes(ir, np.unique(edges[:, 2]))
    for vid, field, var, _, access in edges.tolist():
        name = _quote(list(v.classes[int(v.cls[vid])].fields)[field])
        ends = f"var{var} -> v{vid}" if access == _READS else f"v{vid} -> var{var}"
        lines.append(f"  {ends} [label={name}{', dir=both' if access == _READS | _WRITES else ''}];")
    return "\n".join([*lines, "}"]) + "\n"


def compute_graph(ir: GraphIR, programs: Sequence[Program] | None) -> str:
    """The compute graph of ``ir`` as Graphviz dot."""
    keep = _executed(ir, programs)
    lines = ["digraph computeGraph {", "  node [fontsize=10];"]
    for cs in np.flatnonzero(keep).tolist():
        label = _quote(f"{ir.compute_sets[cs]}\n{ir.vertices.in_compute_set(cs).size} vertices")
        lines.append(f"  cs{cs} [shape=box, label={label}];")
    edges = _edges(ir, keep)
    reads = np.unique(edges[(edges[:, 4] & _READS) > 0][:, [2, 3]], axis=0)
    writes = np.unique(edges[(edges[:, 4] & _WRITES) > 0][:, [3, 2]], axis=0)
    lines += _variable_nodes(ir, np.unique(edges[:, 2]))
    lines += [f"  var{var} -> cs{cs};" for var, cs in reads.tolist()]
    lines += [f"  cs{cs} -> var{var};" for cs, var in writes.tolist()]
    return "\n".join([*lines, "}"]) + "\n"


def serialized(ir: GraphIR, programs: Sequence[Program] | None, fmt: SerializationFormat) -> str | bytes:
    """The graph as the document the module describes, in format ``fmt``."""
    text = json.dumps(_document(ir, programs))
    return zlib.compress(text.encode()) if fmt is SerializationFormat.Binary else text


def _document(ir: GraphIR, programs: Sequence[Program] | None) -> dict[str, Any]:
    t, variables, v, e = ir.target, ir.variables, ir.vertices, ir.edges
    initial = dict(ir.initial)
    ends = ir.mapping.ends
    out_vars = []
    for var in range(len(variables)):
        base, size = int(variables.bases[var]), int(variables.sizes[var])
        k0, k1 = np.searchsorted(ir.mapping.starts, [base, base + size])
        mapping = [[int(s) - base, int(x) - base, int(tile)] for s, x, tile in
                   zip(ir.mapping.starts[k0:k1], ends[k0:k1], ir.mapping_tiles[k0:k1])]
        entry = {"name": variables.names[var], "type": str(variables.types[var]),
                 "shape": list(variables.shapes[var]), "constant": bool(variables.constant[var]),
                 "mapping": mapping}
        if var in initial:
            entry["initialValue"] = initial[var].tolist()
        out_vars.append(entry)
    edges: list[list[list[int]]] = [[] for _ in range(len(v))]
    for row in zip(e.vertex.tolist(), e.field.tolist(), e.row.tolist(), e.var.tolist(), e.offset.tolist(),
                   e.count.tolist(), e.stride.tolist()):
        edges[row[0]].append(list(row[1:]))
    state: list[dict[str, list]] = [{} for _ in range(len(v))]
    specs = [list(c.fields.items()) for c in v.classes]
    for field, vids, _ in v.store.items():
        for vid in vids.tolist():
            name, spec = specs[int(v.cls[vid])][field]
            state[vid][name] = v.store.value(vid, field, spec.type.dtype).tolist()
    out_vertices = []
    for vid in range(len(v)):
        names = list(v.classes[int(v.cls[vid])].fields)
        out_vertices.append({
            "type": v.type_name(vid), "computeSet": int(v.compute_set[vid]), "tile": int(v.tile[vid]),
            "perfEstimate": int(v.perf[vid]) if v.perf[vid] >= 0 else None,
            "edges": [[names[f], *rest] for f, *rest in edges[vid]], "state": state[vid]})
    return {
        "format": "poplar-py graph", "version": 1,
        "target": {"arch": t.getTargetArchString(), "numIPUs": t.getNumIPUs(),
                   "tilesPerIPU": t.getTilesPerIPU(), "bytesPerTile": t.getBytesPerTile(),
                   "numWorkerContexts": t.getNumWorkerContexts()},
        "replicationFactor": ir.replication_factor,
        "variables": out_vars,
        "computeSets": [{"name": name, "vertices": v.in_compute_set(cs).tolist()}
                        for cs, name in enumerate(ir.compute_sets)],
        "vertices": out_vertices,
        "hostHandles": [{"name": h.name, "write": h.write, "type": str(h.type), "shape": list(h.shape)}
                        for h in ir.host_handles.values()],
        "streams": [{"name": s.handle(), "type": str(s.elementType()), "numElements": s.numElements(),
                     "toDevice": s.toDevice} for s in ir.streams.values()],
        "remoteBuffers": [{"name": b.handle(), "type": str(b.elementType()), "numElements": b.numElements(),
                           "repeats": b.getRepeats()} for b in ir.remote_buffers.values()],
        "functions": [_program(p) for p in ir.functions],
        "programs": [_program(p) for p in programs or []],
    }


def write(file: File, data: str | bytes, what: str) -> None:
    """Write ``data`` to a path or an open file (text is encoded for a binary file)."""
    if isinstance(file, (str, os.PathLike)):
        with open(file, "wb" if isinstance(data, bytes) else "w") as f:
            f.write(data)
        return
    checked_file(file, what)
    if isinstance(data, bytes) and isinstance(file, io.TextIOBase):
        raise InvalidArgumentError(f"{what}: the Binary format needs a path or a file opened for bytes")
    if isinstance(data, str) and isinstance(file, (io.BufferedIOBase, io.RawIOBase)):
        data = data.encode()
    file.write(data)


def programs_and_format(args: tuple, what: str) -> tuple[list[Program] | None, SerializationFormat]:
    """``(progs)``, ``(format)`` or ``(progs, format)`` as Poplar's overloads take them."""
    programs, fmt = None, SerializationFormat.JSON
    for arg in args:
        if isinstance(arg, SerializationFormat):
            fmt = arg
        elif isinstance(arg, Program):
            programs = [arg]
        elif isinstance(arg, (list, tuple)) and all(isinstance(p, Program) for p in arg):
            programs = list(arg)
        else:
            raise InvalidArgumentError(f"{what}: expected programs or a poplar.SerializationFormat, got "
                                       f"{type(arg).__name__} {arg!r:.40}")
    return programs, fmt


def _executed(ir: GraphIR, programs: Sequence[Program] | None) -> np.ndarray:
    """Which compute sets to show: those ``programs`` execute (through calls too), else all."""
    keep = np.full(len(ir.compute_sets), programs is None)
    pending, called = list(programs or []), set()
    while pending:
        found, pending = walk(pending), []
        for p in found:
            if isinstance(p, Execute) and p.cs.id < keep.size:
                keep[p.cs.id] = True
            elif isinstance(p, Call) and p.function.id not in called and p.function.id < len(ir.functions):
                called.add(p.function.id)
                pending.append(ir.functions[p.function.id])
    return keep


_READS, _WRITES = 1, 2  # how a field accesses its variable (both: InOut)


def _edges(ir: GraphIR, keep: np.ndarray) -> np.ndarray:
    """One row ``(vertex, field, variable, compute set, access)`` per distinct field and variable
    of the vertices of the compute sets kept (sorted by vertex)."""
    v, e = ir.vertices, ir.edges
    access = np.zeros((len(v.classes), max([len(c.fields) for c in v.classes] + [1])), np.int64)
    for k, cls in enumerate(v.classes):
        for f, spec in enumerate(cls.fields.values()):
            access[k, f] = _READS * spec.direction.reads + _WRITES * spec.direction.writes
    cs = v.compute_set[e.vertex]
    rows = np.flatnonzero(keep[cs] & (e.count > 0))
    vertex, field = e.vertex[rows], e.field[rows]
    table = np.stack([vertex, field, e.var[rows], cs[rows], access[v.cls[vertex], field]], axis=1)
    return np.unique(table, axis=0)


def _variable_nodes(ir: GraphIR, variables: np.ndarray) -> list[str]:
    out = []
    for var in variables.tolist():
        v = ir.variables
        label = _quote(f"{v.names[var]}\n{v.types[var]} {list(v.shapes[var])}")
        style = ", style=dashed" if v.constant[var] else ""
        out.append(f"  var{var} [label={label}{style}];")
    return out


def _quote(text: str) -> str:
    """``text`` as a dot string (line breaks become ``\\n``)."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def _program(p: Program) -> dict[str, Any]:
    """A program as the serialized graph describes it."""
    out: dict[str, Any] = {"type": type(p).__name__, "name": getattr(p, "name", "")}
    if isinstance(p, Execute):
        out["computeSet"] = p.cs.id
    elif isinstance(p, Repeat):
        out["count"] = p.count
    elif isinstance(p, Call):
        out["function"] = p.function.id
    elif isinstance(p, Switch):
        out["cases"] = list(p.cases)
    nested = children(p)
    if nested:
        out["children"] = [_program(c) for c in nested]
    return out
