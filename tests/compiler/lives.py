"""Random variable lives, for the liveness and packing tests."""

import numpy as np

from poplar_py.compiler.liveness import Liveness


def random_lives(rng: np.random.Generator, num_vars: int, points: int) -> Liveness:
    """Lives of 0 to 3 disjoint intervals over ``points`` points, one per variable."""
    counts = rng.integers(0, 4, num_vars)
    lo, hi = [], []
    for c in counts:
        ends = np.sort(rng.choice(points, 2 * c, replace=False))
        lo += ends[0::2].tolist()
        hi += ends[1::2].tolist()
    bounds = np.concatenate(([0], np.cumsum(counts)))
    return Liveness(np.zeros(num_vars, bool), bounds, np.asarray(lo, np.int64), np.asarray(hi, np.int64),
                    np.zeros(0, np.int64), ())
