"""The tiles' floating-point control words at run time (:mod:`poplar_py.csr_functions`).

:class:`FpControl` is the machine's copy of every tile's control word (per replica), which
``engine.load`` resets and the control steps (:mod:`fp_control`) change; compute sets read it
to pick, per vertex class, the plain kernel (every word of their tiles zero) or the
floating-point one, given each vertex's word and generator (:func:`vertex_env`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..codelet.fp_rules import FP_ENV_DTYPE, RNG_BYTES


@dataclass
class FpControl:
    """Every tile's control word on every replica (``words[replica, tile]``), the word they start
    with at load, and where each tile's hardware generator rows are (arena offsets in the first
    replica's memory, -1 for none: set by the first control step that runs)."""

    words: np.ndarray
    initial: int
    rng: np.ndarray | None = None

    @classmethod
    def make(cls, replicas: int, tiles: int, initial: int) -> FpControl:
        return cls(np.full((replicas, tiles), initial, np.uint32), initial)

    def reset(self) -> None:
        """The state at load."""
        self.words[:] = self.initial


def vertex_env(words: np.ndarray, tiles: np.ndarray, contexts: np.ndarray, rng: np.ndarray | None,
               base: int) -> np.ndarray:
    """Per vertex (on ``tiles``, worker context ``contexts``): its tile's control word and the
    address of its worker's generator state (worker 0's for a MultiVertex, whose worker w is
    ``RNG_BYTES * w`` further on), in a replica's memory starting at ``base``."""
    env = np.zeros(tiles.size, FP_ENV_DTYPE)
    env["ctl"] = words[tiles]
    if rng is not None:
        at = rng[tiles]
        env["rng"] = np.where(at >= 0, base + at + RNG_BYTES * contexts, 0).astype(np.uint64)
    return env
