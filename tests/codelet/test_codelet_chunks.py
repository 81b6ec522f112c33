"""Range loops count their turns before they start, and checked ones run them in chunks between
budget checks (codelet/statements.py, codelet/budget.py): the turns of Python's ``range`` across
chunk boundaries and at the ends of the 64-bit range, and the chunk's loop optimised as the
unchecked loop is."""

import numpy as np
import pytest
from codelet_harness import MODES, STRICT, isolated_cache, load_module, optimised_ir, run_one  # noqa: F401

from poplar_py.codelet.budget import CHUNK_TURNS
from poplar_py.codelet.codelet_compiler import KernelOptions

UNCHECKED = KernelOptions(checked=False, fast_math=False)

# the turns of range(a, b, STEP) and the sum of their indices (wrapping), the step a constant or
# the field ``step``
TURNS = """
class Turns(Vertex):
    a: Input[LONGLONG]
    b: Input[LONGLONG]
    step: Input[LONGLONG]
    out: Output[Vector[LONGLONG]]

    def compute(self):
        n = 0
        total = 0
        for i in range(self.a, self.b, STEP):
            n += 1
            total += i
        self.out[0] = n
        self.out[1] = total
"""
C = CHUNK_TURNS
NEAR = [(0, 0, 1), (0, 1, 1), (0, C - 1, 1), (0, C, 1), (0, C + 1, 1), (3, 2 * C + 5, 1), (0, 3 * C + 7, 3),
        (5, 5 + 4 * C, 4), (10, -2 * C - 3, -1), (7, 7 - 5 * C, -5), (9, 2, 1), (2, 9, -1)]
TOP, BOTTOM = 2**63 - 1, -(2**63)
FAR = [(TOP - 3 * C, TOP, 1), (TOP, TOP - 2 * C - 1, -1), (BOTTOM, BOTTOM + 2 * C, 1),
       (BOTTOM + C, BOTTOM, -3), (BOTTOM, TOP, C * 2**50), (TOP, BOTTOM, -(2**63)), (BOTTOM, TOP, TOP),
       (TOP - C, TOP, C + 1)]


def python(a, b, step):
    r = range(a, b, step)
    return len(r), (sum(r) + 2**63) % 2**64 - 2**63


def turns(cls, mode, options, a, b, step):
    r = run_one(cls, mode, options, a=a, b=b, step=step, out=np.zeros(2, np.int64))
    assert r.err is None
    return tuple(int(v) for v in r.fields[0]["out"])


@pytest.mark.parametrize("mode", MODES)
def test_range_runs_pythons_turns(tmp_path, mode):
    field = load_module(tmp_path, TURNS.replace("STEP", "self.step")).Turns
    options = (STRICT, UNCHECKED) if mode == "native" else (STRICT,)
    for a, b, step in NEAR + FAR:
        literal = str(step) if step != BOTTOM else f"({BOTTOM + 1} - 1)"  # -2**63 is no literal
        constant = load_module(tmp_path, TURNS.replace("STEP", literal)).Turns
        for cls in (field, constant):
            for o in options:
                assert turns(cls, mode, o, a, b, step) == python(a, b, step), (a, b, step, cls, o)


SUM = """
class Sum(Vertex):
    x: Input[Vector[float]]
    out: Output[Vector[float]]

    def compute(self):
        s = FLOAT(0.0)
        for j in range(len(self.x)):
            s = s + self.x[j]
        self.out[0] = s
"""


def test_checked_chunks_unroll_as_the_unchecked_loop(tmp_path):
    # the chunk's loop counts its own turns: a trip count LLVM expands cheaply, so it unrolls it
    # (a loop up to a chunk's end was left rolled: one add in it, one in the cold copy)
    cls = load_module(tmp_path, SUM).Sum
    for options in (UNCHECKED, STRICT):
        assert optimised_ir(cls, options).count("fadd float") >= 8, options
