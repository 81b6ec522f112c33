"""poprand codelets: uniform, normal, truncated normal, Bernoulli and dropout, and setSeed.

Generator: xoroshiro128+ (the 2018 constants a=24, b=16, c=37; the IPU's hardware generator is
xoroshiro128+ too), 64-bit arithmetic in uint64. Each generator vertex covers one worker's share
of a tile's elements and draws from that worker's hardware generator: its ``state`` field is the
worker's 128-bit state in tile memory (four UNSIGNED_INT words, ``s0`` then ``s1``, low word
first; poplar_py/random_seed.py), read when the vertex starts and written back advanced when it
ends, so the next draw on that worker continues the sequence. Element k of a worker's share takes
the k-th output(s) after the state it started from.

``SetSeed`` (one vertex per tile) sets every worker's state from the 64-bit key
``seed[0] | seed[1] << 32`` and the worker's stream id ``seedModifier << 32 | tile << 3 | worker``,
with splitmix64::

    s = key ^ mix(stream);  s0 = mix(s + GAMMA);  s1 = mix(s + 2 * GAMMA)

``mix`` is splitmix64's output function, a bijection, so ``s0 != s1`` and the state is never
the all-zero one xoroshiro must avoid. A call with a seed tensor sets the states so, draws and
puts the old states back (as PopLibs does), so its result depends only on the seed, the
seedModifier and how the output is mapped onto tiles; never on earlier runs, threads or the
codelet mode.

Bits used: uniform floats take the top 24 bits of an output (``u = (r >> 40) / 2**24`` in
[0, 1)); integers and probabilities the top 32 bits; Box-Muller takes two outputs per pair of
normal values.
"""

import math

from poplar_py import INT, UNSIGNED_INT, UNSIGNED_LONGLONG, InOut, Input, LocalArray, Output, Vector, Vertex
from poplar_py.vertex import TypeParam

T = TypeParam("T")

TWO_POW_M24 = 5.9604644775390625e-08  # 2**-24
TWO_POW_M32 = 2.3283064365386963e-10  # 2**-32


def _u64(hi, lo):
    """The uint64 ``hi << 32 | lo`` (integer literals stop at 2**63 in codelets)."""
    x: UNSIGNED_LONGLONG = hi
    return (x << 32) | lo


def _mix(z):
    """splitmix64's output function (a bijection of uint64)."""
    z = (z ^ (z >> 30)) * _u64(0xBF58476D, 0x1CE4E5B9)
    z = (z ^ (z >> 27)) * _u64(0x94D049BB, 0x133111EB)
    return z ^ (z >> 31)


def _load(g, state):
    """The generator ``g = [s0, s1]`` from a worker's state words."""
    g[0] = _u64(state[1], state[0])
    g[1] = _u64(state[3], state[2])


def _store(g, state, at):
    """Write the generator ``g`` to the state words ``state[at:at + 4]``."""
    for k in range(2):
        state[at + 2 * k] = g[k] & 0xFFFFFFFF
        state[at + 2 * k + 1] = g[k] >> 32


def _rotl(x, k):
    return (x << k) | (x >> (64 - k))


def _next(state):
    """xoroshiro128+'s next output ``s0 + s1``; advances ``state``."""
    s0 = state[0]
    s1 = state[1]
    t = s0 ^ s1
    state[0] = _rotl(s0, 24) ^ t ^ (t << 16)
    state[1] = _rotl(t, 37)
    return s0 + s1


def _unit(state):
    """The next output's top 24 bits as a float in [0, 1)."""
    return float(_next(state) >> 40) * TWO_POW_M24


def _bits32(state):
    """The next output's top 32 bits."""
    return _next(state) >> 32


class Uniform(Vertex):
    """``out[k] = offset + u * scale``, u from the top 24 bits (FLOAT and HALF)."""

    vertexName = "poprand::Uniform"
    out: Output[Vector[T]]
    state: InOut[Vector[UNSIGNED_INT]]
    offset: float
    scale: float

    def compute(self):
        g = LocalArray(UNSIGNED_LONGLONG, 2)
        _load(g, self.state)
        for k in range(len(self.out)):
            self.out[k] = self.offset + _unit(g) * self.scale
        _store(g, self.state, 0)


class UniformInt(Vertex):
    """Integers in ``[minVal, minVal + range)``: ``minVal + ((r >> 32) * range) >> 32``
    (a bias below ``range / 2**32`` unless range is a power of 2). ``base`` is minVal
    modulo 2**32, so the sum modulo 2**32, stored to INT, is minVal plus the offset."""

    vertexName = "poprand::Uniform<int>"
    out: Output[Vector[INT]]
    state: InOut[Vector[UNSIGNED_INT]]
    base: UNSIGNED_LONGLONG
    range: UNSIGNED_LONGLONG

    def compute(self):
        g = LocalArray(UNSIGNED_LONGLONG, 2)
        _load(g, self.state)
        for k in range(len(self.out)):
            self.out[k] = (self.base + ((_bits32(g) * self.range) >> 32)) & 0xFFFFFFFF
        _store(g, self.state, 0)


class TruncatedNormal(Vertex):
    """``out[k] = mean + stdDev * z``, z standard normal with ``|z| <= alpha``.

    Box-Muller turns two outputs into two normal values: ``u1 = (top 32 bits + 1) / 2**32``
    in (0, 1], ``u2 = top 32 bits / 2**32``, ``z = sqrt(-2 log u1) * (cos, sin)(2 pi u2)``
    (so |z| < 6.7); the sine value is kept for the next element. A value with
    ``|z| > alpha`` is replaced by the next one, up to ``rounds`` values per element; an
    element still without one takes ``z`` uniform in [-alpha, alpha] (only reachable for
    small alpha, where the truncated normal is nearly uniform)."""

    vertexName = "poprand::TruncatedNormal"
    out: Output[Vector[T]]
    state: InOut[Vector[UNSIGNED_INT]]
    mean: float
    stdDev: float
    alpha: float
    rounds: UNSIGNED_INT

    def compute(self):
        g = LocalArray(UNSIGNED_LONGLONG, 2)
        _load(g, self.state)
        have = False
        spare = 0.0
        for k in range(len(self.out)):
            z = 0.0
            found = False
            for _ in range(self.rounds):
                if have:
                    z = spare
                    have = False
                else:
                    radius = math.sqrt(-2.0 * math.log((float(_bits32(g)) + 1.0) * TWO_POW_M32))
                    angle = 2.0 * math.pi * float(_bits32(g)) * TWO_POW_M32
                    z = radius * math.cos(angle)
                    spare = radius * math.sin(angle)
                    have = True
                if abs(z) <= self.alpha:
                    found = True
                    break
            if not found:
                z = (2.0 * _unit(g) - 1.0) * self.alpha
            self.out[k] = self.mean + self.stdDev * z
        _store(g, self.state, 0)


class Normal(TruncatedNormal):
    """TruncatedNormal's codelet run with ``alpha = inf`` and one round: plain Box-Muller."""

    vertexName = "poprand::Normal"


class Bernoulli(Vertex):
    """``out[k] = 1`` where the top 32 bits are below ``threshold = prob * 2**32``, else 0."""

    vertexName = "poprand::Bernoulli"
    out: Output[Vector[T]]
    state: InOut[Vector[UNSIGNED_INT]]
    threshold: UNSIGNED_LONGLONG

    def compute(self):
        g = LocalArray(UNSIGNED_LONGLONG, 2)
        _load(g, self.state)
        for k in range(len(self.out)):
            self.out[k] = 1 if _bits32(g) < self.threshold else 0
        _store(g, self.state, 0)


class Dropout(Bernoulli):
    """``out[k] = input[k] * scale`` where Bernoulli's draw is 1 (kept), else 0."""

    vertexName = "poprand::Dropout"
    input: Input[Vector[T]]
    scale: float

    def compute(self):
        g = LocalArray(UNSIGNED_LONGLONG, 2)
        _load(g, self.state)
        for k in range(len(self.out)):
            self.out[k] = self.input[k] * self.scale if _bits32(g) < self.threshold else 0
        _store(g, self.state, 0)


class SetSeed(Vertex):
    """Every worker's state on one tile, from the seed tensor and the tile's ``streams``
    (``seedModifier << 32 | tile << 3``; worker w's stream adds w)."""

    vertexName = "poprand::SetSeed"
    seed: Input[Vector[UNSIGNED_INT]]
    hwSeeds: Output[Vector[UNSIGNED_INT]]
    streams: UNSIGNED_LONGLONG

    def compute(self):
        """splitmix64's first two outputs from ``key ^ mix(stream)`` (gamma added twice, not
        2 * gamma: uint64 sums wrap alike in both codelet modes); ``int()`` widens the 32-bit
        seed words the same way in both modes."""
        gamma = _u64(0x9E3779B9, 0x7F4A7C15)
        key = int(self.seed[0]) | (int(self.seed[1]) << 32)
        g = LocalArray(UNSIGNED_LONGLONG, 2)
        for w in range(len(self.hwSeeds) // 4):
            s = _mix(self.streams | w) ^ key
            g[0] = _mix(s + gamma)
            g[1] = _mix(s + gamma + gamma)
            _store(g, self.hwSeeds, 4 * w)
