"""popnn pooling codelets: each vertex handles whole planes (one image channel each).

Geometry state ``geom`` = [H, W, kH, kW, strideH, strideW, lowerH, lowerW, outH, outW]: a plane
is H x W (row-major), output position (oy, ox) covers input rows ``oy*strideH - lowerH + [0, kH)``
and columns likewise; a negative lower value is truncation, positions outside the plane are
padding and are skipped.
"""

from poplar_py import INT, Const, Input, LocalArray, Output, Vector, VectorList, Vertex
from poplar_py.vertex import TypeParam

T = TypeParam("T")


def _window(win, geom, oy, ox):
    """Set ``win`` to the rows [win[0], win[1]) and columns [win[2], win[3]) of the plane that
    output (oy, ox) covers, padding left out; returns how many positions that is."""
    y0 = oy * geom[4] - geom[6]
    x0 = ox * geom[5] - geom[7]
    win[0] = max(y0, 0)
    win[1] = max(min(y0 + geom[2], geom[0]), win[0])
    win[2] = max(x0, 0)
    win[3] = max(min(x0 + geom[3], geom[1]), win[2])
    return (win[1] - win[0]) * (win[3] - win[2])


class Pooling(Vertex):
    """``out[p]`` = the pooled windows of ``inp[p]``, by ``op``: 0 max, 1 average (over the
    non-padding positions), 2 sum; a window of padding only gives 0."""

    vertexName = "popnn::Pooling"
    inp: Input[VectorList[T]]
    out: Output[VectorList[T]]
    geom: Vector[INT]
    op: INT

    def compute(self):
        W = self.geom[1]
        win = LocalArray(INT, 4)
        for p in range(len(self.out)):
            src = self.inp[p]
            for oy in range(self.geom[8]):
                for ox in range(self.geom[9]):
                    count = _window(win, self.geom, oy, ox)
                    acc: float = 0.0
                    if self.op == 0 and count > 0:
                        acc = src[win[0] * W + win[2]]  # max starts at the window's first value
                    for y in range(win[0], win[1]):
                        for x in range(win[2], win[3]):
                            v = src[y * W + x]
                            if self.op != 0:
                                acc += v
                            elif v > acc:
                                acc = v
                    if self.op == 1 and count > 0:
                        acc = acc / count
                    self.out[p][oy * self.geom[9] + ox] = acc


class SumPoolingGrad(Vertex):
    """``inGrad[p]``: each window's gradient spread over its non-padding positions, divided by
    their number when ``scaled`` (average pooling)."""

    vertexName = "popnn::SumPoolingGrad"
    outGrad: Input[VectorList[T]]
    inGrad: Output[VectorList[T]]
    geom: Vector[INT]
    scaled: Const[bool]

    def compute(self):
        W = self.geom[1]
        win = LocalArray(INT, 4)
        for p in range(len(self.inGrad)):
            dst = self.inGrad[p]
            for i in range(len(dst)):
                dst[i] = 0
            for oy in range(self.geom[8]):
                for ox in range(self.geom[9]):
                    count = _window(win, self.geom, oy, ox)
                    share: float = self.outGrad[p][oy * self.geom[9] + ox]
                    if self.scaled and count > 0:
                        share = share / count
                    for y in range(win[0], win[1]):
                        for x in range(win[2], win[3]):
                            dst[y * W + x] += share


class MaxPoolingGrad(SumPoolingGrad):
    """``inGrad[p]``: each window's gradient goes to every input position equal to the window's
    maximum ``pooled[p]`` (PopLibs' rule), divided between them when ``scaled``."""

    vertexName = "popnn::MaxPoolingGrad"
    inp: Input[VectorList[T]]
    pooled: Input[VectorList[T]]

    def compute(self):
        W = self.geom[1]
        win = LocalArray(INT, 4)
        for p in range(len(self.inGrad)):
            src = self.inp[p]
            dst = self.inGrad[p]
            for i in range(len(dst)):
                dst[i] = 0
            for oy in range(self.geom[8]):
                for ox in range(self.geom[9]):
                    _window(win, self.geom, oy, ox)
                    m = self.pooled[p][oy * self.geom[9] + ox]
                    share: float = self.outGrad[p][oy * self.geom[9] + ox]
                    if self.scaled:
                        ties = 0
                        for y in range(win[0], win[1]):
                            for x in range(win[2], win[3]):
                                if src[y * W + x] == m:
                                    ties += 1
                        if ties > 0:
                            share = share / ties
                    for y in range(win[0], win[1]):
                        for x in range(win[2], win[3]):
                            if src[y * W + x] == m:
                                dst[y * W + x] += share
