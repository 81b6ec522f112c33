"""Graph: variables, constants, clones, tile mappings, initial values, handles."""

from __future__ import annotations

import inspect

import numpy as np
import pytest
from support import element_ids, make_graph

import poplar_py as poplar
from poplar_py import Interval
from poplar_py import program as prog

# ---- helpers ---------------------------------------------------------------------------------


def reference_mapping(tile_of_id: dict[int, int] | np.ndarray, t: poplar.Tensor, num_tiles: int):
    """getTileMapping computed the slow way: per tile, maximal runs of flattened positions."""
    flat = element_ids(t).reshape(-1)
    tiles = [int(tile_of_id[int(i)]) for i in flat]
    result: list[list[tuple[int, int]]] = [[] for _ in range(num_tiles)]
    start = 0
    for k in range(1, len(tiles) + 1):
        if k == len(tiles) or tiles[k] != tiles[start]:
            result[tiles[start]].append((start, k))
            start = k
    return result


def read_back(device, graph, t: poplar.Tensor, programs=None) -> np.ndarray:
    """The values of ``t`` after loading (and running ``programs``) on ``device``."""
    graph.createHostRead("readback", t)
    engine = poplar.Engine(graph, programs or prog.Sequence())
    engine.load(device)
    engine.run(0)
    return engine.readTensor("readback")


# ---- variables ---------------------------------------------------------------------------------

@pytest.mark.parametrize("type_", [poplar.FLOAT, poplar.HALF, poplar.INT, poplar.UNSIGNED_INT,
                                   poplar.SHORT, poplar.UNSIGNED_SHORT, poplar.CHAR, poplar.SIGNED_CHAR,
                                   poplar.UNSIGNED_CHAR, poplar.BOOL])
@pytest.mark.parametrize("shape", [[4], [3, 5], [2, 3, 4], [], [0, 2]])
def test_add_variable(type_, shape):
    _, graph = make_graph(4)
    t = graph.addVariable(type_, shape, "v")
    assert t.shape() == shape
    assert t.elementType() == type_
    assert t.numElements() == int(np.prod(shape))
    assert not t.containsAliases() and not t.containsConstant()
    assert t.isContiguous() == (t.numElements() > 0)


def test_add_variable_type_by_name_and_dtype():
    _, graph = make_graph(4)
    assert graph.addVariable("float", [2]).elementType() == poplar.FLOAT
    assert graph.addVariable(np.int32, [2]).elementType() == poplar.INT
    assert graph.addVariable(np.dtype(np.float16), [2]).elementType() == poplar.HALF


def test_variables_start_unmapped():
    _, graph = make_graph(4)
    t = graph.addVariable(poplar.FLOAT, [6], "v")
    with pytest.raises(poplar.InvalidTileMappingError, match="'v'"):
        graph.getTileMapping(t)
    assert graph.getTileMapping(t, False) == [[], [], [], []]


def test_single_tile_target_maps_to_tile_0():
    _, graph = make_graph(1)
    t = graph.addVariable(poplar.FLOAT, [6], "v")
    assert graph.getTileMapping(t) == [[Interval(0, 6)]]


@pytest.mark.parametrize("n,tiles", [(16, 8), (17, 8), (5, 8), (8, 8), (1000, 7), (1, 4)])
def test_linear_mapping_method(n, tiles):
    _, graph = make_graph(tiles)
    t = graph.addVariable(poplar.FLOAT, [n], poplar.VariableMappingMethod.LINEAR, "lin")
    assert t.name == "lin"
    mapping = graph.getTileMapping(t)
    per_tile = -(-n // tiles)
    expected = [[(b, min(b + per_tile, n))] if b < n else [] for b in range(0, tiles * per_tile, per_tile)]
    assert mapping == expected
    # Also through the name-first spelling, and 2-D shapes map in row-major order.
    t2 = graph.addVariable(poplar.FLOAT, [n, 2], "lin2", poplar.VariableMappingMethod.LINEAR)
    assert sum(iv.size() for ivs in graph.getTileMapping(t2) for iv in ivs) == 2 * n


def test_none_mapping_method_leaves_unmapped():
    _, graph = make_graph(4)
    t = graph.addVariable(poplar.FLOAT, [8], poplar.VariableMappingMethod.NONE)
    assert graph.getTileMapping(t, requireComplete=False) == [[], [], [], []]


# ---- constants ---------------------------------------------------------------------------------

@pytest.mark.parametrize("type_,values", [
    (poplar.FLOAT, [1.0, 1.5, 2.0, 2.5]),
    (poplar.INT, [1, -2, 3, 4]),
    (poplar.UNSIGNED_INT, [0, 1, 2**32 - 1, 7]),
    (poplar.HALF, [0.5, 1.0, -2.0, 65504.0]),
    (poplar.SHORT, [-3, 0, 3, 32767]),
    (poplar.UNSIGNED_CHAR, [0, 1, 128, 255]),
    (poplar.BOOL, [True, False, False, True]),
])
def test_constant_from_list(type_, values):
    device, graph = make_graph(4)
    c = graph.addConstant(type_, [2, 2], values, "c")
    graph.setTileMapping(c, 1)
    assert c.containsConstant() and not c.isParallelWriteable()
    assert c.elementType() == type_ and c.shape() == [2, 2]
    got = read_back(device, graph, c)
    np.testing.assert_array_equal(got, np.asarray(values, dtype=type_.dtype).reshape(2, 2))


@pytest.mark.parametrize("shape", [[5], [2, 3], [], [1]])
def test_constant_scalar_fill(shape):
    device, graph = make_graph(4)
    c = graph.addConstant(poplar.FLOAT, shape, 3.25)
    graph.setTileMapping(c, 3)
    np.testing.assert_array_equal(read_back(device, graph, c), np.full(shape, 3.25, dtype=np.float32))


def test_constant_from_numpy_and_multi_tile():
    device, graph = make_graph(8)
    values = np.arange(24, dtype=np.int32).reshape(4, 6) * 3 - 20
    c = graph.addConstant(poplar.INT, [4, 6], values)
    graph.setTileMapping(c, [[(0, 5)], [], [(5, 20)], [], [], [], [], [(20, 24)]])
    np.testing.assert_array_equal(read_back(device, graph, c), values)
    # A numpy array of another dtype is converted.
    c2 = graph.addConstant(poplar.FLOAT, [3], np.array([1, 2, 3], dtype=np.int64))
    graph.setTileMapping(c2, 0)
    assert c2.elementType() == poplar.FLOAT


@pytest.mark.parametrize("values", [[1.0, 2.0], [1.0] * 5, np.zeros((2, 3)), []])
def test_constant_count_mismatch(values):
    _, graph = make_graph(4)
    with pytest.raises(poplar.PoplarError) as info:
        graph.addConstant(poplar.FLOAT, [4], values, "wrongcount")
    assert "wrongcount" in str(info.value) and "4" in str(info.value)


def test_constant_copied_into_variable():
    device, graph = make_graph(4)
    c = graph.addConstant(poplar.FLOAT, [4], [1.0, 1.5, 2.0, 2.5])
    graph.setTileMapping(c, 0)
    v = graph.addVariable(poplar.FLOAT, [4], "v")
    for i in range(4):
        graph.setTileMapping(v[i], i)
    got = read_back(device, graph, v, prog.Copy(c, v))
    np.testing.assert_array_equal(got, [1.0, 1.5, 2.0, 2.5])


def test_get_variable_and_is_constant():
    _, graph = make_graph(4)
    v = graph.addVariable(poplar.FLOAT, [2, 3], "v")
    c = graph.addConstant(poplar.INT, [2], [1, 2], "c")
    (vref, _), = v[1].getVarRegions()
    (cref, _), = c.getVarRegions()
    assert graph.getVariable(vref) == v
    assert graph.getVariable(cref) == c
    assert not graph.isConstant(vref) and graph.isConstant(cref)


# ---- clone -------------------------------------------------------------------------------------

def test_clone_keeps_shape_type_and_mapping():
    _, graph = make_graph(8)
    t = graph.addVariable(poplar.HALF, [4, 5], "orig")
    rng = np.random.default_rng(0)
    tiles = rng.integers(0, 8, size=20)
    for k, tile in enumerate(tiles):
        graph.setTileMapping(t.flatten()[k], int(tile))
    for c in (graph.clone(t), graph.clone(t, "named")):
        assert c.shape() == [4, 5] and c.elementType() == poplar.HALF
        assert not c.intersectsWith(t)
        assert graph.getTileMapping(c) == graph.getTileMapping(t)
    typed = graph.clone(poplar.FLOAT, t, "typed")
    assert typed.elementType() == poplar.FLOAT and typed.name == "typed"
    assert graph.getTileMapping(typed) == graph.getTileMapping(t)
    # A view: the clone gets the view's shape and the mapping of the viewed elements; by
    # default its elements keep the view's memory order (a transposed view's clone is one too).
    view = t.transpose()[1:3]
    for method, contiguous in ((None, False), (poplar.TensorCloneMethod.PRESERVE_ORDER_UNLESS_ALIASES, False),
                               (poplar.TensorCloneMethod.CREATE_NEW_ORDER, True)):
        cv = graph.clone(view, "view") if method is None else graph.clone(view, "view", method)
        assert cv.shape() == [2, 4] and cv.name == "view"
        assert graph.getTileMapping(cv) == graph.getTileMapping(view)
        assert cv.isContiguous() == contiguous
        if not contiguous:  # t's columns 1 and 2, row after row in t's memory: so in the clone's
            assert cv.transpose().isContiguous()


def test_clone_keeps_each_tiles_part_one_region():
    """Poplar's default (PRESERVE_ORDER_UNLESS_ALIASES): the clone of a block-major view (each
    tile's 2x2 block contiguous) holds each block contiguous too; CREATE_NEW_ORDER, or aliases,
    give the row-major order."""
    _, graph = make_graph(4)
    flat = graph.addVariable(poplar.FLOAT, [16], "blocks")
    blocks = [flat.slice(4 * b, 4 * b + 4).reshape([2, 2]) for b in range(4)]
    for b in range(4):
        graph.setTileMapping(blocks[b], b)
    t = poplar.concat([poplar.concat(blocks[:2], 1), poplar.concat(blocks[2:], 1)], 0)  # [4, 4]
    c = graph.clone(t, "c")
    assert graph.getTileMapping(c) == graph.getTileMapping(t)
    for b in range(4):
        r, k = 2 * (b // 2), 2 * (b % 2)
        assert c[r:r + 2, k:k + 2].isContiguous() and not t[r:r + 2, :].isContiguous()
    new = graph.clone(t, "n", poplar.TensorCloneMethod.CREATE_NEW_ORDER)
    assert new.isContiguous()
    aliased = poplar.concat([t[0], t[0]]).reshape([2, 4])
    assert graph.clone(aliased, "a").isContiguous()


def test_clone_of_partly_mapped_keeps_unmapped():
    _, graph = make_graph(4)
    t = graph.addVariable(poplar.FLOAT, [4])
    graph.setTileMapping(t[1:3], 2)
    c = graph.clone(t)
    assert graph.getTileMapping(c, False) == [[], [], [Interval(1, 3)], []]


@pytest.mark.parametrize("n", [1, 3])
def test_clone_n(n):
    _, graph = make_graph(8)
    t = graph.addVariable(poplar.INT, [2, 3], "base")
    graph.setTileMapping(t, [[(0, 2)], [], [(2, 3)], [(3, 6)]])
    cn = graph.cloneN(t, n)
    assert cn.shape() == [n, 2, 3] and cn.elementType() == poplar.INT
    assert not cn.containsAliases() and not cn.intersectsWith(t)
    for i in range(n):
        assert graph.getTileMapping(cn[i]) == graph.getTileMapping(t)
        for j in range(i):
            assert not cn[i].intersectsWith(cn[j])


# ---- tile mapping ------------------------------------------------------------------------------

def test_set_tile_mapping_per_element_and_whole():
    _, graph = make_graph(8)
    v = graph.addVariable(poplar.FLOAT, [4], "v")
    for i in range(4):
        graph.setTileMapping(v[i], i)
    assert graph.getTileMapping(v) == [[(0, 1)], [(1, 2)], [(2, 3)], [(3, 4)], [], [], [], []]
    graph.setTileMapping(v, 5)  # re-mapping overrides
    assert graph.getTileMapping(v) == [[], [], [], [], [], [(0, 4)], [], []]
    graph.setTileMapping(v[1:3], np.int64(7))
    assert graph.getTileMapping(v) == [[], [], [], [], [], [(0, 1), (3, 4)], [], [(1, 3)]]


def test_interval_mapping_is_over_the_flattened_view():
    _, graph = make_graph(4)
    m = graph.addVariable(poplar.FLOAT, [3, 4], "m")
    # Map the transposed view: flattened position k of m.T is element m[k % 3][k // 3].
    graph.setTileMapping(m.transpose(), [[(0, 3)], [(3, 6), (9, 12)], [(6, 9)]])
    expected = np.array([[0, 1, 2, 1]] * 3)
    tiles = {int(i): int(expected.reshape(-1)[k]) for k, i in enumerate(element_ids(m).reshape(-1))}
    assert graph.getTileMapping(m) == reference_mapping(tiles, m, 4)
    assert graph.getTileMapping(m) == [[(0, 1), (4, 5), (8, 9)], [(1, 2), (3, 4), (5, 6), (7, 8), (9, 10),
                                                                  (11, 12)], [(2, 3), (6, 7), (10, 11)], []]
    assert graph.getTileMapping(m.transpose()) == [[(0, 3)], [(3, 6), (9, 12)], [(6, 9)], []]


def test_interval_mapping_accepts_interval_objects_and_partial():
    _, graph = make_graph(4)
    v = graph.addVariable(poplar.FLOAT, [10])
    graph.setTileMapping(v, [[Interval(0, 4)], [], [Interval(6, 10)]])
    assert graph.getTileMapping(v, False) == [[(0, 4)], [], [(6, 10)], []]
    with pytest.raises(poplar.InvalidTileMappingError, match="element 4"):
        graph.getTileMapping(v)


VIEWS = [
    ("whole", lambda t: t),
    ("transpose", lambda t: t.transpose()),
    ("row-slice", lambda t: t.slice(2, 5)),
    ("col-slice", lambda t: t.slice(1, 4, 1)),
    ("reverse", lambda t: t.reverse(1)),
    ("broadcast", lambda t: t[1].broadcast(3, 0)),
    ("subSample", lambda t: t.subSample(2, 0).subSample(3, 1)),
    ("concat", lambda t: poplar.concat([t[5], t[0], t.transpose()[2]])),
    ("scalar", lambda t: t[3][2]),
    ("empty", lambda t: t.slice(2, 2)),
]


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("name,view", VIEWS, ids=[v[0] for v in VIEWS])
def test_get_tile_mapping_of_views(seed, name, view):
    _, graph = make_graph(8)
    t = graph.addVariable(poplar.FLOAT, [6, 5], "t")
    rng = np.random.default_rng(seed)
    # Random blocks of elements on random tiles (runs of 1..4 elements).
    tile_of_id, pos = {}, 0
    flat = t.flatten()
    while pos < 30:
        n = int(rng.integers(1, 5))
        tile = int(rng.integers(0, 8))
        graph.setTileMapping(flat.slice(pos, min(pos + n, 30)), tile)
        for k in range(pos, min(pos + n, 30)):
            tile_of_id[int(element_ids(flat)[k])] = tile
        pos += n
    v = view(t)
    got = graph.getTileMapping(v)
    assert got == reference_mapping(tile_of_id, v, 8)
    assert all(isinstance(iv, Interval) for ivs in got for iv in ivs)


def test_get_tile_mapping_intervals_are_maximal():
    _, graph = make_graph(4)
    t = graph.addVariable(poplar.FLOAT, [4, 4])
    graph.setTileMapping(t, 2)
    # Many separate regions of the same variable, all on tile 2: one interval.
    assert graph.getTileMapping(t.transpose()) == [[], [], [(0, 16)], []]
    assert graph.getTileMapping(t.broadcast(2, 0)) == [[], [], [(0, 32)], []]


@pytest.mark.parametrize("tile", [8, 100, -1])
def test_tile_out_of_range(tile):
    _, graph = make_graph(8)
    t = graph.addVariable(poplar.FLOAT, [4], "farvar")
    with pytest.raises(poplar.InvalidTileMappingError) as info:
        graph.setTileMapping(t, tile)
    assert str(tile) in str(info.value) and "farvar" in str(info.value)


def test_interval_mapping_tile_out_of_range():
    _, graph = make_graph(4)
    t = graph.addVariable(poplar.FLOAT, [4], "farvar")
    with pytest.raises(poplar.InvalidTileMappingError) as info:
        graph.setTileMapping(t, [[(0, 2)], [], [], [], [], [(2, 4)]])
    assert "tile 5" in str(info.value) and "farvar" in str(info.value)
    # Empty entries beyond the tile count are harmless.
    graph.setTileMapping(t, [[(0, 4)], [], [], [], [], []])


@pytest.mark.parametrize("interval", [(0, 5), (3, 2), (-1, 2), (0, 1 << 70)])
def test_interval_mapping_outside_tensor(interval):
    _, graph = make_graph(4)
    t = graph.addVariable(poplar.FLOAT, [4], "short")
    with pytest.raises(poplar.InvalidTileMappingError, match="short"):
        graph.setTileMapping(t, [[interval]])


def test_map_intervals_maps_from_arrays_as_set_tile_mapping_does():
    _, graph = make_graph(4)
    m = graph.addVariable(poplar.FLOAT, [3, 4], "m")
    graph.map_intervals(m.transpose(), np.array([0, 3, 9, 6, 7]), np.array([3, 6, 12, 9, 8]),
                             np.array([0, 1, 1, 2, 3]))  # the last interval wins over [6, 9)
    assert graph.getTileMapping(m.transpose()) == [[(0, 3)], [(3, 6), (9, 12)], [(6, 7), (8, 9)], [(7, 8)]]
    with pytest.raises(poplar.InvalidTileMappingError, match="tensor 'm': tile 4 is out of range"):
        graph.map_intervals(m, np.array([0, 2]), np.array([2, 4]), np.array([1, 4]))
    with pytest.raises(poplar.InvalidTileMappingError, match=r"tensor 'm': interval \[10, 13\) is outside"):
        graph.map_intervals(m, np.array([0, 10]), np.array([2, 13]), np.array([1, 1]))
    assert graph.getTileMapping(m.transpose())[0] == [(0, 3)]  # a failed call maps nothing


def test_set_tile_mapping_rejects_non_tensors():
    _, graph = make_graph(4)
    with pytest.raises(poplar.PoplarError):
        graph.setTileMapping(np.zeros(3), 0)


def test_incomplete_mapping_message_names_element():
    _, graph = make_graph(4)
    t = graph.addVariable(poplar.FLOAT, [3, 3], "partial")
    graph.setTileMapping(t[0], 1)
    graph.setTileMapping(t[2], 1)
    with pytest.raises(poplar.InvalidTileMappingError) as info:
        graph.getTileMapping(t)
    assert "partial" in str(info.value) and "element 3" in str(info.value)
    assert graph.getTileMapping(t[2]) == [[], [(0, 3)], [], []]
    assert graph.getTileMapping(t, requireComplete=False) == [[], [(0, 3), (6, 9)], [], []]


# ---- initial values ----------------------------------------------------------------------------

def test_set_initial_value_whole_variable():
    device, graph = make_graph(8)
    v = graph.addVariable(poplar.FLOAT, [2, 4], poplar.VariableMappingMethod.LINEAR, "v")
    values = np.arange(8, dtype=np.float32).reshape(2, 4) / 4
    graph.setInitialValue(v, values)
    np.testing.assert_array_equal(read_back(device, graph, v), values)


def test_set_initial_value_views_scalar_and_list():
    device, graph = make_graph(8)
    v = graph.addVariable(poplar.INT, [3, 4], poplar.VariableMappingMethod.LINEAR, "v")
    graph.setInitialValue(v, 7)  # scalar fill
    graph.setInitialValue(v[1], [1, 2, 3, 4])
    graph.setInitialValue(v.transpose()[3], np.array([-1, -2, -3], dtype=np.int32))
    expected = np.full((3, 4), 7)
    expected[1] = [1, 2, 3, 4]
    expected[:, 3] = [-1, -2, -3]
    np.testing.assert_array_equal(read_back(device, graph, v), expected)


def test_set_initial_value_unset_elements_are_zero_and_multi_variable():
    device, graph = make_graph(4)
    a = graph.addVariable(poplar.FLOAT, [3], "a")
    b = graph.addVariable(poplar.FLOAT, [3], "b")
    graph.setTileMapping(a, 0)
    graph.setTileMapping(b, 3)
    graph.setInitialValue(poplar.concat([a[2:3], b[0:1]]), [5.0, 6.0])
    both = poplar.concat([a, b])
    np.testing.assert_array_equal(read_back(device, graph, both), [0, 0, 5, 6, 0, 0])


def test_set_initial_value_through_reinterpret():
    device, graph = make_graph(4)
    v = graph.addVariable(poplar.FLOAT, [2], "v")
    graph.setTileMapping(v, 0)
    bits = np.array([1.5, -2.0], dtype=np.float32).view(np.int32)
    graph.setInitialValue(v.reinterpret(poplar.INT), bits)
    np.testing.assert_array_equal(read_back(device, graph, v), [1.5, -2.0])


def test_set_initial_value_errors():
    _, graph = make_graph(4)
    v = graph.addVariable(poplar.FLOAT, [4], "initvar")
    with pytest.raises(poplar.PoplarError, match="initvar"):
        graph.setInitialValue(v, [1.0, 2.0])
    c = graph.addConstant(poplar.FLOAT, [2], 1.0, "aconst")
    with pytest.raises(poplar.PoplarError, match="aconst"):
        graph.setInitialValue(c, [3.0, 4.0])


def test_initial_value_survives_runs_until_overwritten():
    device, graph = make_graph(4)
    v = graph.addVariable(poplar.INT, [4], poplar.VariableMappingMethod.LINEAR, "v")
    graph.setInitialValue(v, [4, 3, 2, 1])
    graph.createHostRead("r", v)
    engine = poplar.Engine(graph, prog.Sequence([prog.Copy(v.reverse(0), v)]))
    engine.load(device)
    np.testing.assert_array_equal(engine.readTensor("r"), [4, 3, 2, 1])
    engine.run(0)
    np.testing.assert_array_equal(engine.readTensor("r"), [1, 2, 3, 4])
    engine.load(device)  # a new load starts again from the initial values
    np.testing.assert_array_equal(engine.readTensor("r"), [4, 3, 2, 1])


# ---- handles and streams -----------------------------------------------------------------------

@pytest.mark.parametrize("first,second", [
    ("write", "write"), ("write", "read"), ("read", "h2d"), ("h2d", "d2h"), ("d2h", "write"), ("h2d", "h2d"),
])
def test_duplicate_handle_names(first, second):
    _, graph = make_graph(4)
    t = graph.addVariable(poplar.FLOAT, [4])
    make = {
        "write": lambda: graph.createHostWrite("dup", t),
        "read": lambda: graph.createHostRead("dup", t),
        "h2d": lambda: graph.addHostToDeviceFIFO("dup", poplar.FLOAT, 4),
        "d2h": lambda: graph.addDeviceToHostFIFO("dup", poplar.FLOAT, 4),
    }
    make[first]()
    with pytest.raises(poplar.PoplarError, match="'dup'"):
        make[second]()


def test_host_write_to_a_constant_is_refused():
    _, graph = make_graph(4)
    c = graph.addConstant(poplar.FLOAT, [4], 1.0, "fixed")
    with pytest.raises(poplar.PoplarError, match=r"'fixed'.*constants"):
        graph.createHostWrite("w", c)
    graph.createHostRead("r", c)


def test_data_stream_metadata():
    _, graph = make_graph(4)
    s = graph.addHostToDeviceFIFO("in", poplar.INT, 10)
    assert s.handle() == "in" and s.elementType() == poplar.INT and s.numElements() == 10
    o = graph.addDeviceToHostFIFO("out", "float", 3)
    assert o.elementType() == poplar.FLOAT and o.numElements() == 3


def test_graph_from_device_or_target():
    device, _ = make_graph(4)
    assert poplar.Graph(device).getTarget() == device.getTarget()
    assert poplar.Graph(device.getTarget()).getTarget().getNumTiles() == 4
    with pytest.raises(poplar.PoplarError):
        poplar.Graph("ipu2")


def test_functions_and_compute_sets_get_ids():
    _, graph = make_graph(4)
    f0 = graph.addFunction(prog.Sequence())
    f1 = graph.addFunction(prog.Sequence())
    assert (f0.getId(), f1.getId()) == (0, 1)
    cs = graph.addComputeSet("mycs")
    assert cs.getId() == 0 and cs.name == "mycs"
    assert graph.addComputeSet().getId() == 1


# ---- mapping records and the frozen IR ---------------------------------------------------------

@pytest.mark.parametrize("seed", range(8))
def test_overlapping_mapping_records_match_a_per_element_model(seed):
    """Mapping records of many views, overlapping in any order, queried in between: the last
    record for an element decides, as if every element had its own tile."""
    rng = np.random.default_rng(seed)
    _, graph = make_graph(8)
    t = graph.addVariable(poplar.FLOAT, [7, 9], "t")
    u = graph.addVariable(poplar.FLOAT, [20], "u")
    model: dict[int, int] = {}
    views = [lambda: t, lambda: t.transpose(), lambda: t[int(rng.integers(7))],
             lambda: t.slice(int(rng.integers(0, 4)), int(rng.integers(4, 9)), 1).subSample(2, 0),
             lambda: poplar.concat([u.slice(3, 9), t[2], u[15:]]), lambda: u.reverse(0)[::3],
             lambda: t.flatten()[int(rng.integers(0, 60)):]]
    for step in range(30):
        if step % 10 == 9:  # freezing keeps the mapping it gave, in fewer records
            check_frozen(graph.freeze(), model)
        view = views[int(rng.integers(len(views)))]()
        ids = element_ids(view).reshape(-1)
        if rng.integers(2):
            tile = int(rng.integers(8))
            graph.setTileMapping(view, tile)
            model.update({int(i): tile for i in ids})
        else:
            n = ids.size
            cuts = np.sort(rng.integers(0, n + 1, 3))
            mapping = [[] for _ in range(8)]
            for b, e in zip([0, *cuts], [*cuts, n]):
                tile = int(rng.integers(8))
                mapping[tile].append((int(b), int(e)))
            graph.setTileMapping(view, mapping)
            for tile, intervals in enumerate(mapping):
                for b, e in intervals:
                    model.update({int(i): tile for i in ids[b:e]})
        probe = views[int(rng.integers(len(views)))]()
        got = graph.getTileMapping(probe, requireComplete=False)
        # unmapped elements (-1) land in the reference's ninth list, which is not compared
        expected = reference_mapping({i: model.get(i, -1) for i in element_ids(probe).reshape(-1).tolist()},
                                     probe, 9)
        assert got == expected[:8]
    check_frozen(graph.freeze(), model)


def check_frozen(ir, model: dict[int, int]) -> None:
    """The frozen mapping (all at once; each variable starts an interval) is the model's."""
    gids = np.arange(ir.variables.num_elements)
    tiles = ir.mapping_tiles[ir.mapping.find(gids)]
    np.testing.assert_array_equal(tiles, [model.get(int(i), -1) for i in gids])
    assert set(ir.variables.bases.tolist()) <= set(ir.mapping.starts.tolist())


def test_one_element_constants_converted_in_bulk_hold_what_each_alone_would():
    """Plain numbers wait in a pool and are cast per element type when the graph is frozen:
    integers wrap, floats overflow to infinity, as one cast of each would do."""
    _, graph = make_graph(2)
    cases = [(poplar.FLOAT, 2.5), (poplar.FLOAT, 7), (poplar.HALF, 1e6), (poplar.UNSIGNED_CHAR, 300),
             (poplar.INT, True), (poplar.INT, -(1 << 40)), (poplar.SHORT, 2.0 ** 70), (poplar.BOOL, 0.0),
             (poplar.UNSIGNED_INT, (1 << 63) + 5), (poplar.FLOAT, np.float32(0.1))]  # last two: not pooled
    made = [graph.addConstant(t, [], v) for t, v in cases[:6]]
    first = graph.freeze()
    made += [graph.addConstant(t, [], v) for t, v in cases[6:]]
    initial = dict(graph.freeze().initial)
    assert len(dict(first.initial)) == 6
    with np.errstate(all="ignore"):
        for (type_, value), c in zip(cases, made):
            var = c.runs().var[0]
            np.testing.assert_array_equal(initial[var], np.asarray(value).reshape(-1).astype(type_.dtype))
            assert initial[var].dtype == type_.dtype


def test_initial_values_set_after_freezing_do_not_reach_the_frozen_ir():
    _, graph = make_graph(2)
    t = graph.addVariable(poplar.INT, [4], "t")
    graph.setInitialValue(t, [1, 2, 3, 4])
    first = dict(graph.freeze().initial)
    graph.setInitialValue(t[1:3], [7, 8])
    assert first[0].tolist() == [1, 2, 3, 4]
    assert dict(graph.freeze().initial)[0].tolist() == [1, 7, 8, 4]


def test_freeze_gives_an_immutable_ir_that_prints():
    device, graph = make_graph(4)
    t = graph.addVariable(poplar.INT, [8], "numbers")
    graph.setTileMapping(t, [[(0, 3)], [(3, 8)]])
    c = graph.addConstant(poplar.INT, [2], [5, 6], "five")
    graph.setTileMapping(c, 2)
    graph.createHostRead("r", t)
    ir = graph.freeze()
    text = str(ir)
    assert "'numbers' int [8]: [0,3)->0 [3,8)->1" in text
    assert "constant 'five'" in text and "host handles: r" in text
    assert ir.variables.num_elements == 10 and ir.mapping_tiles.tolist() == [0, 1, 2]
    # Later changes to the graph do not reach an IR (or an Engine) already built.
    engine = poplar.Engine(graph, prog.Sequence([prog.Copy(c, t.slice(0, 2))]))
    graph.setTileMapping(t, 3)
    graph.addVariable(poplar.FLOAT, [100], "later")
    assert ir.mapping_tiles.tolist() == [0, 1, 2] and len(ir.variables) == 2
    engine.load(device)
    engine.run(0)
    np.testing.assert_array_equal(engine.readTensor("r")[:2], [5, 6])
    tile3 = engine.getProfile()["compilation"]["tiles"][3]["memory"]["byCategory"]
    assert "variables" not in tile3


# ---- codelets: one definition per vertex type ---------------------------------------------------

def _writer(value: float) -> type[poplar.Vertex]:
    """A vertex class named ``Writer`` that writes ``value``: each call defines another class."""
    if value == 1.0:
        class Writer(poplar.Vertex):
            out: poplar.Output[float]

            def compute(self):
                self.out = 1.0
    else:
        class Writer(poplar.Vertex):  # a second class of the same name: the point
            out: poplar.Output[float]

            def compute(self):
                self.out = 2.0
    return Writer


def _run_writer(device, graph) -> float:
    out = graph.addVariable(poplar.FLOAT, [], "out")
    graph.setTileMapping(out, 0)
    cs = graph.addComputeSet("write")
    graph.setTileMapping(graph.addVertex(cs, "Writer", {"out": out}), 0)
    return float(read_back(device, graph, out, prog.Execute(cs)))


def test_add_codelets_refuses_another_class_of_a_taken_name():
    first, second = _writer(1.0), _writer(2.0)
    lines = [inspect.getsourcelines(c)[1] for c in (first, second)]
    device, graph = make_graph()
    both = (rf"vertex 'Writer' of class .*_writer\.<locals>\.Writer \(.*test_graph\.py:{lines[1]}\) is "
            rf"already defined by class .*Writer \(.*test_graph\.py:{lines[0]}\)")
    with pytest.raises(poplar.CodeletCompileError, match=both):
        graph.addCodelets([first, second])  # in one call: nothing is registered
    assert not graph.hasCodelet("Writer")
    assert graph.addCodelets(first) and not graph.addCodelets([first, first])  # the same class: allowed
    with pytest.raises(poplar.CodeletCompileError, match=both):
        graph.addCodelets(second)  # in a later call
    assert _run_writer(device, graph) == 1.0
    device, other = make_graph()  # the rule is per graph: another graph takes the other class
    other.addCodelets(second)
    assert _run_writer(device, other) == 2.0
