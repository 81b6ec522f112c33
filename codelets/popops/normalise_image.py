"""popops image-normalisation codelet: 3-channel pixels scaled and normalised into 4 channels."""

from poplar_py import Input, Output, Vector, Vertex
from poplar_py.vertex import TypeParam

InT = TypeParam("InT")
OutT = TypeParam("OutT")


class NormaliseImage(Vertex):
    """Pixel p, channel c < 3: ``out[4p + c] = (in[3p + c] * inScale - offsets[c]) * scales[c]``;
    ``out[4p + 3] = 0`` (``inT`` is PopLibs' ``in``, a Python keyword)."""

    vertexName = "popops::NormaliseImage"
    inT: Input[Vector[InT]]
    out: Output[Vector[OutT]]
    scales: Input[Vector[OutT]]
    offsets: Input[Vector[OutT]]
    inScale: OutT

    def compute(self):
        for p in range(len(self.inT) // 3):
            for c in range(3):
                self.out[4 * p + c] = self.inT[3 * p + c]  # converted to OutT by the store
                self.out[4 * p + c] = (self.out[4 * p + c] * self.inScale - self.offsets[c]) * self.scales[c]
            self.out[4 * p + 3] = 0
