"""Every Python snippet of README.md runs as a user pasting it would, each in its own process.

A block whose first line is ``# fragment`` would be skipped (README has none: every snippet is a
whole program that ends by reading a result back into numpy and checking or printing it)."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
SKIP = "# fragment"


def _snippets() -> list[str]:
    return re.findall(r"^```python\n(.*?)^```$", README.read_text(), re.S | re.M)


SNIPPETS = _snippets()


def test_the_readme_has_snippets_and_each_reads_a_result_back():
    assert len(SNIPPETS) >= 3
    for code in SNIPPETS:
        if not code.startswith(SKIP):
            assert "readTensor(" in code, code[:200]


@pytest.mark.parametrize("index", range(len(SNIPPETS)))
def test_a_readme_snippet_runs(tmp_path, index):
    code = SNIPPETS[index]
    if code.startswith(SKIP):
        pytest.skip("a fragment")
    script = tmp_path / f"snippet{index}.py"
    script.write_text(code)
    result = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True,
                            timeout=300)
    assert result.returncode == 0, f"snippet {index}:\n{code}\n{result.stdout}{result.stderr}"
    assert result.stdout.strip(), f"snippet {index} printed nothing"
