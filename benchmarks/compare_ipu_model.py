"""Tutorial 7 at 10000x1000: poplar-py's simulated cycles beside Graphcore's IPU Model.

Runs ``poplar-py run --profile`` on the tutorial and prints each tile-average figure of
the profile next to the one Graphcore published for its IPU Model (tut6/tut7 README,
Mk2), with the ratio. docs/cycle_model.md explains the differences.
Usage: python benchmarks/compare_ipu_model.py [numRows numCols]
"""

import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# Graphcore's IPU Model, `./tut6 10000 1000`, Mk2 (Graphcore's tutorial 6 README).
PUBLISHED = {
    "Total cycles": 6_681_766,
    "Tile average compute cycles (including idle threads)": 3_801.8,
    "Tile average compute cycles (excluding idle threads)": 3_717.6,
    "Tile average IPU exchange cycles": 8_697.4,
    "Tile average host exchange cycles": 6_663_550.8,
    "Tile average sync cycles": 1_134.8,
}
KEYS = {
    "Tile average compute cycles (including idle threads)": "compute",
    "Tile average compute cycles (excluding idle threads)": "computeActive",
    "Tile average IPU exchange cycles": "exchange",
    "Tile average host exchange cycles": "host",
    "Tile average sync cycles": "sync",
}


def main() -> None:
    rows, cols = (sys.argv[1:3] if len(sys.argv) >= 3 else ("10000", "1000"))
    with tempfile.TemporaryDirectory() as tmp:
        report_path = Path(tmp) / "tut7.json"
        subprocess.run([sys.executable, "-m", "poplar_py.cli", "run", "--profile", str(report_path),
                        str(ROOT / "tutorials/tut7_matrix_vector_opt/tut7.py"), rows, cols],
                       cwd=tmp, check=True, capture_output=True)
        execution = json.loads(report_path.read_text())["execution"]
    simulated = {"Total cycles": execution["totalCycles"]}
    simulated.update({label: execution["tileAverages"][key] for label, key in KEYS.items()})
    print(f"Tutorial 7, {rows}x{cols}, ipu2: poplar-py against Graphcore's IPU Model")
    print(f"{'':<56}{'poplar-py':>14}{'Graphcore':>14}{'ratio':>8}")
    for label, published in PUBLISHED.items():
        ours = simulated[label]
        print(f"{label:<56}{ours:>14,.1f}{published:>14,.1f}{ours / published:>8.2f}")


if __name__ == "__main__":
    main()
