"""popnn ROIAlign codelets: one vertex per channel, over every region of interest.

A region ``(x1, y1, x2, y2)`` (scaled by ``spatialScale``, less half a pixel when ``aligned``)
is cut into ``alignedH x alignedW`` bins; each bin averages ``grid x grid`` bilinear samples
at the centres of its sub-cells. A sample beyond the plane's far edge counts as 0; a negative
coordinate is read at 0 and one past the last row or column at the last.
"""


from poplar_py import INT, InOut, Input, Output, Vector, VectorList, Vertex
from poplar_py.vertex import TypeParam

T = TypeParam("T")


def clamp(pos, size):
    """A sample coordinate clamped into ``[0, size - 1]``."""
    return min(max(pos, 0.0), size - 1.0)


class ROIAlignForward(Vertex):
    """``out[r]`` (alignedH * alignedW): region r's bins of plane ``batchIndex[r]``, i.e.
    ``planes[batchIndex[r]]`` (the vertex's channel of every batch element)."""

    vertexName = "popnn::ROIAlignForward"
    planes: Input[VectorList[T]]
    rois: Input[VectorList[T]]
    batchIndex: Input[Vector[INT]]
    out: Output[VectorList[T]]
    height: INT
    width: INT
    alignedH: INT
    alignedW: INT
    grid: INT
    spatialScale: float
    aligned: bool

    def compute(self):
        half: float = 0.5 if self.aligned else 0.0
        least: float = 0.0 if self.aligned else 1.0
        for r in range(len(self.out)):
            n = self.batchIndex[r]
            if n < 0 or n >= len(self.planes):
                return False
            x0: float = self.rois[r][0] * self.spatialScale - half
            y0: float = self.rois[r][1] * self.spatialScale - half
            bin_w: float = max(self.rois[r][2] * self.spatialScale - half - x0, least) / self.alignedW
            bin_h: float = max(self.rois[r][3] * self.spatialScale - half - y0, least) / self.alignedH
            src = self.planes[n]
            for ph in range(self.alignedH):
                for pw in range(self.alignedW):
                    acc: float = 0.0
                    for iy in range(self.grid):
                        y: float = y0 + (ph + (iy + 0.5) / self.grid) * bin_h
                        for ix in range(self.grid):
                            x: float = x0 + (pw + (ix + 0.5) / self.grid) * bin_w
                            if y <= self.height and x <= self.width:
                                yc: float = clamp(y, self.height)
                                xc: float = clamp(x, self.width)
                                yl = int(yc)  # yc >= 0: truncation is floor
                                xl = int(xc)
                                yh = min(yl + 1, self.height - 1)
                                xh = min(xl + 1, self.width - 1)
                                ly: float = yc - yl
                                lx: float = xc - xl
                                acc += (src[yl * self.width + xl] * (1.0 - ly) * (1.0 - lx)
                                        + src[yl * self.width + xh] * (1.0 - ly) * lx
                                        + src[yh * self.width + xl] * ly * (1.0 - lx)
                                        + src[yh * self.width + xh] * ly * lx)
                    self.out[r][ph * self.alignedW + pw] = acc / (self.grid * self.grid)
        return True


class ROIAlignBackward(Vertex):
    """``planeGrads[n]`` (zeroed first): every region's bin gradients ``topGrad[r]`` spread back
    over the samples' four corners with their bilinear weights, divided by the samples a bin."""

    vertexName = "popnn::ROIAlignBackward"
    topGrad: Input[VectorList[T]]
    rois: Input[VectorList[T]]
    batchIndex: Input[Vector[INT]]
    planeGrads: InOut[VectorList[T]]
    height: INT
    width: INT
    alignedH: INT
    alignedW: INT
    grid: INT
    spatialScale: float
    aligned: bool

    def compute(self):
        for n in range(len(self.planeGrads)):
            for i in range(len(self.planeGrads[n])):
                self.planeGrads[n][i] = 0.0
        half: float = 0.5 if self.aligned else 0.0
        least: float = 0.0 if self.aligned else 1.0
        for r in range(len(self.topGrad)):
            n = self.batchIndex[r]
            if n < 0 or n >= len(self.planeGrads):
                return False
            x0: float = self.rois[r][0] * self.spatialScale - half
            y0: float = self.rois[r][1] * self.spatialScale - half
            bin_w: float = max(self.rois[r][2] * self.spatialScale - half - x0, least) / self.alignedW
            bin_h: float = max(self.rois[r][3] * self.spatialScale - half - y0, least) / self.alignedH
            dst = self.planeGrads[n]
            for ph in range(self.alignedH):
                for pw in range(self.alignedW):
                    g: float = self.topGrad[r][ph * self.alignedW + pw] / (self.grid * self.grid)
                    for iy in range(self.grid):
                        y: float = y0 + (ph + (iy + 0.5) / self.grid) * bin_h
                        for ix in range(self.grid):
                            x: float = x0 + (pw + (ix + 0.5) / self.grid) * bin_w
                            if y <= self.height and x <= self.width:
                                yc: float = clamp(y, self.height)
                                xc: float = clamp(x, self.width)
                                yl = int(yc)  # yc >= 0: truncation is floor
                                xl = int(xc)
                                yh = min(yl + 1, self.height - 1)
                                xh = min(xl + 1, self.width - 1)
                                ly: float = yc - yl
                                lx: float = xc - xl
                                dst[yl * self.width + xl] += g * (1.0 - ly) * (1.0 - lx)
                                dst[yl * self.width + xh] += g * (1.0 - ly) * lx
                                dst[yh * self.width + xl] += g * ly * (1.0 - lx)
                                dst[yh * self.width + xh] += g * ly * lx
        return True
