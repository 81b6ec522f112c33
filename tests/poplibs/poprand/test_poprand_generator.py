"""poprand's generator: exact values against a numpy reference, repeatability, the seed model
and misuse. Every test runs in both codelet modes (the ``rand`` fixture)."""

import numpy as np
import pytest
from poprand_reference import (
    mix,
    reference_outputs,
    reference_tensor,
    seed_tensor,
    stream_states,
    xoroshiro128plus,
)

import poplar_py as poplar
from poplibs_py import poprand
from poplibs_py.poputil import PoplibsError


def spread(graph, t):
    """An irregular mapping: runs of 7 elements dealt round the tiles backwards."""
    n, tiles = t.numElements(), graph.getTarget().getNumTiles()
    flat = t.flatten()
    for k, b in enumerate(range(0, n, 7)):
        graph.setTileMapping(flat.slice(b, min(b + 7, n)), tiles - 1 - k % tiles)


def test_reference_generator_known_values():
    # splitmix64 from state 1234567 (the published sequence), via mix(state + k * gamma)
    gamma = 0x9E3779B97F4A7C15
    states = np.array([(1234567 + k * gamma) % 2**64 for k in range(1, 4)], np.uint64)
    assert mix(states).tolist() == [6457827717110365317, 3203168211198807973, 9817491932198370423]
    # xoroshiro128+ from (1, 2): 3, then s0 = rotl(1, 24) ^ 3 ^ 3 << 16, s1 = rotl(3, 37)
    s0, s1 = 1 << 24 ^ 3 ^ 3 << 16, 3 << 37
    assert xoroshiro128plus([1], [2], 2).tolist() == [[3, s0 + s1]]


@pytest.mark.parametrize("seed", [(1, 2), (0xDEADBEEF, 0xFFFFFFFF)])
def test_raw_bits_match_reference(rand, seed):
    """uniform INT over the whole int range shows each draw's top 32 bits; FLOAT on [0, 2**24]
    its top 24 bits: both exactly as the reference generator gives them."""
    h = rand(4)
    ref = reference_tensor(h, [150], mapping=spread)
    s = seed_tensor(h, seed)
    ints = poprand.uniform(h.graph, s, 7, ref, poplar.INT, -(2**31), 2**31 - 1, h.seq)
    floats = poprand.uniform(h.graph, s, 8, ref, poplar.FLOAT, 0.0, 2.0**24, h.seq)
    got_ints, got_floats = h.run(ints, floats)
    draws_i = reference_outputs(h.graph, ints, seed, 7)[:, 0]
    draws_f = reference_outputs(h.graph, floats, seed, 8)[:, 0]
    np.testing.assert_array_equal(got_ints.view(np.uint32), ((draws_i >> np.uint64(32)) ^ np.uint64(2**31))
                                  .astype(np.uint32))
    np.testing.assert_array_equal(got_floats, (draws_f >> np.uint64(40)).astype(np.float32))


def test_bernoulli_and_dropout_follow_reference(rand):
    h = rand(3)
    ref = reference_tensor(h, [5, 9], mapping=spread)
    s = seed_tensor(h, (42, 0))
    x = h.tensor(np.arange(1, 46, dtype=np.float32).reshape(5, 9))
    mask = poprand.bernoulli(h.graph, s, 3, ref, poplar.FLOAT, 0.3, h.seq)
    dropped = poprand.dropout(h.graph, s, 3, x, ref, 0.3, 4.0, h.seq)
    got_mask, got_dropped = h.run(mask, dropped)
    kept = (reference_outputs(h.graph, mask, (42, 0), 3)[:, 0] >> np.uint64(32)) < round(0.3 * 2**32)
    np.testing.assert_array_equal(got_mask.ravel(), kept.astype(np.float32))
    np.testing.assert_array_equal(got_dropped.ravel(), np.where(kept, np.arange(1, 46) * 4.0, 0.0))


def build_all(h, seed_values=(1, 2), modifier=5, n=96):
    """Every operation once on ``n`` elements; returns the outputs."""
    g = h.graph
    ref = reference_tensor(h, [n])
    s = seed_tensor(h, seed_values)
    x = h.tensor(np.linspace(-1, 1, n, dtype=np.float32))
    return [poprand.uniform(g, s, modifier, ref, poplar.FLOAT, -2.0, 3.0, h.seq),
            poprand.uniform(g, s, modifier, ref, poplar.HALF, 0.0, 1.0, h.seq),
            poprand.uniform(g, s, modifier, ref, poplar.INT, -5, 17, h.seq),
            poprand.normal(g, s, modifier, ref, poplar.FLOAT, 1.0, 3.0, h.seq),
            poprand.normal(g, s, modifier, ref, poplar.HALF, 0.0, 1.0, h.seq),
            poprand.truncatedNormal(g, s, modifier, ref, poplar.FLOAT, 0.0, 1.0, 0.5, h.seq),
            poprand.bernoulli(g, s, modifier, ref, poplar.INT, 0.4, h.seq),
            poprand.dropout(g, s, modifier, x, ref, 0.6, 1 / 0.6, h.seq)]


def run_all(rand, mode=None, **kwargs):
    h = rand(4, mode)
    return h.run(*build_all(h, **kwargs))


def test_same_seed_same_tensors_in_both_modes_and_separate_engines(rand):
    first = run_all(rand)
    for other in (run_all(rand), run_all(rand, "native"), run_all(rand, "interpreter")):
        for a, b in zip(first, other):
            np.testing.assert_array_equal(a, b)


def test_repeatable_across_engine_runs(rand):
    h = rand(4)
    outs = build_all(h)
    first = h.run(*outs)
    for _ in range(3):
        h.engine.run()
        for i, a in enumerate(first):
            np.testing.assert_array_equal(h.engine.readTensor(f"out{i}"), a)
    # a different seed written between runs changes everything; writing the first one back restores it
    h.engine.writeTensor("seed0", np.array([9, 9], np.uint32))
    h.engine.run()
    assert all(not np.array_equal(h.engine.readTensor(f"out{i}"), a) for i, a in enumerate(first))
    h.engine.writeTensor("seed0", np.array([1, 2], np.uint32))
    h.engine.run()
    for i, a in enumerate(first):
        np.testing.assert_array_equal(h.engine.readTensor(f"out{i}"), a)


@pytest.mark.parametrize("change", [{"seed_values": (2, 2)}, {"seed_values": (1, 3)}, {"modifier": 6}])
def test_different_seed_or_modifier_differs(rand, change):
    base, other = run_all(rand), run_all(rand, **change)
    for a, b in zip(base, other):
        assert not np.array_equal(a, b)


def test_order_and_neighbours_do_not_matter(rand):
    """A call's result depends on the seed, the modifier and the mapping only: not on
    other calls before it in the program, nor on the call being repeated."""
    h1 = rand(4)
    ref = reference_tensor(h1, [64])
    s = seed_tensor(h1)
    (alone,) = h1.run(poprand.normal(h1.graph, s, 1, ref, poplar.FLOAT, 0.0, 1.0, h1.seq))
    h2 = rand(4)
    ref = reference_tensor(h2, [64])
    s = seed_tensor(h2)
    poprand.uniform(h2.graph, s, 1, ref, poplar.FLOAT, 0.0, 1.0, h2.seq)
    first = poprand.normal(h2.graph, s, 1, ref, poplar.FLOAT, 0.0, 1.0, h2.seq)
    second = poprand.normal(h2.graph, s, 1, ref, poplar.FLOAT, 0.0, 1.0, h2.seq)
    got_first, got_second = h2.run(first, second)
    np.testing.assert_array_equal(got_first, alone)
    np.testing.assert_array_equal(got_second, alone)


def test_output_is_mapped_like_reference(rand):
    h = rand(4)
    ref = reference_tensor(h, [3, 10], mapping=spread)
    out = poprand.uniform(h.graph, seed_tensor(h), 0, ref, poplar.HALF, 0.0, 1.0, h.seq)
    assert out.shape() == [3, 10] and out.elementType() == poplar.HALF
    assert h.graph.getTileMapping(out) == h.graph.getTileMapping(ref)


def top_bits(ints: np.ndarray) -> np.ndarray:
    """The top 32 bits of the draws behind uniform INT over the whole int range."""
    return (ints.view(np.uint32) ^ np.uint32(2**31)).astype(np.uint64)


FULL = (-(2**31), 2**31 - 1)


def test_seed_none_draws_continue_the_hardware_generators(rand):
    """The same seed=None call twice draws two tensors: the generators' sequence, continued.
    At load every generator holds what setSeed gives for the engine's seed (random.seed) and
    seedModifier 0; the modifier of a seed=None call is not used."""
    h = rand(4)
    ref = reference_tensor(h, [40], mapping=spread)
    a = poprand.uniform(h.graph, None, 3, ref, poplar.INT, *FULL, h.seq)
    b = poprand.uniform(h.graph, None, 3, ref, poplar.INT, *FULL, h.seq)
    got_a, got_b = h.run(a, b, options={"random.seed": str(5 | 6 << 32)})
    assert not np.array_equal(got_a, got_b)
    for k, got in enumerate((got_a, got_b)):
        draws = reference_outputs(h.graph, a, (5, 6), 0, after=k)[:, 0] >> np.uint64(32)
        np.testing.assert_array_equal(top_bits(got), draws)
    # a second run continues again; a new engine with the same seed repeats the first run
    h.engine.run()
    third = h.engine.readTensor("out0")
    draws = reference_outputs(h.graph, a, (5, 6), 0, after=2)[:, 0] >> np.uint64(32)
    np.testing.assert_array_equal(top_bits(third), draws)


def test_engine_seed_repeats_in_both_modes_and_changes_the_draws(rand):
    def draw(mode, seed):
        h = rand(4, mode)
        ref = reference_tensor(h, [64])
        outs = [poprand.normal(h.graph, None, 0, ref, poplar.FLOAT, 0.0, 1.0, h.seq),
                poprand.bernoulli(h.graph, None, 0, ref, poplar.INT, 0.5, h.seq)]
        return h.run(*outs, options={} if seed is None else {"random.seed": seed})
    first = draw("native", None)
    for other in (draw("interpreter", "0"), draw("native", 0)):
        for x, y in zip(first, other):
            np.testing.assert_array_equal(x, y)
    assert not np.array_equal(draw("native", "1")[0], first[0])


def test_seeded_calls_leave_the_hardware_generators_alone(rand):
    """A seeded call between two seed=None calls does not change what the second draws; setSeed
    then a seed=None call draws what the seeded call draws."""
    h = rand(4)
    ref = reference_tensor(h, [30], mapping=spread)
    s = seed_tensor(h, (7, 8))
    a = poprand.uniform(h.graph, None, 0, ref, poplar.INT, *FULL, h.seq)
    seeded = poprand.uniform(h.graph, s, 9, ref, poplar.INT, *FULL, h.seq)
    b = poprand.uniform(h.graph, None, 0, ref, poplar.INT, *FULL, h.seq)
    poprand.setSeed(h.graph, s, 9, h.seq)
    c = poprand.uniform(h.graph, None, 0, ref, poplar.INT, *FULL, h.seq)
    got_a, got_seeded, got_b, got_c = h.run(a, seeded, b, c)
    for k, got in enumerate((got_a, got_b)):
        draws = reference_outputs(h.graph, a, (0, 0), 0, after=k)[:, 0] >> np.uint64(32)
        np.testing.assert_array_equal(top_bits(got), draws)
    np.testing.assert_array_equal(top_bits(got_seeded), reference_outputs(h.graph, a, (7, 8), 9)[:, 0]
                                  >> np.uint64(32))
    np.testing.assert_array_equal(got_c, got_seeded)


def test_get_and_set_hw_seeds(rand):
    """getHwSeeds reads every worker's state ([tiles, workers, 4] words); setHwSeeds puts a saved
    state back (the draws repeat) or any other (the draws follow it)."""
    h = rand(3)
    g = h.graph
    ref = reference_tensor(h, [24], mapping=lambda g, t: [g.setTileMapping(t.slice(8 * k, 8 * k + 8), k)
                                                        for k in range(3)])
    saved = poplar.getHwSeeds(g, h.seq)
    a = poprand.uniform(g, None, 0, ref, poplar.INT, *FULL, h.seq)
    poplar.setHwSeeds(g, saved, h.seq)
    b = poprand.uniform(g, None, 0, ref, poplar.INT, *FULL, h.seq)
    mine = h.tensor(np.arange(3 * 6 * 4, dtype=np.uint32).reshape(3, 6, 4) * 977 + 1, poplar.UNSIGNED_INT)
    poplar.setHwSeeds(g, mine, h.seq)
    c = poprand.uniform(g, None, 0, ref, poplar.INT, *FULL, h.seq)
    after = poplar.getHwSeeds(g, h.seq)
    got_saved, got_a, got_b, got_c, got_after = h.run(saved, a, b, c, after)
    assert got_saved.shape == (3, 6, 4) and got_saved.dtype == np.uint32
    s0, s1 = stream_states((0, 0), np.arange(3 * 8, dtype=np.uint64).reshape(3, 8)[:, :6].reshape(-1))
    words = np.stack([s0, s1], axis=-1).view(np.uint32).reshape(3, 6, 4)
    np.testing.assert_array_equal(got_saved, words)
    np.testing.assert_array_equal(got_b, got_a)
    state = np.arange(3 * 6 * 4, dtype=np.uint64).reshape(3, 6, 2, 2) * np.uint64(977) + np.uint64(1)
    key = state[..., 0] | state[..., 1] << np.uint64(32)  # [tile, worker, (s0, s1)]
    draws = xoroshiro128plus(key[..., 0].reshape(-1), key[..., 1].reshape(-1), 1)[:, 0].reshape(3, 6)
    # 8 elements per tile, 2 per worker (the vector width): the first is worker 0's first draw
    np.testing.assert_array_equal(top_bits(got_c[::8]), draws[:, 0] >> np.uint64(32))
    assert (got_after[:, 4:] == np.uint32(state[:, 4:].reshape(3, 2, 4))).all()  # idle workers


def test_empty_reference(rand):
    h = rand(2)
    ref = h.graph.addVariable(poplar.FLOAT, [0, 3], "empty")
    out = poprand.normal(h.graph, seed_tensor(h), 0, ref, poplar.FLOAT, 0.0, 1.0, h.seq)
    assert out.shape() == [0, 3]


def test_misuse_raises(rand):
    h = rand(2)
    g = h.graph
    ref = reference_tensor(h, [8])
    s = seed_tensor(h)
    seq = h.seq
    with pytest.raises(PoplibsError, match="2-element UNSIGNED_INT"):
        poprand.uniform(g, h.tensor(np.zeros(3, np.uint32)), 0, ref, poplar.FLOAT, 0.0, 1.0, seq)
    with pytest.raises(PoplibsError, match="2-element UNSIGNED_INT"):
        poprand.uniform(g, h.tensor(np.zeros((1, 2), np.uint32)), 0, ref, poplar.FLOAT, 0.0, 1.0, seq)
    with pytest.raises(PoplibsError, match="2-element UNSIGNED_INT"):
        poprand.normal(g, h.tensor(np.zeros(2, np.int32)), 0, ref, poplar.FLOAT, 0.0, 1.0, seq)
    with pytest.raises(PoplibsError, match="Tensor or None"):
        poprand.normal(g, np.zeros(2, np.uint32), 0, ref, poplar.FLOAT, 0.0, 1.0, seq)
    for modifier in (-1, 2**32, 1.5):
        with pytest.raises(PoplibsError, match="seedModifier"):
            poprand.bernoulli(g, s, modifier, ref, poplar.FLOAT, 0.5, seq)
    with pytest.raises(PoplibsError, match="unsupported type"):
        poprand.uniform(g, s, 0, ref, poplar.UNSIGNED_INT, 0, 1, seq)
    with pytest.raises(PoplibsError, match="unsupported type"):
        poprand.normal(g, s, 0, ref, poplar.INT, 0.0, 1.0, seq)
    with pytest.raises(PoplibsError, match="unsupported type"):
        poprand.truncatedNormal(g, s, 0, ref, "no such type", 0.0, 1.0, 2.0, seq)
    with pytest.raises(PoplibsError, match="unsupported type"):
        poprand.bernoulli(g, s, 0, ref, poplar.BOOL, 0.5, seq)
    with pytest.raises(PoplibsError, match="unsupported type"):
        poprand.dropout(g, s, 0, h.tensor(np.zeros(8, np.int32)), ref, 0.5, 2.0, seq)
    for lo, hi, type_ in ((2.0, 1.0, poplar.FLOAT), (3, 2, poplar.INT), (float("nan"), 1.0, poplar.HALF)):
        with pytest.raises(PoplibsError, match="minVal <= maxVal"):
            poprand.uniform(g, s, 0, ref, type_, lo, hi, seq)
    for lo, hi in ((0.5, 2), (0, 2**31), (-(2**31) - 1, 0), (0, float("inf"))):
        with pytest.raises(PoplibsError, match="INT range"):
            poprand.uniform(g, s, 0, ref, poplar.INT, lo, hi, seq)
    for p in (-0.1, 1.5, float("nan")):
        with pytest.raises(PoplibsError, match="prob"):
            poprand.bernoulli(g, s, 0, ref, poplar.FLOAT, p, seq)
        with pytest.raises(PoplibsError, match="keepProbability"):
            poprand.dropout(g, s, 0, ref, ref, p, 1.0, seq)
    with pytest.raises(PoplibsError, match="alpha"):
        poprand.truncatedNormal(g, s, 0, ref, poplar.FLOAT, 0.0, 1.0, 0.0, seq)
    with pytest.raises(PoplibsError, match="shape"):
        poprand.dropout(g, s, 0, h.tensor(np.zeros(9, np.float32)), ref, 0.5, 2.0, seq)
    with pytest.raises(PoplibsError, match="not None"):
        poprand.setSeed(g, None, 0, seq)

