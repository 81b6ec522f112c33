"""popops.expr trees (building, printing, equality, type rules) and popops.map fusing them."""

import numpy as np
import pytest

import poplar_py as poplar
from poplibs_py import popops, poputil
from poplibs_py.popops import expr as pe
from poplibs_py.popops.expr_codegen import mapVertexClass
from poplibs_py.popops.perf_estimation import expressionCost
from poplibs_py.poputil import PoplibsArgumentError

FLOAT, INT, BOOL = poplar.FLOAT, poplar.INT, poplar.BOOL


def test_operators_build_named_nodes():
    e = pe._1 * pe._2 + pe.Exp(pe._1)
    assert e.deepEquals(pe.Add(pe.Mul(pe._1, pe._2), pe.Exp(pe._1)))
    assert e.deepEquals(pe.BinaryOp(pe.BinaryOpType.ADD, pe.BinaryOp(pe.BinaryOpType.MULTIPLY, pe._1, pe._2),
                                    pe.UnaryOp(pe.UnaryOpType.EXPONENT, pe._1)))
    assert not e.deepEquals(pe._2 * pe._1 + pe.Exp(pe._1))
    sugar = [(2 - pe._1, pe.Sub(pe.Const(2), pe._1)), (pe._1 / 3, pe.Divide(pe._1, 3)),
             (pe._1 % pe._2, pe.Rem(pe._1, pe._2)), (pe._1 ** 2, pe.Pow(pe._1, 2)),
             (pe._1 & pe._2, pe.BitwiseAnd(pe._1, pe._2)), (pe._1 | 1, pe.BitwiseOr(pe._1, 1)),
             (pe._1 ^ pe._2, pe.BitwiseXor(pe._1, pe._2)), (pe._1 << 2, pe.Shl(pe._1, 2)),
             (pe._1 >> 2, pe.Shr(pe._1, 2)), (pe._1 == pe._2, pe.Equal(pe._1, pe._2)),
             (pe._1 != 0, pe.NotEqual(pe._1, 0)), (pe._1 < 1, pe.Lt(pe._1, 1)),
             (pe._1 <= 1, pe.Lte(pe._1, 1)), (pe._1 > 1, pe.Gt(pe._1, 1)),
             (1 < pe._1, pe.Gt(pe._1, 1)),  # noqa: SIM300 (the reflected operator is what is tested)
             (pe._1 >= 1, pe.Gte(pe._1, 1)),
             (-pe._1, pe.Neg(pe._1)), (~pe._1, pe.BitwiseNot(pe._1))]
    for built, want in sugar:
        assert built.deepEquals(want), (built, want)
    assert pe.Const(1).deepEquals(pe.Const(1)) and not pe.Const(1).deepEquals(pe.Const(1.0))
    assert pe.Cast(pe._1, FLOAT).deepEquals(pe.Cast(pe._1, "float"))
    assert not pe.Cast(pe._1, FLOAT).deepEquals(pe._1)


def test_printing():
    assert repr(pe._1 * 2 + pe.Exp(pe._3)) == "Add(Mul(_1, Const(2)), Exp(_3))"
    assert repr(pe.Select(pe._1, pe._2, pe._3 < 0.5)) == "Select(_1, _2, Lt(_3, Const(0.5)))"
    assert repr(pe.Cast(pe._2, poplar.HALF)) == "Cast(_2, poplar.HALF)"
    assert repr(pe.ConstHalf(1.5)) == "Const(1.5, poplar.HALF)"
    assert repr(pe.UnaryOp(pe.UnaryOpType.SQRT, pe._20)) == "Sqrt(_20)"


def test_no_truth_value():
    with pytest.raises(TypeError, match="And/Or/Not"):
        bool(pe._1 < pe._2)
    with pytest.raises(TypeError, match="And/Or/Not"):
        _ = pe._1 < pe._2 < pe._3  # Python's chained comparison needs a truth value


@pytest.mark.parametrize("e,types,want", [
    (pe._1 + 1, [FLOAT], FLOAT),
    (pe._1 + 1, [INT], INT),
    (pe.Const(1.5) * pe._2, [INT, FLOAT], FLOAT),
    (pe._1 < pe._2, [FLOAT, FLOAT], BOOL),
    (pe.And(pe._1, pe._2 > 0), [BOOL, INT], BOOL),
    (pe.Select(pe._1, 0, pe._2), [FLOAT, BOOL], FLOAT),
    (pe.Clamp(pe._1, 0, 1), [poplar.HALF], poplar.HALF),
    (pe.Cast(pe._1, FLOAT) / pe._2, [INT, FLOAT], FLOAT),
    (pe.IsFinite(pe._1), [FLOAT], BOOL),
    (pe.Add(pe.Neg(pe.Const(1)), pe._1), [poplar.SHORT], poplar.SHORT),
])
def test_type_inference(e, types, want):
    assert pe.inferType(e, types) == want


@pytest.mark.parametrize("e,types,match", [
    (pe._1 + pe._2, [FLOAT, INT], "do not match"),
    (pe.Const(1) + pe.Const(2), [FLOAT], "cannot infer"),
    (pe.Select(pe._1, pe._1, pe._2), [FLOAT, INT], "must be of type bool"),
    (pe._3 + 1, [FLOAT], "only 1 given"),
    (pe.Sqrt(pe._1), [INT], "does not support"),
    (pe.And(pe._1, pe._1), [FLOAT], "does not support"),
    (pe.ShrSE(pe._1, pe._1), [poplar.UNSIGNED_INT], "does not support"),
])
def test_type_errors(e, types, match):
    with pytest.raises(poputil.PoplibsError, match=match):
        pe.inferType(e, types)


def test_map_fuses_one_generated_codelet(harness):
    h = harness()
    rng = np.random.default_rng(5)
    a, b = rng.standard_normal((5, 7)).astype(np.float32), rng.standard_normal((5, 7)).astype(np.float32)
    ta, tb = h.tensor(a), h.tensor(b)
    e = pe._1 * pe._2 + pe.Exp(pe._1)
    before = h.graph.getNumVertices()
    out = popops.map(h.graph, e, [ta, tb], h.seq)
    kind = expressionCost(e, [FLOAT, FLOAT], frozenset(), False).kind  # the vertex it is costed as
    cls = mapVertexClass(e, [FLOAT, FLOAT], frozenset(), False, FLOAT, kind)
    assert cls.vertexName.startswith("popops::map::") and h.graph.hasCodelet(cls.vertexName)
    same = pe._1 * pe._2 + pe.Exp(pe._1)
    assert mapVertexClass(same, [FLOAT, FLOAT], frozenset(), False, FLOAT, kind) is cls
    # one vertex per worker partition: 35 floats over 16 tiles, at most 6 per tile
    assert 0 < h.graph.getNumVertices() - before <= 6 * 16
    (got,) = h.run(out)
    np.testing.assert_allclose(got, a * b + np.exp(a), rtol=1e-6)


def test_map_forms(harness):
    h = harness()
    x = np.arange(-6, 6, dtype=np.float32).reshape(3, 4) / 2
    i = np.arange(12, dtype=np.int32).reshape(3, 4) - 5
    tx, ti, tx2 = h.tensor(x), h.tensor(i), h.tensor(x)
    g, seq = h.graph, h.seq
    scale = g.addConstant(FLOAT, [], 3.0)
    g.setTileMapping(scale, 0)
    outs = [
        popops.map(g, pe.Select(pe._1, pe.Cast(pe._2, FLOAT), pe._1 > 0), [tx, ti], seq),
        popops.map(g, pe.Cast(pe._1, INT) * 2 + pe._2, [tx, ti], seq),  # float -> int truncates
        popops.map(g, pe.Clamp(pe._1 * pe._2, -1, 1), [tx, scale], seq),  # 0-D input: scalar field
        popops.map(g, pe.Or(pe._1 < 0, pe._2 == 3), [tx, ti], seq),
        popops.map(g, pe._1 + pe._2, [tx, h.tensor(np.arange(4, dtype=np.float32))], seq),  # broadcast
        popops.map(g, pe.Cast(pe._1 > 0, INT) + pe.Cast(pe.Cast(pe._1, BOOL), INT), [ti], seq),
    ]
    popops.mapInPlace(g, pe._1 * pe._1 - pe._2, [tx2, scale], seq)
    out = g.addVariable(INT, [3, 4], "out")
    poputil.mapTensorLinearly(g, out)
    popops.mapWithOutput(g, pe._1 % 4, [ti], out, seq)
    got = h.run(*outs, tx2, out)
    np.testing.assert_array_equal(got[0], np.where(x > 0, x, i.astype(np.float32)))
    np.testing.assert_array_equal(got[1], x.astype(np.int32) * 2 + i)
    np.testing.assert_array_equal(got[2], np.clip(x * 3, -1, 1))
    np.testing.assert_array_equal(got[3], (x < 0) | (i == 3))
    np.testing.assert_array_equal(got[4], x + np.arange(4))
    np.testing.assert_array_equal(got[5], (i > 0).astype(np.int32) + (i != 0))
    np.testing.assert_array_equal(got[6], x * x - 3)
    np.testing.assert_array_equal(got[7], np.fmod(i, 4))


def test_cast_inside_an_expression_takes_its_type(harness):
    # The cast wraps (-1 -> 2**32-1) and rounds (to half) before the rest of the expression.
    h = harness()
    i = h.tensor(np.array([-1, 3, 7], np.int32))
    x = h.tensor(np.array([0.1, 1000.3, 2049.0], np.float32))
    out = [popops.map(h.graph, pe.Cast(pe._1, poplar.UNSIGNED_INT) < 5, [i], h.seq),
           popops.map(h.graph, pe.Cast(pe.Cast(pe._1, poplar.HALF), FLOAT) - pe._1, [x], h.seq)]
    small, rounding = h.run(*out)
    np.testing.assert_array_equal(small, [False, True, False])
    xs = np.array([0.1, 1000.3, 2049.0], np.float32)
    np.testing.assert_array_equal(rounding, xs.astype(np.float16).astype(np.float32) - xs)


def test_map_errors(harness):
    h = harness()
    f, i = h.tensor(np.ones(4, np.float32)), h.tensor(np.ones(4, np.int32))
    g, seq = h.graph, h.seq
    with pytest.raises(poputil.PoplibsError, match="do not match"):
        popops.map(g, pe._1 + pe._2, [f, i], seq)
    with pytest.raises(poputil.PoplibsError, match="Cannot broadcast"):
        popops.map(g, pe._1 + pe._2, [f, h.tensor(np.ones(3, np.float32))], seq)
    with pytest.raises(poputil.PoplibsError, match="cannot be written in parallel"):
        popops.mapInPlace(g, pe._1 + 1, [f.slice(0, 1).broadcast(2, 0)], seq)
    with pytest.raises(poputil.PoplibsError, match="gives bool"):
        popops.mapInPlace(g, pe._1 > 1, [f], seq)
    out = g.addVariable(INT, [4], "out")
    with pytest.raises(poputil.PoplibsError, match="gives float"):
        popops.mapWithOutput(g, pe._1 + 1, [f], out, seq)
    with pytest.raises(poputil.PoplibsError, match="Cannot broadcast"):
        popops.mapWithOutput(g, pe._1 + 1, [i], out.slice(0, 2), seq)


def test_introspection_as_poplibs():
    e = pe.Add(pe._1, pe.Cast(pe.Mul(pe._2, 0.5), poplar.FLOAT))
    assert e.print() == ("Add(\n  PlaceHolder(1),\n  Cast(float,\n    Mul(\n      PlaceHolder(2),\n"
                         "      Const(0.5f))))")
    assert e.print(prettyPrint=False) == "Add(PlaceHolder(1),Cast(float,Mul(PlaceHolder(2),Const(0.5f))))"
    g = poplar.Graph(poplar.IPUModel().createDevice().getTarget())
    inputs = [g.addVariable(poplar.FLOAT, [1]), g.addVariable(poplar.UNSIGNED_INT, [1])]
    assert e.name(inputs) == "ADDu_float_1__Cast_MULTIPLYu_uint_2__0z5f_d_float_d"
    assert e.isA(pe.BinaryOp) and not e.isA(pe.UnaryOp) and pe.Exp(pe._1).isA(pe.UnaryOp)
    assert e.getAs(pe.TernaryOp) is None and e.getAs(pe.BinaryOp) is e
    assert e.getOpType() is pe.BinaryOpType.ADD and e.getLHS().getIndex() == 1
    cast = e.getRHS()
    assert cast.getRHSType() == poplar.FLOAT and cast.getLHS().getRHS().getType() == poplar.FLOAT
    copy = e.clone()
    assert copy is not e and copy.deepEquals(e) and pe.deepEquals(copy, e)
    assert pe.Select(pe._1, pe._2, pe._3).getArg2().getIndex() == 3 and pe.Neg(pe._1).getArg().getIndex() == 1
    assert pe.Const(-1.5).name([]) == "m1z5f" and pe.Const(7).printValue() == "7"
    assert pe.Const(2, poplar.HALF).printValue() == "2" and pe.Const(0.25).getDataAsDouble() == 0.25
    assert pe.Const(-1).getDataForUnsignedIntegral() == 2**64 - 1
    with pytest.raises(PoplibsArgumentError, match="placeholder _3 has no tensor"):
        pe._3.name(inputs)
    with pytest.raises(PoplibsArgumentError, match="isA: expected an expression class"):
        e.isA(int)
