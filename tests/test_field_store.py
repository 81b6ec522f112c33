import numpy as np
import pytest

from poplar_py.builder.field_store import FieldStore


def _ids(*vids):
    return np.asarray(vids, np.int64)


def test_sizes_in_bulk_then_one_by_one_the_last_wins():
    store = FieldStore()
    store.set_sizes(0, 1, np.array([3, 4, 5]))
    store.set_sizes(3, 1, np.array([6]))
    store.set_size(1, 1, 9)
    store.set_size(7, 1, 0)
    assert [store.size(v, 1) for v in range(8)] == [3, 9, 5, 6, None, None, None, 0]
    assert store.size(0, 2) is None
    frozen = store.freeze()
    np.testing.assert_array_equal(frozen.sizes(1, _ids(7, 0, 1, 2, 3, 4, 8)), [0, 3, 9, 5, 6, -1, -1])
    np.testing.assert_array_equal(frozen.sizes(5, _ids(0, 1)), [-1, -1])


def test_shared_ragged_and_single_values_read_back_with_their_type():
    store = FieldStore()
    store.share_values(0, 3, 2, np.array([1.5], np.float32))
    store.set_values(3, 2, np.array([1, 2, 3, 4, 5, 6], np.float32), np.array([2, 0, 4]))
    store.set_value(1, 2, np.array([7, 8], np.float32))
    frozen = store.freeze()
    values, counts = frozen.values(2, _ids(0, 1, 2, 3, 4, 5), np.float32)
    np.testing.assert_array_equal(counts, [1, 2, 1, 2, 0, 4])
    np.testing.assert_array_equal(values, [1.5, 7, 8, 1.5, 1, 2, 3, 4, 5, 6])
    np.testing.assert_array_equal(frozen.value(5, 2, np.float32), [3, 4, 5, 6])
    assert frozen.value(6, 2, np.float32) is None and frozen.value(0, 3, np.float32) is None
    np.testing.assert_array_equal(frozen.value_bytes(2, _ids(0, 4, 6)), [4, 0, -1])


def test_raw_gives_the_bytes_of_each_vertex_and_none_apart_from_empty():
    store = FieldStore()
    store.set_values(0, 0, np.array([1, 2, 3], np.int16), np.array([2, 1]))
    store.set_value(3, 0, np.array([], np.int16))
    data, nbytes = store.freeze().raw(0, _ids(1, 2, 3, 0))
    assert nbytes.tolist() == [2, -1, 0, 4]
    assert data.tobytes() == np.array([3, 1, 2], np.int16).tobytes()
    data, nbytes = store.freeze().raw(1, _ids(0))
    assert data.size == 0 and nbytes.tolist() == [-1]


def test_truncate_forgets_the_vertices_from_one_on():
    store = FieldStore()
    store.set_sizes(0, 0, np.array([1, 2]))
    store.set_sizes(2, 0, np.array([3, 4]))
    store.set_size(3, 0, 7)
    store.share_values(2, 2, 1, np.array([5], np.int32))
    store.truncate(3)
    assert [store.size(v, 0) for v in range(4)] == [1, 2, 3, None]
    frozen = store.freeze()
    np.testing.assert_array_equal(frozen.value_bytes(1, _ids(2, 3)), [4, -1])
    store.truncate(0)
    assert not list(store.freeze().items())


@pytest.mark.parametrize("dtype", [np.float16, np.int8, np.uint32, np.float32])
def test_values_of_any_type_come_back_bit_for_bit(dtype):
    store = FieldStore()
    data = np.arange(7).astype(dtype)
    store.set_values(10, 4, data, np.array([3, 4]))
    values, counts = store.freeze().values(4, _ids(11, 10), dtype)
    assert values.dtype == dtype and counts.tolist() == [4, 3]
    np.testing.assert_array_equal(values, np.concatenate([data[3:], data[:3]]))
