"""PrintTensor: Poplar SDK 3's format, printed by a running engine."""

from __future__ import annotations

import io
import re

import numpy as np
import pytest
from support import make_graph

import poplar_py as poplar
from poplar_py import program as prog
from poplar_py.runtime.printing import format_tensor


def printed(type_, shape, values, title="t", view=lambda t: t, tiles=4) -> str:
    """What PrintTensor(title, view(t)) writes when t holds ``values``."""
    device, graph = make_graph(tiles)
    t = graph.addVariable(type_, shape, "t")
    graph.setTileMapping(t, [[(k, k + 1) for k in range(i, t.numElements(), tiles)] for i in range(tiles)])
    if values is not None:
        graph.setInitialValue(t, np.asarray(values))
    engine = poplar.Engine(graph, prog.PrintTensor(title, view(t)) if title is not None
                           else prog.PrintTensor(view(t)))
    engine.load(device)
    out = io.StringIO()
    engine.setPrintTensorStream(out)
    engine.run(0)
    return out.getvalue()


# ---- the strings in the SDK 3 tutorials ----------------------------------------------------------

def test_tutorial_v1_debug_zeros():
    expected = "v1-debug: [0.0000000 0.0000000 0.0000000 0.0000000]\n"
    assert printed(poplar.FLOAT, [4], None, "v1-debug") == expected


def test_tutorial_v1_debug():
    assert printed(poplar.FLOAT, [4], [1.0, 1.5, 2.0, 2.5], "v1-debug") == \
        "v1-debug: [1.0000000 1.5000000 2.0000000 2.5000000]\n"


def test_tutorial_v4():
    assert printed(poplar.INT, [10], np.arange(10), "v4-0") == "v4-0: [0 1 2 3 4 5 6 7 8 9]\n"
    assert printed(poplar.INT, [10], np.arange(10, 20), "v4-1") == "v4-1: [10 11 12 13 14 15 16 17 18 19]\n"


def test_tutorial_v2():
    expected = "v2: [7.0000000 6.0000000 4.5000000 2.5000000]\n"
    assert printed(poplar.FLOAT, [4], [7, 6, 4.5, 2.5], "v2") == expected


def test_tutorial_v3_block():
    text = printed(poplar.FLOAT, [2, 2], [5, 4.5, 4, 3.5], "v3")
    assert text == "v3: [\n  [5.0000000 4.5000000]\n  [4.0000000 3.5000000]\n]\n"
    # The official test is whitespace-tolerant; so is this form.
    assert re.fullmatch(r"v3: \[\s+\[5\.0000000 4\.5000000\]\s+\[4\.0000000 3\.5000000\]\s+\]\s*", text)


def test_tutorial_regex_from_official_test():
    text = printed(poplar.INT, [10], np.arange(10, 20), "v4-1")
    assert re.search(r"v4-1: \[10 11 12 13 14 15 16 17 18 19\]", text)


# ---- other element types, views and shapes -------------------------------------------------------

@pytest.mark.parametrize("type_,values,expected", [
    (poplar.UNSIGNED_INT, [0, 4294967295], "[         0 4294967295]"),
    (poplar.SHORT, [-5, 7], "[-5  7]"),
    (poplar.UNSIGNED_CHAR, [255, 0], "[255   0]"),
    (poplar.CHAR, [-128, 127], "[-128  127]"),
    (poplar.HALF, [0.5, -1.25], "[ 0.5000000 -1.2500000]"),
    (poplar.FLOAT, [-1.5, 2.0], "[-1.5000000  2.0000000]"),
    (poplar.BOOL, [True, False], "[1 0]"),
    (poplar.INT, [-1, 10, 3], "[-1 10  3]"),
])
def test_element_types_pad_to_one_width(type_, values, expected):
    assert printed(type_, [2] if len(values) == 2 else [3], values) == f"t: {expected}\n"


@pytest.mark.parametrize("type_,value,expected", [
    (poplar.INT, 3, "t: 3\n"),
    (poplar.FLOAT, 2.5, "t: 2.5000000\n"),
    (poplar.UNSIGNED_INT, 7, "t: 7\n"),
    (poplar.FLOAT, -0.25, "t: -0.2500000\n"),
])
def test_scalars_print_bare(type_, value, expected):
    assert printed(type_, [], [value]) == expected
    assert printed(type_, [3], [value] * 3, view=lambda t: t[1]) == expected


def test_views_print_their_own_order():
    values = np.arange(6).reshape(2, 3)
    assert printed(poplar.INT, [2, 3], values, view=lambda t: t.transpose()) == \
        "t: [\n  [0 3]\n  [1 4]\n  [2 5]\n]\n"
    assert printed(poplar.INT, [2, 3], values, view=lambda t: t[1].reverse(0)) == "t: [5 4 3]\n"
    assert printed(poplar.INT, [2, 3], values, view=lambda t: t[0].broadcast(2, 0)) == "t: [0 1 2 0 1 2]\n"


def test_three_dimensional():
    text = printed(poplar.INT, [2, 2, 2], np.arange(8))
    assert text == "t: [\n  [\n    [0 1]\n    [2 3]\n  ]\n  [\n    [4 5]\n    [6 7]\n  ]\n]\n"


def test_print_many_times_in_order():
    device, graph = make_graph(2)
    t = graph.addVariable(poplar.INT, [2], poplar.VariableMappingMethod.LINEAR, "t")
    graph.setInitialValue(t, [1, 2])
    seq = prog.Sequence([prog.PrintTensor("a", t), prog.Copy(t.reverse(0), t), prog.PrintTensor("b", t)])
    engine = poplar.Engine(graph, prog.Repeat(2, seq))
    engine.load(device)
    out = io.StringIO()
    engine.setPrintTensorStream(out)
    engine.run(0)
    assert out.getvalue() == "a: [1 2]\nb: [2 1]\na: [2 1]\nb: [1 2]\n"


def test_default_stream_is_stdout(capsys):
    device, graph = make_graph(2)
    t = graph.addVariable(poplar.INT, [2], poplar.VariableMappingMethod.LINEAR, "t")
    engine = poplar.Engine(graph, prog.PrintTensor("x", t))
    engine.load(device)
    engine.run(0)
    assert "x: [0 0]" in capsys.readouterr().out


def test_untitled_print_shows_values():
    text = printed(poplar.INT, [3], [4, 5, 6], title=None)
    assert "[4 5 6]" in text


# ---- summarised and wrapped output -------------------------------------------------------------

def _numbers(text: str) -> list[str]:
    return re.findall(r"-?\d+(?:\.\d+)?(?:e[+-]\d+)?", text.split(": ", 1)[1])


def test_summarised_1d():
    text = printed(poplar.INT, [1001], np.arange(1001), tiles=8)
    assert text == "t: [   0    1    2 ...  998  999 1000]\n"


def test_not_summarised_at_threshold():
    text = printed(poplar.INT, [1000], np.arange(1000), tiles=8)
    assert "..." not in text
    assert _numbers(text) == [str(k) for k in range(1000)]
    assert all(len(line) <= 75 for line in text.splitlines()[1:])


def test_summarised_float_1d():
    text = printed(poplar.FLOAT, [2000], np.arange(2000) / 4, tiles=8)
    assert text.count("...") == 1
    assert _numbers(text) == ["0.0000000", "0.2500000", "0.5000000", "499.2500000", "499.5000000",
                              "499.7500000"]


def test_summarised_2d():
    text = printed(poplar.INT, [40, 40], np.arange(1600), tiles=8)
    lines = text.rstrip("\n").split("\n")
    assert lines[0] == "t: ["
    assert lines[-1] == "]"
    rows = lines[1:-1]
    assert len(rows) == 7 and rows[3].strip() == "..."
    shown = [rows[0], rows[1], rows[2], rows[4], rows[5], rows[6]]
    for r, first in zip(shown, [0, 40, 80, 1480, 1520, 1560]):
        assert r.startswith("  [") and r.endswith("]")
        assert _numbers("x: " + r) == [str(first + k) for k in (0, 1, 2, 37, 38, 39)]
        assert "..." in r


def test_summarised_only_long_dims():
    """Dims of at most 6 are shown whole even when the tensor is summarised."""
    text = printed(poplar.INT, [300, 4], np.arange(1200), tiles=8)
    rows = text.rstrip("\n").split("\n")[1:-1]
    assert len(rows) == 7
    assert _numbers("x: " + rows[0]) == ["0", "1", "2", "3"]
    assert _numbers("x: " + rows[-1]) == ["1196", "1197", "1198", "1199"]


def test_long_rows_wrap_at_75_characters():
    text = format_tensor("w", np.arange(30, dtype=np.float32))
    lines = text.split("\n")
    assert len(lines) > 1
    assert all(len(line) <= 75 for line in lines[1:])
    assert _numbers(text) == [f"{k}.0000000" for k in range(30)]
    assert lines[0].startswith("w: [") and lines[-1].endswith("]")


def test_format_special_values():
    assert format_tensor("s", np.array([1e9, 1.0], np.float32)) == "s: [1.0000000e+09 1.0000000e+00]"
    assert format_tensor("s", np.array([1e-6, 1.0], np.float32)) == "s: [1.0000000e-06 1.0000000e+00]"
    text = format_tensor("s", np.array([np.nan, np.inf, -np.inf, 1.5], np.float32))
    assert text.startswith("s: [") and text.endswith("]")
    assert text[4:-1].split() == ["nan", "inf", "-inf", "1.5000000"]
    assert format_tensor("e", np.zeros(0, np.int32)) == "e: []"
    assert format_tensor("", np.array([1, 2], np.int32)) == "[1 2]"
