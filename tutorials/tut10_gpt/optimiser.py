"""Adam with its state sharded across the data-parallel group and kept in Streaming Memory.

Replicated tensor sharding, as Graphcore trains large models: each replica of a data-parallel
group of D keeps 1/D of a stage's master weights and of Adam's two moments in a remote buffer
(rows 0, 1 and 2 of its own rows). A step reduce-scatters the stage's gradients in the group (each
replica gets the mean of its shard), loads its shard's rows, updates them, stores them back and
all-gathers the group's new weights into the stage's parameters. The state is float whatever the
parameters' type: half parameters and gradients are converted on the way in and out.

The bias corrections come from the host each step as two numbers (``lr_t``, ``eps_t``), so that
``w -= lr_t m / (sqrt(v) + eps_t)`` is Adam's ``w -= lr m^ / (sqrt(v^) + eps)`` exactly.
"""

from __future__ import annotations

import math

import numpy as np

import poplar_py as poplar
from poplar_py import program as prog
from poplibs_py import gcl, popops, poputil
from poplibs_py.popops import expr as pe

BETA1, BETA2, EPS = 0.9, 0.999, 1e-8


def corrections(lr: float, step: int) -> np.ndarray:
    """(lr_t, eps_t) for Adam's step ``step`` (1 first)."""
    root = math.sqrt(1 - BETA2**step)
    return np.asarray([lr * root / (1 - BETA1**step), EPS * root], np.float32)


class ShardedAdam:
    """The update of one stage's flat parameters from its flat gradients, in ``seq``."""

    def __init__(
        self,
        graph: poplar.Graph,
        params: poplar.Tensor,
        grads: poplar.Tensor,
        hyper: poplar.Tensor,
        group: gcl.CommGroup,
        name: str,
        seq: prog.Sequence,
    ) -> None:
        g = gcl.reduceScatterCrossReplica(
            graph, grads, gcl.CollectiveOperator.MEAN, seq, group, f"{name}/grads/reduceScatter"
        )
        if g.elementType() != poplar.FLOAT:
            g = popops.cast(graph, g, poplar.FLOAT, seq, f"{name}/grads/float")
        self.shard = g.numElements()
        self.buffer = graph.addRemoteBuffer(f"{name}/adam", poplar.FLOAT, self.shard, repeats=3)
        rows = graph.addConstant(poplar.UNSIGNED_INT, [3], [0, 1, 2], f"{name}/adam/rows")
        poputil.mapTensorLinearly(graph, rows)
        held = graph.addVariable(poplar.FLOAT, [3, self.shard], f"{name}/adam/held")  # w, m, v
        for row in range(3):
            poputil.mapTensorLinearly(graph, held[row])
        seq.add(prog.Copy(self.buffer, held, rows))
        w, m, v = held[0], held[1], held[2]
        lr, eps = (hyper[k : k + 1].broadcast(self.shard, 0) for k in range(2))
        _1, _2, _3, _4 = (pe.PlaceHolder(k) for k in range(1, 5))
        popops.mapInPlace(
            graph,
            pe.Add(pe.Mul(pe.Const(BETA1), _1), pe.Mul(pe.Const(1 - BETA1), _2)),
            [m, g],
            seq,
            f"{name}/adam/m",
        )
        popops.mapInPlace(
            graph,
            pe.Add(pe.Mul(pe.Const(BETA2), _1), pe.Mul(pe.Const(1 - BETA2), pe.Square(_2))),
            [v, g],
            seq,
            f"{name}/adam/v",
        )
        popops.mapInPlace(
            graph,
            pe.Sub(_1, pe.Divide(pe.Mul(_2, _3), pe.Add(pe.Sqrt(_4), pe.PlaceHolder(5)))),
            [w, lr, m, v, eps],
            seq,
            f"{name}/adam/w",
        )
        seq.add(prog.Copy(held, self.buffer, rows))
        if params.elementType() != poplar.FLOAT:
            w = popops.cast(graph, w, params.elementType(), seq, f"{name}/weights/{params.elementType()}")
        new = gcl.allGatherCrossReplica(graph, w, seq, group, f"{name}/weights/allGather")
        seq.add(prog.Copy(new.flatten().slice(0, params.numElements()), params))
        popops.zero(graph, grads, seq, f"{name}/grads/zero")
