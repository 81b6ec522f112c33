"""GCL's all-to-all across replicas (``allToAllCrossReplica``): each replica of a group sends slice
i of its data to the group's i-th replica.

Every replica runs the same program, but which slice goes where depends on its place in its group.
So, as for the ring collectives (:mod:`.ring`), each replica copies its slices into the rows of a
send buffer and rotates it by its index p in the group (row s is then slice ``p + s``); at step s
(1 to k - 1) one ``CrossReplicaCopy`` sends row s of every replica to the replica s places further
round its group, which lands it in row ``-s`` of a receive buffer. Row j of the receive buffer
then holds the slice from the replica j places further round, so rotating it back by p puts
every slice in its sender's row. Each replica sends ``(k - 1) / k`` of its data, over the links
between each pair of replicas the step pairs; the rotations are ``gcl::Rotate`` compute sets on
the tiles holding the buffers' columns.
"""

from __future__ import annotations

from typing import Any

from poplar_py import Graph, Tensor
from poplar_py import program as prog_

from ..poputil import PoplibsError
from .arguments import checked_call, checked_group, group_at
from .groups import CommGroup
from .ring import Ring, balanced_chunks, column_buffer

__all__ = ["allToAllCrossReplica"]


def _hop(groups: tuple[tuple[int, ...], ...], step: int) -> dict[int, int]:
    """The replica map sending each group's i-th replica to its ``(i + step) mod k``-th."""
    return {g[i]: g[(i + step) % len(g)] for g in groups for i in range(len(g))}


@group_at(3)
def allToAllCrossReplica(graph: Graph, data: Tensor, prog: prog_.Sequence, group: CommGroup | None = None,
                         debugContext: Any = "", options: dict | None = None) -> Tensor:
    """A new tensor shaped and mapped like ``data`` (outermost dimension k, the size of the
    replica's group) whose slice j on the group's i-th replica is slice i of the j-th replica's
    ``data`` (groups' replicas in ascending order). On the tiles and links: a copy into a send
    buffer, a rotation by the replica's index in its group, k - 1 cross-replica copies of one slice
    each, a rotation back and a copy out."""
    name, data = checked_call("allToAllCrossReplica", graph, data, prog, debugContext, options)
    groups = checked_group(group, graph, "allToAllCrossReplica")
    size = len(groups[0])
    if data.rank() == 0 or data.dim(0) != size:
        where = "the graph has" if len(groups) == 1 else f"each group of {group!r} has"
        raise PoplibsError(f"allToAllCrossReplica: data '{data.name}' of shape {data.shape()} needs an "
                           f"outermost dimension of {size}, one slice per replica ({where} {size})")
    out = graph.clone(data, f"{name}/out")
    if data.numElements() == 0:
        return out
    if size == 1:
        prog.add(prog_.Copy(data, out))
        return out
    columns = data.numElements() // size
    slices = [data.reshape([size, columns])[i] for i in range(size)]
    like = slices[0] if balanced_chunks(graph, slices) else None
    ring = Ring(groups, tuple(range(size)))  # positions: the index in the group
    send = column_buffer(graph, data.elementType(), size, columns, f"{name}/send", like)
    prog.add(prog_.Copy(data.reshape([size, columns]), send))
    ring.rotate(graph, send, prog, f"{name}/rotate")
    received = graph.clone(send, f"{name}/received")
    # every row is written before it is read: say so, or the buffer stays live for the whole program
    prog.add(prog_.WriteUndef(received))
    prog.add(prog_.Copy(send[0], received[0]))  # the replica's own slice stays
    for step in range(1, size):
        prog.add(prog_.CrossReplicaCopy(send[step], received[-step % size], _hop(groups, step)))
    ring.rotate(graph, received, prog, f"{name}/unrotate", inverse=True)
    prog.add(prog_.Copy(received, out.reshape([size, columns])))
    return out
