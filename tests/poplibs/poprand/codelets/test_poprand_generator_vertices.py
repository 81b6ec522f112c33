"""poprand's Uniform, Uniform<int>, Normal, TruncatedNormal, Bernoulli, Dropout and SetSeed
vertices, each alone on a tile, against the numpy generator of ``poprand_reference``
(codelets/poprand/random.py).

Each generator vertex reads its worker's xoroshiro128+ state (four words: s0 then s1, low word
first), draws element k from the outputs after it, and writes the advanced state back."""

import math

import numpy as np
from poprand_reference import stream_states, xoroshiro128plus

import poplar_py as poplar
from poplibs_py.poputil import templateVertex

F, H, N = poplar.FLOAT, poplar.HALF, poplar.INT
STATES = [(0x0123456789ABCDEF, 0xFEDCBA9876543210), (1, 2)]  # (s0, s1): a vertex from each
TWO_M32 = 2.0**-32


def words(s0: int, s1: int) -> np.ndarray:
    return np.array([s0 & 0xFFFFFFFF, s0 >> 32, s1 & 0xFFFFFFFF, s1 >> 32], np.uint32)


def raw(state: tuple[int, int], n: int) -> list[int]:
    """The generator's first ``n`` 64-bit outputs from ``state``."""
    return [int(r) for r in xoroshiro128plus([state[0]], [state[1]], n)[0]]


def continues(state: tuple[int, int], draws: int):
    """A check that the state written back continues the sequence from ``state`` after ``draws``
    outputs."""
    def check(after):
        s = [int(w) for w in after]
        following = xoroshiro128plus([s[0] | s[1] << 32], [s[2] | s[3] << 32], 3)[0]
        np.testing.assert_array_equal(following, np.array(raw(state, draws + 3)[draws:], np.uint64))
    return check


def normal(outputs: list[int], n: int, alpha: float, rounds: int) -> tuple[list[float], int]:
    """Box-Muller pairs (u1 = (top 32 bits + 1) / 2**32, u2 = top 32 bits / 2**32; the sine value
    kept for the next element), a value past ``alpha`` replaced by the next up to ``rounds``
    times, then a uniform value in [-alpha, alpha]; and the outputs used."""
    it, spare, z = iter(outputs), None, []
    for _ in range(n):
        for _ in range(rounds):
            if spare is None:
                radius = math.sqrt(-2.0 * math.log(((next(it) >> 32) + 1) * TWO_M32))
                angle = 2.0 * math.pi * (next(it) >> 32) * TWO_M32
                value, spare = radius * math.cos(angle), radius * math.sin(angle)
            else:
                value, spare = spare, None
            if abs(value) <= alpha:
                z.append(value)
                break
        else:
            z.append((2.0 * (next(it) >> 40) * 2.0**-24 - 1.0) * alpha)
    return z, len(outputs) - sum(1 for _ in it)


def add(h, state: tuple[int, int], name: str, vertex: str, t: poplar.Type, want, used: int, rtol: float = 0.0,
        **kw) -> None:
    """A ``vertex<t>`` vertex drawing from ``state`` (its ``input`` and state values in ``kw``); its
    values against ``want``, and the state it leaves after ``used`` outputs."""
    fields = {f: v for f, v in kw.items() if f == "input"}
    v = h.vertex(templateVertex(vertex, t), tile=len(h.cases) // 2 % 4, out=np.zeros(len(want), t.dtype),
                 state=words(*state), initial={f: v for f, v in kw.items() if f != "input"}, **fields)
    name = f"{name} from {state}"
    h.cases[f"{name}: values"] = (v["out"], np.array(want, np.float64).astype(t.dtype), rtol)
    h.cases[f"{name}: state"] = (v["state"], continues(state, used))


def test_generator_vertices(vertices):
    """Every distribution from two known states: values and the state left behind."""
    h, n = vertices("poprand"), 9
    x = np.arange(1, n + 1, dtype=np.float64)
    for state in STATES:
        r = raw(state, 4 * n)
        top24, top32 = [u >> 40 for u in r[:n]], [u >> 32 for u in r[:n]]
        for t in (F, H):  # offset -1, scale 2: exact in float
            want = [-1.0 + 2.0 * u * 2.0**-24 for u in top24]
            add(h, state, f"Uniform<{t}>", "poprand::Uniform", t, want, n, offset=-1.0, scale=2.0)
        for lo, hi in [(-5, 5), (-2**31, 2**31 - 1)]:
            span = hi - lo + 1
            want = (np.array([lo + (u * span >> 32) for u in top32]) % 2**32).astype(np.uint32).view(np.int32)
            add(h, state, f"Uniform<int> [{lo}, {hi}]", "poprand::Uniform", N, want, n,
                base=np.uint64(lo % 2**32), range=np.uint64(span))
        for vertex, alpha, rounds in [("Normal", math.inf, 1), ("TruncatedNormal", 0.9, 3),
                                      ("TruncatedNormal", 0.1, 2)]:  # the last mostly falls back to uniform
            z, used = normal(r, n, alpha, rounds)
            add(h, state, f"{vertex} alpha={alpha} rounds={rounds}", f"poprand::{vertex}", F,
                [0.5 + 2.0 * v for v in z], used, 1e-6, mean=0.5, stdDev=2.0, alpha=alpha, rounds=rounds)
        for t, p in [(F, 0.5), (N, 0.0), (H, 1.0), (F, 0.3)]:
            threshold = np.uint64(min(round(p * 2**32), 2**32))
            keep = [u < threshold for u in top32]
            add(h, state, f"Bernoulli<{t}> p={p}", "poprand::Bernoulli", t, keep, n,
                threshold=threshold)
            if t != N:
                add(h, state, f"Dropout<{t}> p={p}", "poprand::Dropout", t, np.where(keep, x * 4, 0),
                    n, input=x.astype(t.dtype), threshold=threshold, scale=4.0)
    h.check()


def test_set_seed_gives_each_worker_its_stream(vertices):
    """splitmix64 from the 64-bit key and stream ``streams | worker`` for each of the workers
    whose four state words ``hwSeeds`` holds."""
    h = vertices("poprand")
    cases = h.cases
    for seed, streams in [((1, 2), 3 << 32 | 2 << 3), ((0xFFFFFFFF, 0), 0)]:
        v = h.vertex("poprand::SetSeed", seed=np.array(seed, np.uint32), hwSeeds=np.zeros(24, np.uint32),
                     initial={"streams": np.uint64(streams)})
        s0, s1 = stream_states(seed, np.arange(6, dtype=np.uint64) | np.uint64(streams))
        want = np.concatenate([words(int(a), int(b)) for a, b in zip(s0, s1)])
        cases[f"seed {seed} streams {streams:#x}"] = (v["hwSeeds"], want)
    h.check()
