"""The tiles' hardware generator state: its value at load from the engine's seed, Poplar's
getHwSeeds and setHwSeeds (also in a virtual graph), and their misuse."""

import numpy as np
import pytest
from support import make_graph

import poplar_py as poplar
from poplar_py import program as prog
from poplar_py.random_seed import initialHwSeeds

M64 = (1 << 64) - 1


def mix(z: int) -> int:
    z = (z ^ z >> 30) * 0xBF58476D1CE4E5B9 & M64
    z = (z ^ z >> 27) * 0x94D049BB133111EB & M64
    return z ^ z >> 31


def test_initial_state_is_splitmix_of_seed_tile_and_worker():
    """Worker w of tile t: splitmix64's first two outputs from seed ^ mix(t << 3 | w), each as
    (low word, high word); written in pure Python integers here."""
    seed = 0x0123456789ABCDEF
    words = initialHwSeeds(seed + 2**64, 3, 6)  # taken modulo 2**64
    assert words.shape == (3, 6, 4) and words.dtype == np.uint32
    gamma = 0x9E3779B97F4A7C15
    for t in range(3):
        for w in range(6):
            s = seed ^ mix(t << 3 | w)
            s0, s1 = mix((s + gamma) & M64), mix((s + 2 * gamma) & M64)
            assert words[t, w].tolist() == [s0 & 0xFFFFFFFF, s0 >> 32, s1 & 0xFFFFFFFF, s1 >> 32]


@pytest.mark.parametrize("seed", [None, "12345"])
def test_get_set_hw_seeds_round_trip(seed):
    device, g = make_graph(4)
    seq = prog.Sequence()
    first = poplar.getHwSeeds(g, seq, "first")
    mine = g.addVariable(poplar.UNSIGNED_INT, [4, 6, 4], "mine")
    g.setTileMapping(mine, 3)  # rows of other tiles travel by exchange
    g.createHostWrite("mine", mine)
    poplar.setHwSeeds(g, mine, seq)
    second = poplar.getHwSeeds(g, seq)
    assert first.shape() == [4, 6, 4] and first.elementType() == poplar.UNSIGNED_INT
    assert [len(iv) for iv in g.getTileMapping(first)] == [1, 1, 1, 1]
    g.createHostRead("first", first)
    g.createHostRead("second", second)
    engine = poplar.Engine(g, seq, {} if seed is None else {"random.seed": seed})
    engine.load(device)
    values = np.arange(96, dtype=np.uint32).reshape(4, 6, 4) * 7919
    engine.writeTensor("mine", values)
    engine.run()
    np.testing.assert_array_equal(engine.readTensor("first"), initialHwSeeds(int(seed or 0), 4, 6))
    np.testing.assert_array_equal(engine.readTensor("second"), values)
    engine.run()  # the state persists from run to run
    np.testing.assert_array_equal(engine.readTensor("first"), values)
    engine.load(device)  # loading starts again from the engine's seed
    engine.writeTensor("mine", values)
    engine.run()
    np.testing.assert_array_equal(engine.readTensor("first"), initialHwSeeds(int(seed or 0), 4, 6))


def test_a_virtual_graph_sees_its_tiles_rows():
    device, g = make_graph(4)
    seq = prog.Sequence()
    vg = g.createVirtualGraph(2, 4)
    top, mine = poplar.getHwSeeds(g, seq), poplar.getHwSeeds(vg, seq)
    assert mine.shape() == [2, 6, 4]
    assert [len(iv) for iv in g.getTileMapping(mine)] == [0, 0, 1, 1]
    g.createHostRead("top", top)
    g.createHostRead("mine", mine)
    engine = poplar.Engine(g, seq)
    engine.load(device)
    engine.run()
    np.testing.assert_array_equal(engine.readTensor("mine"), engine.readTensor("top")[2:])


def test_misuse_raises():
    _, g = make_graph(2)
    seq = prog.Sequence()
    wrong = g.addVariable(poplar.UNSIGNED_INT, [2, 6, 3], "wrong")
    with pytest.raises(poplar.InvalidArgumentError, match=r"hwSeeds 'wrong' must be UNSIGNED_INT of shape"):
        poplar.setHwSeeds(g, wrong, seq)
    floats = g.addVariable(poplar.FLOAT, [2, 6, 4], "floats")
    with pytest.raises(poplar.InvalidArgumentError, match=r"'floats' must be UNSIGNED_INT"):
        poplar.setHwSeeds(g, floats, seq)
    with pytest.raises(poplar.InvalidArgumentError, match="must be a Tensor"):
        poplar.setHwSeeds(g, np.zeros((2, 6, 4), np.uint32), seq)
    with pytest.raises(poplar.InvalidArgumentError, match=r"prog must be a program\.Sequence"):
        poplar.getHwSeeds(g, None)
    with pytest.raises(poplar.InvalidOptionError, match=r"random\.seed"):
        poplar.Engine(g, seq, {"random.seed": "-1"})
