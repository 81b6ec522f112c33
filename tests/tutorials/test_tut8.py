"""Tutorial 8: the CNN trains on the tiles, forward and backward, to at least 95% test accuracy."""

import re
import subprocess
import sys
from pathlib import Path

CNN = Path(__file__).resolve().parents[2] / "tutorials" / "tut8_cnn" / "cnn.py"


def run(tmp_path, *args: str) -> str:
    result = subprocess.run([sys.executable, "-m", "poplar_py.cli", "run", str(CNN), *args], cwd=tmp_path,
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


def test_cnn_default_run_reaches_95_percent(tmp_path):
    out = run(tmp_path)
    accuracies = [int(a) for a in re.findall(r"^Epoch \d+: accuracy (\d+)%$", out, re.M)]
    assert len(accuracies) == 20
    assert accuracies[-1] >= 95, out
    assert accuracies[-1] > accuracies[0]  # it learns


def test_cnn_arguments(tmp_path):
    assert re.fullmatch(r"Epoch 1: accuracy \d+%\n", run(tmp_path, "1", "--batch", "25"))
