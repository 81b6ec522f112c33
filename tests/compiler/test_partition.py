"""Copy plans cut by MPI rank: every rank's share, run with the collectives emulated in one
process, moves exactly the bytes the whole plan moves."""

import numpy as np
import pytest

from poplar_py.compiler.exchange import CopyPlan, TileTraffic
from poplar_py.compiler.partition import (
    cut,
    full_pieces,
    host_gather,
    host_scatter,
    rank_blocks,
    rank_copy,
)
from poplar_py.runtime.copies import execute

NONE = TileTraffic.empty(0)


def test_rank_blocks_whole_ipus_when_there_are_enough():
    base = np.arange(0, 8 * 4 + 1) * 100  # 8 IPUs of 4 tiles, 100 bytes each
    b = rank_blocks(1, 4, 8, 4, base)
    assert b.tiles.tolist() == [0, 8, 16, 24, 32]
    assert b.own_bytes() == (800, 1600)
    assert b.own_tiles().tolist() == [False] * 8 + [True] * 8 + [False] * 16


def test_rank_blocks_split_one_ipu_evenly():
    b = rank_blocks(0, 3, 1, 1472, np.arange(1473) * 8)
    assert b.tiles.tolist() == [0, 490, 981, 1472]
    assert b.rank_of(np.asarray([0, 490 * 8 - 1, 490 * 8, 1472 * 8 - 1])).tolist() == [0, 0, 1, 2]


def _plan(rows, same_memory=True):
    rows = np.asarray(rows, np.int64).reshape(-1, 6)
    return CopyPlan.build(*(rows[:, k] for k in range(6)), NONE, same_memory=same_memory)


def _random_plan(rng, size):
    rows = []
    for _ in range(40):
        elem = int(rng.choice([1, 2, 4, 8]))
        count = int(rng.integers(1, 30))
        src_step = elem * int(rng.choice([1, 1, 2, 3]))
        dst_step = elem * int(rng.choice([1, 1, 2]))
        src = elem * int(rng.integers(0, (size - count * src_step) // elem))
        dst = elem * int(rng.integers(0, (size - count * dst_step) // elem))
        rows.append((src, dst, count, src_step, dst_step, elem))
    return rows


def _run_ranks(plan, blocks_of, memory):
    """Every rank's share on its own copy of the memory, the Alltoallv emulated; then each
    rank's bytes put together into one memory."""
    k = len(blocks_of)
    shares = [rank_copy(plan, b) for b in blocks_of]
    mems = [memory.copy() for _ in range(k)]
    sends = []
    for share, mem in zip(shares, mems):
        buf = np.zeros(int(share.send.sum()), np.uint8)
        execute(share.pack, mem.ctypes.data, buf.ctypes.data)
        offsets = np.concatenate(([0], np.cumsum(share.send)))
        sends.append([buf[offsets[d]:offsets[d + 1]] for d in range(k)])
    for r, (share, mem) in enumerate(zip(shares, mems)):
        receive = np.concatenate([sends[s][r] for s in range(k)] or [np.zeros(0, np.uint8)])
        assert receive.size == share.receive.sum()
        execute(share.local, mem.ctypes.data, mem.ctypes.data)
        execute(share.unpack, receive.ctypes.data, mem.ctypes.data)
    out = memory.copy()
    for b, mem in zip(blocks_of, mems):
        lo, hi = b.own_bytes()
        out[lo:hi] = mem[lo:hi]
    return out


@pytest.mark.parametrize("ranks", [2, 3, 4])
@pytest.mark.parametrize("seed", range(4))
def test_rank_copy_moves_what_the_whole_plan_moves(ranks, seed):
    rng = np.random.default_rng(seed)
    size = 4096
    base = np.linspace(0, size, 17).astype(np.int64)  # 16 tiles of 256 bytes
    rows = _random_plan(rng, size)
    # keep the pieces' destinations apart, so that their order does not matter
    dst_taken = np.zeros(size, bool)
    kept = []
    for r in rows:
        _, dst, count, _, ds, elem = r
        places = (dst + np.arange(count)[:, None] * ds + np.arange(elem)).ravel()
        if not dst_taken[places].any():
            dst_taken[places] = True
            kept.append(r)
    plan = _plan(kept)  # one memory: a piece may overwrite another's source (through a temporary)
    memory = rng.integers(0, 256, size, dtype=np.uint8)
    want = memory.copy()
    execute(plan, want.ctypes.data, want.ctypes.data)
    blocks_of = [rank_blocks(r, ranks, 1, 16, base) for r in range(ranks)]
    got = _run_ranks(plan, blocks_of, memory)
    np.testing.assert_array_equal(got, want)
    # what the ranks send is exactly the bytes whose source and destination ranks differ
    crossing = 0
    for src, dst, count, ss, ds, elem in full_pieces(plan).tolist():
        for j in range(count):
            a, b = blocks_of[0].rank_of(np.asarray([src + j * ss, dst + j * ds]))
            crossing += elem * int(a != b)
    assert sum(int(rank_copy(plan, b).send.sum()) for b in blocks_of) == crossing


def test_cut_splits_contiguous_pieces_at_rank_bounds_and_strided_ones_into_elements():
    blocks = rank_blocks(0, 2, 1, 2, np.asarray([0, 64, 128]))
    contiguous = np.asarray([[48, 0, 8, 4, 4, 4]])  # bytes 48..80 cross 64
    assert cut(contiguous, blocks, 0).tolist() == [[48, 0, 4, 4, 4, 4], [64, 16, 4, 4, 4, 4]]
    strided = np.asarray([[56, 0, 3, 8, 4, 4]])  # elements at 56, 64, 72
    assert cut(strided, blocks, 0).tolist() == [[56, 0, 1, 8, 4, 4], [64, 4, 1, 8, 4, 4], [72, 8, 1, 8, 4, 4]]


def test_host_scatter_and_gather_cover_every_piece_once():
    rng = np.random.default_rng(7)
    base = np.linspace(0, 1024, 9).astype(np.int64)
    n = 200
    dst = np.sort(rng.choice(np.arange(0, 1024, 4), n, replace=False))
    rows = np.stack([np.arange(n) * 4, dst, np.ones(n, np.int64), *(np.full(n, 4),) * 3], axis=1)
    write = _plan(rows, same_memory=False)
    host = rng.integers(0, 2**31, n, dtype=np.int32)
    want = np.zeros(1024, np.uint8)
    execute(write, host.ctypes.data, want.ctypes.data)
    got = np.zeros(1024, np.uint8)
    blocks_of = [rank_blocks(r, 3, 1, 8, base) for r in range(3)]
    for b in blocks_of:
        execute(host_scatter(write, b).own, host.ctypes.data, got.ctypes.data)
    np.testing.assert_array_equal(got, want)

    read = _plan(full_pieces(write)[:, [1, 0, 2, 4, 3, 5]], same_memory=False)
    gathered = [host_gather(read, b) for b in blocks_of]
    packed = []
    for g in gathered:
        buf = np.zeros(g.pack.nbytes, np.uint8)
        execute(g.pack, got.ctypes.data, buf.ctypes.data)
        packed.append(buf)
    every = np.concatenate(packed)
    for g in gathered:
        assert g.counts.tolist() == [p.size for p in packed]
        out = np.zeros(n, np.int32)
        execute(g.unpack, every.ctypes.data, out.ctypes.data)
        np.testing.assert_array_equal(out, host)
