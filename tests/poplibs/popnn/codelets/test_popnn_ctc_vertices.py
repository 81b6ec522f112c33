"""popnn's CTCLossAndGradient and CTCBeamSearch vertices, each alone on a tile, against a brute
force over every alignment (codelets/popnn/ctc.py). One vertex handles one batch entry; rows of
``logProbs`` are time steps, probabilities are logarithms."""

import itertools
import math

import numpy as np
import pytest

import poplar_py as poplar
from poplibs_py.poputil import templateVertex

F = poplar.FLOAT
CLASSES = 3


def log_softmax(rng, steps: int) -> np.ndarray:
    x = rng.normal(size=(steps, CLASSES))
    return (x - np.log(np.exp(x).sum(1, keepdims=True))).astype(np.float32)


def sequences(log_probs: np.ndarray, blank: int):
    """Every alignment of the rows: (its label sequence, its probability, the alignment)."""
    probs = np.exp(log_probs.astype(np.float64))
    for path in itertools.product(range(CLASSES), repeat=len(probs)):
        labels = tuple(c for i, c in enumerate(path) if c != blank and (i == 0 or c != path[i - 1]))
        yield labels, math.prod(probs[t, c] for t, c in enumerate(path)), path


def loss_vertex(h, tile: int, y: np.ndarray, buffer: list[int], n: int, steps: int, **state) -> dict:
    """A CTCLossAndGradient<float,float> vertex (its alpha and beta tables sized for the buffer)."""
    width = (2 * len(buffer) + 1) * len(y)
    return h.vertex(templateVertex("popnn::CTCLossAndGradient", F, F), tile=tile, logProbs=list(y),
                    labels=np.array(buffer, np.uint32), dataLength=np.array(steps, np.uint32),
                    labelLength=np.array(n, np.uint32), loss=np.array(9, np.float32),
                    grad=list(np.full(y.shape, 9, np.float32)), alpha=np.zeros(width, np.float32),
                    beta=np.zeros(width, np.float32), initial=state)


def beam_vertex(h, tile: int, y: np.ndarray, steps: int, width: int, top: int) -> dict:
    """A CTCBeamSearch<float> vertex keeping ``width`` beams and writing ``top`` paths (blank 0)."""
    u32, f32, candidates = np.uint32, np.float32, width * CLASSES
    return h.vertex(templateVertex("popnn::CTCBeamSearch", F), tile=tile, logProbs=list(y),
                    dataLength=np.array(steps, u32), labelProbs=np.zeros(top, f32),
                    labelLengths=np.full(top, 9, u32), decoded=list(np.full((top, len(y)), 9, u32)),
                    prefix=np.zeros(2 * width * len(y), u32), length=np.zeros(2 * width, u32),
                    prob=np.zeros(4 * width, f32), candBeam=np.zeros(candidates, u32),
                    candAddend=np.zeros(candidates, u32), candProb=np.zeros(2 * candidates, f32),
                    initial={"blankClass": 0, "beamwidth": width})


# (labels buffer, labelLength, maxTime, dataLength, blank, softmaxGrad, zeroInfinity)
LOSS_CASES = {"distinct labels, unused steps": ([1, 2, 0], 2, 5, 4, 0, False, False),
              "a repeated label, blank 2": ([1, 1], 2, 4, 4, 2, True, False),
              "no labels": ([2, 1], 0, 3, 3, 0, False, False),
              "impossible, zeroInfinity": ([1, 1], 2, 2, 2, 0, False, True),
              "impossible": ([1, 1], 2, 3, 2, 0, True, False)}


def test_ctc_loss_and_gradient(vertices):
    """``loss = -log P(labels)`` and the gradient ``-occupancy`` (``exp(y) - occupancy`` under a
    log-softmax), occupancy[t][c] the share of P of the alignments through class c at step t;
    rows from ``dataLength`` on are 0; an impossible alignment gives an infinite loss, or 0 and
    a zero gradient with ``zeroInfinity``."""
    h, rng = vertices("popnn"), np.random.default_rng(12)
    cases = h.cases
    for k, (case, (buffer, n, max_t, steps, blank, softmax, zero_inf)) in enumerate(LOSS_CASES.items()):
        y = log_softmax(rng, max_t)
        total, occupancy = 0.0, np.zeros((max_t, CLASSES))
        for labels, p, path in sequences(y[:steps], blank):
            if labels == tuple(buffer[:n]):
                total += p
                occupancy[np.arange(steps), path] += p
        grad = (np.exp(y) if softmax else 0) - (occupancy / total if total else occupancy)
        grad[steps:] = 0
        loss = -math.log(total) if total else math.inf
        if total == 0 and zero_inf:
            loss, grad = 0.0, 0 * grad
        v = loss_vertex(h, k % 4, y, buffer, n, steps, blankClass=blank, softmaxGrad=softmax,
                        zeroInfinity=zero_inf)
        cases[f"{case}: loss"] = (v["loss"], loss, 1e-5)
        cases[f"{case}: gradient"] = (v["grad"], list(grad), 1e-4)
    h.check(atol=1e-6)


# (maxTime, dataLength, beamwidth, paths out)
BEAM_CASES = {"beams for every prefix (exact)": (3, 3, 16, 4), "an unfilled path": (1, 1, 4, 4),
              "unused steps": (4, 2, 8, 3)}


def test_ctc_beam_search(vertices):
    """The most probable label sequences, best first: their log probabilities, lengths and
    labels (0 past the length); a path never filled has probability 0 (-inf) and length 0.
    With a beam for every possible prefix the search is exact."""
    h, rng = vertices("popnn"), np.random.default_rng(13)
    cases = h.cases
    for k, (case, (max_t, steps, width, top)) in enumerate(BEAM_CASES.items()):
        y = log_softmax(rng, max_t)
        totals: dict = {}
        for labels, p, _ in sequences(y[:steps], 0):
            totals[labels] = totals.get(labels, 0.0) + p
        best = sorted(totals.items(), key=lambda item: -item[1])[:top]
        best += [((), 0.0)] * (top - len(best))
        v = beam_vertex(h, k, y, steps, width, top)
        with np.errstate(divide="ignore"):
            cases[f"{case}: probabilities"] = (v["labelProbs"], np.log([p for _, p in best]), 1e-5)
        cases[f"{case}: lengths"] = (v["labelLengths"], [len(s) for s, _ in best])
        cases[f"{case}: labels"] = (v["decoded"], [list(s) + [0] * (max_t - len(s)) for s, _ in best])
    h.check()


@pytest.mark.parametrize("vertex", ["CTCLossAndGradient", "CTCBeamSearch"])
def test_ctc_data_length_past_the_rows_is_an_error(vertices, vertex):
    h, y = vertices("popnn"), np.zeros((2, CLASSES), np.float32)
    for steps in (2, 3):  # a good vertex beside the bad one
        if vertex == "CTCBeamSearch":
            beam_vertex(h, 0, y, steps, 2, 1)
        else:
            loss_vertex(h, 0, y, [1], 1, steps, blankClass=0, softmaxGrad=False, zeroInfinity=False)
    with pytest.raises(poplar.VertexError):
        h.run()
