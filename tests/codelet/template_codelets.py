"""Codelets for test_codelet_templates: template constants, operation policies, local arrays."""

from poplar_py import FLOAT, INT, Const, Input, LocalArray, Output, Policy, TypeParam, Vector, Vertex, float4

T = TypeParam("T")
OutT = TypeParam("OutT")


class Combine(Policy):
    """A family of operations: ``identity`` and ``update(acc, x)``."""

    identity = 0.0


class Add(Combine):
    policyName = "test::Add"

    @staticmethod
    def update(acc, x):
        return acc + x


class Max(Combine):
    policyName = "test::Max"
    identity = -1e30

    @staticmethod
    def update(acc, x):
        return x if x > acc else acc


class Columns(Vertex):
    """``out[c]`` combines column ``c`` of ``x`` seen as rows of ``W``, in row order."""

    vertexName = "test::Columns"
    x: Input[Vector[T]]
    out: Output[Vector[T]]
    W: Const[int]
    Op: Const[Combine]

    def compute(self):
        acc = LocalArray(T, self.W)
        for c in range(self.W):
            acc[c] = self.Op.identity
        for r in range(len(self.x) // self.W):
            for c in range(self.W):
                acc[c] = self.Op.update(acc[c], self.x[r * self.W + c])
        for c in range(self.W):
            self.out[c] = acc[c]


def window_sums(x, out, K):
    """``out[i] = x[i] + ... + x[i + K - 1]`` through a ring of the last K values."""
    ring = LocalArray(FLOAT, K)
    s = 0.0
    for i in range(len(x)):
        s += x[i] - ring[i % K]
        ring[i % K] = x[i]
        if i >= K - 1:
            out[i - K + 1] = s


class Windows(Vertex):
    """The same helper specialised for two window lengths."""

    x: Input[Vector[float]]
    two: Output[Vector[float]]
    three: Output[Vector[float]]

    def compute(self):
        window_sums(self.x, self.two, 2)
        window_sums(self.x, self.three, 3)


class Narrow(Vertex):
    """``out = OutT(x)``: a cast to a type parameter."""

    vertexName = "test::Narrow"
    x: Input[Vector[T]]
    out: Output[Vector[OutT]]
    twice: Const[bool]

    def compute(self):
        for i in range(len(self.x)):
            v = OutT(self.x[i])
            self.out[i] = v + v if self.twice else v


class Counts(Vertex):
    """A histogram in a local array; ``index`` writes one element past it when it is 4."""

    x: Input[Vector[int]]
    out: Output[Vector[int]]
    index: int

    def compute(self):
        hist = LocalArray(INT, 4)
        for v in self.x:
            hist[v % 4] += 1
        hist[self.index] += 0
        for k in range(4):
            self.out[k] = hist[k]


class Rolled(Vertex):
    """Sums ``x`` over ``n`` (state) or ``N`` (a constant: the loop unrolls) steps."""

    vertexName = "test::Rolled"
    x: Input[Vector[float]]
    out: Output[float]
    n: int
    N: Const[int]
    known: Const[bool]

    def compute(self):
        s = 0.0
        if self.known:
            for i in range(self.N):
                if i == 5:
                    continue
                s += self.x[i]
        else:
            for i in range(self.n):
                if i == 5:
                    continue
                s += self.x[i]
        self.out = s


class ArgBest(Vertex):
    """The position of the largest (``isMax``) or smallest element: a branch on a template
    constant inside a loop; the other side is not compiled (``-x`` of a bool would not type)."""

    vertexName = "test::ArgBest"
    x: Input[Vector[T]]
    out: Output[int]
    isMax: Const[bool]

    def compute(self):
        best = 0
        for k in range(1, len(self.x)):
            if (self.x[k] > self.x[best]) if self.isMax else (-self.x[k] > -self.x[best]):
                best = k
        self.out = best


class Widest(Vertex):
    """Sums a vector four elements at a time in a float4 when ``T`` is FLOAT and the length a
    multiple of 4, else one at a time. Types compare when compiling, and an ``and`` whose first
    operand is known False is known False: the float4 code never compiles for integers."""

    vertexName = "test::Widest"
    x: Input[Vector[T]]
    out: Output[Vector[T]]

    def compute(self):
        if T == FLOAT and len(self.x) % 4 == 0:
            s = float4(0.0)
            for k in range(len(self.x) // 4):
                s = s + float4.load(self.x, k)
            self.out[0] = (s[0] + s[1]) + (s[2] + s[3])
            self.out[1] = 4
        else:
            total = T(0)
            for k in range(len(self.x)):
                total += self.x[k]
            self.out[0] = total
            self.out[1] = 2 if T != INT else 1
