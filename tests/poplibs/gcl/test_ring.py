"""The ring's rotation: what a tile's gcl::Rotate MultiVertex costs."""

import numpy as np

from poplibs_py.gcl.ring import rotate_cycles


def test_a_rotation_costs_the_workers_times_its_busiest_worker():
    # 14 floats cut over 6 workers: pieces of 2, 2, 3, 2, 2, 3; a piece of 3 costs
    # 20 + 5 x 4 rows + 4 rows x 12 bytes / 8
    assert rotate_cycles(4, np.array([14]), 4, np.array([0]), 6).tolist() == [6 * 46]


def test_runs_of_one_tile_go_to_the_workers_in_turn():
    # two runs of 7 on vertex 0: worker 5 takes a piece of 2 from each; vertex 1's run of 3
    # gives three workers one element each
    cycles = rotate_cycles(4, np.array([7, 7, 3]), 4, np.array([0, 0, 1]), 6)
    assert cycles.tolist() == [6 * 2 * (40 + 4), 6 * (40 + 2)]
