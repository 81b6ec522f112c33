"""GPipe's schedule over one replica's pipeline stages, each stage's code built once.

A stage's forward pass and its backward pass are each one function (``graph.addFunction``) that
every micro-batch calls, so the code on the IPUs (and the host's graph) does not grow with the
micro-batches, as in Graphcore's pipelined BERT. What differs between micro-batches lives in data:
the activations a backward pass needs are stashed on their own tiles after the forward call (one
copy a micro-batch in flight, :class:`Stash`) and restored before the backward call; a phased
stage's Streaming Memory stash is indexed by the micro-batch's slot (``select``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import poplar_py as poplar
from poplar_py import program as prog


class Stash:
    """Working tensors kept for each of ``micros`` micro-batches: a clone of them per micro-batch on
    the same tiles (one flat tensor per element type), so saving and restoring are on-tile copies."""

    def __init__(self, graph: poplar.Graph, tensors: list[poplar.Tensor], micros: int, name: str) -> None:
        by_type: dict[poplar.Type, list[poplar.Tensor]] = {}
        for t in tensors:
            by_type.setdefault(t.elementType(), []).append(t.flatten())
        self.live = [poplar.concat(flat) for flat in by_type.values()]
        self.slots = [
            [graph.clone(t, f"{name}/stash{j}.{k}") for k, t in enumerate(self.live)] for j in range(micros)
        ]

    def save(self, micro: int, seq: prog.Sequence) -> None:
        for live, kept in zip(self.live, self.slots[micro]):
            seq.add(prog.Copy(live, kept))

    def restore(self, micro: int, seq: prog.Sequence) -> None:
        for live, kept in zip(self.live, self.slots[micro]):
            seq.add(prog.Copy(kept, live))


def no_slot(micro: int, seq: prog.Sequence) -> None:
    """The ``select`` of a stage whose passes keep no per-micro-batch slot (its stash is enough)."""


@dataclass(frozen=True)
class StagePasses:
    """One stage's code for any micro-batch: its forward and backward functions, their stash, where
    its input arrives from the previous stage (``x_in``) and its output leaves (``x_out``), where the
    gradient of its output arrives from the next stage (``d_in``) and its input's leaves (``d_out``),
    and ``select`` (the micro-batch's slot, before either function runs)."""

    forward: poplar.Function
    backward: poplar.Function
    stash: Stash
    select: Callable[[int, prog.Sequence], None]
    x_in: poplar.Tensor | None = None
    x_out: poplar.Tensor | None = None
    d_in: poplar.Tensor | None = None
    d_out: poplar.Tensor | None = None

    def run_forward(self, micro: int) -> prog.Sequence:
        seq = prog.Sequence()
        self.select(micro, seq)
        seq.add(prog.Call(self.forward))
        self.stash.save(micro, seq)
        return seq

    def run_backward(self, micro: int) -> prog.Sequence:
        seq = prog.Sequence()
        self.select(micro, seq)
        self.stash.restore(micro, seq)
        seq.add(prog.Call(self.backward))
        return seq


def gpipe(stages: list[StagePasses], micros: int, seq: prog.Sequence) -> list[prog.Program]:
    """GPipe's schedule into ``seq``: in forward slot t stage s runs micro-batch t - s, then passes
    its output on; in backward slot t stage s runs micro-batch t - (P - 1 - s) back, then passes the
    gradient of its input back. The stages of a slot run side by side on their IPUs (two stages on
    one IPU, as the embedding and the head, take turns there). Returns the schedule's programs (the
    pipelined passes, for the profile's bubble)."""
    pp = len(stages)
    out: list[prog.Program] = []
    for t in range(micros + pp - 1):
        live = [s for s in range(pp) if 0 <= t - s < micros]
        out.append(prog.Sequence([stages[s].run_forward(t - s) for s in live]))
        # the last stage's output leaves first: a stage with no layers passes on what it received
        sends = [prog.Copy(stages[s].x_out, stages[s + 1].x_in) for s in reversed(live) if s + 1 < pp]
        out.append(prog.Sequence(sends))
    for t in range(micros + pp - 1):
        live = [s for s in reversed(range(pp)) if 0 <= t - (pp - 1 - s) < micros]
        out.append(prog.Sequence([stages[s].run_backward(t - (pp - 1 - s)) for s in live]))
        returns = [prog.Copy(stages[s].d_out, stages[s - 1].d_in) for s in reversed(live) if s > 0]
        out.append(prog.Sequence(returns))
    for p in out:
        seq.add(p)
    return out
