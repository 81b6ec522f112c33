"""popops: element-wise operations, expressions, reductions, slicing and sorting.

Every operation adds vertices (the codelets in ``codelets/popops``, or a codelet
generated from an expression), compute sets and programs to the caller's graph; the
work runs on the tiles that hold the data.
"""

from ..codelets import add_library
from . import expr as expr
from .cast import *  # noqa: F403
from .dynamic_slice import *  # noqa: F403
from .elementwise import *  # noqa: F403
from .encoding import *  # noqa: F403
from .fill import *  # noqa: F403
from .gather import *  # noqa: F403
from .loop import *  # noqa: F403
from .multi_slice import *  # noqa: F403
from .pad import *  # noqa: F403
from .predicates import *  # noqa: F403
from .reduce import *  # noqa: F403
from .scaled_add import *  # noqa: F403
from .scatter import *  # noqa: F403
from .select_scalar import *  # noqa: F403
from .sort import *  # noqa: F403


def addCodelets(graph) -> None:
    """Register the popops codelets with ``graph`` (call once before using popops)."""
    add_library(graph, "popops")
