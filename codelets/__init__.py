"""Python codelet sources of the PopLibs libraries, one folder per library.

The folder sits at the top of the repository and is installed as ``poplibs_py.codelets``
(pyproject.toml maps it), so nothing named ``codelets`` lands in site-packages.
"""

from __future__ import annotations

import importlib
import pkgutil
from types import ModuleType

from poplar_py import Graph, Vertex


def add_library(graph: Graph, library: str) -> None:
    """Register every codelet class of ``library`` with ``graph`` (templates stay templates)."""
    classes = [obj for module in library_modules(library) for obj in vars(module).values()
               if isinstance(obj, type) and issubclass(obj, Vertex) and obj.__module__ == module.__name__]
    graph.addCodelets(classes)


def library_modules(library: str) -> list[ModuleType]:
    """Every codelet module of ``library`` (e.g. "popops"), imported."""
    package = importlib.import_module(f"{__name__}.{library}")
    return [importlib.import_module(f"{package.__name__}.{m.name}")
            for m in pkgutil.iter_modules(package.__path__) if not m.name.startswith("_")]
