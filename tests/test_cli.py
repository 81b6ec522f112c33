"""The `poplar-py` command: running programs, IPUModel defaults, program arguments."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
TUT1 = REPO / "tutorials" / "tut1_variables" / "tut1.py"

TUT1_OUTPUT = (
    "Running program\n"
    "v1-debug: [1.0000000 1.5000000 2.0000000 2.5000000]\n"
    "v2-debug: [1.0000000 1.5000000 2.0000000 2.5000000]\n"
    "v4-0: [0 1 2 3 4 5 6 7 8 9]\n"
    "v4-1: [10 11 12 13 14 15 16 17 18 19]\n"
    "Program complete\n"
    "\n"
    "h3 data:\n"
    "  0 0 0 0 \n"  # each row ends with a space, as the C++ original prints
    "  0 1 1.5 2 \n"
    "  0 0 0 0 \n"
    "  0 0 0 0 \n"
)

# Prints what IPUModel() gives the program, and its argv.
PROBE = """\
import sys
import poplar_py as poplar

t = poplar.IPUModel().createDevice().getTarget()
print("tiles", t.getNumTiles(), "perIPU", t.getTilesPerIPU(), "ipus", t.getNumIPUs())
print("bytes", t.getBytesPerTile(), "arch", t.getTargetArchString())
m = poplar.IPUModel("ipu2")
print("explicit", m.createDevice().getTarget().getTargetArchString(), m.tilesPerIPU)
print("name", __name__)
print("argv", sys.argv[1:])
print("prog", sys.argv[0].endswith("probe.py"))
"""


def run_cli(*args: str, cwd: Path = REPO, env: dict | None = None) -> subprocess.CompletedProcess:
    full_env = dict(os.environ, **(env or {}))
    full_env.pop("POPLAR_ENGINE_OPTIONS", None)
    return subprocess.run([sys.executable, "-m", "poplar_py.cli", *args], cwd=cwd, env=full_env,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=120)


def parse(output: str) -> dict[str, list[str]]:
    return {line.split()[0]: line.split()[1:] for line in output.splitlines() if line.strip()}


@pytest.fixture
def probe(tmp_path: Path) -> Path:
    p = tmp_path / "probe.py"
    p.write_text(PROBE)
    return p


def test_tutorial1_output_exact():
    result = run_cli("run", str(TUT1), "--tiles", "1472")
    assert result.returncode == 0, result.stdout
    assert result.stdout == TUT1_OUTPUT


def test_tutorial1_default_tiles_and_relative_path():
    result = run_cli("run", "tutorials/tut1_variables/tut1.py")
    assert result.returncode == 0, result.stdout
    assert result.stdout == TUT1_OUTPUT


def test_tutorial1_as_plain_script():
    env = dict(os.environ)
    env.pop("POPLAR_ENGINE_OPTIONS", None)
    result = subprocess.run([sys.executable, str(TUT1)], cwd=REPO, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, timeout=120)
    assert result.returncode == 0, result.stdout
    assert result.stdout == TUT1_OUTPUT


def test_defaults_without_options(probe):
    result = run_cli("run", str(probe))
    assert result.returncode == 0, result.stdout
    out = parse(result.stdout)
    assert out["tiles"] == ["1472", "perIPU", "1472", "ipus", "1"]
    assert out["bytes"] == ["638976", "arch", "ipu2"]
    assert out["name"] == ["__main__"]
    assert out["argv"] == ["[]"]
    assert out["prog"] == ["True"]


@pytest.mark.parametrize("options,tiles,per_ipu,ipus,bytes_,arch", [
    (["--tiles", "4"], 4, 4, 1, 638976, "ipu2"),
    (["--ipus", "2"], 2944, 1472, 2, 638976, "ipu2"),
    (["--arch", "ipu1"], 1216, 1216, 1, 262144, "ipu1"),
    (["--arch", "ipu2"], 1472, 1472, 1, 638976, "ipu2"),
    (["--tiles", "16", "--ipus", "4", "--arch", "ipu1"], 64, 16, 4, 262144, "ipu1"),
])
def test_options_set_ipumodel_defaults(probe, options, tiles, per_ipu, ipus, bytes_, arch):
    result = run_cli("run", *options, str(probe))
    assert result.returncode == 0, result.stdout
    out = parse(result.stdout)
    assert out["tiles"] == [str(tiles), "perIPU", str(per_ipu), "ipus", str(ipus)]
    assert out["bytes"] == [str(bytes_), "arch", arch]
    # IPUModel("ipu2") names its version, so --arch does not change it; --tiles still does.
    assert out["explicit"][0] == "ipu2"
    assert out["explicit"][1] == (options[options.index("--tiles") + 1] if "--tiles" in options else "1472")


def test_options_after_program(probe):
    result = run_cli("run", str(probe), "--tiles", "8", "--arch", "ipu1")
    assert result.returncode == 0, result.stdout
    out = parse(result.stdout)
    assert out["tiles"][0] == "8" and out["bytes"][2] == "ipu1"
    assert out["argv"] == ["[]"]


@pytest.mark.parametrize("args,expected", [
    (["--device", "model-ipu1"], ["--device", "model-ipu1"]),
    (["a", "b", "3"], ["a", "b", "3"]),
    (["--device=model-ipu2", "-x"], ["--device=model-ipu2", "-x"]),
    (["--", "--tiles", "5"], ["--tiles", "5"]),
])
def test_program_args_reach_sys_argv(probe, args, expected):
    result = run_cli("run", str(probe), *args)
    assert result.returncode == 0, result.stdout
    argv_line = next(line for line in result.stdout.splitlines() if line.startswith("argv"))
    assert argv_line == f"argv {expected!r}"


def test_program_args_mixed_with_options(probe):
    result = run_cli("run", "--tiles", "4", str(probe), "--device", "model-ipu1", "--ipus", "2", "extra")
    assert result.returncode == 0, result.stdout
    out = parse(result.stdout)
    assert out["tiles"][:1] == ["8"]  # 4 tiles x 2 IPUs
    argv_line = next(line for line in result.stdout.splitlines() if line.startswith("argv"))
    assert argv_line == "argv ['--device', 'model-ipu1', 'extra']"


def test_help():
    result = run_cli("--help")
    assert result.returncode == 0
    assert "run" in result.stdout and "Usage" in result.stdout
    result = run_cli("run", "--help")
    assert result.returncode == 0
    for option in ("--tiles", "--ipus", "--arch", "--profile"):
        assert option in result.stdout


def test_console_script_help():
    script = Path(sys.executable).parent / "poplar-py"
    if not script.exists():
        pytest.skip("console script not installed next to this interpreter")
    result = subprocess.run([str(script), "--help"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, timeout=60)
    assert result.returncode == 0 and "run" in result.stdout


def test_missing_program_and_bad_options(tmp_path, probe):
    assert run_cli("run", str(tmp_path / "nope.py")).returncode != 0
    assert run_cli("run", str(probe), "--arch", "ipu9").returncode != 0
    assert run_cli("run", str(probe), "--tiles", "0").returncode != 0


def test_program_errors_propagate(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("raise SystemExit(3)\n")
    assert run_cli("run", str(bad)).returncode == 3
    boom = tmp_path / "boom.py"
    boom.write_text("raise ValueError('boom')\n")
    result = run_cli("run", str(boom))
    assert result.returncode != 0 and "boom" in result.stdout


def test_program_traceback_starts_at_the_program(tmp_path):
    (tmp_path / "fails.py").write_text("def inner():\n    raise ValueError('boom')\n\n\ninner()\n")
    result = run_cli("run", str(tmp_path / "fails.py"))
    assert result.returncode == 1
    assert result.stdout.startswith(f'Traceback (most recent call last):\n  File "{tmp_path / "fails.py"}", '
                                    "line 5, in <module>\n    inner()\n")
    assert f'File "{tmp_path / "fails.py"}", line 2, in inner' in result.stdout
    assert result.stdout.endswith("ValueError: boom\n") and result.stdout.count("File ") == 2
    (tmp_path / "broken.py").write_text("x = (\n")
    result = run_cli("run", str(tmp_path / "broken.py"))
    assert result.returncode == 1 and "cli.py" not in result.stdout and "runpy" not in result.stdout
    assert result.stdout.endswith("SyntaxError: '(' was never closed\n")


def test_program_directory_is_importable(tmp_path):
    (tmp_path / "helper.py").write_text("VALUE = 42\n")
    main = tmp_path / "main.py"
    main.write_text("import helper\nprint('value', helper.VALUE)\n")
    result = run_cli("run", str(main), cwd=REPO)
    assert result.returncode == 0, result.stdout
    assert "value 42" in result.stdout
