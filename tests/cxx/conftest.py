"""C++ codelet tests compile into a temporary kernel cache, not ~/.cache."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest


@pytest.fixture(autouse=True, scope="session")
def isolated_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    path = tmp_path_factory.mktemp("cxx-cache")
    old = os.environ.get("POPLAR_PY_CACHE_DIR")
    os.environ["POPLAR_PY_CACHE_DIR"] = str(path)
    yield path
    if old is None:
        os.environ.pop("POPLAR_PY_CACHE_DIR", None)
    else:
        os.environ["POPLAR_PY_CACHE_DIR"] = old
