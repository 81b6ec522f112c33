"""The codelets the liveness tests build their compute sets from."""

from poplar_py import InOut, Input, Output, Vector, Vertex


class Twice(Vertex):
    inp: Input[Vector[float]]
    out: Output[Vector[float]]

    def compute(self):
        for i in range(len(self.inp)):
            self.out[i] = self.inp[i] * 2.0
        return True


class AddInto(Vertex):
    inp: Input[Vector[float]]
    acc: InOut[Vector[float]]

    def compute(self):
        for i in range(len(self.inp)):
            self.acc[i] = self.acc[i] + self.inp[i]
        return True
