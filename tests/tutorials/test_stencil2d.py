"""The worked 2-D stencil (tutorials/stencil2d): its halo exchange against numpy."""

import importlib.util
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import poplar_py as poplar

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "tutorials" / "stencil2d" / "stencil2d.py"


def _module():
    spec = importlib.util.spec_from_file_location("stencil2d", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules["stencil2d"] = module
    spec.loader.exec_module(module)
    return module


def _device():
    model = poplar.IPUModel()
    model.tilesPerIPU = 16
    return model.createDevice()


def test_the_stencil_as_a_user_runs_it(tmp_path):
    result = subprocess.run([sys.executable, "-m", "poplar_py.cli", "run", "--tiles", "16", str(SCRIPT),
                             "--iterations", "20"], cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "matches numpy" in result.stdout


@pytest.mark.parametrize("height, width, blocks, iterations", [(13, 9, 5, 7), (6, 5, 1, 3), (7, 4, 7, 4)])
def test_uneven_blocks_one_block_and_one_row_a_block_match_numpy(height, width, blocks, iterations):
    stencil = _module()
    grid = np.random.default_rng(height).random((height, width), dtype=np.float32)
    result = stencil.run(_device(), grid, blocks, iterations)
    assert result.shape == (height, width) and result.dtype == np.float32
    np.testing.assert_allclose(result, stencil.reference(grid, iterations), rtol=1e-6, atol=1e-6)


def test_more_blocks_than_rows_is_refused():
    with pytest.raises(SystemExit, match="--blocks"):
        _module().build(_device(), 4, 4, 5, 1)
