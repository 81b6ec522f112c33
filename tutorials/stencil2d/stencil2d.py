"""A worked 2-D example: a 5-point Jacobi stencil over an [H, W] grid, with halos.

The grid is cut into row blocks, one block a tile. Each tile also holds two halo rows, the last
row of the block above and the first row of the block below, which a ``Copy`` brings over at the
start of every iteration. A ``MultiVertex`` per tile then computes the block's new rows from its
rows and halos, its workers taking every ``numWorkers()``-th row, and an on-tile ``Copy`` makes
them the grid of the next iteration. The grid's edge (first and last row, first and last column)
is held fixed. ``Repeat`` runs the iterations on the device; the host writes the grid through one
handle and reads it back through another (a handle is either a host write or a host read), and
the result is checked against numpy.

    poplar-py run tutorials/stencil2d/stencil2d.py
    poplar-py run tutorials/stencil2d/stencil2d.py --height 96 --width 64 --blocks 12 --iterations 200

What each call shows:

- ``Input[VectorList[float]]``: a field connected to a *list* of tensors (here the rows
  ``[haloAbove, row0, ..., rowN-1, haloBelow]``), read as ``self.rows[i][j]``; ``len(self.rows)``
  is the number of rows and ``len(self.rows[i])`` the length of row ``i``.
- vertex state (``weight``, ``first``, ``last``): plain annotations, given their values with
  ``graph.setInitialValue(vertex["weight"], 0.25)``; the Engine build refuses state left unset.
- ``MultiVertex``: ``compute(self, workerId)`` runs once for each worker, ``workerId`` in
  ``range(self.numWorkers())`` (6 on an IPU).
- ``prog.Repeat(count, body)``: ``body`` is one program (here a ``Sequence``), run ``count`` times.
- ``engine.readTensor(handle)`` returns a new numpy array of the tensor's shape and type.
"""

from __future__ import annotations

import argparse
import itertools

import numpy as np

import poplar_py as poplar
from poplar_py import Input, MultiVertex, Output, VectorList
from poplar_py import program as prog


class JacobiRows(MultiVertex):
    """New values of a block of rows. ``rows`` holds the halo above, the block's rows and the halo
    below; ``out`` the block's new rows. Rows ``first`` to ``last - 1`` of ``out`` are updated, the
    others (the grid's first and last row) copied; so is each row's first and last column."""

    rows: Input[VectorList[float]]
    out: Output[VectorList[float]]
    weight: float
    first: int
    last: int

    def compute(self, workerId):
        for r in range(workerId, len(self.out), self.numWorkers()):
            width = len(self.out[r])
            if r < self.first or r >= self.last:
                for c in range(width):
                    self.out[r][c] = self.rows[r + 1][c]
            else:
                self.out[r][0] = self.rows[r + 1][0]
                self.out[r][width - 1] = self.rows[r + 1][width - 1]
                for c in range(1, width - 1):
                    self.out[r][c] = self.weight * (self.rows[r][c] + self.rows[r + 2][c]
                                                    + self.rows[r + 1][c - 1] + self.rows[r + 1][c + 1])
        return True


def build(device: poplar.Device, height: int, width: int, blocks: int, iterations: int
          ) -> tuple[poplar.Graph, prog.Program]:
    """The graph and program of ``iterations`` Jacobi steps of a [height, width] grid in ``blocks``
    row blocks (tiles 0 to blocks - 1). Host handles: ``grid-in`` writes the grid, ``grid-out``
    reads it."""
    if not 1 <= blocks <= height:
        raise SystemExit(f"--blocks must lie in 1..{height} (the rows), got {blocks}")
    graph = poplar.Graph(device.getTarget())
    graph.addCodelets(JacobiRows)
    grid = graph.addVariable(poplar.FLOAT, [height, width], "grid")
    new = graph.addVariable(poplar.FLOAT, [height, width], "new")
    above = graph.addVariable(poplar.FLOAT, [blocks, width], "haloAbove")
    below = graph.addVariable(poplar.FLOAT, [blocks, width], "haloBelow")
    # The first block has nothing above it and the last nothing below: their halos are never
    # written, so give them a value rather than leave them undefined.
    graph.setInitialValue(above, np.zeros((blocks, width), np.float32))
    graph.setInitialValue(below, np.zeros((blocks, width), np.float32))

    bounds = np.linspace(0, height, blocks + 1).astype(int).tolist()
    exchange = prog.Sequence()
    step = graph.addComputeSet("jacobi")
    for b, (r0, r1) in enumerate(itertools.pairwise(bounds)):
        for t in (grid.slice(r0, r1), new.slice(r0, r1), above[b], below[b]):
            graph.setTileMapping(t, b)
        if b > 0:
            exchange.add(prog.Copy(grid[r0 - 1], above[b]))      # the halos: tile b-1 to tile b ...
        if b < blocks - 1:
            exchange.add(prog.Copy(grid[r1], below[b]))          # ... and tile b+1 to tile b
        v = graph.addVertex(step, "JacobiRows", {
            "rows": [above[b]] + [grid[r] for r in range(r0, r1)] + [below[b]],
            "out": [new[r] for r in range(r0, r1)]})
        graph.setInitialValue(v["weight"], 0.25)
        graph.setInitialValue(v["first"], 1 if r0 == 0 else 0)                 # the grid's first row
        graph.setInitialValue(v["last"], r1 - r0 - (1 if r1 == height else 0))  # and last row stay
        graph.setTileMapping(v, b)

    graph.createHostWrite("grid-in", grid)
    graph.createHostRead("grid-out", grid)
    body = prog.Sequence([exchange, prog.Execute(step), prog.Copy(new, grid)])
    return graph, prog.Repeat(iterations, body)


def reference(grid: np.ndarray, iterations: int) -> np.ndarray:
    """The same iterations in numpy."""
    u = grid.astype(np.float32).copy()
    for _ in range(iterations):
        u[1:-1, 1:-1] = np.float32(0.25) * (u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:])
    return u


def run(device: poplar.Device, grid: np.ndarray, blocks: int, iterations: int) -> np.ndarray:
    """Run the stencil on ``device`` from ``grid`` and return the grid it ends with."""
    graph, program = build(device, *grid.shape, blocks, iterations)
    engine = poplar.Engine(graph, program)
    engine.load(device)
    engine.writeTensor("grid-in", grid.astype(np.float32))
    engine.run(0)
    return engine.readTensor("grid-out")


def initial_grid(height: int, width: int) -> np.ndarray:
    """A hot top edge, a cold bottom edge, a warm spot in the middle."""
    grid = np.zeros((height, width), np.float32)
    grid[0, :] = 100.0
    grid[height // 3: height // 2, width // 3: width // 2] = 50.0
    return grid


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--height", type=int, default=48)
    parser.add_argument("--width", type=int, default=32)
    parser.add_argument("--blocks", type=int, default=8, help="row blocks, one a tile")
    parser.add_argument("--iterations", type=int, default=100)
    args = parser.parse_args(argv)
    device = poplar.IPUModel().createDevice()
    grid = initial_grid(args.height, args.width)
    result = run(device, grid, args.blocks, args.iterations)
    expected = reference(grid, args.iterations)
    error = float(np.max(np.abs(result - expected)))
    print(f"{args.height}x{args.width} grid, {args.blocks} blocks, {args.iterations} iterations: "
          f"centre {result[args.height // 2, args.width // 2]:.4f}, "
          f"largest difference from numpy {error:.2e}")
    if not np.allclose(result, expected, rtol=1e-5, atol=1e-4):
        raise SystemExit("the stencil does not match numpy")
    print("matches numpy")


if __name__ == "__main__":
    main()
