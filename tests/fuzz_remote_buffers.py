"""Seeded fuzz families around remote buffers (for tests/test_fuzz.py): declarations, remote
copies and host accesses with good and bad arguments.

A valid case runs random remote copies and host accesses on every replica and compares each
replica's rows and tensors with a numpy model of them, exactly; a bad case must raise a
PoplarError naming its culprit and leave the graph as it was; an offset out of range at run
time must name the buffer, the offset and the replica, and copy nothing.
"""

from __future__ import annotations

import functools
import random
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
from fuzz_cases import BAD_INTS, BAD_TYPES, Case
from fuzz_cases import snapshot as graph_snapshot

import poplar_py as poplar
from poplar_py import program as prog
from poplar_py.errors import GraphMemoryAllocationError

SEED = 20261128
TILES = 4  # per IPU
N, REPEATS, K = 6, 4, 2  # a row's elements, the rows, the rows a vector offset moves
TYPES = {
    "float": (poplar.FLOAT, np.float32),
    "int": (poplar.INT, np.int32),
    "half": (poplar.HALF, np.float16),
}


class Fill(poplar.Vertex):
    out: poplar.Output[poplar.Vector[float]]

    def compute(self):
        for i in range(len(self.out)):
            self.out[i] = 0.0


class Remote:
    """A graph of ``replicas`` replicas with remote buffer ``rb`` (REPEATS rows of N elements),
    ``t`` (a row), ``u`` (K rows), offsets ``off`` (scalar) and ``offs`` (K), each with host
    handles; tensors that do not fit a copy (``s``, ``c8``, offsets ``oi`` and ``of``, constant
    ``k``), a FIFO ``f`` and a ``Fill`` vertex ``v``; a second graph ``other`` with its own
    buffer ``orb``, tensor ``o`` and offset ``oo``."""

    def __init__(self, tmp: Path, replicas: int = 1, kind: str = "float") -> None:
        model = poplar.IPUModel()
        model.numIPUs, model.tilesPerIPU = replicas, TILES
        self.device = model.createDevice()
        self.graph = g = poplar.Graph(self.device, replication_factor=replicas)
        self.replicas, (self.type, self.dtype) = replicas, TYPES[kind]
        self.rb = g.addRemoteBuffer("rb", self.type, N, repeats=REPEATS)
        self.t = g.addVariable(self.type, [N], "t")
        self.u = g.addVariable(self.type, [K, N], "u")
        self.off = g.addVariable(poplar.UNSIGNED_INT, [], "off")
        self.offs = g.addVariable(poplar.UNSIGNED_INT, [K], "offs")
        for k, x in enumerate((self.t, self.u, self.off, self.offs)):
            g.setTileMapping(x, k % TILES)
            g.createHostWrite(x.name, x)
            g.createHostRead(x.name + "/r", x)
        self.s, self.c8 = g.addVariable(poplar.SHORT, [N], "s"), g.addVariable(poplar.CHAR, [N], "c8")
        self.oi, self.of = g.addVariable(poplar.INT, [], "oi"), g.addVariable(poplar.FLOAT, [], "of")
        self.k = g.addConstant(self.type, [N], 0, "k")
        self.f = g.addHostToDeviceFIFO("f", self.type, N)
        g.addCodelets(Fill)
        self.v = g.addVertex(g.addComputeSet("cs"), "Fill")
        self.other = poplar.Graph(self.device, replication_factor=replicas)
        self.orb = self.other.addRemoteBuffer("orb", self.type, N)
        self.o = self.other.addVariable(self.type, [N], "o")
        self.oo = self.other.addVariable(poplar.UNSIGNED_INT, [], "oo")

    def snapshot(self) -> tuple:
        return graph_snapshot(self.graph)

    def engine(self, programs: list[prog.Program]) -> poplar.Engine:
        e = poplar.Engine(self.graph, programs)
        e.load(self.device)
        return e

    def rows(self, e: poplar.Engine, replica: int) -> np.ndarray:
        out = np.empty([REPEATS, N], self.dtype)
        for row in range(REPEATS):
            e.copyFromRemoteBuffer("rb", out[row], row, replicaIndex=replica)
        return out


def remote(replicas: int = 1, kind: str = "float") -> Callable[[Path], Remote]:
    return functools.partial(Remote, replicas=replicas, kind=kind)


# ---- valid programs against numpy --------------------------------------------------------------
def _random_copies(w: Remote, seed: int, steps: int) -> None:
    """Random programs of remote copies (one row by scalar offset, K rows by vector offset, row 0
    without one; each way) and host row writes, every replica against its numpy rows."""
    rng = np.random.default_rng(seed)
    programs = [
        prog.Copy(w.rb, w.t, w.off),
        prog.Copy(w.t, w.rb, w.off),
        prog.Copy(w.rb, w.u, w.offs),
        prog.Copy(w.u, w.rb, w.offs),
        prog.Copy(w.rb, w.t),
        prog.Copy(w.t, w.rb),
        prog.Sequence([prog.Copy(w.rb, w.u, w.offs), prog.Copy(w.u[0], w.rb, w.off)]),
    ]
    e = w.engine(programs)
    rows = [np.zeros([REPEATS, N], w.dtype) for _ in range(w.replicas)]  # never written: zeros
    for _ in range(steps):
        if rng.random() < 0.3:
            r, row = int(rng.integers(w.replicas)), int(rng.integers(REPEATS))
            rows[r][row] = rng.integers(-50, 50, N).astype(w.dtype)
            e.copyToRemoteBuffer(rows[r][row].copy(), "rb", row, replicaIndex=r)
            continue
        kind = int(rng.integers(len(programs)))
        t, u, off, offs = [], [], [], []
        for r in range(w.replicas):
            t.append(rng.integers(-50, 50, N).astype(w.dtype))
            u.append(rng.integers(-50, 50, [K, N]).astype(w.dtype))
            off.append(np.uint32(rng.integers(REPEATS)))
            offs.append(rng.integers(REPEATS, size=K).astype(np.uint32))
            for name, value in (("t", t[r]), ("u", u[r]), ("off", off[r]), ("offs", offs[r])):
                e.writeTensor(name, value, replicaIndex=r)
        e.run(kind)
        for r in range(w.replicas):
            m = rows[r]
            if kind == 0:
                t[r] = m[off[r]].copy()
            elif kind == 1:
                m[off[r]] = t[r]
            elif kind in (2, 6):
                u[r] = m[offs[r]]
                if kind == 6:
                    m[off[r]] = u[r][0]
            elif kind == 3:
                for i, o in enumerate(offs[r]):  # a row named twice keeps the last
                    m[o] = u[r][i]
            elif kind == 4:
                t[r] = m[0].copy()
            else:
                m[0] = t[r]
            np.testing.assert_array_equal(
                e.readTensor("t/r", replicaIndex=r), t[r], err_msg=f"program {kind}"
            )
            np.testing.assert_array_equal(
                e.readTensor("u/r", replicaIndex=r), u[r], err_msg=f"program {kind}"
            )
            np.testing.assert_array_equal(w.rows(e, r), m, err_msg=f"program {kind}, replica {r}")


def _valid(rng: random.Random) -> Iterator[Case]:
    for k in range(36):
        replicas, kind = rng.choice([1, 2, 4]), rng.choice(list(TYPES))
        seed, steps = rng.randrange(2**32), rng.randint(3, 12)
        yield Case(
            f"remote-valid-{kind}-{replicas}-{k}",
            None,
            lambda w, s=seed, n=steps: _random_copies(w, s, n),
            world=remote(replicas, kind),
        )


def _out_of_range(w: Remote, bad_replica: int, value: int, gather: bool) -> None:
    """An offset past the rows on one replica: the error names buffer, offset and replica, and no
    replica's tensor or rows change."""
    e = w.engine([prog.Copy(w.rb, w.u, w.offs) if gather else prog.Copy(w.u, w.rb, w.offs)])
    for r in range(w.replicas):
        e.writeTensor("u", np.full([K, N], r + 1, w.dtype), replicaIndex=r)
        offs = np.array([1, value] if r == bad_replica else [0, 3], np.uint32)
        e.writeTensor("offs", offs, replicaIndex=r)
    try:
        e.run(0)
    except poplar.RemoteBufferError as exc:
        for part in ("'rb'", f"offset {value}", f"replica {bad_replica}", "nothing was copied"):
            assert part in str(exc), (part, str(exc))
    else:
        raise AssertionError("no error for an offset out of range")
    for r in range(w.replicas):
        np.testing.assert_array_equal(e.readTensor("u/r", replicaIndex=r), np.full([K, N], r + 1, w.dtype))
        assert not w.rows(e, r).any()


def _runtime(rng: random.Random) -> Iterator[Case]:
    for k in range(16):
        replicas = rng.choice([1, 2, 4])
        bad, value, gather = (
            rng.randrange(replicas),
            rng.choice([REPEATS, REPEATS + 1, 2**31, 2**32 - 1]),
            k % 2,
        )
        yield Case(
            f"remote-offset-range-{k}",
            None,
            lambda w, b=bad, v=value, g=gather: _out_of_range(w, b, v, g),
            world=remote(replicas),
        )


# ---- bad declarations ------------------------------------------------------------------------
def _declarations(rng: random.Random) -> Iterator[Case]:
    k = 0
    for bad in BAD_INTS + [0, -3]:
        for which in ("numElements", "repeats"):
            args: list[Any] = ["new", poplar.FLOAT, 4, 2]
            args[2 if which == "numElements" else 3] = bad
            yield Case(
                f"remote-declare-{which}-{k}",
                (which,),
                lambda w, a=tuple(args): w.graph.addRemoteBuffer(*a),
                world=remote(),
            )
            k += 1
    for bad in BAD_TYPES:
        yield Case(
            f"remote-declare-type-{k}",
            ("element type",),
            lambda w, b=bad: w.graph.addRemoteBuffer("new", b, 4),
            world=remote(),
        )
        k += 1
    for bad in [None, 3, ["x"], b"x"]:
        yield Case(
            f"remote-declare-handle-{k}",
            ("handle",),
            lambda w, b=bad: w.graph.addRemoteBuffer(b, poplar.FLOAT, 4),
            world=remote(),
        )
        k += 1
    for handle in ("rb", "t", "t/r", "offs"):
        yield Case(
            f"remote-declare-twice-{k}",
            (f"'{handle}'", "already used"),
            lambda w, h=handle: w.graph.addRemoteBuffer(h, poplar.FLOAT, 4),
            error=poplar.RemoteBufferError,
            world=remote(),
        )
        k += 1
    for hint in ("rearrangeOnHost", "optimisedForMemory"):
        for bad in ["yes", 1, None, 0.0]:
            yield Case(
                f"remote-declare-{hint}-{k}",
                (hint,),
                lambda w, h=hint, b=bad: w.graph.addRemoteBuffer("new", poplar.FLOAT, 4, **{h: b}),
                world=remote(),
            )
            k += 1
    yield Case(
        "remote-declare-mk1",
        ("ipu1", "no Streaming Memory"),
        lambda w: poplar.Graph(poplar.IPUModel("ipu1").createDevice()).addRemoteBuffer("x", poplar.FLOAT, 4),
        error=poplar.RemoteBufferError,
        world=remote(),
    )
    for k in range(4):
        rows = rng.choice([65, 100, 2**20])
        yield Case(
            f"remote-declare-capacity-{k}",
            ("Out of Streaming Memory", "'huge'"),
            lambda w, n=rows: poplar.Engine(w.graph, prog.Sequence()),
            prepare=lambda w, n=rows: w.graph.addRemoteBuffer("huge", poplar.FLOAT, 2**28, repeats=n),
            error=GraphMemoryAllocationError,
            world=remote(),
        )


# ---- bad copies ------------------------------------------------------------------------------
COPIES: list[tuple[str, Callable[[Remote], Any], tuple[str, ...], type[Exception]]] = [
    ("type", lambda w: prog.Copy(w.rb, w.s), ("'rb'", "'s'"), poplar.RemoteBufferError),
    ("type-to", lambda w: prog.Copy(w.c8, w.rb), ("'rb'", "'c8'"), poplar.RemoteBufferError),
    ("row-size", lambda w: prog.Copy(w.rb, w.u), ("'rb'", "'u'"), poplar.RemoteBufferError),
    (
        "row-size-to",
        lambda w: prog.Copy(w.t.slice(0, 3), w.rb),
        ("'rb'", "a row has 6"),
        poplar.RemoteBufferError,
    ),
    (
        "rows-shape",
        lambda w: prog.Copy(w.rb, w.t, w.offs),
        ("'rb'", "'t'", "[2, 6]"),
        poplar.RemoteBufferError,
    ),
    (
        "rows-shape-flat",
        lambda w: prog.Copy(w.u.flatten(), w.rb, w.offs),
        ("'rb'", "[2, 6]"),
        poplar.RemoteBufferError,
    ),
    (
        "rows-count",
        lambda w: prog.Copy(w.rb, w.u, w.offs.slice(0, 1)),
        ("'rb'", "a row has 6", "'u' has 12"),
        poplar.RemoteBufferError,
    ),
    (
        "offset-int",
        lambda w: prog.Copy(w.rb, w.t, w.oi),
        ("'rb'", "'oi'", "UNSIGNED_INT"),
        poplar.RemoteBufferError,
    ),
    (
        "offset-float",
        lambda w: prog.Copy(w.rb, w.t, w.of),
        ("'of'", "UNSIGNED_INT"),
        poplar.RemoteBufferError,
    ),
    (
        "offset-rank",
        lambda w: prog.Copy(w.rb, w.u, w.offs.reshape([1, K])),
        ("'rb'", "1-D"),
        poplar.RemoteBufferError,
    ),
    (
        "offset-int-value",
        lambda w: prog.Copy(w.rb, w.t, 2),
        ("'rb'", "offset must be a tensor"),
        poplar.ProgramArgumentError,
    ),
    (
        "offset-string",
        lambda w: prog.Copy(w.rb, w.t, "0"),
        ("offset must be a tensor",),
        poplar.ProgramArgumentError,
    ),
    (
        "offset-keyword",
        lambda w: prog.Copy(w.rb, w.t, offset=[0]),
        ("offset must be a tensor",),
        poplar.ProgramArgumentError,
    ),
    (
        "offset-tensors",
        lambda w: prog.Copy(w.t, w.u[0], offset=w.off),
        ("only with a remote buffer",),
        poplar.ProgramArgumentError,
    ),
    ("constant", lambda w: prog.Copy(w.rb, w.k), ("'k'", "constants"), poplar.ProgramError),
    (
        "aliases",
        lambda w: prog.Copy(w.rb, w.t.slice(0, 3).broadcast(2, 0)),
        ("aliased",),
        poplar.ProgramError,
    ),
    (
        "remote-remote",
        lambda w: prog.Copy(w.rb, w.rb),
        ("'rb'", "must be a tensor"),
        poplar.ProgramArgumentError,
    ),
    ("stream-remote", lambda w: prog.Copy(w.f, w.rb), ("'rb'",), poplar.ProgramArgumentError),
    ("none", lambda w: prog.Copy(w.rb, None), ("'rb'", "NoneType"), poplar.ProgramArgumentError),
    ("list", lambda w: prog.Copy([1.0] * N, w.rb), ("'rb'", "list"), poplar.ProgramArgumentError),
    (
        "foreign-buffer",
        lambda w: poplar.Engine(w.graph, prog.Copy(w.orb, w.t)),
        ("'orb'", "not added"),
        poplar.RemoteBufferError,
    ),
    (
        "foreign-tensor",
        lambda w: poplar.Engine(w.graph, prog.Copy(w.rb, w.o)),
        ("'o'", "another graph"),
        poplar.ProgramError,
    ),
    (
        "foreign-offset",
        lambda w: poplar.Engine(w.graph, prog.Copy(w.rb, w.t, w.oo)),
        ("'oo'", "another graph"),
        poplar.ProgramError,
    ),
    (
        "vertex-field",
        lambda w: w.graph.connect(w.v["out"], w.rb),
        ("'rb'", "prog.Copy"),
        poplar.GraphConnectionError,
    ),
]


def _copies(rng: random.Random) -> Iterator[Case]:
    for k in range(3 * len(COPIES)):
        name, make, culprit, error = COPIES[k % len(COPIES)]
        kind = rng.choice(["float", "int"])
        yield Case(
            f"remote-copy-{name}-{k}", culprit, make, world=remote(rng.choice([1, 2]), kind), error=error
        )


# ---- bad host accesses ---------------------------------------------------------------------------
def _host(rng: random.Random) -> Iterator[Case]:
    row = np.zeros(N, np.float32)
    calls: list[tuple[str, Callable[[poplar.Engine], Any], tuple[str, ...], type[Exception]]] = [
        ("handle", lambda e: e.copyToRemoteBuffer(row, "nope", 0), ("'nope'",), poplar.RemoteBufferError),
        (
            "handle-from",
            lambda e: e.copyFromRemoteBuffer("t", row.copy(), 0),
            ("'t'",),
            poplar.RemoteBufferError,
        ),
        ("handle-kind", lambda e: e.copyToRemoteBuffer(row, 5, 0), ("handle",), poplar.InvalidArgumentError),
        (
            "row-size",
            lambda e: e.copyToRemoteBuffer(row[:5], "rb", 0),
            ("'rb'", "5 float32"),
            poplar.RemoteBufferError,
        ),
        (
            "row-type",
            lambda e: e.copyToRemoteBuffer(row.astype(np.float64), "rb", 0),
            ("'rb'", "float64"),
            poplar.RemoteBufferError,
        ),
        (
            "row-list",
            lambda e: e.copyToRemoteBuffer(row.tolist(), "rb", 0),
            ("'rb'", "numpy array"),
            poplar.InvalidArgumentError,
        ),
        (
            "out-size",
            lambda e: e.copyFromRemoteBuffer("rb", np.zeros(N + 1, np.float32), 0),
            ("'rb'", "7 float32"),
            poplar.RemoteBufferError,
        ),
        (
            "out-type",
            lambda e: e.copyFromRemoteBuffer("rb", np.zeros(N, np.int32), 0),
            ("'rb'", "int32"),
            poplar.RemoteBufferError,
        ),
    ]
    for index in [REPEATS, REPEATS + 7, -1, 1.0, "0", None, True, np.float32(1)]:
        calls.append(
            (
                "repeat",
                lambda e, i=index: e.copyToRemoteBuffer(row, "rb", i),
                ("'rb'", f"row {index!r}"),
                poplar.RemoteBufferError,
            )
        )
        calls.append(
            (
                "repeat-from",
                lambda e, i=index: e.copyFromRemoteBuffer("rb", row.copy(), i),
                ("'rb'", f"row {index!r}"),
                poplar.RemoteBufferError,
            )
        )
    for index in [2, 9, -1, 1.5, "1", None]:
        calls.append(
            (
                "replica",
                lambda e, i=index: e.copyToRemoteBuffer(row, "rb", 0, replicaIndex=i),
                ("'rb'", "replica index"),
                poplar.GraphReplicationError,
            )
        )
        calls.append(
            (
                "replica-from",
                lambda e, i=index: e.copyFromRemoteBuffer("rb", row.copy(), 0, i),
                ("'rb'", "replica index"),
                poplar.GraphReplicationError,
            )
        )
    for k, (name, call, culprit, error) in enumerate(calls):
        yield Case(
            f"remote-host-{name}-{k}",
            culprit,
            lambda w, e, c=call: c(e),
            prepare=lambda w: w.engine([prog.Sequence()]),
            world=remote(2),
            error=error,
        )


GENERATORS = [_valid, _runtime, _declarations, _copies, _host]


def cases() -> list[Case]:
    """Every remote buffer case, generated from SEED (the same list on every run)."""
    rng = random.Random(SEED)
    return [c for gen in GENERATORS for c in gen(rng)]
