"""``print(...)`` in codelets: what may be printed, how a kernel prints, and where the text goes.

A codelet prints as a Poplar codelet calls ``printf``: the text reaches the host. ``print`` is a
statement whose arguments are string literals, f-strings and scalar expressions (numbers and
bools), with the keywords ``sep`` and ``end`` as string literals. An f-string's replacement
fields hold scalar expressions, with a constant format spec (``{x:.3f}``, ``{n:>4}``) and at most
the ``!s`` conversion. Vectors, short vectors, computed formats (``"%d" % n``) and ``!r`` are
CodeletCompileErrors naming the file and line.

The text is what Python's ``print`` gives for the values the interpreter holds: a field element
is a numpy scalar of the field's type, so ``print(x)`` of a FLOAT 0.1 writes its shortest float32
repr, ``0.1`` (``str``), while ``f"{x}"`` writes numpy's ``format`` of it, the value as a double,
``0.10000000149011612`` (``f"{x!s}"``: ``0.1``); a HALF likewise. Python ints and floats
(``range`` indices, ``math`` results, ``x: float`` locals) print as Python's; bools as ``True``
and ``False``. Format specs (``{x:.3f}``) apply to those values as in Python.

A compiled kernel formats nothing: at each print it stores its values (as 64-bit integers or
doubles) in a stack array and calls :data:`CALLBACK_SYMBOL`, an external symbol the JIT binds to
a ctypes function, with the vertex's state record, its worker, the print's layout (JSON baked
into the kernel as a constant string) and the values; the host formats them. The interpreter's
``print`` formats in Python and hands the text to the same place. A kernel without ``print``
has no call and runs as before.

Order: texts are collected while a compute set runs (:func:`capture`) with the vertex and
worker that printed them; the runtime sorts them by tile, vertex id, worker and time and
writes them once the compute set has run, so both modes give the same text in the same order
(each vertex's lines contiguous). Outside a capture (a kernel run directly) the text goes to
standard output at once.

Cost on the tile: ``PRINT_CYCLES`` per call plus ``PRINT_VALUE_CYCLES`` per value, whatever
the length of the text (the device hands the host a format and its arguments, as ``printf``
does); the interpreter counts no cycles.
"""

from __future__ import annotations

import ast
import contextlib
import ctypes
import itertools
import json
import struct
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from .type_rules import ScalarType

#: the external function a printing kernel calls: (state record, worker, layout, values)
CALLBACK_SYMBOL = "poplar_py_codelet_print"
PRINT_CYCLES = 50
PRINT_VALUE_CYCLES = 10


@dataclass(frozen=True)
class Field:
    """One value of a print: the expression, its conversion ('' or 's') and format spec."""

    node: ast.expr
    conversion: str = ""
    spec: str = ""


def is_print(node: ast.AST) -> bool:
    """Whether ``node`` is a call of ``print`` (the frontend makes sure it is the builtin)."""
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "print"


def check_print(call: ast.Call, visit: Callable[[ast.AST], None],
                error: Callable[[ast.AST, str], Exception]) -> None:
    """The frontend's check of one print statement; ``visit`` checks a value expression."""
    for kw in call.keywords:
        if kw.arg not in ("sep", "end") or not _literal(kw.value):
            raise error(call, "print() takes only the keywords sep and end, as string literals")
    for arg in call.args:
        if isinstance(arg, ast.Starred):
            raise error(arg, "print() cannot take starred arguments")
        if _literal(arg):
            continue
        if not isinstance(arg, ast.JoinedStr):
            if any(_literal(n) for n in ast.walk(arg)):
                raise error(arg, "a codelet's print takes string literals, f-strings and numbers: "
                                 "a computed string ('%' or .format) is not supported")
            visit(arg)
            continue
        for part in arg.values:
            if isinstance(part, ast.Constant):
                continue
            assert isinstance(part, ast.FormattedValue)
            if part.conversion not in (-1, ord("s")):
                raise error(arg, f"the !{chr(part.conversion)} conversion is not supported in a codelet's "
                                 "print (only !s)")
            spec = part.format_spec
            if spec is not None and not all(isinstance(v, ast.Constant) for v in spec.values):  # type: ignore[attr-defined]
                raise error(arg, "a format spec in a codelet's print must be constant")
            visit(part.value)


def _literal(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, str)


def layout(call: ast.Call) -> list[str | Field]:
    """A print statement as literal text and values in order (separators and end included)."""
    keywords = {kw.arg: kw.value.value for kw in call.keywords}  # type: ignore[attr-defined]
    sep, end = keywords.get("sep", " "), keywords.get("end", "\n")
    pieces: list[str | Field] = []
    for k, arg in enumerate(call.args):
        if k:
            pieces.append(sep)
        if _literal(arg):
            pieces.append(arg.value)  # type: ignore[attr-defined]
        elif isinstance(arg, ast.JoinedStr):
            for part in arg.values:
                if isinstance(part, ast.Constant):
                    pieces.append(part.value)
                else:
                    assert isinstance(part, ast.FormattedValue)
                    spec = "".join(v.value for v in part.format_spec.values) if part.format_spec else ""  # type: ignore[attr-defined]
                    pieces.append(Field(part.value, "s" if part.conversion == ord("s") else "", spec))
        else:  # print(x) writes str(x), which for numpy floats is not format(x, "")
            pieces.append(Field(arg, "s"))
    pieces.append(end)
    return pieces


def values(call: ast.Call) -> list[ast.expr]:
    """The value expressions of a print statement, in the order they are evaluated."""
    return [p.node for p in layout(call) if isinstance(p, Field)]


def kind(t: ScalarType) -> str:
    """How a value of type ``t`` travels to the host: 'float'/'int' (Python's), 'bool', or a
    numpy dtype name ('float32', 'uint16'...)."""
    if t.weak:
        return "float" if t.kind == "f" else "int"
    return "bool" if t.kind == "b" else t.dtype.name


def encode(pieces: list[str | Field], kinds: list[str]) -> bytes:
    """The layout a kernel passes to the callback: JSON, null-terminated."""
    it = iter(kinds)
    items = [p if isinstance(p, str) else [next(it), p.conversion, p.spec] for p in pieces]
    return json.dumps(items, separators=(",", ":")).encode() + b"\0"


def _value(kind_: str, raw: int) -> Any:
    """The value the interpreter would hold, from the 64 bits the kernel passed."""
    if kind_ == "bool":
        return bool(raw)
    if kind_ == "int":
        return raw
    if kind_ == "float" or kind_.startswith("float"):
        x = struct.unpack("<d", struct.pack("<q", raw))[0]
        return x if kind_ == "float" else np.dtype(kind_).type(x)
    return np.dtype(kind_).type(raw % 2**64 if kind_ == "uint64" else raw)


def render(items: list, raws: list[int]) -> str:
    """The text of one print from its decoded layout and the kernel's values."""
    out, it = [], iter(raws)
    for item in items:
        if isinstance(item, str):
            out.append(item)
            continue
        kind_, conversion, spec = item
        v = _value(kind_, next(it))
        out.append(format(str(v) if conversion == "s" else v, spec))
    return "".join(out)


# the collector ------------------------------------------------------------------------------
_records: list[tuple[int, int, int, str]] | None = None
_order = itertools.count()


def emit(state: int, worker: int, text: str) -> None:
    """A vertex (its state record's address, its worker) printed ``text``."""
    if _records is None:
        sys.stdout.write(text)
        return
    _records.append((state, worker, next(_order), text))


@contextlib.contextmanager
def capture() -> Iterator[list[tuple[int, int, int, str]]]:
    """Collect what kernels print meanwhile: (state address, worker, time, text) records."""
    global _records
    outer, _records = _records, []
    try:
        yield _records
    finally:
        _records = outer


_layouts: dict[int, list] = {}


def _native_print(state: int | None, worker: int, spec: int | None, args: int | None) -> None:
    items = _layouts.get(spec or 0)
    if items is None:
        items = _layouts[spec or 0] = json.loads(ctypes.string_at(spec))
    n = sum(not isinstance(item, str) for item in items)
    raws = list((ctypes.c_int64 * n).from_address(args)) if n else []  # type: ignore[arg-type]
    emit(state or 0, worker, render(items, raws))


_CALLBACK = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int64, ctypes.c_void_p, ctypes.c_void_p)(
    _native_print)


def callback_address() -> int:
    """The address :data:`CALLBACK_SYMBOL` is bound to in every kernel the JIT links."""
    return ctypes.cast(_CALLBACK, ctypes.c_void_p).value or 0
