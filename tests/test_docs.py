"""The repository's documentation stands alone and names what exists.

* No file (Python, TOML, Markdown, cfg) refers to a document outside the repository: no design
  notes by section number, no path into a shared folder.
* Every module a document or a docstring names exists: ``poplar_py.runtime.mpi_world`` (the part
  after the module may name one of its attributes), ``runtime/mpi_world.py``, ``docs/api.md``; the
  module names from before the codelet language moved to ``poplar_py/codelet/`` are gone.
* Every relative link in ``docs/*.md`` leads to a file of the repository.

Plain text scans of a few hundred files: well under a second.
"""

from __future__ import annotations

import functools
import os
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCANNED = (".py", ".toml", ".md", ".cfg")
SKIPPED_DIRS = {".git", "__pycache__", "build", "dist", ".venv", "venv", "node_modules", ".pytest_cache",
                ".ruff_cache"}
SKIPPED_PATHS = {"benchmarks/data"}
SELF = "tests/test_docs.py"

# Built from pieces so that this file does not match its own patterns.
OUTSIDE_WORDS = ("DESIGN", "shared" + "/", "\u00a7")
OUTSIDE = re.compile("|".join([r"\bDESIGN\b", *OUTSIDE_WORDS[1:]]))
# The codelet language's modules before they moved from compiler/codelet_*.py to codelet/*.py.
STALE = re.compile(r"\bcodelet_(types|typing|codegen|loopver|lanes|size|interp|exprs|ops|fastmath|frontend"
                   r"|assigned|unroll|versioning|typed_locals)\b")
# Modules as they were named before the runtime, the cycle model and the profile had packages.
MOVED = re.compile(r"\b(vertex_tables|codelet_loading|codelet_registry|inline_codelets|cdivision|conforms)\b"
                   r"|\bcompiler[./](world|costs|fabric|timeline|threads|native_copy|fp_state|streaming_memory"
                   r"|host_functions|pipeline|vertex_tables)\b|\bcodelet[./](size|assigned|pipeline|types)\b")
DOTTED = re.compile(r"(?<![\w./-])(poplar_py|poplibs_py)((?:\.\w+)+)")
# Repository files by path; C++ headers are left out (``poplar/Vertex.hpp`` is Poplar's name).
PATH = re.compile(r"(?<![\w./~-])((?:[\w-]+/)+[\w-]+\.(?:py|md|toml|json|js|css|html))(?![\w-]|\.\w)")
LINK = re.compile(r"\]\(([^)\s]+)\)")
# Installed names whose sources live elsewhere in a checkout.
ALIASES = {"poplibs_py/codelets": "codelets"}
# Placeholders, not names: benchmarks/api_coverage.py's docstring maps ``poplar::X`` to ``poplar_py.X``.
PLACEHOLDERS = {"poplar_py.X", "poplibs_py.gcl.X"}


@functools.cache
def repo_files() -> tuple[str, ...]:
    """Every file of the checkout (relative, '/'-separated), symlinked folders not followed."""
    found = []
    for top, dirs, files in os.walk(ROOT):
        rel_top = Path(top).relative_to(ROOT).as_posix()
        dirs[:] = [d for d in dirs if d not in SKIPPED_DIRS and not d.endswith(".egg-info")]
        found.extend(f if rel_top == "." else f"{rel_top}/{f}" for f in files)
    return tuple(sorted(found))


@functools.cache
def texts() -> dict[str, str]:
    return {f: (ROOT / f).read_text(encoding="utf-8", errors="replace")
            for f in repo_files() if f.endswith(SCANNED) and f != SELF
            and not any(f.startswith(skipped + "/") for skipped in SKIPPED_PATHS)}


def _unalias(path: str) -> str:
    for old, new in ALIASES.items():
        if path == old or path.startswith(old + "/"):
            return new + path[len(old):]
    return path


def _module_exists(dotted: str) -> bool:
    """Whether ``a.b.c`` names a module or package of the repository, or an attribute that its
    deepest module mentions (the first part that is not a module must appear in that module)."""
    if dotted in PLACEHOLDERS:
        return True
    parts = dotted.split(".")
    base = _unalias(parts[0])
    for i, part in enumerate(parts[1:], start=1):
        path = _unalias(f"{base}/{part}")
        if (ROOT / path / "__init__.py").is_file():
            base = path
            continue
        if (ROOT / f"{path}.py").is_file():
            return True  # what follows a module is one of its attributes
        if part.startswith("__"):
            return True  # a module's own attribute: __file__, __version__
        source = ROOT / base / "__init__.py"
        if not source.is_file():
            return False
        return re.search(rf"\b{re.escape(parts[i])}\b", source.read_text(encoding="utf-8")) is not None
    return (ROOT / base).is_dir() or (ROOT / f"{base}.py").is_file()


@functools.cache
def _suffixes() -> frozenset[str]:
    """Every trailing part of every file path: ``runtime/mpi_world.py`` matches
    ``poplar_py/runtime/mpi_world.py``."""
    out = set()
    for f in repo_files():
        parts = f.split("/")
        out.update("/".join(parts[i:]) for i in range(len(parts)))
    for old, new in ALIASES.items():
        out.update(old + s[len(new):] for s in list(out) if s.startswith(new + "/"))
    return frozenset(out)


def _named_paths(text: str) -> list[str]:
    return [m.group(1) for m in PATH.finditer(text)]


def test_no_reference_to_documents_outside_the_repository():
    hits = [f"{f}:{text.count(chr(10), 0, m.start()) + 1}: {m.group(0)!r}"
            for f, text in texts().items() if any(w in text for w in OUTSIDE_WORDS)
            for m in OUTSIDE.finditer(text)]
    assert not hits, "references to documents outside the repository:\n" + "\n".join(hits)


def test_no_stale_codelet_module_names():
    hits = [f"{f}:{text.count(chr(10), 0, m.start()) + 1}: {m.group(0)}"
            for f, text in texts().items() if "codelet_" in text for m in STALE.finditer(text)]
    assert not hits, "modules named as they were before codelet/ existed:\n" + "\n".join(hits)


def test_no_module_names_from_before_the_layout_move():
    hits = [f"{f}:{text.count(chr(10), 0, m.start()) + 1}: {m.group(0)}"
            for f, text in texts().items() for m in MOVED.finditer(text)]
    assert not hits, "modules named as they were before runtime/, cycles/ and profile/:\n" + "\n".join(hits)


def test_dotted_module_names_exist():
    missing = sorted({f"{f}: {m.group(0)}" for f, text in texts().items()
                      for m in DOTTED.finditer(text) if not _module_exists(m.group(0))})
    assert not missing, "names of modules that do not exist:\n" + "\n".join(missing)


MOD_ROLE = re.compile(r":mod:`~?\.?([\w.]+)`")


def test_module_roles_in_docstrings_name_modules():
    """``:mod:`replicas```, ``:mod:`codelet.codelet_compiler``` (relative to where they are written, so
    matched against the trailing parts of every module's dotted name)."""
    known = set()
    for f in repo_files():
        if f.endswith(".py"):
            parts = _unalias(f[:-3]).removesuffix("/__init__").split("/")
            known.update(".".join(parts[i:]) for i in range(len(parts)))
    known |= {"poplibs_py." + k for k in known if k.startswith("codelets")}
    missing = sorted({f"{f}: {m.group(1)}" for f, text in texts().items() if f.endswith(".py")
                      and ":mod:" in text for m in MOD_ROLE.finditer(text) if m.group(1) not in known})
    assert not missing, "modules named in :mod: roles that do not exist:\n" + "\n".join(missing)


def test_file_paths_in_docs_and_code_exist():
    known = _suffixes()
    missing = sorted({f"{f}: {p}" for f, text in texts().items() if f.endswith((".py", ".md", ".toml"))
                      for p in _named_paths(text) if p not in known and _looks_like_ours(p)})
    assert not missing, "paths of files that do not exist:\n" + "\n".join(missing)


def _looks_like_ours(path: str) -> bool:
    """A path whose first folder is one of the repository's (not a user's ``my/prog.py``)."""
    first = path.split("/", 1)[0]
    return first in _folders()


@functools.cache
def _folders() -> frozenset[str]:
    names = {part for f in repo_files() for part in f.split("/")[:-1]}
    return frozenset(names | {old.split("/")[0] for old in ALIASES})


DOCS = sorted(f for f in repo_files() if f.startswith("docs/") and f.endswith(".md"))


@pytest.mark.parametrize("doc", DOCS)
def test_relative_links_in_docs_resolve(doc):
    text = (ROOT / doc).read_text(encoding="utf-8")
    broken = []
    for m in LINK.finditer(text):
        target = m.group(1).split("#", 1)[0]
        if not target or re.match(r"^[a-z][a-z0-9+.-]*:", target):
            continue  # an anchor in this page, or an address (https:, mailto:)
        if not (ROOT / doc).parent.joinpath(target).resolve().exists():
            broken.append(m.group(1))
    assert not broken, f"{doc}: links to nothing: {broken}"


def test_docs_index_lists_every_page():
    index = (ROOT / "docs/README.md").read_text(encoding="utf-8")
    linked = {m.group(1).split("#", 1)[0] for m in LINK.finditer(index)}
    pages = {Path(d).name for d in DOCS if d.count("/") == 1 and d != "docs/README.md"}
    assert pages <= linked, f"docs/README.md does not link {sorted(pages - linked)}"


def test_architecture_walks_every_compiler_pass():
    """Every pass of compiler/graph_compiler.py's PASSES is named in the walk-through (read from the
    source, not imported: importing poplar_py would take most of a second)."""
    source = (ROOT / "poplar_py/compiler/graph_compiler.py").read_text(encoding="utf-8")
    table = source[source.index("\nPASSES"):]
    names = re.findall(r'^\s+\("([^"]+)", _\w+', table[:table.index("\n]")], re.M)
    assert len(names) >= 10
    text = (ROOT / "docs/architecture.md").read_text(encoding="utf-8")
    assert [name for name in names if f"*{name}*" not in text] == []
