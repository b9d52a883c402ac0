"""sampler.core.pieces: (sample, node) requests and their dictionary-encoded ids."""
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as hs

from sampler.core.pieces import Requests, merge, prune


def S(*ids):
    return np.array(ids, dtype="S")


def test_requests_unique_keeps_one_pair_each():
    r = Requests.from_ids(np.array([2, 1, 2, 1]), S("x", "y", "x", "x")).unique()
    assert list(zip(r.samples.tolist(), r.nodes.tolist())) == [(1, b"x"), (1, b"y"), (2, b"x")]


def test_requests_concat_and_take_keep_the_pairs():
    a = Requests.from_ids(np.array([1, 2]), S("b", "a"))
    b = Requests.from_ids(np.array([3, 4, 5]), S("c", "a", "zz"))
    both = Requests.concat([a, b])
    assert both.ids.tolist() == [b"a", b"b", b"c", b"zz"]
    assert both.nodes.tolist() == [b"b", b"a", b"c", b"a", b"zz"]
    part = both.take(np.array([4, 1]))
    assert part.ids.tolist() == [b"a", b"zz"] and part.nodes.tolist() == [b"zz", b"a"]


@settings(max_examples=200, deadline=None)
@given(hs.integers(1, 400), hs.lists(hs.integers(0, 10**6), max_size=120), hs.booleans())
def test_prune_keeps_the_used_ids_in_order_and_renumbers(size, picks, as_bytes):
    """Few codes into a large dictionary (sorted) or many (masked): the same result."""
    dictionary = np.arange(size, dtype=np.int64) * 7 + 3
    if as_bytes:
        dictionary = np.array([b"n%06d" % v for v in dictionary])
    codes = np.array([p % size for p in picks], np.int32)
    kept, renumbered = prune(dictionary, codes)
    used = np.unique(codes)
    np.testing.assert_array_equal(kept, dictionary[used])
    np.testing.assert_array_equal(kept[renumbered], dictionary[codes])
    assert renumbered.dtype == np.int32


@settings(max_examples=100, deadline=None)
@given(hs.lists(hs.lists(hs.integers(0, 5000), unique=True, max_size=60), min_size=1,
                max_size=4), hs.booleans())
def test_merge_joins_dictionaries_of_codes_or_bytes(parts, as_bytes):
    dictionaries = [np.array(sorted(p), np.int64) for p in parts]
    if as_bytes:
        dictionaries = [np.array([b"n%05d" % v for v in d], "S6") for d in dictionaries]
    codes = [np.arange(len(d), dtype=np.int32)[::-1].copy() for d in dictionaries]
    merged, joined = merge(dictionaries, codes)
    expected = np.concatenate([d[c] for d, c in zip(dictionaries, codes)])
    np.testing.assert_array_equal(merged, np.unique(np.concatenate(dictionaries)))
    np.testing.assert_array_equal(merged[joined] if len(joined) else expected, expected)
