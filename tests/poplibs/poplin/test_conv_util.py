"""poplin's ConvUtil.hpp index arithmetic against a brute-force walk through each transform, and
getWeightUpdateParams against the numpy weight gradient of test_conv_backward."""

import itertools

import numpy as np
import pytest
from test_conv_backward import CASES, forward, gradients

import poplar_py as poplar
from poplibs_py import poplin
from poplibs_py.poplin import conv_util as cu
from poplibs_py.poputil import PoplibsError

PARAMS = {name: poplin.ConvParams(poplar.FLOAT, **kwargs) for name, kwargs in CASES.items()}
PARAMS["strided tail"] = poplin.ConvParams(poplar.FLOAT, 1, [9, 8], [2, 3], 1, 1, stride=(3, 2),
                                           dilation=(2, 1), paddingLower=(1, 0))


def relation(p, dim):
    """Every (output, kernel, input) index triple that meets in dimension ``dim``, by building
    the transformed input and kernel as index arrays (-1: padding or a dilation hole) and
    sliding one over the other."""
    n = p.inputFieldShape[dim]
    kept = np.arange(n)[p.inputTruncationLower[dim]:n - p.inputTruncationUpper[dim]]
    dilated = np.full((kept.size - 1) * p.inputDilation[dim] + 1, -1)
    dilated[::p.inputDilation[dim]] = kept
    x = np.concatenate([np.full(p.paddingLower[dim], -1), dilated, np.full(p.paddingUpper[dim], -1)])
    kernel = np.full((p.kernelShape[dim] - 1) * p.dilation[dim] + 1, -1)
    kernel[::p.dilation[dim]] = np.arange(p.kernelShape[dim])
    u = np.arange(x.size - kernel.size + 1)
    u = u[p.outputTruncationLower[dim]:u.size - p.outputTruncationUpper[dim]][::p.stride[dim]]
    outputs = [-1] * p.outputPaddingLower[dim] + list(u) + [-1] * p.outputPaddingUpper[dim]
    assert len(outputs) == p.getOutputSize(dim)
    return {(o, int(k), int(x[uo + kk])) for o, uo in enumerate(outputs) if uo >= 0
            for kk, k in enumerate(kernel) if k >= 0 and x[uo + kk] >= 0}


def hull(values):
    values = list(values)
    return (min(values), max(values) + 1) if values else (0, 0)


def ranges(size):
    return [(b, e) for b in range(size + 1) for e in range(b, size + 1)]


@pytest.mark.parametrize("name", PARAMS)
def test_indices_and_ranges_match_brute_force(name):
    p = PARAMS[name]
    for dim in range(2):
        rel = relation(p, dim)
        n_out, n_k, n_in = p.getOutputSize(dim), p.kernelShape[dim], p.inputFieldShape[dim]
        for o, k in itertools.product(range(n_out), range(n_k)):
            expected = [i for (o2, k2, i) in rel if (o2, k2) == (o, k)]
            assert cu.getInputIndex(dim, o, k, p) == (expected[0] if expected else cu.NO_INDEX)
        for o, i in itertools.product(range(n_out), range(n_in)):
            expected = [k for (o2, k, i2) in rel if (o2, i2) == (o, i)]
            assert cu.getKernelIndex(dim, o, i, p) == (expected[0] if expected else cu.NO_INDEX)
        for out in ranges(n_out):
            inside = [t for t in rel if out[0] <= t[0] < out[1]]
            for k in ranges(n_k):
                used = [t for t in inside if k[0] <= t[1] < k[1]]
                assert cu.getOutputRangeForKernelRange(dim, out, k, p) == hull(t[0] for t in used)
                assert cu.getInputRange(dim, out, k, p) == hull(t[2] for t in used)
                if k[1] == k[0] + 1:
                    assert cu.getOutputRangeForKernelIndex(dim, out, k[0], p) == hull(t[0] for t in used)
                    assert cu.getInputRange(dim, out, k[0], p) == hull(t[2] for t in used)
                if out[1] == out[0] + 1:
                    assert cu.getInputRange(dim, out[0], k, p) == hull(t[2] for t in used)
            for i in ranges(n_in):
                used = [t for t in inside if i[0] <= t[2] < i[1]]
                assert cu.getOutputRangeForInputRange(dim, out, i, p) == hull(t[0] for t in used)
                assert cu.getKernelRange(dim, out, i, p) == hull(t[1] for t in used)
                if i[1] == i[0] + 1:
                    assert cu.getOutputRangeForInputIndex(dim, out, i[0], p) == hull(t[0] for t in used)
                    assert cu.getKernelRange(dim, out, i[0], p) == hull(t[1] for t in used)
            assert cu.getInputRange(dim, out, p) == hull(t[2] for t in inside)
        assert cu.getInputRange(dim, 0, p) == hull(t[2] for t in rel if t[0] == 0)


@pytest.mark.parametrize("name", [n for n in PARAMS if not PARAMS[n].hasOutputPadding()] + ["groups"])
def test_weight_update_params_give_the_weight_deltas(name):
    p = PARAMS.get(name) or poplin.ConvParams(poplar.FLOAT, 2, [5, 6], [2, 3], 2, 3, numConvGroups=2,
                                              stride=(2, 1), paddingUpper=(1, 0))
    rng = np.random.default_rng(4)
    x, w, dy = (rng.standard_normal(s) for s in (p.inputShape(), p.weightsShape(), p.outputShape()))
    wu = cu.getWeightUpdateParams(p)
    b, g, ci, co = p.batchSize, p.numConvGroups, p.inputChannelsPerConvGroup, p.outputChannelsPerConvGroup
    acts = x.reshape(b, g, ci, *x.shape[2:]).transpose(2, 1, 0, 3, 4).reshape(ci, g * b, *x.shape[2:])
    deltas = dy.reshape(b, g, co, *dy.shape[2:]).transpose(1, 2, 0, 3, 4)
    assert list(acts.shape) == wu.inputShape() and list(deltas.shape) == wu.weightsShape()
    out = forward(acts, deltas, wu)
    expected = gradients(x, w, dy, p)[1]  # [G, Co, Ci, kH, kW]
    np.testing.assert_allclose(out.reshape(ci, g, co, *out.shape[2:]).transpose(1, 2, 0, 3, 4), expected,
                               rtol=1e-10, atol=1e-10)


def test_misuse():
    p = PARAMS["all transforms"]
    assert cu.getDilatedSize(0, 3) == 0 and cu.getDilatedSize(4, 3) == 10
    with pytest.raises(PoplibsError, match="getInputIndex: dim 2 is not a field dimension"):
        cu.getInputIndex(2, 0, 0, p)
    with pytest.raises(PoplibsError, match="getKernelIndex: inputIndex 6 is not in"):
        cu.getKernelIndex(0, 0, 6, p)
    with pytest.raises(PoplibsError, match="getInputRange: outputRange"):
        cu.getInputRange(0, (3, 1), p)
    with pytest.raises(PoplibsError, match=r"getKernelRange: params must be a poplin\.ConvParams"):
        cu.getKernelRange(0, (0, 1), 0, None)
    with pytest.raises(PoplibsError, match="getDilatedSize: dilation"):
        cu.getDilatedSize(3, 0)
    with pytest.raises(PoplibsError, match="output padding"):
        cu.getWeightUpdateParams(p)
