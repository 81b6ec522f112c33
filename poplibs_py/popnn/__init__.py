"""popnn: neural-network operations built from popops maps and reductions and popnn codelets.

* non-linearities, softmax and log-softmax, with input gradients (``nonlinearity``);
* ``calcLoss``, ``calcAccuracy``, ``argMax``/``argMin`` (``loss``);
* ``pooling.pool`` and ``pooling.poolInputGradient`` (``pooling``);
* batch, layer, group and instance norms: ``bn``, ``ln``, ``gn``, ``in_`` (``norms``);
* recurrent layers ``lstm``, ``gru`` and ``rnn`` (the generic loop and the vanilla layer);
* CTC loss (``ctc``) and beam search decoding (``ctc_infer``); ``spatialSoftMax2D``;
  ROIAlign (``experimental``).

Every operation adds vertices, compute sets and programs to the caller's graph and runs on the
tiles holding the data. Call ``popops.addCodelets`` and ``popnn.addCodelets`` first.
"""

from ..codelets import add_library
from . import bn as bn
from . import ctc as ctc
from . import ctc_infer as ctc_infer
from . import experimental as experimental
from . import gn as gn
from . import gru as gru
from . import in_ as in_
from . import ln as ln
from . import lstm as lstm
from . import pooling as pooling
from . import rnn as rnn
from .loss import *  # noqa: F403
from .nonlinearity import *  # noqa: F403
from .norms import createNormBeta as createNormBeta
from .norms import createNormGamma as createNormGamma
from .norms import createNormParams as createNormParams
from .norms import getNormBwdFlops as getNormBwdFlops
from .norms import getNormFwdFlops as getNormFwdFlops
from .norms import getNormWuFlops as getNormWuFlops
from .pooling import PoolingType as PoolingType  # popnn::PoolingType
from .spatial_softmax import spatialSoftMax2D as spatialSoftMax2D


def addCodelets(graph) -> None:
    """Register the popnn codelets (``codelets/popnn``) with ``graph``."""
    add_library(graph, "popnn")
