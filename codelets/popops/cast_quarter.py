"""popops::CastToQuarter<SrcT> and CastFromQuarter<DstT>: float or half to and from QUARTER.

Each vertex reads the QUARTER_METADATA byte on the tile, at run time (a program may change it):
bit 7 is the format (1: F143, 3 mantissa bits and exponent bias 8; 0: F152, 2 and 16) and bits 0-5
the scale, a two's complement power of two. ``poplar_py.quarter`` documents the formats.

On the tiles: decoding builds the exact value ``significand * 2**(exponent - bias - mantissa bits
+ scale)`` in double and stores it (exact into float; into half rounded to nearest even). Encoding
scales the value by ``2**-scale`` (exact in double), finds its binade by comparing with powers of
two, counts quanta with a floor and rounds the remainder to nearest, ties to even; a NaN, an
infinity or a rounded magnitude above the format's largest gives the NaN code 0x80 (as Poplar's
IPUModel, which has no ``$FP_CTL`` and behaves as with ``nanoo`` set), a zero result is 0x00 (no -0).
"""

import math

from poplar_py import QUARTER, QUARTER_METADATA, Input, MultiVertex, Output, VectorList
from poplar_py.vertex import TypeParam

SrcT = TypeParam("SrcT")
DstT = TypeParam("DstT")


def _mantissa_bits(md):
    return 3 if md >= 0x80 else 2


def _bias(md):
    return 8 if md >= 0x80 else 16


def _scale(md):
    scale = md & 0x3F
    return scale - 64 if scale >= 32 else scale


def _decode(code, mbits, bias, scale):
    if code == 0x80:
        return math.nan
    exponent = (code & 0x7F) >> mbits
    significand = code & ((1 << mbits) - 1)
    if exponent == 0:
        exponent = 1  # subnormal: no implicit bit
    else:
        significand += 1 << mbits
    value = float(significand) * 2.0 ** (exponent - bias - mbits + scale)
    return -value if code >= 0x80 else value


def _encode(x, mbits, bias, scale):
    v = float(x)
    if math.isnan(v) or math.isinf(v):
        return 0x80
    a = abs(v) * 2.0 ** (-scale)
    emax = (1 << (7 - mbits)) - 1
    if a >= 2.0 ** (emax + 1 - bias):
        return 0x80  # beyond the largest binade
    exponent = 1
    top = 2.0 ** (2 - bias)  # the smallest value of binade exponent + 1
    while exponent < emax and a >= top:
        exponent += 1
        top *= 2.0
    quanta = a * 2.0 ** (mbits + bias - exponent)
    steps = math.floor(quanta)
    rest = quanta - steps
    if rest > 0.5 or (rest == 0.5 and steps % 2 == 1):
        steps += 1
    code = ((exponent - 1) << mbits) + steps  # a carry out of the mantissa raises the exponent
    if code > 0x7F:
        return 0x80
    if code != 0 and v < 0.0:
        code += 0x80
    return code


class CastToQuarter(MultiVertex):
    """``dst[w][i]`` = the quarter code of ``src[w][i]`` under ``metadata``: worker ``w`` encodes
    row ``w``."""

    vertexName = "popops::CastToQuarter"
    src: Input[VectorList[SrcT]]
    metadata: Input[QUARTER_METADATA]
    dst: Output[VectorList[QUARTER]]

    def compute(self, workerId):
        if workerId < len(self.dst):
            md = int(self.metadata)
            mbits = _mantissa_bits(md)
            bias = _bias(md)
            scale = _scale(md)
            src = self.src[workerId]
            dst = self.dst[workerId]
            for i in range(len(dst)):
                dst[i] = _encode(src[i], mbits, bias, scale)
        return True


class CastFromQuarter(MultiVertex):
    """``dst[w][i]`` = the value of quarter code ``src[w][i]`` under ``metadata``, as DstT:
    worker ``w`` decodes row ``w``."""

    vertexName = "popops::CastFromQuarter"
    src: Input[VectorList[QUARTER]]
    metadata: Input[QUARTER_METADATA]
    dst: Output[VectorList[DstT]]

    def compute(self, workerId):
        if workerId < len(self.dst):
            md = int(self.metadata)
            mbits = _mantissa_bits(md)
            bias = _bias(md)
            scale = _scale(md)
            src = self.src[workerId]
            dst = self.dst[workerId]
            for i in range(len(dst)):
                dst[i] = _decode(int(src[i]), mbits, bias, scale)
        return True
