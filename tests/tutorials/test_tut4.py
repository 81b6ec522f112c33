"""Tutorial 4 (profiling two chained matMuls), run as a user runs it."""

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_tut4_profiling(tmp_path):
    result = subprocess.run([sys.executable, "-m", "poplar_py.cli", "run",
                             str(ROOT / "tutorials/tut4_profiling/tut4.py")],
                            cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
    out = result.stdout
    assert "Running program" in out and "Program complete" in out
    assert "Memory Usage:" in out and "Total cycles:" in out
    # Each matMul's steps are named after its debug name and carry their cycles.
    for step in ("m4/matmul", "m5/matmul"):
        match = re.search(rf"^\s+{step}\s+OnTileExecute\s+1\s+.*\s([\d,]+)$", out, re.MULTILINE)
        assert match and int(match.group(1).replace(",", "")) > 0, step
    assert "poplin::MatMulBlock<float,float,6,16>" in out
