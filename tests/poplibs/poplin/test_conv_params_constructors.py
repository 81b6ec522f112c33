"""poplin.ConvParams built positionally as PopLibs' C++ constructors order their arguments, next to
the keyword form; channels are counted per conv group, as in PopLibs."""

from __future__ import annotations

import dataclasses

import pytest

from poplar_py import FLOAT, HALF
from poplibs_py import poplin
from poplibs_py.poputil import PoplibsArgumentError, PoplibsError

P = poplin.ConvParams


def test_data_type_form_is_the_keyword_form():
    positional = P(HALF, 2, [8, 8], [3, 3], 4, 5, 3)
    assert positional == P(inputType=HALF, batchSize=2, inputFieldShape=[8, 8], kernelShape=[3, 3],
                           inputChannelsPerConvGroup=4, outputChannelsPerConvGroup=5, numConvGroups=3)
    assert positional.outputType == HALF
    assert positional.getNumInputChans() == 12 and positional.getNumOutputChans() == 15  # per group x groups


def test_two_type_form():
    p = P(HALF, FLOAT, 2, [8, 8], [3, 3], 4, 5, 1)
    assert (p.inputType, p.outputType) == (HALF, FLOAT)
    assert p == P(HALF, 2, [8, 8], [3, 3], 4, 5, 1, outputType=FLOAT)


def test_two_type_form_with_transforms():
    p = P(HALF, FLOAT, 1, [9, 9], [3, 3], 2, 2, 1,
          P.InputTransform([1, 0], [0, 1], [2, 1], [1, 1], 2, [False, False]),
          P.InputTransform(dilation=[1, 2]),
          P.OutputTransform([0, 1], 0, [2, 1], [1, 0], 0))
    expected = P(HALF, 1, [9, 9], [3, 3], 2, 2, 1, outputType=FLOAT, inputTruncationLower=(1, 0),
                 inputTruncationUpper=(0, 1), inputDilation=(2, 1), paddingLower=1, paddingUpper=2,
                 dilation=(1, 2), outputTruncationLower=(0, 1), stride=(2, 1), outputPaddingLower=(1, 0))
    assert p == expected
    assert p.inputTransform == P.InputTransform([1, 0], [0, 1], [2, 1], 1, 2)
    assert p.kernelTransform == P.InputTransform(dilation=[1, 2])
    assert p.outputTransform == P.OutputTransform([0, 1], 0, [2, 1], [1, 0], 0)
    assert P(HALF, FLOAT, 1, [9, 9], [3, 3], 2, 2, 1, p.inputTransform, p.kernelTransform,
             p.outputTransform) == p
    assert dataclasses.replace(p, stride=1).stride == (1, 1)


@pytest.mark.parametrize("args, kwargs, match", [
    ((HALF, FLOAT, 2, [8, 8], [3, 3], 4, 5), {}, "takes 8 or 11 positional arguments, got 7"),
    ((HALF, FLOAT, 2, [8, 8], [3, 3], 4, 5, 1, P.InputTransform()), {}, "got 9"),
    ((HALF, "nope", 2, [8, 8], [3, 3], 4, 5, 1), {}, "outputType must be a poplar element type"),
    ((3, 2, [8, 8], [3, 3], 4, 5), {}, "inputType must be a poplar element type"),
    ((HALF, 2, [8, 8]), {}, "missing argument.*kernelShape"),
    ((HALF, 2, [8, 8], [3, 3], 4, 5, 1), {"batchSize": 3}, "batchSize given both"),
    ((HALF, 2, [8, 8], [3, 3], 4, 5), {"kernel": 3}, "unexpected argument 'kernel'"),
    ((HALF, FLOAT, 2, [8, 8], [3, 3], 4, 5, 1, 1, P.InputTransform(), P.OutputTransform()), {},
     "inputTransform must be a ConvParams.InputTransform"),
    ((HALF, FLOAT, 2, [8, 8], [3, 3], 4, 5, 1, P.InputTransform(), P.OutputTransform(), P.OutputTransform()),
     {}, "kernelTransform must be a ConvParams.InputTransform"),
    ((HALF, FLOAT, 2, [8, 8], [3, 3], 4, 5, 1, P.InputTransform(), P.InputTransform(), P.OutputTransform()),
     {"stride": 2}, "stride given both"),
    ((HALF, 2.5, [8, 8], [3, 3], 4, 5), {}, "takes 8 or 11 positional arguments, got 6"),
    ((HALF, 2, [8, 8], [3, 3], "4", 5), {}, "inputChannelsPerConvGroup must be an int"),
    ((HALF, 2, [8, 8, 8], [3, 3], 4, 5), {}, "inputFieldShape must have 2 entries"),
])
def test_bad_arguments_name_the_argument(args, kwargs, match):
    with pytest.raises(PoplibsError, match=match) as info:  # PoplibsArgumentError for a wrong kind
        P(*args, **kwargs)
    assert isinstance(info.value, PoplibsArgumentError) == ("must be an int" not in match
                                                            and "entries" not in match)


@pytest.mark.parametrize("kernel, what", [
    (P.InputTransform(paddingLower=1), "kernelTransform.paddingLower"),
    (P.InputTransform(truncationUpper=[0, 1]), "kernelTransform.truncationUpper"),
    (P.InputTransform(flip=[True, False]), "kernelTransform.flip"),
])
def test_unsupported_kernel_transforms(kernel, what):
    with pytest.raises(PoplibsError, match=f"{what} .* is not supported"):
        P(HALF, HALF, 1, [8, 8], [3, 3], 1, 1, 1, P.InputTransform(), kernel, P.OutputTransform())


def test_input_flip_is_not_supported():
    with pytest.raises(PoplibsError, match=r"inputTransform\.flip"):
        P(HALF, HALF, 1, [8, 8], [3, 3], 1, 1, 1, P.InputTransform(flip=True), P.InputTransform(),
          P.OutputTransform())
