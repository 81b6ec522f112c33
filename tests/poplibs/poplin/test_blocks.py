"""poplin.blocks: a plan's blocks and the flat ranges they cover, against per-block loops."""

import numpy as np
import pytest

import poplar_py as poplar
from poplibs_py import poplin
from poplibs_py.poplin.blocks import Blocks, block_major_operand, block_major_output, block_pieces


def target(tiles):
    model = poplar.IPUModel()
    model.tilesPerIPU = tiles
    return model.createDevice().getTarget()


PLANS = [(16, [30, 400], [400, 20]), (16, [40, 5, 8], [40, 8, 3]), (64, [6, 20, 16], [6, 16, 24]),
         (8, [7, 1], [1, 9]), (1472, [128, 768], [768, 3072])]


def plan_of(tiles, shape_a, shape_b):
    return poplin.getMatMulPlan(target(tiles), poplar.FLOAT, shape_a, shape_b)


def reference_blocks(plan):
    """(group, im, jn, ik, m0, m1, n0, n1, k0, k1, tile) per non-empty block, one at a time."""
    out = []
    for g in range(plan.groups):
        for im in range(plan.splitM):
            m0, m1 = plan.ranges(plan.m, plan.splitM, im)
            for jn in range(plan.splitN):
                n0, n1 = plan.ranges(plan.n, plan.splitN, jn)
                if m1 > m0 and n1 > n0:
                    for ik in range(plan.splitK):
                        k0, k1 = plan.ranges(plan.k, plan.splitK, ik)
                        out.append((g, im, jn, ik, m0, m1, n0, n1, k0, k1, plan.tile(g, im, jn, ik)))
    return out


def flat_elements(pieces, n):
    """Per owner, the concatenated elements of its pieces."""
    got = [[] for _ in range(n)]
    for o, b, e in zip(pieces.owner.tolist(), pieces.begin.tolist(), pieces.end.tolist()):
        got[o].extend(range(b, e))
    return got


@pytest.mark.parametrize("tiles,shape_a,shape_b", PLANS)
def test_blocks_are_the_plans_blocks_in_order(tiles, shape_a, shape_b):
    plan = plan_of(tiles, shape_a, shape_b)
    blocks = Blocks.of(plan)
    got = list(zip(*(a.tolist() for a in (blocks.group, blocks.im, blocks.jn, blocks.ik, blocks.m0, blocks.m1,
                                           blocks.n0, blocks.n1, blocks.k0, blocks.k1, blocks.tile))))
    assert got == reference_blocks(plan)
    heads = [(g, im, jn) for g, im, jn, ik, *_ in got if ik == 0]
    assert [heads.index((g, im, jn)) for g, im, jn, *_ in got] == blocks.output.tolist()


@pytest.mark.parametrize("tiles,shape_a,shape_b", PLANS[:4])
def test_operand_and_output_pieces_are_the_blocks_elements(tiles, shape_a, shape_b):
    plan = plan_of(tiles, shape_a, shape_b)
    g, m, k, n = plan.groups, plan.m, plan.k, plan.n
    a, b, c = (np.arange(g * x * y).reshape(g, x, y) for x, y in ((m, k), (k, n), (m, n)))
    blocks = Blocks.of(plan)
    for pieces, array, rows, cols in ((blocks.lhs(plan), a, (blocks.m0, blocks.m1), (blocks.k0, blocks.k1)),
                                      (blocks.rhs(plan), b, (blocks.k0, blocks.k1), (blocks.n0, blocks.n1)),
                                      (blocks.out(plan), c, (blocks.m0, blocks.m1), (blocks.n0, blocks.n1))):
        got = flat_elements(pieces, len(blocks))
        for i, gi in enumerate(blocks.group.tolist()):
            r0, r1, c0, c1 = rows[0][i], rows[1][i], cols[0][i], cols[1][i]
            assert got[i] == array[gi, r0:r1, c0:c1].reshape(-1).tolist()


@pytest.mark.parametrize("spread", [False, True])
@pytest.mark.parametrize("tiles,shape_a,shape_b", PLANS)
def test_created_operands_hold_each_block_contiguous_on_its_tiles(tiles, shape_a, shape_b, spread):
    """Each block is one contiguous region: on the tile of its first reader, or (``spread``) in
    equal shares on every tile that reads it."""
    model = poplar.IPUModel()
    model.tilesPerIPU = tiles
    graph = poplar.Graph(model.createDevice())
    plan = poplin.getMatMulPlan(graph.getTarget(), poplar.FLOAT, shape_a, shape_b)
    for lhs in (True, False):
        t = block_major_operand(graph, plan, poplar.FLOAT, lhs, "A" if lhs else "B", spread)
        assert t.shape() == ([plan.groups, plan.m, plan.k] if lhs else [plan.groups, plan.k, plan.n])
        regions = t.flatten().getVarRegions()
        assert sum(i.size() for _, i in regions) == t.numElements()
        assert len({v.index for v, _ in regions}) == 1 and not t.containsAliases()  # every element, once
        readers: dict[tuple, list[int]] = {}
        for gi, im, jn, ik, m0, m1, n0, n1, k0, k1, _ in reference_blocks(plan):
            key = (gi, m0, m1, k0, k1) if lhs else (gi, k0, k1, n0, n1)
            readers.setdefault(key, []).append(plan.tile(gi, im, jn, ik))
        for (gi, r0, r1, c0, c1), tiles_ in readers.items():
            block = t[gi].slice(r0, r1, 0).slice(c0, c1, 1)
            assert block.isContiguous()
            held = [sum(i.size() for i in intervals) for intervals in graph.getTileMapping(block)]
            share = [held[tile] for tile in tiles_] if spread else [held[tiles_[0]]]
            assert sum(share) == block.numElements()
            assert max(share) - min(share) <= 1


@pytest.mark.parametrize("tiles,shape_a,shape_b", PLANS[:4])
def test_a_products_output_lies_block_by_block_on_the_tiles_that_reduce_it(tiles, shape_a, shape_b):
    model = poplar.IPUModel()
    model.tilesPerIPU = tiles
    graph = poplar.Graph(model.createDevice())
    plan = poplin.getMatMulPlan(graph.getTarget(), poplar.FLOAT, shape_a, shape_b)
    blocks = Blocks.of(plan)
    t = block_major_output(graph, plan, blocks, poplar.FLOAT, "out")
    assert t.shape() == [plan.groups, plan.m, plan.n] and t.name == "out"
    regions = t.flatten().getVarRegions()
    assert sum(i.size() for _, i in regions) == t.numElements() and not t.containsAliases()
    shares: dict[tuple, list[int]] = {}
    for gi, *_, m0, m1, n0, n1, _k0, _k1, tile in reference_blocks(plan):
        shares.setdefault((gi, m0, m1, n0, n1), []).append(tile)
    for (gi, r0, r1, c0, c1), tiles_ in shares.items():
        block = t[gi].slice(r0, r1, 0).slice(c0, c1, 1)
        assert block.isContiguous()  # one region of the variable
        size, k = block.numElements(), len(tiles_)
        held = [sum(i.size() for i in intervals) for intervals in graph.getTileMapping(block)]
        assert [held[tile] for tile in tiles_] == [(j + 1) * size // k - j * size // k for j in range(k)]


def test_block_pieces_take_a_share_of_each_block():
    start, pitch = np.array([0, 100, 300, 500]), np.array([10, 7, 3, 20])
    width, rows = np.array([4, 7, 1, 0]), np.array([5, 3, 6, 2])
    first = np.array([3, 0, 2, 0])
    last = np.array([17, 21, 5, 0])
    pieces = block_pieces(start, pitch, width, first, last)
    got = flat_elements(pieces, 4)
    for i in range(4):
        block = [start[i] + r * pitch[i] + c for r in range(rows[i]) for c in range(width[i])]
        assert got[i] == block[first[i]:last[i]]
    assert (pieces.end > pieces.begin).all()


def test_matmul_puts_one_vertex_per_block_on_its_tile():
    model = poplar.IPUModel()
    model.tilesPerIPU = 16
    graph = poplar.Graph(model.createDevice())
    poplin.addCodelets(graph)
    a = graph.addVariable(poplar.FLOAT, [30, 400], "a")
    b = graph.addVariable(poplar.FLOAT, [400, 20], "b")
    graph.setTileMapping(a, 0)
    graph.setTileMapping(b, 1)
    poplin.matMul(graph, a, b, poplar.program.Sequence(), "C")
    plan = poplin.getMatMulPlan(graph.getTarget(), poplar.FLOAT, [30, 400], [400, 20])
    assert plan.splitK > 1
    vertices = graph.freeze().vertices
    names = [vertices.classes[c].vertexName for c in vertices.cls.tolist()]
    products = [i for i, name in enumerate(names) if name.startswith("poplin::MatMulBlock")]
    reduces = [i for i, name in enumerate(names) if name.startswith("poplin::ReducePartials")]
    assert len(products) + len(reduces) == len(names)
    assert vertices.tile[products].tolist() == [t[-1] for t in reference_blocks(plan)]
    assert set(vertices.tile[reduces].tolist()) <= set(vertices.tile[products].tolist())
