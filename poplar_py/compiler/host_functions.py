"""The step of a host function call (``program.Call(hostFunction, inputs, outputs)``).

Each replica's input tensors are gathered into host arrays, the function connected for that
replica is called with them and with zeroed output arrays it fills, and the outputs are scattered
into the replica's output tensors. Under MPI a replica's function is called on the ranks running
that replica (each with all of its inputs), each writing the outputs into the tiles it holds.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import StreamError
from .exchange import CopyPlan
from .steps import HostStep, Machine
from .world import GATHER, SCATTER, Move


@dataclass
class HostFunctionStep(HostStep):
    """A host function call on every replica."""

    handle: str
    inputs: list[tuple[CopyPlan, np.dtype, int]]  # a replica's tensor -> host array, its dtype and size
    outputs: list[tuple[CopyPlan, np.dtype, int]]  # host array -> a replica's tensor

    def run(self, m: Machine) -> None:
        ins: dict[int, list[np.ndarray]] = {}
        m.on_replicas(lambda r: ins.__setitem__(r, self._inputs(m, r)), every=True)  # (every rank takes part)
        m.on_replicas(lambda r: self._call(m, r, ins[r]))
        m.record.ran(self.id)

    def _inputs(self, m: Machine, replica: int) -> list[np.ndarray]:
        ins = []
        for plan, dtype, n in self.inputs:
            values = np.empty(n, dtype)
            m.world.gather(plan, m.base, values, replica)
            values.flags.writeable = False
            ins.append(values)
        return ins

    def _call(self, m: Machine, replica: int, ins: list[np.ndarray]) -> None:
        ends = m.host_functions.get(self.handle)
        function = ends[replica] if ends is not None else None
        if function is None:
            which = f" for replica {replica}" if m.world.replica_count > 1 else ""
            raise StreamError(f"host function '{self.handle}' is not connected{which}: call "
                              "engine.connectHostFunction first")
        outs = [np.zeros(n, dtype) for _, dtype, n in self.outputs]
        function(ins, outs)
        for (plan, dtype, n), values in zip(self.outputs, outs):
            if values.dtype != dtype or values.shape != (n,):  # the function replaced an array
                raise StreamError(f"host function '{self.handle}': output arrays are filled in place "
                                  f"({n} {dtype}), got {values.dtype} of shape {values.shape}")
            m.world.scatter(plan, values.ctypes.data, m.base, replica)

    def moves(self) -> list[Move]:
        return [*((GATHER, plan, True) for plan, _, _ in self.inputs),
                *((SCATTER, plan, True) for plan, _, _ in self.outputs)]
