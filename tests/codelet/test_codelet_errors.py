"""Rejected codelets: every message names the file, the absolute line and the construct."""

from __future__ import annotations

import textwrap
from pathlib import Path

import numpy as np
import pytest
from codelet_harness import isolated_cache, load_module, run_one  # noqa: F401

from poplar_py.codelet.codelet_compiler import ERR_RANGE_STEP, KernelOptions, check_codelet, error_message
from poplar_py.errors import CodeletCompileError

HEADER = """
G_LIST = [1, 2]
G_NUM = 4

def helper_rec(n):
    return helper_rec(n - 1)

def helper_ok(x):
    return x + 1

class V(Vertex):
    a: Input[Vector[float]]
    s: Input[float]
    o: Output[float]
    io: InOut[Vector[float]]
    st: float
    lst: Input[VectorList[int]]

    def compute(self):
"""

# (body of compute with the bad line marked "# HERE", what the message must mention)
REJECTED = {
    "try": ("try:  # HERE\n    pass\nexcept Exception:\n    pass", "'try' statements are not supported"),
    "with": ("with x:  # HERE\n    pass", "'with' statements"),
    "lambda": ("f = lambda: 1  # HERE", "lambdas"),
    "list": ("x = [1, 2]  # HERE", "lists"),
    "dict": ("x = {}  # HERE", "dicts"),
    "tuple_value": ("x = (1, 2)  # HERE", "tuples"),
    "string": ("x = 'abc'  # HERE", "strings"),
    "print": ("t = print(1)  # HERE", "print() can only be called as a statement"),
    "class": ("class C:  # HERE\n    pass", "class definitions"),
    "nested_def": ("def g():  # HERE\n    pass", "nested functions"),
    "raise": ("raise ValueError()  # HERE", "'raise' statements"),
    "comprehension": ("x = [i for i in range(3)]  # HERE", "comprehensions"),
    "attribute": ("x = self.a.size  # HERE", "attribute access"),
    "unknown_field": ("x = self.nope  # HERE", "'nope' is not a field of V"),
    "global_list": ("x = G_LIST  # HERE", "global 'G_LIST' of type list"),
    "unknown_function": ("x = foo(1)  # HERE", "unknown name 'foo'"),
    "slice": ("x = self.a[1:2]  # HERE", "single-index subscripts"),
    "for_else": ("for i in range(3):  # HERE\n    pass\nelse:\n    pass", "'for ... else'"),
    "keyword_args": ("x = max(1, 2, key=None)  # HERE", "keyword arguments"),
    "is": ("x = self.s is None  # HERE", "comparison 'Is'"),
    "write_input": ("self.s = 1.0  # HERE", "cannot write to Input field 's'"),
    "write_input_vec": ("self.a[0] = 1.0  # HERE", "cannot write to Input field 'a'"),
    "write_state_vector": ("self.st = self.a  # HERE", "cannot store a vector of float32 into a field"),
    "whole_vector": ("self.io = 1.0  # HERE", "cannot assign a whole vector field 'io'"),
    "vector_and_number": ("x = self.a\nx = 1.0  # HERE", "local 'x'"),
    "vector_arith": ("x = self.a + 1  # HERE", "expected a number, not a vector"),
    "bool_arith": ("x = (self.s > 1) + (self.s < 2)  # HERE", "arithmetic on bool"),
    "float_shift": ("x = self.s << 2  # HERE", "operator '<<' is not supported"),
    "float_index": ("x = self.io[self.s]  # HERE", "vector indices must be integers"),
    "int_pow_var": ("n = 3\nx = n ** n  # HERE", "integer ** needs a constant exponent"),
    "return_value": ("return 3.0  # HERE", "must return True, False, None or a bool"),
    "len_scalar": ("x = len(self.s)  # HERE", "len() needs a vector"),
    "range_float": ("for i in range(self.s):  # HERE\n    pass", "range() needs integer arguments"),
    "iterate_scalar": ("for e in self.s:  # HERE\n    pass", "can only iterate over range()"),
    "bad_math": ("x = math.gamma(1.0)  # HERE", "math.gamma() is not supported"),
    "math_arity": ("x = math.exp(1.0, 2.0)  # HERE", "takes 1 argument"),
    "log_arity": ("x = math.log(1.0, 2.0, 3.0)  # HERE", "math.log() takes 1 or 2 argument(s)"),
    "helper_arity": ("x = helper_ok(1, 2)  # HERE", "takes 1 argument"),
    "range_value": ("x = range(3)  # HERE", "range() can only be used"),
    "self_value": ("x = self  # HERE", "'self' can only be used as self.<field>"),
    "num_workers": ("x = self.numWorkers()  # HERE", "only available in a MultiVertex"),
    "use_before_assign": ("y = z + 1  # HERE\nz = 1", "used before it is assigned"),
    "list_row_assign": ("self.lst[0] = 1  # HERE", "cannot"),
    "walrus": ("if (y := 3) > 1:  # HERE\n    pass", "':=' expressions"),
    "assert_message": ("assert self.s > 0, self.s  # HERE", "assert message must be a string literal"),
    "assert_vector": ("assert self.a  # HERE", "cannot be used as a condition"),
    "unassigned_if": ("if self.s > 0:\n    t = 1.0\nself.o = t  # HERE", "local variable 't' may be read"),
    "unassigned_loop": ("for v in self.a:\n    t = v\nself.o = t  # HERE", "local variable 't' may be read"),
    "unassigned_while": ("while self.s > 0:\n    t = 1.0\n    break\nself.o = t  # HERE", "'t' may be read"),
    "unassigned_carried": ("s = 0.0\nfor v in self.a:\n    s += t  # HERE\n    t = v", "'t' may be read"),
    "unassigned_break": ("for v in self.a:\n    if v > 0:\n        break\n    t = v\nself.o = t  # HERE",
                         "'t' may be read"),
    # a step known when compiling: Python's ValueError, found when the codelet is added
    "range_zero_step": ("for i in range(0, len(self.a), 0):  # HERE\n    pass",
                        "range() arg 3 must not be zero"),
    "range_zero_constant": ("k = G_NUM - 4\nfor i in range(8, 0, k):  # HERE\n    pass",
                            "range() arg 3 must not be zero"),
}

# Reads every path reaches assigned (must compile)
DEFINITELY_ASSIGNED = {
    "both_branches": "if self.s > 0:\n    t = 1.0\nelse:\n    t = 2.0\nself.o = t",
    "return_ends_a_path": "if self.s > 0:\n    return True\nelse:\n    t = 1.0\nself.o = t",
    "while_true_breaks": "while True:\n    t = 1.0\n    break\nself.o = t",
    "known_range": "for i in range(2):\n    t = 1.0\nself.o = t",
    "known_branch": "if G_NUM > 2:\n    t = 1.0\nself.o = t",
    "inside_loop": "s = 0.0\nfor v in self.a:\n    t = v\n    s += t\nself.o = s",
    "assigned_before_break": "while True:\n    if self.s > 0:\n        t = 1.0\n        break\n    t = 2.0\n"
                             "    break\nself.o = t",
}


@pytest.mark.parametrize("case", sorted(DEFINITELY_ASSIGNED))
def test_locals_assigned_on_every_path_compile(case, tmp_path):
    source = HEADER + textwrap.indent(DEFINITELY_ASSIGNED[case], " " * 8) + "\n"
    check_codelet(load_module(tmp_path, source).V)


@pytest.mark.parametrize("case", sorted(REJECTED))
def test_rejected_constructs_name_file_and_line(case, tmp_path):
    body, expected = REJECTED[case]
    source = HEADER + textwrap.indent(body, " " * 8) + "\n"
    module = load_module(tmp_path, source)
    lines = Path(module.__file__).read_text().splitlines()
    line = next(i + 1 for i, text in enumerate(lines) if "# HERE" in text)
    with pytest.raises(CodeletCompileError) as info:
        check_codelet(module.V)
    message = str(info.value)
    assert message.startswith(f"{module.__file__}:{line}: V.compute: "), message
    assert expected in message


def test_error_in_helper_names_the_helper_line(tmp_path):
    module = load_module(
        tmp_path,
        textwrap.dedent("""
        def bad(x):
            return [x]

        class V(Vertex):
            o: Output[float]

            def compute(self):
                self.o = bad(1.0)
        """),
    )
    with pytest.raises(
        CodeletCompileError, match=rf"{module.__file__}:6: helper 'bad' .*lists are not supported"
    ):
        check_codelet(module.V)


def test_recursion_is_reported_at_the_recursive_call(tmp_path):
    module = load_module(tmp_path, HEADER + "        self.o = helper_rec(3)\n")
    with pytest.raises(CodeletCompileError, match=r":9: helper 'helper_rec' .*recursive call"):
        check_codelet(module.V)


def test_helper_without_return_on_every_path(tmp_path):
    module = load_module(
        tmp_path,
        textwrap.dedent("""
        def f(x):
            if x > 0:
                return x

        class V(Vertex):
            o: Output[float]

            def compute(self):
                self.o = f(1.0)
        """),
    )
    with pytest.raises(CodeletCompileError, match="must end with a return"):
        check_codelet(module.V)


def test_multivertex_signature(tmp_path):
    module = load_module(
        tmp_path,
        textwrap.dedent("""
        class M(MultiVertex):
            o: Output[float]

            def compute(self):
                self.o = 1.0
        """),
    )
    with pytest.raises(
        CodeletCompileError, match=r":8: M.compute: the signature must be compute\(self, workerId\)"
    ):
        check_codelet(module.M)


@pytest.mark.parametrize("branches", [400, 1000])
def test_long_elif_chains_compile_and_run_in_both_modes(branches, tmp_path):
    chain = "".join(f"{'if' if i == 0 else 'elif'} k == {i}:\n    r = {i}.5\n" for i in range(branches))
    body = "k = self.k\n" + chain + "else:\n    r = 0.25\nself.out = r\n"
    source = "class E(Vertex):\n    k: Input[int]\n    out: Output[float]\n\n    def compute(self):\n" \
        + textwrap.indent(body, " " * 8)
    module = load_module(tmp_path, source)
    for mode in ("native", "interp"):
        for k, expected in ((branches - 1, branches - 0.5), (branches, 0.25), (3, 3.5)):
            r = run_one(module.E, mode, k=k, out=0.0)
            assert r.err is None and float(r.fields[0]["out"][0]) == expected, (mode, k)


STEPS = """
class Steps(Vertex):
    a: Input[Vector[float]]
    out: Output[Vector[float]]
    step: int

    def compute(self):
        k = 0
        for i in range(len(self.a) - 1, -1, self.step):  # STEP
            self.out[k] = self.a[i]
            k += 1

class CopySteps(Vertex):
    out: Output[Vector[float]]

    def compute(self):
        for k in range(2):
            for i in range(k, 4, 1 - k):  # COPY
                self.out[i] = 1.0
"""


def _line(module, mark: str) -> int:
    lines = Path(module.__file__).read_text().splitlines()
    return next(i + 1 for i, text in enumerate(lines) if mark in text)


@pytest.mark.parametrize("mode", ["native", "interp"])
def test_range_steps_known_when_running(mode, tmp_path):
    module = load_module(tmp_path, STEPS)
    a = np.arange(7, dtype=np.float32)
    for step in (-1, -2, -3, -7, -8):
        r = run_one(module.Steps, mode, a=a, out=np.zeros(7, np.float32), step=step)
        expected = a[::step]
        assert r.err is None, (step, r.err)
        np.testing.assert_array_equal(r.fields[0]["out"][:expected.size], expected)
    r = run_one(module.Steps, mode, a=a, out=np.zeros(7, np.float32), step=0)
    assert r.err is not None and (r.err["code"], r.err["line"]) == (ERR_RANGE_STEP, _line(module, "# STEP"))
    message = error_message(module.Steps, r.err, "vertex 4 on tile 2")
    assert message == (f"vertex 4 on tile 2: range() arg 3 must not be zero in Steps.compute "
                       f"({module.__file__}:{_line(module, '# STEP')})")
    # the step of one copy of an unrolled loop is zero: that copy fails when it runs, as in Python
    r = run_one(module.CopySteps, mode, out=np.zeros(4, np.float32))
    assert r.err is not None and (r.err["code"], r.err["line"]) == (ERR_RANGE_STEP, _line(module, "# COPY"))
    assert r.fields[0]["out"].tolist() == [1.0] * 4  # the first copy ran


def test_zero_step_unchecked_runs_no_turn(tmp_path):
    module = load_module(tmp_path, STEPS)
    r = run_one(module.Steps, "native", KernelOptions(checked=False), a=np.ones(3, np.float32),
                out=np.zeros(3, np.float32), step=0)
    assert r.err is None and not r.fields[0]["out"].any()
