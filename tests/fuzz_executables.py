"""Seeded fuzz families around compiled executables (for tests/test_fuzz.py): serialize and
deserialize round trips of generated programs, corrupted and forged files, and wrong kinds
of file arguments.

A round trip runs the program on an Engine built directly and on one built from the
deserialized executable: outputs, streams and the execution profile must be equal, bit for
bit. A bad file must raise a PoplarError naming the file and what is wrong with it.
"""

from __future__ import annotations

import dataclasses
import functools
import io
import pickle
import random
import struct
import textwrap
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
from fuzz_cases import Case

import poplar_py as poplar
from poplar_py import program as prog
from poplar_py.executable import FORMAT_VERSION
from poplibs_py import gcl, popops
from poplibs_py.popops import expr as pe

SEED = 20260427
MAGIC = b"POPLAR_PY_EXECUTABLE\n"
HEADER = struct.Struct("<IIQ")  # format version, CRC-32 of the payload, payload length
PAYLOAD = len(MAGIC) + HEADER.size  # where the payload starts

CODELET = textwrap.dedent("""
    from poplar_py import InOut, Vector, Vertex

    class Affine(Vertex):
        x: InOut[Vector[float]]
        k: float
        b: float

        def compute(self):
            for i in range(len(self.x)):
                self.x[i] = self.x[i] * self.k + self.b
    """)


class Folder:
    """A case's directory; no graph of its own (each case builds what it needs)."""

    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp

    def snapshot(self) -> tuple:
        return ()


# ---- round trips -------------------------------------------------------------------------------
@dataclasses.dataclass
class Program:
    """A generated program: its device, graph and control program, and how to feed it."""

    device: poplar.Device
    graph: poplar.Graph
    seq: prog.Sequence
    replicas: int
    inputs: dict[str, np.ndarray]  # host handle: values (plus r on replica r)
    stream: np.ndarray  # fed to the host-to-device stream "in"
    out_size: int  # elements of the device-to-host stream "out"


UNARY: list[Callable[[pe.Expr], pe.Expr]] = [pe.Neg, pe.Abs, pe.Square, lambda a: pe.Add(a, pe.Const(0.5)),
                                             lambda a: pe.Max(a, pe.Const(-0.25)), pe.Tanh]


def _generate(tmp: Path, seed: int) -> Program:
    """A random program: a replicated or plain graph, inputs from host writes and a stream, a
    chain of popops maps, reductions, a user codelet with vertex state and a collective, and
    outputs through host reads and a stream."""
    rng = np.random.default_rng(seed)
    replicas = int(rng.choice([1, 2]))
    model = poplar.IPUModel()
    model.numIPUs, model.tilesPerIPU = replicas, 8
    device = model.createDevice()
    graph = poplar.Graph(device, replication_factor=replicas)
    popops.addCodelets(graph)
    (tmp / "affine.py").write_text(CODELET)
    graph.addCodelets(str(tmp / "affine.py"))
    n = int(rng.integers(4, 40))
    x = graph.addVariable(poplar.FLOAT, [n], "x", poplar.VariableMappingMethod.LINEAR)
    graph.createHostWrite("x", x)
    fifo = graph.addHostToDeviceFIFO("in", poplar.FLOAT, n)
    seq = prog.Sequence([prog.Copy(fifo, x)] if rng.random() < 0.5 else [])
    t = x
    for step in range(int(rng.integers(1, 5))):
        kind = rng.choice(["map", "codelet", "reduce", "collective", "repeat"])
        if kind == "map":
            e = UNARY[int(rng.integers(len(UNARY)))](pe.PlaceHolder(1))
            t = popops.map(graph, e, [t], seq, f"map{step}")
        elif kind == "codelet":
            cs = graph.addComputeSet(f"affine{step}")
            tiles = graph.getTileMapping(t)
            for tile, intervals in enumerate(tiles):
                for iv in intervals:
                    v = graph.addVertex(cs, "Affine", {"x": t.slice(iv.begin(), iv.end())})
                    graph.setInitialValue(v["k"], float(rng.uniform(-2, 2)))
                    graph.setInitialValue(v["b"], float(rng.uniform(-1, 1)))
                    graph.setTileMapping(v, tile)
            seq.add(prog.Execute(cs))
        elif kind == "reduce":
            total = popops.reduce(graph, t, [0], popops.Operation.ADD, seq, debugName=f"sum{step}")
            t = popops.sub(graph, t, total, seq, f"minus{step}")
        elif kind == "collective":
            t = gcl.allReduceCrossReplica(graph, t, gcl.CollectiveOperator.MAX, seq, f"max{step}")
        else:
            seq.add(prog.Repeat(int(rng.integers(2, 4)), prog.Sequence([prog.Copy(t, x)])))
            t = x
    graph.createHostRead("t", t)
    out_size = int(rng.integers(1, n + 1))
    seq.add(prog.Copy(t.slice(0, out_size), graph.addDeviceToHostFIFO("out", poplar.FLOAT, out_size)))
    values = rng.standard_normal(n).astype(np.float32)
    return Program(device, graph, seq, replicas, {"x": values}, rng.standard_normal(n).astype(np.float32),
                   out_size)


def _run(p: Program, engine: poplar.Engine) -> tuple[list[bytes], bytes, dict]:
    """Feed ``p``'s inputs, run once: ``t`` and the stream out of every replica, and the execution
    profile."""
    engine.load(p.device)
    for name, values in p.inputs.items():
        for r in range(p.replicas):
            engine.writeTensor(name, values + r, replicaIndex=r)
    engine.connectStream("in", p.stream)
    outs = [np.zeros(p.out_size, np.float32) for _ in range(p.replicas)]
    for r, out in enumerate(outs):
        engine.connectStream("out", out, replicaIndex=r)
    engine.run(0)
    return ([engine.readTensor("t", replicaIndex=r).tobytes() for r in range(p.replicas)],
            b"".join(out.tobytes() for out in outs), engine.getProfile()["execution"])


def _round_trip(w: Folder, seed: int, to_path: bool) -> None:
    """The same results and profile from an Engine built directly and from a deserialized one."""
    p = _generate(w.tmp, seed)
    direct = _run(p, poplar.Engine(p.graph, p.seq))
    exe = poplar.compileGraph(p.graph, p.seq)
    if to_path:
        exe.serialize(w.tmp / "prog.exe")
        loaded = poplar.Executable.deserialize(str(w.tmp / "prog.exe"))
    else:
        buffer = io.BytesIO()
        exe.serialize(buffer)
        loaded = poplar.Executable.deserialize(io.BytesIO(buffer.getvalue()))
    again = _run(p, poplar.Engine(loaded))
    assert again[0] == direct[0], "readTensor differs"
    assert again[1] == direct[1], "the stream out differs"
    assert again[2] == direct[2], "the execution profile differs"


def _round_trips(rng: random.Random) -> Iterator[Case]:
    for k in range(14):
        seed = rng.randrange(2**32)
        yield Case(f"executable-round-trip-{k}", None,
                   lambda w, s=seed, path=k % 2 == 0: _round_trip(w, s, path), world=Folder)


# ---- bad files ---------------------------------------------------------------------------------
@functools.cache
def good_file() -> bytes:
    """A serialized executable of a small program (made once per process)."""
    model = poplar.IPUModel()
    model.tilesPerIPU = 4
    graph = poplar.Graph(model.createDevice())
    popops.addCodelets(graph)
    a = graph.addVariable(poplar.FLOAT, [8], "a", poplar.VariableMappingMethod.LINEAR)
    seq = prog.Sequence()
    popops.addInPlace(graph, a, a, seq)
    graph.createHostRead("a", a)
    buffer = io.BytesIO()
    poplar.compileGraph(graph, seq).serialize(buffer)
    return buffer.getvalue()


def wrapped(payload: bytes) -> bytes:
    """``payload`` behind a valid header: magic, format 1, its CRC-32 and length."""
    return MAGIC + HEADER.pack(FORMAT_VERSION, zlib.crc32(payload), len(payload)) + payload


def _load(w: Folder, make: Callable[[bytes], bytes], name: str) -> None:
    """Deserialize the file ``name`` holding ``make(good file)``."""
    (w.tmp / name).write_bytes(make(good_file()))
    poplar.Executable.deserialize(w.tmp / name)


def _position(data: bytes, at: int | None, fraction: float) -> int:
    """``at``, or (None) a place in the payload at ``fraction`` of it (before its last byte)."""
    return at if at is not None else PAYLOAD + int(fraction * (len(data) - PAYLOAD - 1))


def _truncations(rng: random.Random) -> Iterator[Case]:
    regions = [(0, len(MAGIC), "is not a poplar-py executable"),
               (len(MAGIC), PAYLOAD, "header is incomplete")]
    for k in range(12):
        at, f, what = None, rng.random(), "is truncated"
        if k < 4:
            begin, end, what = regions[k % 2]
            at = rng.randrange(begin, end)
        yield Case(f"executable-truncated-{k}", (f"cut{k}.exe", what),
                   lambda w, at=at, f=f, name=f"cut{k}.exe":
                   _load(w, lambda d: d[:_position(d, at, f)], name), world=Folder)


def _flips(rng: random.Random) -> Iterator[Case]:
    """One byte changed: in the magic, the version, the checksum, the length (made longer than
    the file) or the payload."""
    fields = [(0, len(MAGIC), "is not a poplar-py executable"), (len(MAGIC), len(MAGIC) + 4, "of format"),
              (len(MAGIC) + 4, len(MAGIC) + 8, "is corrupt"), (len(MAGIC) + 12, PAYLOAD, "is truncated")]
    for k in range(12):
        mask, at, f, what = rng.randrange(1, 256), None, rng.random(), "is corrupt"
        if k < 8:
            begin, end, what = fields[k % 4]
            at = rng.randrange(begin, end)

        def flip(data: bytes, at: int | None = at, f: float = f, mask: int = mask) -> bytes:
            i = _position(data, at, f)
            return data[:i] + bytes([data[i] ^ mask]) + data[i + 1:]

        yield Case(f"executable-flipped-{k}", (f"flip{k}.exe", what),
                   lambda w, flip=flip, name=f"flip{k}.exe": _load(w, flip, name), world=Folder)
    for k in range(4):
        extra = bytes(rng.randrange(256) for _ in range(rng.randint(1, 64)))
        yield Case(f"executable-trailing-{k}", (f"long{k}.exe", f"{len(extra)} trailing bytes"),
                   lambda w, x=extra, name=f"long{k}.exe": _load(w, lambda d: d + x, name), world=Folder)


JUNK: dict[str, tuple[Any, str]] = {
    # a payload behind a valid header, and what the error says
    "int": (pickle.dumps(3), "does not hold an executable"),
    "text": (pickle.dumps("executable"), "does not hold an executable"),
    "list": (pickle.dumps([1, 2, 3]), "does not hold an executable"),
    "dict": (pickle.dumps({"ir": 1, "compiled": 2}), "does not hold an executable"),
    "triple": (pickle.dumps((1, 2, 3)), "does not hold an executable"),
    "nones": (pickle.dumps((None, None, None)), "does not hold an executable"),
    "quad": (pickle.dumps((1, 2, 3, 4)), "does not hold an executable"),
    "empty": (b"", "could not be loaded"),
    "garbage": (b"\x80\x05garbage", "could not be loaded"),
    "unknown-class": (b"\x80\x04cno_such_module_for_poplar\nThing\n)\x81.", "could not be loaded"),
}


def _forge(ir: Any, compiled: Any, options: Any, choice: int) -> tuple[Any, Any, Any]:
    """The parts of an executable with one of them replaced by something of the wrong kind (one
    way of eleven)."""
    replace = dataclasses.replace
    choices: list[Callable[[], tuple[Any, Any, Any]]] = [
        lambda: (ir, replace(compiled, layout=None), options),
        lambda: (ir, replace(compiled, target="ipu2"), options),
        lambda: (ir, replace(compiled, lowered=replace(compiled.lowered, tables=[7])), options),
        lambda: (ir, replace(compiled, streams={1: 2}), options),
        lambda: (ir, compiled, replace(options, values={"a": 1})),
        lambda: (replace(ir, variables=None), compiled, options),
        lambda: (ir, replace(compiled, host_transfers={"a": 3}), options),
        lambda: (ir, replace(compiled, initial_values=[(1, 2)]), options),
        lambda: (ir, replace(compiled, replication=None), options),
        lambda: (ir, compiled, "options"),
        lambda: (ir, replace(compiled, layout=replace(compiled.layout, tile_base=None)), options),
    ]
    return choices[choice]()


def _forged(w: Folder, choice: int, name: str) -> None:
    """A real executable's parts, one of them forged, serialized (so header and checksum are
    valid) and loaded again."""
    exe = poplar.Executable.deserialize(io.BytesIO(good_file()))
    poplar.Executable(*_forge(exe.ir, exe.compiled, exe.options, choice)).serialize(w.tmp / name)
    poplar.Executable.deserialize(w.tmp / name)


def _payloads(rng: random.Random) -> Iterator[Case]:
    for key, (payload, what) in JUNK.items():
        yield Case(f"executable-payload-{key}", (f"{key}.exe", what),
                   lambda w, p=payload, name=f"{key}.exe": _load(w, lambda d: wrapped(p), name), world=Folder)
    for k in range(11):
        yield Case(f"executable-forged-{k}", (f"forged{k}.exe", "does not hold an executable"),
                   lambda w, k=k, name=f"forged{k}.exe": _forged(w, k, name), world=Folder)


def _file_arguments(rng: random.Random) -> Iterator[Case]:
    """Wrong kinds of ``file`` (InvalidArgumentError naming the method and the argument) and files
    that cannot be written or read (ExecutableError naming them)."""
    def exe(w: Folder) -> poplar.Executable:
        return poplar.Executable.deserialize(io.BytesIO(good_file()))

    def text_file(w: Folder, mode: str) -> Any:
        (w.tmp / "text.exe").write_text("text")
        return open(w.tmp / "text.exe", mode)

    def closed(w: Folder) -> Any:
        f = open(w.tmp / "closed.exe", "wb")  # noqa: SIM115
        f.close()
        return f

    kinds: dict[str, Callable[[Folder], Any]] = {
        "none": lambda w: None, "int": lambda w: 3, "float": lambda w: 2.5, "bytes": lambda w: good_file(),
        "bytearray": lambda w: bytearray(4), "stringio": lambda w: io.StringIO(),
        "list": lambda w: [w.tmp / "a"],
    }
    for key, make in kinds.items():
        yield Case(f"executable-serialize-{key}", ("Executable.serialize", "file"),
                   lambda w, e, m=make: e.serialize(m(w)), prepare=exe, world=Folder)
        yield Case(f"executable-deserialize-{key}", ("Executable.deserialize", "file"),
                   lambda w, m=make: poplar.Executable.deserialize(m(w)), world=Folder)
    yield Case("executable-serialize-text-file", ("Executable.serialize", "text"),
               lambda w, e: e.serialize(text_file(w, "w")), prepare=exe, world=Folder)
    yield Case("executable-deserialize-text-file", ("Executable.deserialize", "text"),
               lambda w: poplar.Executable.deserialize(text_file(w, "r")), world=Folder)
    places: dict[str, tuple[Callable[[Folder], Any], str]] = {
        "missing-folder": (lambda w: w.tmp / "nowhere" / "x.exe", "nowhere"),
        "folder": (lambda w: w.tmp, "cannot"), "closed": (closed, "closed.exe"),
    }
    for key, (make, culprit) in places.items():
        yield Case(f"executable-serialize-{key}", ("cannot write", culprit),
                   lambda w, e, m=make: e.serialize(m(w)), prepare=exe, world=Folder)
        yield Case(f"executable-deserialize-{key}", ("cannot read", culprit),
                   lambda w, m=make: poplar.Executable.deserialize(m(w)), world=Folder)


GENERATORS = [_round_trips, _truncations, _flips, _payloads, _file_arguments]


def cases() -> list[Case]:
    """Every executable case, generated from SEED (the same list on every run)."""
    rng = random.Random(SEED)
    return [c for gen in GENERATORS for c in gen(rng)]
