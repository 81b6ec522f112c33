"""gcl's Rotate vertex alone on a tile, against numpy's roll (codelets/gcl/rotate.py): in every run
of ``numRows`` rows, row j becomes row ``(p + j) mod numRows``, p the ring position
``positions[replica]`` (-p with ``inverse``)."""

import numpy as np

import poplar_py as poplar
from poplibs_py.poputil import templateVertex

# (rows in a run, columns, runs, replica, positions, inverse): a shift of 1, the shift that is a
# whole turn (nothing moves), undoing a shift, a shift sharing a factor with the rows (two cycles),
# more columns per worker than it moves at a time (64; 400 columns over 6 workers), several runs
ROTATIONS = [(3, 5, 1, 1, [2, 1, 0], False), (3, 4, 1, 0, [3, 1, 2], False), (4, 6, 2, 2, [0, 3, 1, 2], True),
             (4, 3, 1, 1, [1, 2, 0, 3], False), (5, 400, 2, 0, [3, 0, 1, 2, 4], False)]


def test_rotate_rows_by_the_ring_position(vertices):
    h, rng = vertices("gcl"), np.random.default_rng(14)
    cases = h.cases
    for k, (count, columns, runs, replica, positions, inverse) in enumerate(ROTATIONS):
        t = poplar.HALF if k % 2 else poplar.FLOAT
        data = rng.integers(-50, 50, (runs, count, columns)).astype(t.dtype)
        v = h.vertex(templateVertex("gcl::Rotate", t), tile=k % 4, replica=np.array(replica, np.uint32),
                     rows=list(data.reshape(runs * count, columns)),
                     initial={"positions": np.array(positions, np.uint32), "numRows": count,
                              "inverse": inverse})
        shift = positions[replica] * (-1 if inverse else 1)
        want = np.roll(data, -shift, axis=1)  # row j <- row j + shift
        name = f"<{t}> {runs} runs of {count} rows x {columns}, shift {shift}"
        cases[name] = (v["rows"], list(want.reshape(-1, columns)))
    h.check()
