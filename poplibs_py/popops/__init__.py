"""popops: element-wise operations, expressions, reductions, slicing and sorting.

Every operation adds vertices (the codelets in ``codelets/popops``, or a codelet
generated from an expression), compute sets and programs to the caller's graph; the
work runs on the tiles that hold the data.
"""

import poplar_py as _poplar

from ..codelets import add_library
from ..poputil import templateVertex
from . import embedding as embedding
from . import expr as expr
from .cast import *  # noqa: F403
from .circ_buf import *  # noqa: F403
from .dynamic_slice import *  # noqa: F403
from .elementwise import *  # noqa: F403
from .encoding import *  # noqa: F403
from .fill import *  # noqa: F403
from .gather import *  # noqa: F403
from .grouped_slice import *  # noqa: F403
from .histogram import *  # noqa: F403
from .host_slice_tensor import *  # noqa: F403
from .loop import *  # noqa: F403
from .multi_slice import *  # noqa: F403
from .normalise_image import *  # noqa: F403
from .pad import *  # noqa: F403
from .perf_estimation import cast2dEstimator, fill2dEstimator, registerDefaultEstimator
from .predicates import *  # noqa: F403
from .reduce import *  # noqa: F403
from .scaled_add import *  # noqa: F403
from .scatter import *  # noqa: F403
from .select_scalar import *  # noqa: F403
from .sequence_slice import *  # noqa: F403
from .slice_tensors import *  # noqa: F403
from .sort import *  # noqa: F403
from .topk import *  # noqa: F403

#: the element types popops' cast and fill vertices are estimated for
TYPES = tuple(getattr(_poplar, name) for name in (
    "FLOAT", "HALF", "INT", "UNSIGNED_INT", "SHORT", "UNSIGNED_SHORT", "CHAR", "SIGNED_CHAR", "UNSIGNED_CHAR",
    "BOOL"))


def addCodelets(graph) -> None:
    """Register the popops codelets with ``graph`` (call once before using popops), and the cycle
    estimators (:mod:`.perf_estimation`) of its cast and fill vertices for every type pair, where the
    user has registered none; map and reduce vertices get theirs when they are created."""
    add_library(graph, "popops")
    for t in TYPES:
        registerDefaultEstimator(graph, templateVertex("popops::Fill2d", t), fill2dEstimator(t))
        for dst in TYPES:
            registerDefaultEstimator(graph, templateVertex("popops::Cast2d", t, dst), cast2dEstimator(t, dst))
