"""Running lowered programs: one runner per kind of step, in one table (:data:`RUNNERS`).

The compiler emits steps as data (:mod:`poplar_py.compiler.steps`); here each kind of step runs
on a :class:`~poplar_py.runtime.machine.Machine`. In a replicated graph a leaf step runs its one
replica's plan on every replica's memories in turn, and raises the first error of any replica (on
every MPI rank) once all have run. Consecutive leaves that touch only their own replica's memories
(compute sets, copies within a replica, syncs) run as one
:class:`~poplar_py.compiler.steps.ReplicaSegment`: each replica through all of them before the
next, so that one replica's data stays in the host's caches; no such step reads another replica's
memories, so the order gives the same memories. What codelets print is written in program order
all the same: compute set by compute set, each replica's (this process's) in turn, each in vertex
order (:mod:`poplar_py.codelet.prints`).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import numpy as np

from ..compiler.fp_control import FpControlStep
from ..compiler.steps import (
    AbortStep,
    CallStep,
    CopyStep,
    CycleStampStep,
    ExecuteStep,
    HostFunctionStep,
    IfStep,
    PrintStep,
    RemoteCopyStep,
    RepeatStep,
    ReplicaSegment,
    ScalarRef,
    SequenceStep,
    Step,
    StreamCopyStep,
    SwitchStep,
    SyncStep,
    WhileStep,
)
from ..errors import ApplicationRuntimeError, RemoteBufferError, StreamError
from ..streams import HostStream
from .compute_sets import run_compute_set
from .machine import Machine
from .printing import format_tensor


def run(step: Step | ReplicaSegment, m: Machine) -> None:
    """Run ``step`` (and what it holds) on ``m``."""
    RUNNERS[type(step)](step, m)


def read(ref: ScalarRef, m: Machine) -> int | float:
    """The element a predicate or Switch control reads: every rank gets the value of the rank
    holding it, and the other IPUs of each replica wait for the one holding it there."""
    m.record.read_predicate(ref.ipu)
    return m.world.read_scalar(m.arena, ref.address, ref.dtype)


def _copy(step: CopyStep, m: Machine) -> None:
    if step.replicated:
        for replica in m.world.replicas:
            _copy_on(step, m, replica)
    else:
        m.world.cross_copy(step.plan, m.base, step.pairs)
    m.record.ran(step.id)


def _copy_on(step: CopyStep, m: Machine, replica: int) -> None:
    m.world.copy(step.plan, m.base, replica)


def _host_end(step: StreamCopyStep, m: Machine, replica: int) -> HostStream:
    ends = m.streams.get(step.handle)
    stream = ends[replica] if ends is not None else None
    if stream is None:
        which = f" for replica {replica}" if m.world.replica_count > 1 and not step.broadcast else ""
        raise StreamError(f"stream '{step.handle}' is not connected{which}: call engine.connectStream "
                          "first")
    return stream


def _fetch(step: StreamCopyStep, m: Machine, replica: int | None) -> np.ndarray:
    """The host end's data for one replica's transfer (None: a broadcast's, for every replica)."""
    stream = _host_end(step, m, 0 if replica is None else replica)
    data, fetched = m.world.share(lambda: stream.to_device(step.n, step.dtype), step.plan, replica,
                                  step.n, step.dtype)
    if fetched:
        stream.transferred()
    return data


def _receive(step: StreamCopyStep, m: Machine, replica: int) -> None:
    stream = _host_end(step, m, replica)
    data = np.empty(step.n, dtype=step.dtype)
    m.world.gather(step.plan, m.base, data, replica)
    stream.from_device(data)


def _stream_copy(step: StreamCopyStep, m: Machine) -> None:
    if step.broadcast:
        data = _fetch(step, m, None)
        m.on_replicas(lambda r: m.world.scatter(step.plan, data.ctypes.data, m.base, r))
    elif step.to_device:
        def one(replica: int) -> None:
            data = _fetch(step, m, replica)  # held: the copy reads it by address
            m.world.scatter(step.plan, data.ctypes.data, m.base, replica)

        m.on_replicas(one)
    else:
        m.on_replicas(lambda r: _receive(step, m, r), every=True)
    m.record.ran(step.id)


def _print(step: PrintStep, m: Machine) -> None:
    values = np.empty(step.shape, dtype=step.type.dtype)
    m.world.gather(step.plan, m.base, values, 0)
    error = None
    if m.world.rank == 0:  # printed once
        out = m.out or sys.stdout
        try:
            out.write(format_tensor(step.title, values) + "\n")
            out.flush()
        except Exception as exc:  # the user's stream failed: raised on every rank
            error = exc
    m.world.agree(error)
    m.record.ran(step.id)


def _remote_copy(step: RemoteCopyStep, m: Machine) -> None:
    chosen: dict[int, list[int]] = {}
    m.on_replicas(lambda r: chosen.__setitem__(r, _remote_offsets(step, m, r)))
    m.on_replicas(lambda r: _remote_move(step, m, r, chosen[r]))
    m.record.ran(step.id)


def _remote_offsets(step: RemoteCopyStep, m: Machine, replica: int) -> list[int]:
    if step.offsets is None:
        return [0]
    values = np.empty(len(step.rows), np.uint32)
    m.world.gather_local(step.offsets, m.base, values, replica)
    bad = np.flatnonzero(values >= step.repeats)
    if bad.size:
        raise RemoteBufferError(
            f"remote buffer '{step.handle}': offset {int(values[bad[0]])} (element {int(bad[0])} of the "
            f"offsets) on replica {replica} is out of range: the buffer has {step.repeats} row(s), "
            f"0..{step.repeats - 1}; nothing was copied")
    return values.tolist()


def _remote_move(step: RemoteCopyStep, m: Machine, replica: int, offsets: list[int]) -> None:
    for plan, row in zip(step.rows, offsets):
        if step.to_device:
            m.world.scatter(plan, m.remote.address(step.handle, replica, row), m.base, replica)
        else:
            m.world.gather_local(plan, m.base, m.remote.write(step.handle, replica, row), replica)


def _execute(step: ExecuteStep, m: Machine) -> None:
    m.on_replicas(lambda r: _execute_on(step, m, r))
    m.record.ran(step.id)


def _execute_on(step: ExecuteStep, m: Machine, replica: int) -> None:
    run_compute_set(step.compute_set, m, step.id, replica)


def _sync(step: SyncStep, m: Machine) -> None:
    m.record.ran(step.id)


def _sync_on(step: SyncStep, m: Machine, replica: int) -> None:
    """A sync moves nothing: only its count (kept by the segment) is recorded."""


def _cycle_stamp(step: CycleStampStep, m: Machine) -> None:
    now = m.clock()

    def one(replica: int) -> None:
        count = now
        if step.since is not None:
            start = np.empty(2, np.uint32)
            m.world.gather(step.since, m.base, start, replica)
            count -= int(start[0]) | int(start[1]) << 32
        words = np.asarray([count & 0xFFFFFFFF, count >> 32 & 0xFFFFFFFF], np.uint32)
        m.world.scatter(step.write, words.ctypes.data, m.base, replica)

    m.on_replicas(one, every=True)  # every rank takes part in every replica's gather
    m.record.ran(step.id)


def _host_function(step: HostFunctionStep, m: Machine) -> None:
    """Each replica's inputs gathered into host arrays (every rank takes part), then the function
    connected for the replica called with them and zeroed outputs it fills, scattered back."""
    ins: dict[int, list[np.ndarray]] = {}
    m.on_replicas(lambda r: ins.__setitem__(r, _host_inputs(step, m, r)), every=True)
    m.on_replicas(lambda r: _host_call(step, m, r, ins[r]))
    m.record.ran(step.id)


def _host_inputs(step: HostFunctionStep, m: Machine, replica: int) -> list[np.ndarray]:
    ins = []
    for plan, dtype, n in step.inputs:
        values = np.empty(n, dtype)
        m.world.gather(plan, m.base, values, replica)
        values.flags.writeable = False
        ins.append(values)
    return ins


def _host_call(step: HostFunctionStep, m: Machine, replica: int, ins: list[np.ndarray]) -> None:
    ends = m.host_functions.get(step.handle)
    function = ends[replica] if ends is not None else None
    if function is None:
        which = f" for replica {replica}" if m.world.replica_count > 1 else ""
        raise StreamError(f"host function '{step.handle}' is not connected{which}: call "
                          "engine.connectHostFunction first")
    outs = [np.zeros(n, dtype) for _, dtype, n in step.outputs]
    function(ins, outs)
    for (plan, dtype, n), values in zip(step.outputs, outs):
        if values.dtype != dtype or values.shape != (n,):  # the function replaced an array
            raise StreamError(f"host function '{step.handle}': output arrays are filled in place "
                              f"({n} {dtype}), got {values.dtype} of shape {values.shape}")
        m.world.scatter(plan, values.ctypes.data, m.base, replica)


def _fp_control(step: FpControlStep, m: Machine) -> None:
    fp = m.fp
    assert fp is not None
    if fp.rng is None:
        fp.rng = step.rng

    def one(replica: int) -> None:
        words = fp.words[replica]
        if step.save is not None:
            old = np.ascontiguousarray(words[step.tiles])
            m.world.scatter(step.save, old.ctypes.data, m.base, replica)
        if step.source is not None:
            new = np.empty(step.tiles.size, np.uint32)
            m.world.gather(step.source, m.base, new, replica)
            words[step.tiles] = new
        else:
            keep = np.uint32(~step.clear & 0xFFFFFFFF)
            words[step.tiles] = (words[step.tiles] & keep) | np.uint32(step.set)

    m.on_replicas(one, every=True)  # every rank keeps every replica's words
    m.record.ran(step.id)


def _segment(segment: ReplicaSegment, m: Machine) -> None:
    if not m.world.runs_alone():
        for s in segment.steps:
            run(s, m)
        return
    failure: tuple[int, int, Exception] | None = None
    m.held = []
    try:
        for replica in m.world.replicas:
            for i, s in enumerate(segment.steps):
                if failure is not None and i > failure[0]:
                    break
                m.held_at = (i, replica)
                try:
                    RUNNERS_ON_REPLICA[type(s)](s, m, replica)
                except Exception as exc:  # raised once every replica has run (on every rank)
                    if failure is None or i < failure[0]:
                        failure = (i, replica, exc)
                    break
                except BaseException as exc:  # Ctrl-C: the job ends
                    m.world.abort(exc)
    finally:
        held, m.held = m.held, None
        for *_, text in sorted(held):  # program order: step by step, each step replica by replica
            m.codelet_output(text)
    done = len(segment.steps) if failure is None else failure[0]
    for s in segment.steps[:done]:
        m.record.ran(s.id)
    m.world.agree(None if failure is None else failure[2], () if failure is None else failure[:2])


def _sequence(step: SequenceStep, m: Machine) -> None:
    for s in step.runs:
        run(s, m)


def _repeat(step: RepeatStep, m: Machine) -> None:
    body = step.body
    for _ in range(step.count):
        run(body, m)


def _while(step: WhileStep, m: Machine) -> None:
    while True:
        run(step.cond, m)
        if bool(read(step.predicate, m)) != step.loop_while:
            return
        run(step.body, m)


def _if(step: IfStep, m: Machine) -> None:
    run(step.then if read(step.predicate, m) else step.orelse, m)


def _switch(step: SwitchStep, m: Machine) -> None:
    run(step.cases.get(int(read(step.control, m)), step.default), m)


def _abort(step: AbortStep, m: Machine) -> None:
    if step.predicate is None or read(step.predicate, m):
        why = "" if step.predicate is None else f" (predicate '{step.predicate.name}' is true)"
        raise ApplicationRuntimeError(f"{step.label}: the program aborted{why}"
                                      + (f": {step.message}" if step.message else ""))


def _call(step: CallStep, m: Machine) -> None:
    run(m.functions[step.function], m)


#: how each kind of step runs on a machine
RUNNERS: dict[type, Callable[[Any, Machine], None]] = {
    CopyStep: _copy,
    StreamCopyStep: _stream_copy,
    PrintStep: _print,
    RemoteCopyStep: _remote_copy,
    ExecuteStep: _execute,
    SyncStep: _sync,
    CycleStampStep: _cycle_stamp,
    HostFunctionStep: _host_function,
    FpControlStep: _fp_control,
    ReplicaSegment: _segment,
    SequenceStep: _sequence,
    RepeatStep: _repeat,
    WhileStep: _while,
    IfStep: _if,
    SwitchStep: _switch,
    AbortStep: _abort,
    CallStep: _call,
}

#: how each kind of replica-local leaf (:meth:`~poplar_py.compiler.steps.Step.replica_leaves`)
#: runs on one replica's memories alone
RUNNERS_ON_REPLICA: dict[type, Callable[[Any, Machine, int], None]] = {
    CopyStep: _copy_on,
    ExecuteStep: _execute_on,
    SyncStep: _sync_on,
}
