"""GCL's replica groups (``gcl::CommGroup``): which replicas a cross-replica collective combines.

A graph's R replicas are cut into groups of k replicas (k = R when the size is 0):

- ``ALL``: one group of every replica (the size is ignored);
- ``CONSECUTIVE`` with stride s: blocks of ``k s`` consecutive replicas, each holding s
  interleaved groups (block b, lane j: ``b k s + j + s i`` for i < k); with s = 1 the groups
  ``{0..k-1}, {k..2k-1}, ...``;
- ``ORTHOGONAL``: ``m = R / k`` groups, group i = ``{i, i + m, ..., i + (k - 1) m}``, one replica
  of each block of m consecutive replicas (GCL's groups "sliced orthogonal to the replica
  ordering": with k the number of IPU-Link domains, a group holds one replica of each domain
  and talks over the GW-links only).

Every type is a CONSECUTIVE one: ALL is ``(R, 1)`` and ORTHOGONAL ``(k, R / k)``, so a replica's
index in its group is ``(r mod k s) / s``. The group checks the kinds of its values when built;
whether they fit a replication factor is checked when a collective uses it on a graph.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

import numpy as np

from poplar_py.checks.arguments import is_int
from poplar_py.errors import GraphReplicationError

from ..popops import expr as pe
from ..poputil import PoplibsArgumentError

__all__ = ["CommGroup", "CommGroupType"]


class CommGroupType(enum.Enum):
    """How a CommGroup cuts the replicas into groups, as ``gcl::CommGroupType``."""

    ALL = "ALL"
    CONSECUTIVE = "CONSECUTIVE"
    ORTHOGONAL = "ORTHOGONAL"


def _count(value: object, what: str) -> int:
    if not is_int(value):
        raise PoplibsArgumentError(f"CommGroup: {what} must be an integer, got {type(value).__name__} "
                                   f"{value!r:.40}")
    if value < 0:  # type: ignore[operator]
        raise PoplibsArgumentError(f"CommGroup: {what} must be at least 0, got {value}")
    return int(value)  # type: ignore[call-overload]


@dataclass(frozen=True, init=False)
class CommGroup:
    """``CommGroup(type, replicaGroupSize=0, replicaGroupStride=1)``, GCL's ``CommGroup(groupType,
    groupSize, replicaStride)``: size 0 means every replica, stride 0 means 1. ``groups(R)``
    gives the groups of R replicas."""

    # GCL's defaults, also readable on the class
    type: CommGroupType = CommGroupType.ALL
    replicaGroupSize: int = 0
    replicaGroupStride: int = 1

    def __init__(self, type: CommGroupType = CommGroupType.ALL, replicaGroupSize: int = 0,  # noqa: A002 (GCL's name)
                 replicaGroupStride: int = 1) -> None:
        if not isinstance(type, CommGroupType):
            raise PoplibsArgumentError(f"CommGroup: type must be a gcl.CommGroupType, got "
                                       f"{type.__class__.__name__} {type!r:.40}")
        size = _count(replicaGroupSize, "replicaGroupSize")
        stride = _count(replicaGroupStride, "replicaGroupStride") or 1
        if type is CommGroupType.ORTHOGONAL and stride != 1:
            raise PoplibsArgumentError(f"CommGroup: replicaGroupStride {stride} is not supported by "
                                       "ORTHOGONAL groups (1, or 0 for the default)")
        object.__setattr__(self, "type", type)
        object.__setattr__(self, "replicaGroupSize", size)
        object.__setattr__(self, "replicaGroupStride", stride)

    def __repr__(self) -> str:
        stride = f", {self.replicaGroupStride}" if self.replicaGroupStride != 1 else ""
        return f"CommGroup({self.type.name}, {self.replicaGroupSize}{stride})"

    def size(self, replicationFactor: int | None = None) -> int:
        """The replicas in each group: ``replicaGroupSize`` (0: every replica), or, given a
        replication factor, the size of the groups it makes of that many replicas."""
        if replicationFactor is None:
            return self.replicaGroupSize
        return len(self.groups(replicationFactor)[0])

    def layout(self, replicationFactor: int) -> tuple[int, int]:
        """(k, s): the groups of ``replicationFactor`` replicas as CONSECUTIVE groups of k replicas
        with stride s; GraphReplicationError naming the numbers that do not fit."""
        replicas = replicationFactor
        if self.type is CommGroupType.ALL:
            return replicas, 1
        size = self.replicaGroupSize or replicas
        if replicas % size:
            raise GraphReplicationError(f"replicaGroupSize {size} does not divide the replication factor "
                                        f"{replicas}")
        if self.type is CommGroupType.ORTHOGONAL:
            return size, replicas // size
        stride = self.replicaGroupStride
        if replicas % (size * stride):
            raise GraphReplicationError(f"replicaGroupStride {stride} does not fit: replicaGroupSize {size} "
                                        f"x replicaGroupStride {stride} = {size * stride} does not divide "
                                        f"the replication factor {replicas}")
        return size, stride

    def groups(self, replicationFactor: int) -> tuple[tuple[int, ...], ...]:
        """The groups of ``replicationFactor`` replicas, each its replica indices in ascending order
        (GraphReplicationError if the size or the stride does not fit)."""
        if not is_int(replicationFactor) or replicationFactor < 1:
            raise PoplibsArgumentError(f"CommGroup.groups: replicationFactor must be an integer of at least "
                                       f"1, got {type(replicationFactor).__name__} "
                                       f"{replicationFactor!r:.40}")
        size, stride = self.layout(int(replicationFactor))
        blocks = np.arange(replicationFactor).reshape(-1, size, stride)  # [block, i, lane j]
        return tuple(map(tuple, blocks.transpose(0, 2, 1).reshape(-1, size).tolist()))


def index_in_group(group: CommGroup, replicationFactor: int) -> pe.Expr:
    """Replica r's index in its group, r the replication index in placeholder 1 (r itself for one
    group of every replica)."""
    size, stride = group.layout(replicationFactor)
    index: pe.Expr = pe.PlaceHolder(1)
    if size * stride < replicationFactor:
        index = pe.Rem(index, pe.Const(size * stride))
    if stride > 1:
        index = pe.Divide(index, pe.Const(stride))
    return index
