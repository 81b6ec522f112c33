"""One simulation over K MPI ranks: the same output, cycles and profile
for every K, agreement on errors, and each rank holding its share of the memory.

Each test launches ``mpiexec -n K`` (from the MPICH wheel the test extra installs); a hang
fails the test through the timeout instead of blocking the run.
"""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent
PROGRAMS = Path(__file__).resolve().parent / "mpi_programs.py"
TIMEOUT = 300


def _env() -> dict:
    return dict(os.environ, POPLAR_PY_THREADS="1", OPENBLAS_NUM_THREADS="1")


def launch(ranks: int, *command: str) -> str:
    """stdout of ``mpiexec -n ranks command``; fails on a non-zero exit."""
    done = subprocess.run(["mpiexec", "-n", str(ranks), *command], capture_output=True, text=True,
                          timeout=TIMEOUT, env=_env(), cwd=ROOT)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def reports(ranks: int, mode: str, tmp_path: Path, *args: str) -> list[str]:
    """What each rank of ``mpi_programs.py mode [args]`` reported."""
    out = tmp_path / f"{mode}-{ranks}-{'-'.join(args)}"
    launch(ranks, sys.executable, str(PROGRAMS), mode, str(out), *args)
    return [Path(f"{out}.{r}").read_text() for r in range(ranks)]


TUTORIALS = {
    "tut1": ["tutorials/tut1_variables/tut1.py"],
    "tut7": ["tutorials/tut7_matrix_vector_opt/tut7.py", "2000", "500"],
    "tut7 C++": ["tutorials/tut7_matrix_vector_opt/tut7.py", "2000", "500", "--cpp"],
    "tut5 replicated": ["tutorials/tut5_ml/regression_demo.py", "1", "100", "--replicas", "4"],
}


@pytest.mark.parametrize("name", list(TUTORIALS))
def test_tutorials_print_the_same_and_profile_the_same_for_any_rank_count(name, tmp_path):
    outputs, profiles = [], []
    for ranks in (1, 2, 4):
        report = tmp_path / f"profile-{ranks}.json"
        outputs.append(launch(ranks, "poplar-py", "run", *TUTORIALS[name], "--profile", str(report)))
        profiles.append(subprocess.run(["poplar-py", "profile", str(report), "--steps"], capture_output=True,
                                       text=True, check=True, timeout=TIMEOUT).stdout)
    assert outputs[0] and outputs[1] == outputs[0] and outputs[2] == outputs[0]
    assert "Execution" in profiles[0] and profiles[1] == profiles[0] and profiles[2] == profiles[0]


def test_copies_predicates_and_streams_cross_ranks(tmp_path):
    one = reports(1, "control", tmp_path)[0]
    assert "callback calls 1" in one
    for ranks in (2, 3):
        every = reports(ranks, "control", tmp_path)
        # the callback runs once, on the rank holding the stream's destination (tile 0: rank 0)
        assert every[0] == one
        for text in every[1:]:
            assert text == one.replace("callback calls 1", "callback calls 0")


def test_print_tensor_prints_once(tmp_path):
    out = launch(3, sys.executable, str(PROGRAMS), "control", str(tmp_path / "print"))
    assert out.count("rotated: [") == 1


def test_a_failing_vertex_on_one_rank_raises_the_same_error_on_every_rank(tmp_path):
    alone = reports(1, "vertex_error", tmp_path)[0]
    assert alone.startswith("VertexError vertex 7 (Check") and "on tile 7" in alone
    assert reports(2, "vertex_error", tmp_path) == [alone, alone]


@pytest.mark.parametrize("mode", ["different_graphs", "different_programs"])
def test_ranks_that_build_different_graphs_or_programs_all_raise(mode, tmp_path):
    every = reports(2, mode, tmp_path)
    assert every[0] == every[1]
    assert "MPI ranks [1] built a different graph or programs than rank 0" in every[0]


def test_a_failing_stream_callback_raises_on_every_rank(tmp_path):
    assert reports(2, "callback_error", tmp_path) == ["ValueError no more data\n"] * 2


def test_an_exception_on_one_rank_ends_every_rank():
    done = subprocess.run(["mpiexec", "-n", "2", sys.executable, str(PROGRAMS), "one_rank_raises", "-"],
                          capture_output=True, text=True, timeout=TIMEOUT, env=_env())
    assert done.returncode != 0
    assert "rank 1 gives up" in done.stderr


@pytest.mark.parametrize("ranks,failing", [(2, 0), (2, 1), (4, 0), (4, 3)])
def test_an_exception_before_the_first_engine_ends_every_rank(ranks, failing, tmp_path):
    out = tmp_path / "early"
    done = subprocess.run(["mpiexec", "-n", str(ranks), sys.executable, str(PROGRAMS), "raises_before_engine",
                           str(out), str(failing)], capture_output=True, text=True, timeout=60, env=_env())
    assert done.returncode != 0
    assert "InvalidTileMappingError: tensor 'x': tile 9 is out of range" in done.stderr
    # MPI_Abort from the failing rank (MPICH's own "rank N in comm 0" line can be lost)
    assert f"poplar-py: MPI rank {failing} ended the job: InvalidTileMappingError" in done.stderr
    assert not any(Path(f"{out}.{r}").exists() for r in range(ranks))  # no rank got past Engine()


def test_ctrl_c_stops_every_rank(tmp_path):
    out = tmp_path / "spin"
    job = subprocess.Popen(["mpiexec", "-n", "2", sys.executable, str(PROGRAMS), "spin", str(out)],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=_env())
    deadline = time.monotonic() + TIMEOUT
    while not all(Path(f"{out}.{r}").exists() for r in range(2)):
        assert job.poll() is None and time.monotonic() < deadline
        time.sleep(0.1)
    job.send_signal(signal.SIGINT)
    try:
        job.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        job.kill()
        raise
    assert job.returncode != 0


def test_each_rank_holds_its_share_of_the_memory(tmp_path):
    alone = int(reports(1, "memory", tmp_path)[0].split()[-1])
    shares = [int(text.split()[-1]) for text in reports(2, "memory", tmp_path)]
    assert alone > 900  # about 960 MB of tile memory
    assert max(shares) <= 0.65 * alone, (shares, alone)


@pytest.mark.parametrize("replicas,ipus,ranks", [(4, 1, 2), (6, 1, 2), (4, 1, 3), (2, 2, 3), (2, 2, 4)])
def test_ranks_own_whole_replicas_or_share_them_alike(replicas, ipus, ranks, tmp_path):
    """K dividing R: each rank runs R/K whole replicas and calls their host ends alone; any
    other split shares replicas between ranks. Values and cycles are those of one process."""
    args = [str(replicas), str(ipus)]
    one = reports(1, "replicas", tmp_path, *args)[0]
    every = reports(ranks, "replicas", tmp_path, *args)
    for text in every:
        assert text.splitlines()[:-1] == one.splitlines()[:-1]
    # each replica's host end ran twice (two runs), on one rank: the one holding the replica
    calls = np.asarray([[int(c) for c in text.splitlines()[-1].split()[1:]] for text in every])
    assert (np.sort(calls, axis=0) == [[0] * replicas] * (ranks - 1) + [[2] * replicas]).all(), calls


@pytest.mark.parametrize("replicas,ranks", [(1, 2), (2, 2), (4, 2), (2, 3)])
def test_remote_buffers_rows_are_the_same_for_any_rank_count(replicas, ranks, tmp_path):
    """Each replica's rows are held by the ranks running it (a replica split over ranks: by each of
    them); host reads reach every rank, and an offset out of range is raised on every rank."""
    one = reports(1, "remote_buffers", tmp_path, str(replicas))[0]
    assert f"offset 9 (element 1 of the offsets) on replica {replicas - 1} is out of range" in one
    assert reports(ranks, "remote_buffers", tmp_path, str(replicas)) == [one] * ranks


def test_a_host_end_left_unconnected_on_its_replicas_rank_is_named_on_every_rank(tmp_path):
    every = reports(2, "unconnected_elsewhere", tmp_path)
    assert every[0] == every[1]
    assert every[0].startswith("StreamError stream 'y' is not connected for replica 3")


@pytest.mark.parametrize("ranks", [2, 4])
@pytest.mark.parametrize("failing", ["first", "last"])
@pytest.mark.parametrize("kind", ["to_host", "complete", "prefetch"])
def test_host_code_failing_on_one_rank_raises_on_every_rank(kind, failing, ranks, tmp_path):
    every = reports(ranks, "host_code_fails", tmp_path, failing, kind)
    expected = {"to_host": "ValueError no room", "complete": "ValueError complete failed",
                "prefetch": "StreamError"}[kind]
    assert len(set(every)) == 1 and every[0].startswith(expected), every


@pytest.mark.parametrize("ranks", [2, 4])
@pytest.mark.parametrize("failing", ["first", "last"])
def test_sys_exit_in_a_callback_ends_every_rank(failing, ranks, tmp_path):
    done = subprocess.run(["mpiexec", "-n", str(ranks), sys.executable, str(PROGRAMS), "exit_in_callback",
                           str(tmp_path / "exit"), failing], capture_output=True, text=True, timeout=TIMEOUT,
                          env=_env())
    # the job ends (no hang) with the exit code; mpiexec may end it before the message is shown
    assert done.returncode == 3 or "ended the job: SystemExit(3)" in done.stderr, done.returncode


@pytest.mark.parametrize("kind", ["initial", "constant", "codelet"])
def test_ranks_whose_values_or_code_differ_are_refused(kind, tmp_path):
    every = reports(2, "values_differ", tmp_path, kind)
    assert every == ["PoplarError MPI ranks [1] built a different graph or programs than rank 0\n"] * 2


@pytest.mark.parametrize("seed", range(12))
def test_fuzzed_programs_behave_alike_on_any_rank_count(seed, tmp_path):
    """A seeded family of replicated programs (replicas, collectives, permutations, streams, a
    host callback that may fail on one rank): every rank reports what one process reports, the
    same values and cycles or the same error, within the timeout (a hang fails the case)."""
    ranks = 2 + seed % 3
    one = reports(1, "fuzz", tmp_path, str(seed))[0]
    every = reports(ranks, "fuzz", tmp_path, str(seed))
    assert every == [one] * ranks, (one, every)


def test_without_mpiexec_mpi4py_is_never_imported():
    code = ("import sys, runpy; sys.argv = ['tut1']; "
            "runpy.run_path('tutorials/tut1_variables/tut1.py', run_name='__main__'); "
            "assert 'mpi4py' not in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, timeout=TIMEOUT, env=_env(),
                   cwd=ROOT)
