"""The core's sorting primitives give what their numpy spellings give, for any input."""
import dataclasses

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as hs

from sampler.core.arrays import (LOOKUP_TABLE_FACTOR, SortedIndex, argsort, offsets, run_starts,
                                  unique, unique_inverse)

# Narrow values (packed with their index), wide ones (too wide to pack), negatives and
# unsigned, so every branch is taken.
_VALUES = hs.one_of(
    hs.lists(hs.integers(0, 50), max_size=300).map(lambda v: np.array(v, np.int64)),
    hs.lists(hs.integers(-40, 40), max_size=300).map(lambda v: np.array(v, np.int64)),
    hs.lists(hs.integers(0, 5000), max_size=300).map(lambda v: np.array(v, np.uint32)),
    hs.lists(hs.integers(-2**62, 2**62), max_size=300).map(lambda v: np.array(v, np.int64)),
    hs.lists(hs.integers(0, 2**40), max_size=300).map(lambda v: np.array(v, np.int64)),
    hs.lists(hs.integers(0, 2**31 - 1), max_size=300).map(lambda v: np.array(v, np.int32)),
    hs.lists(hs.integers(0, 2**64 - 1), max_size=50).map(lambda v: np.array(v, np.uint64)),
)


@settings(max_examples=300, deadline=None)
@given(_VALUES)
def test_argsort_is_numpys_stable_argsort(values):
    np.testing.assert_array_equal(argsort(values), np.argsort(values, kind="stable"))


@settings(max_examples=300, deadline=None)
@given(_VALUES)
def test_unique_inverse_is_numpys(values):
    distinct, inverse = unique_inverse(values)
    expected, expected_inverse = np.unique(values, return_inverse=True)
    np.testing.assert_array_equal(distinct, expected)
    np.testing.assert_array_equal(inverse, expected_inverse.reshape(-1))
    np.testing.assert_array_equal(unique(values), expected)


def test_argsort_packs_a_large_narrow_array():
    # 2**17 values below 2**20: packed (37 bits), and ties keep their order.
    values = np.random.default_rng(0).integers(0, 2**20, 2**17)
    np.testing.assert_array_equal(argsort(values), np.argsort(values, kind="stable"))


@settings(max_examples=300, deadline=None)
@given(hs.lists(hs.integers(0, 3000), unique=True, max_size=200),
       hs.lists(hs.integers(-5, 3500), max_size=100), hs.booleans(),
       hs.sampled_from([4, LOOKUP_TABLE_FACTOR]))
def test_sorted_index_finds_what_a_search_finds(ordered, values, as_bytes, table_factor):
    ordered = np.array(sorted(ordered), np.int64)
    values = np.array(values, np.int64)
    if as_bytes:  # ids as byte strings: searched
        ordered, values = ordered.astype("S"), values.astype("S")
        ordered = np.sort(ordered)
    index = SortedIndex(ordered, table_factor)
    pos = np.minimum(np.searchsorted(ordered, values), max(len(ordered) - 1, 0))
    expected = (np.where(ordered[pos] == values, pos, -1) if len(ordered)
                else np.full(len(values), -1))
    for _ in range(2):  # the lookup array is built by the first call and reused
        np.testing.assert_array_equal(index.positions(values), expected)


def test_sorted_index_gathers_codes_and_maps_its_table_beside_mapped_arrays(tmp_path):
    codes = np.array([0, 2, 3, 7], np.int64)
    dense = SortedIndex(codes)
    assert dense.positions(np.array([7, 1, 0, 9])).tolist() == [3, -1, 0, -1]
    assert dense._by_code is not None  # a gather table of 8 entries
    identity = SortedIndex(np.arange(5))
    assert identity.positions(np.array([4, 0, 5, -1])).tolist() == [4, 0, -1, -1]
    assert identity._by_code is None  # the codes are the positions
    path = tmp_path / "codes.npy"
    np.save(path, codes)
    mapped = SortedIndex(np.load(path, mmap_mode="r"))
    assert mapped.positions(np.array([7, 1])).tolist() == [3, -1]
    # Over a graph store's arrays the table is page cache (a mapped temporary file).
    assert isinstance(mapped._by_code, np.memmap)
    assert not isinstance(dense._by_code, np.memmap)


def test_index_beside_is_kept_off_the_fields_and_follows_a_replaced_array():
    from sampler.core.node_table import NodeTableBucket

    table = NodeTableBucket("paper", np.array([1, 4, 5]), {})
    assert table.positions_of(np.array([5, 2])).tolist() == [2, -1]
    first = table.__dict__["_index"]
    assert table.positions_of(np.array([1])).tolist() == [0] and table.__dict__["_index"] is first
    table.ids = np.array([2, 5])  # replaced: the lookup is made again
    assert table.positions_of(np.array([5, 2])).tolist() == [1, 0]
    assert "_index" not in {f.name for f in dataclasses.fields(table)}


@settings(max_examples=200, deadline=None)
@given(hs.lists(hs.tuples(hs.integers(0, 3), hs.integers(0, 3)), max_size=60))
def test_run_starts_and_offsets_are_their_numpy_spellings(rows):
    a = np.array([r[0] for r in rows], np.int64)
    b = np.array([r[1] for r in rows], np.int32)
    if len(rows):
        np.testing.assert_array_equal(run_starts(a), np.r_[True, a[1:] != a[:-1]])
        np.testing.assert_array_equal(run_starts(a, b),
                                      np.r_[True, (a[1:] != a[:-1]) | (b[1:] != b[:-1])])
    else:
        assert run_starts(a).shape == (0,) and run_starts(a).dtype == bool
    np.testing.assert_array_equal(offsets(b), np.r_[0, np.cumsum(b)])
    assert offsets(b).dtype == np.int64
