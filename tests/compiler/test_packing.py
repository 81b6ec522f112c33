"""First-fit packing of segments by their lives, on every tile at once, against the plain
per-tile loop it replaces."""

import numpy as np
import pytest
from lives import random_lives

from poplar_py.compiler.liveness import Liveness
from poplar_py.compiler.packing import pack


def reference(tile, var, nbytes, live: Liveness) -> np.ndarray:
    """Per tile: largest first (then by variable), each at the lowest 8-byte aligned offset
    overlapping no placed segment whose life meets its own."""
    offset = np.zeros(tile.size, np.int64)
    for t in np.unique(tile).tolist():
        mine = np.flatnonzero(tile == t)
        placed: list[int] = []
        for k in sorted(mine.tolist(), key=lambda k: (-nbytes[k], var[k])):
            spans = sorted((offset[j], offset[j] + nbytes[j]) for j in placed
                           if live.interfere(int(var[k]), int(var[j])))
            at = 0
            for a, b in spans:
                if at + nbytes[k] <= a:
                    break
                at = max(at, -(-b // 8) * 8)
            offset[k] = at
            placed.append(k)
    return offset


@pytest.mark.parametrize("seed", range(6))
def test_pack_places_as_first_fit_largest_first_per_tile(seed):
    rng = np.random.default_rng(seed)
    num_vars = 40
    live = random_lives(rng, num_vars, 60)
    rows = sorted({(int(t), int(v)) for t, v in zip(rng.integers(0, 5, 150), rng.integers(0, num_vars, 150))})
    tile, var = (np.asarray(c, np.int64) for c in zip(*rows))
    nbytes = rng.choice([4, 8, 12, 40, 96, 100], tile.size).astype(np.int64)
    offset = pack(tile, var, nbytes, live)
    assert (offset == reference(tile, var, nbytes, live)).all()
    assert (offset % 8 == 0).all()
    for i in range(tile.size):  # segments whose lives meet never share bytes
        for j in range(i):
            if tile[i] == tile[j] and live.interfere(int(var[i]), int(var[j])):
                assert offset[i] >= offset[j] + nbytes[j] or offset[j] >= offset[i] + nbytes[i]


def test_pack_in_chunks_places_as_in_one(monkeypatch):
    """Tiles taken a few at a time (a small budget of pairs) are placed as all at once."""
    rng = np.random.default_rng(7)
    live = random_lives(rng, 30, 60)
    rows = sorted({(int(t), int(v)) for t, v in zip(rng.integers(0, 9, 200), rng.integers(0, 30, 200))})
    tile, var = (np.asarray(c, np.int64) for c in zip(*rows))
    nbytes = rng.integers(1, 200, tile.size).astype(np.int64)
    whole = pack(tile, var, nbytes, live)
    monkeypatch.setattr("poplar_py.compiler.packing._PAIRS_PER_CHUNK", 10)
    assert (pack(tile, var, nbytes, live) == whole).all()
    assert pack(tile[:0], var[:0], nbytes[:0], live).size == 0
