"""Tutorial 5 (logistic regression on the shipped 8x8 digits), run as a user runs it."""

import importlib.util
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "tutorials/tut5_ml/regression_demo.py"


def run(tmp_path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "poplar_py.cli", "run", str(DEMO), *args],
                          cwd=tmp_path, capture_output=True, text=True, timeout=600)


def test_one_epoch_trains_above_80_percent(tmp_path):
    result = run(tmp_path, "1", "100")
    assert result.returncode == 0, result.stdout + result.stderr
    out = result.stdout
    assert out.startswith("Using the IPU Model")
    assert "Total cycles:" in out  # the profile summary after the first batch
    lines = re.findall(r"^Epoch (\d+) \((\d+)%\), accuracy (\d+)%$", out, re.M)
    assert [(e, p) for e, p, _ in lines] == [("1", "20"), ("1", "40"), ("1", "60"), ("1", "80"), ("1", "100")]
    assert out.index("Total cycles:") < out.index("Epoch 1 (20%)")
    assert int(lines[-1][2]) > 80


def test_percent_data_dir_and_ipu_flag(tmp_path):
    data = tmp_path / "mnist"  # --data with a directory of IDX files (here: the digits again)
    shutil.copytree(ROOT / "tutorials/tut5_ml/data", data)
    result = run(tmp_path, "2", "10", "--data", str(data))
    assert result.returncode == 0, result.stdout + result.stderr
    # 179 images: two batches of 89 per epoch, a status line after each
    assert re.findall(r"^Epoch (\d) \((\d+)%\)", result.stdout, re.M) == [
        ("1", "50"), ("1", "100"), ("2", "50"), ("2", "100")]
    hw = run(tmp_path, "-IPU", "1", "10")  # the hardware path: a device from DeviceManager (1472 tiles)
    assert hw.returncode == 0, hw.stderr
    assert hw.stdout.startswith("Using the IPU\n") and "Tiles per IPU:          1,472" in hw.stdout
    assert re.findall(r"^Epoch (\d) \((\d+)%\)", hw.stdout, re.M)[-1] == ("1", "100")
    none = run(tmp_path, "-IPU", "1", "10", "--replicas", "3")  # no Pod device has 3 IPUs
    assert none.returncode == 1 and "No device of 3 IPUs" in none.stderr


def test_data_parallel_training_on_four_replicas(tmp_path):
    result = run(tmp_path, "1", "100", "--replicas", "4")
    assert result.returncode == 0, result.stdout + result.stderr
    out = result.stdout
    assert "Training on 4 replicas: each takes 75 images of every batch of 300" in out
    assert "Number of Replicas:     4" in out and "Number of IPUs:         4" in out
    lines = re.findall(r"^Epoch (\d+) \((\d+)%\), accuracy (\d+)%$", out, re.M)
    assert [(e, p) for e, p, _ in lines] == [("1", "20"), ("1", "40"), ("1", "60"), ("1", "80"), ("1", "100")]
    assert int(lines[-1][2]) >= 80


def test_replicas_keep_identical_weights(capsys):
    spec = importlib.util.spec_from_file_location("regression_demo", DEMO)
    demo = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(demo)
    engine = demo.train(1, 10, demo.DIGITS, replicas=4)
    capsys.readouterr()
    weights = [engine.readTensor("weightsOut", replicaIndex=r) for r in range(4)]
    biases = [engine.readTensor("biasesOut", replicaIndex=r) for r in range(4)]
    initial = np.random.default_rng(demo.SEED).standard_normal(10 * 64).astype(np.float32).reshape(10, 64)
    assert not np.allclose(weights[0], initial)  # it trained
    for r in range(1, 4):
        np.testing.assert_array_equal(weights[r], weights[0])
        np.testing.assert_array_equal(biases[r], biases[0])
