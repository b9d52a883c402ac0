"""The core's sorting primitives give what their numpy spellings give, for any input."""
import dataclasses
import subprocess
import sys

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as hs

from sampler.core.adjacency import canonical_adjacency
from sampler.core.arrays import (KEY_BYTES, LOOKUP_TABLE_FACTOR, SortedIndex, argsort, byte_keys,
                                  offsets, run_starts, unique, unique_inverse)
from tests.conftest import REPO_ROOT

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


# Byte-string ids: a few prefixes, tails of 0-10 bytes (some past KEY_BYTES, some with
# NULs inside or at the end, which 'S' drops), so that ids with and without integer keys,
# and values lacking the dictionary's prefix, all occur.
_TAILS = hs.binary(max_size=10)
_IDS = hs.lists(hs.tuples(hs.sampled_from([b"", b"paper/", b"paper/1", b"author/"]), _TAILS)
                .map(lambda t: t[0] + t[1]), max_size=120)


def _as_ids(values: list[bytes], width: int) -> np.ndarray:
    return np.array(values, f"S{max(width, max(map(len, values), default=1), 1)}")


@settings(max_examples=400, deadline=None)
@given(_IDS, _IDS, hs.integers(0, 14), hs.integers(0, 14))
def test_byte_string_ids_sort_and_are_found_as_numpy_does(ids, queries, width, query_width):
    ids, queries = _as_ids(ids, width), _as_ids(queries, query_width)
    expected = np.unique(ids)
    np.testing.assert_array_equal(unique(ids), expected)
    assert unique(ids).dtype == expected.dtype
    distinct, inverse = unique_inverse(ids)
    np.testing.assert_array_equal(distinct, expected)
    np.testing.assert_array_equal(distinct[inverse], ids)
    keyed = byte_keys(ids)
    if keyed is not None:  # the keys order and compare as the ids do, and give them back
        np.testing.assert_array_equal(np.argsort(keyed.keys, kind="stable"),
                                      np.argsort(ids, kind="stable"))
        np.testing.assert_array_equal(keyed.to_bytes(keyed.keys), ids)
    index = SortedIndex(expected)
    pos = np.minimum(np.searchsorted(expected, queries), max(len(expected) - 1, 0))
    found = (np.where(expected[pos] == queries, pos, -1) if len(expected)
             else np.full(len(queries), -1))
    for _ in range(2):  # the dictionary's keys are made by the first call and reused
        np.testing.assert_array_equal(index.positions(queries), found)
    rows = np.arange(len(ids), dtype=np.int64)[::-1].copy()
    np.testing.assert_array_equal(canonical_adjacency(ids, ids[::-1].copy(), rows),
                                  np.lexsort((rows, ids[::-1], ids)))


def test_byte_keys_need_a_shared_prefix_and_a_short_tail():
    assert byte_keys(np.array([b"paper/1", b"paper/22"])).prefix == b"paper/"
    assert byte_keys(np.array([b"a" * (KEY_BYTES + 1), b"b"])) is None
    assert byte_keys(np.array([b"paper/1"]), prefix=b"author/") is None
    assert byte_keys(np.array([1, 2])) is None
    # Many lookups into a small dictionary go through a hash table: same answers.
    ordered = np.array([b"paper/%d" % i for i in range(50)])
    ordered.sort()
    queries = np.array([b"paper/%d" % i for i in range(-20, 80)] * 10)
    expected = [int(np.flatnonzero(ordered == q)[0]) if q in ordered else -1 for q in queries]
    np.testing.assert_array_equal(SortedIndex(ordered).positions(queries), expected)


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


def test_byte_string_lookups_leave_pandas_unimported():
    # pyarrow imports pandas (a quarter second) for pa.array(ndarray), pa.scalar and
    # to_numpy, where pandas is installed, as in the suite's virtualenv.
    script = ("import sys, numpy as np\n"
              "from sampler.core.arrays import SortedIndex, unique, unique_inverse\n"
              "ids = np.array([b'paper/%d' % i for i in range(400)])\n"
              "SortedIndex(unique(ids)).positions(np.concatenate([ids, [b'x', b'paper/x']]))\n"
              "unique_inverse(ids)\n"
              "print('pandas' in sys.modules)\n")
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         cwd=REPO_ROOT, timeout=120)
    assert run.stdout.strip() == "False", run.stderr[-2000:]
