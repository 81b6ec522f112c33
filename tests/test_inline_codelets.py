"""Codelets of a program's __main__: the module source that carries them (see also test_executable)."""

from __future__ import annotations

import math
import runpy
import textwrap

import pytest

import poplar_py as poplar
from poplar_py.vertex_types.inline import inline_source, is_inline, module_name

PROGRAM = textwrap.dedent('''
    """Run as __main__ by runpy."""
    import math
    import threading

    from poplar_py import Input, Output, Vector, Vertex

    N = 4
    LOCK = threading.Lock()
    unused = object()


    def half(v):
        return v / 2.0


    halve = half


    class Base(Vertex):
        x: Input[Vector[float]]
        y: Output[Vector[float]]


    class Shrink(Base):
        def compute(self):
            for i in range(N):
                self.y[i] = halve(math.sqrt(self.x[i]))


    class Locked(Shrink):
        lock = LOCK
    ''')


@pytest.fixture
def program(tmp_path):
    path = tmp_path / "prog.py"
    path.write_text(PROGRAM)
    return runpy.run_path(str(path), run_name="__main__")


def test_the_source_keeps_the_lines_and_names_what_it_uses(program):
    cls = program["Shrink"]
    assert is_inline(cls) and not is_inline(poplar.Vertex)
    source, namespace = inline_source(cls)
    lines = source.splitlines()
    original = PROGRAM.splitlines()
    for first in ("def half(v):", "class Base(Vertex):", "class Shrink(Base):"):
        k = original.index(first)
        assert lines[k] == original[k]  # each definition at its own line
    end = next(k for k, line in enumerate(original) if "halve(math.sqrt" in line)
    assert lines[end + 1:] == ["halve = half"]  # another name of a definition, after them
    assert "unused" not in source and "LOCK" not in source and "threading" not in source
    assert sorted(namespace) == ["Input", "N", "Output", "Vector", "Vertex", "math"]
    assert namespace["N"] == 4 and namespace["math"] is math and namespace["Vertex"] is poplar.Vertex
    assert module_name(source, namespace) != module_name(source, {**namespace, "N": 5})


def test_a_global_that_cannot_be_pickled_is_named(program):
    with pytest.raises(poplar.ExecutableError, match=r"Locked of __main__: it uses the global 'LOCK' \(lock"):
        inline_source(program["Locked"])
