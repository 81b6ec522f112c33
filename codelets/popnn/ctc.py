"""popnn CTC codelets: the loss and its gradient by the forward-backward algorithm, and the
prefix beam search decoder. One vertex handles one batch entry; probabilities are in the log
domain (``-inf`` is probability 0) and scratch tensors on the vertex's tile hold its tables.

The extended label of labels ``l`` (length L) is ``blank, l0, blank, l1, ..., blank`` (2L + 1
symbols). ``alpha[t][s]`` and ``beta[t][s]`` both include ``y[t][l'(s)]`` (Graves' tables).
"""

import math

from poplar_py import UNSIGNED_INT, InOut, Input, Output, Vector, VectorList, Vertex
from poplar_py.vertex import TypeParam

InT = TypeParam("InT")
OutT = TypeParam("OutT")
T = TypeParam("T")

VOID = 0xFFFFFFFF  # no symbol: the copy candidate of a beam
TAKEN = 0xFFFFFFFE  # a candidate merged into another, or already chosen


def log_add(a, b):
    """log(exp(a) + exp(b)), exact when either is -inf."""
    hi = max(a, b)
    lo = min(a, b)
    if lo == -math.inf:
        return hi
    return hi + math.log1p(math.exp(lo - hi))


def symbol(labels, blank, s):
    """Symbol ``s`` of the extended label."""
    if s % 2 == 0:
        return blank
    return labels[(s - 1) // 2]


def can_skip(labels, s):
    """Whether a path may jump from extended position s - 2 to s (s a label, not a repeat)."""
    return s % 2 == 1 and s >= 2 and labels[(s - 1) // 2] != labels[(s - 3) // 2]


class CTCLossAndGradient(Vertex):
    """``loss = -log P(labels | logProbs)`` over the first ``dataLength`` rows and
    ``labelLength`` labels; ``grad[t][c]``: with ``softmaxGrad`` the gradient with respect to
    the logits under a log-softmax, ``exp(y) - occupancy``, else with respect to the log
    probabilities, ``-occupancy``, where ``occupancy = sum(alpha * beta over the positions of
    c) / (P * exp(y))``; rows from ``dataLength`` on are 0. With ``zeroInfinity`` an impossible
    alignment (P = 0) gives loss 0 and a zero gradient. ``alpha``/``beta`` are scratch tables
    of ``maxTime * (2 * maxLabelLength + 1)``."""

    vertexName = "popnn::CTCLossAndGradient"
    logProbs: Input[VectorList[InT]]
    labels: Input[Vector[UNSIGNED_INT]]
    dataLength: Input[UNSIGNED_INT]
    labelLength: Input[UNSIGNED_INT]
    loss: Output[OutT]
    grad: Output[VectorList[OutT]]
    alpha: InOut[Vector[float]]
    beta: InOut[Vector[float]]
    blankClass: UNSIGNED_INT
    softmaxGrad: bool
    zeroInfinity: bool

    def compute(self):
        steps = self.dataLength
        n = self.labelLength
        width = 2 * n + 1
        if steps > len(self.logProbs) or n > len(self.labels) or steps * width > len(self.alpha):
            return False
        blank = self.blankClass
        for t in range(steps):
            for s in range(width):
                a: float = -math.inf
                if t == 0:
                    if s < 2:
                        a = 0.0
                else:
                    prev = (t - 1) * width
                    a = self.alpha[prev + s]
                    if s >= 1:
                        a = log_add(a, self.alpha[prev + s - 1])
                    if can_skip(self.labels, s):
                        a = log_add(a, self.alpha[prev + s - 2])
                if a != -math.inf:
                    a = a + self.logProbs[t][symbol(self.labels, blank, s)]
                self.alpha[t * width + s] = a
        for t in range(steps - 1, -1, -1):
            for s in range(width):
                b: float = -math.inf
                if t == steps - 1:
                    if s + 2 >= width:  # the last two positions (width - 2 wraps when width is 1)
                        b = 0.0
                else:
                    nxt = (t + 1) * width
                    b = self.beta[nxt + s]
                    if s + 1 < width:
                        b = log_add(b, self.beta[nxt + s + 1])
                    if s + 2 < width and can_skip(self.labels, s + 2):
                        b = log_add(b, self.beta[nxt + s + 2])
                if b != -math.inf:
                    b = b + self.logProbs[t][symbol(self.labels, blank, s)]
                self.beta[t * width + s] = b
        log_p: float = -math.inf
        if steps == 0:
            if n == 0:
                log_p = 0.0
        else:
            last = (steps - 1) * width
            log_p = self.alpha[last + width - 1]
            if width > 1:
                log_p = log_add(log_p, self.alpha[last + width - 2])
        impossible = log_p == -math.inf
        self.loss = 0.0 if impossible and self.zeroInfinity else -log_p
        for t in range(len(self.grad)):
            row = self.grad[t]
            for c in range(len(row)):
                g: float = 0.0
                if t < steps and not (impossible and self.zeroInfinity):
                    y: float = self.logProbs[t][c]
                    acc: float = -math.inf
                    for s in range(width):
                        if symbol(self.labels, blank, s) == c:
                            acc = log_add(acc, self.alpha[t * width + s] + self.beta[t * width + s])
                    occupancy: float = 0.0
                    if acc != -math.inf:
                        occupancy = math.exp(acc - log_p - y)
                    g = -occupancy
                    if self.softmaxGrad:
                        g = math.exp(y) - occupancy
                row[c] = g
        return True


def same_output(prefix, length, beams, addends, maxT, j, i):
    """Whether candidates j and i (a beam's prefix plus an addend, VOID for none) spell the
    same label sequence."""
    bj = beams[j]
    bi = beams[i]
    nj = length[bj] + (0 if addends[j] == VOID else 1)
    ni = length[bi] + (0 if addends[i] == VOID else 1)
    if nj != ni:
        return False
    for k in range(nj):
        sj = addends[j] if k == length[bj] else prefix[bj * maxT + k]
        si = addends[i] if k == length[bi] else prefix[bi * maxT + k]
        if sj != si:
            return False
    return True


class CTCBeamSearch(Vertex):
    """CTC prefix beam search over the first ``dataLength`` rows of ``logProbs``, keeping
    ``beamwidth`` beams, each a label prefix with the log probabilities of its alignments
    ending in a blank (``pb``) and in its last label (``pnb``).

    At every step each live beam proposes itself (ending in a blank, or repeating its last
    label) and itself extended by each non-blank class (a repeat of its last label only from
    ``pb``); candidates spelling the same prefix are merged (probabilities log-added, into the
    first one), and the ``beamwidth`` most probable (the first on ties) become the next beams.
    Outputs the first ``len(labelProbs)`` beams: their log probability (``-inf`` for a beam
    never filled), length and labels (0 past the length). Scratch: ``prefix`` ``[2, W,
    maxT]``, ``length`` ``[2, W]``, ``prob`` ``[2, W, 2]``, and ``W * numClasses`` candidates
    in ``candBeam``, ``candAddend`` and ``candProb`` (``[.., 2]``)."""

    vertexName = "popnn::CTCBeamSearch"
    logProbs: Input[VectorList[T]]
    dataLength: Input[UNSIGNED_INT]
    labelProbs: Output[Vector[T]]
    labelLengths: Output[Vector[UNSIGNED_INT]]
    decoded: Output[VectorList[UNSIGNED_INT]]
    prefix: InOut[Vector[UNSIGNED_INT]]
    length: InOut[Vector[UNSIGNED_INT]]
    prob: InOut[Vector[float]]
    candBeam: InOut[Vector[UNSIGNED_INT]]
    candAddend: InOut[Vector[UNSIGNED_INT]]
    candProb: InOut[Vector[float]]
    blankClass: UNSIGNED_INT
    beamwidth: UNSIGNED_INT

    def compute(self):
        width = self.beamwidth
        maxT = len(self.logProbs)
        steps = self.dataLength
        if steps > maxT:
            return False
        classes = len(self.logProbs[0])
        blank = self.blankClass
        for b in range(width):
            self.length[b] = 0
            self.prob[2 * b] = -math.inf
            self.prob[2 * b + 1] = -math.inf
        self.prob[0] = 0.0  # one empty beam, ending in a blank with probability 1
        cur = 0
        for t in range(steps):
            row = self.logProbs[t]
            base = cur * width
            n = 0
            for b in range(width):
                pb: float = self.prob[2 * (base + b)]
                pnb: float = self.prob[2 * (base + b) + 1]
                total = log_add(pb, pnb)
                if total == -math.inf:
                    continue
                size = self.length[base + b]
                last = VOID
                if size > 0:
                    last = self.prefix[(base + b) * maxT + size - 1]
                self.candBeam[n] = base + b
                self.candAddend[n] = VOID
                self.candProb[2 * n] = total + row[blank]
                self.candProb[2 * n + 1] = -math.inf
                if size > 0:
                    self.candProb[2 * n + 1] = pnb + row[last]
                n += 1
                for c in range(classes):
                    if c == blank:
                        continue
                    self.candBeam[n] = base + b
                    self.candAddend[n] = c
                    self.candProb[2 * n] = -math.inf
                    extend: float = pb + row[c]
                    if c != last:
                        extend = log_add(extend, pnb + row[c])
                    self.candProb[2 * n + 1] = extend
                    n += 1
            for j in range(n):
                if self.candAddend[j] == TAKEN:
                    continue
                for i in range(j + 1, n):
                    if self.candAddend[i] == TAKEN or self.candBeam[i] == self.candBeam[j]:
                        continue
                    if same_output(self.prefix, self.length, self.candBeam, self.candAddend, maxT, j, i):
                        self.candProb[2 * j] = log_add(self.candProb[2 * j], self.candProb[2 * i])
                        self.candProb[2 * j + 1] = log_add(self.candProb[2 * j + 1], self.candProb[2 * i + 1])
                        self.candAddend[i] = TAKEN
            nxt = (1 - cur) * width
            for slot in range(width):
                best = n
                best_total: float = -math.inf
                for k in range(n):
                    if self.candAddend[k] == TAKEN:
                        continue
                    here = log_add(self.candProb[2 * k], self.candProb[2 * k + 1])
                    if here > best_total:
                        best = k
                        best_total = here
                at = nxt + slot
                if best == n:
                    self.length[at] = 0
                    self.prob[2 * at] = -math.inf
                    self.prob[2 * at + 1] = -math.inf
                    continue
                src = self.candBeam[best]
                size = self.length[src]
                for k in range(size):
                    self.prefix[at * maxT + k] = self.prefix[src * maxT + k]
                if self.candAddend[best] != VOID:
                    self.prefix[at * maxT + size] = self.candAddend[best]
                    size += 1
                self.length[at] = size
                self.prob[2 * at] = self.candProb[2 * best]
                self.prob[2 * at + 1] = self.candProb[2 * best + 1]
                self.candAddend[best] = TAKEN
            cur = 1 - cur
        base = cur * width
        for p in range(len(self.labelProbs)):
            at = base + p
            self.labelProbs[p] = log_add(self.prob[2 * at], self.prob[2 * at + 1])
            size = self.length[at]
            self.labelLengths[p] = size
            out = self.decoded[p]
            for k in range(len(out)):
                out[k] = self.prefix[at * maxT + k] if k < size else 0
        return True
