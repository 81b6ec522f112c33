"""The disk cache of compiled C++ codelet files: what a file's first three passes made of it.

An entry (in the kernel cache, under the file's key: its text, flags, the toolchain and this
package) holds the vertex records, the runner symbols and the inlined IR, with the digest of
every file the codelet included beyond the shipped headers. An entry whose included files have
changed since is a miss, so editing a header of the user's recompiles the codelets using it.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

from ..codelet import jit
from .records import Member, VertexRecord


@dataclass(frozen=True)
class Manifest:
    """A compiled file: its vertex records, their runners' symbols, the inlined IR."""

    records: list[VertexRecord]
    symbols: list[str]
    ir: str


def dependencies(make_rule: str, file: str, shipped: tuple[str, ...]) -> dict[str, str]:
    """The files of clang's make rule other than ``file`` and those under ``shipped`` folders,
    with their digests."""
    names = make_rule.replace("\\\n", " ").split(":", 1)[-1].split()
    return {n: file_digest(n) for n in names if n != file and not n.startswith(shipped)}


def file_digest(name: str) -> str:
    """The sha256 of a file's bytes ("" when it cannot be read)."""
    try:
        return hashlib.sha256(Path(name).read_bytes()).hexdigest()
    except OSError:
        return ""


def _cache_key(key: str) -> str:
    return "cxx" + key[3:]  # apart from the objects, whose keys hash the IR


def read(key: str) -> Manifest | None:
    """The entry for ``key``, or None (absent, or a file it included has changed)."""
    data = jit.cache_read(_cache_key(key))
    if data is None:
        return None
    manifest = json.loads(data)
    if any(file_digest(n) != d for n, d in manifest["deps"].items()):
        return None
    records = [
        VertexRecord(r["name"], r["base"], tuple(Member(*m) for m in r["members"]), r["size"])
        for r in manifest["records"]
    ]
    return Manifest(records, manifest["symbols"], manifest["ir"])


def write(key: str, deps: dict[str, str], made: Manifest) -> None:
    """Store a compiled file under ``key``."""
    records = [
        {
            "name": r.name,
            "base": r.base,
            "size": r.size,
            "members": [[m.name, m.ctype, m.offset] for m in r.members],
        }
        for r in made.records
    ]
    manifest = {"deps": deps, "symbols": made.symbols, "ir": made.ir, "records": records}
    jit.cache_write(_cache_key(key), json.dumps(manifest).encode())
