"""Hashed categories: the same buckets on every machine and run (pinned values), spread
over the buckets, changed by the salt."""
import pickle
import subprocess
import sys

import numpy as np
from hypothesis import given, settings, strategies as st

from sampler.features import hashing
from sampler.features.hashing import Hasher, hash_buckets
from sampler.features.values import as_bytes


def test_pinned_buckets():
    """These numbers are a promise: a model trained on them must find the same buckets
    with any later version (change them only with a format change)."""
    strings = as_bytes(np.array([b"", b"a", b"abcdefgh", b"abcdefghi", "é".encode()], object))
    assert hash_buckets(strings, 1000, 7).tolist() == [572, 287, 476, 196, 811]
    ints = np.array([0, -1, 5, 2**62, -2**63])
    assert hash_buckets(ints, 1000, 7).tolist() == [705, 480, 743, 270, 192]


def test_the_same_in_another_process():
    code = ("import numpy as np; from sampler.features.hashing import hash_buckets;"
            "print(hash_buckets(np.array([b'tag/1', b'tag/2'], 'S'), 97, 3).tolist())")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, env={"PYTHONHASHSEED": "123"}).stdout
    assert out.strip() == str(hash_buckets(np.array([b"tag/1", b"tag/2"], "S"), 97, 3).tolist())


def test_buckets_spread_and_the_salt_matters():
    values = np.array([f"tag/{i}".encode() for i in range(20000)], "S")
    buckets = hash_buckets(values, 16, 0)
    counts = np.bincount(buckets, minlength=16)
    # 1250 expected per bucket, sd 34: a bucket 5 sd away means a bad hash.
    assert counts.min() > 1250 - 170 and counts.max() < 1250 + 170, counts
    assert (hash_buckets(values, 16, 1) != buckets).mean() > 0.9
    assert buckets.dtype == np.int64 and buckets.shape == values.shape
    # Trailing NUL bytes do not count ('S' pads with them), inner ones do.
    assert hash_buckets(as_bytes(np.array([b"ab", b"ab\0", b"a\0b"], object)), 2**31, 0
                        ).tolist()[:2] == hash_buckets(np.array([b"ab", b"ab"]), 2**31, 0).tolist()


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(-2**63, 2**63 - 1) | st.integers(0, 3000), min_size=1,
                max_size=50), st.sampled_from(["int64", "int32", "uint64", "uint8"]),
       st.integers(1, 2**40), st.integers(0, 2**64 - 1))
def test_a_hasher_gives_hash_buckets(values, dtype, num_buckets, salt):
    """A Hasher's buckets (from its table of small integers, or hashed) are
    hash_buckets', batch after batch, whatever the values' type and range."""
    info = np.iinfo(dtype)
    array = np.array([v for v in values if info.min <= v <= info.max] or [0], dtype)
    hasher = Hasher(num_buckets, salt)
    for batch in (array, array[::-1] // 2, array.reshape(-1, 1), array[:0]):
        got = hasher(batch)
        assert got.dtype == np.int64 and got.shape == batch.shape
        assert got.tolist() == hash_buckets(batch, num_buckets, salt).tolist()


def test_a_hasher_keeps_a_table_only_for_small_ranges():
    hasher = Hasher(1 << 16, 0)
    tokens = np.arange(20000, dtype=np.int64) % 5000
    assert hasher(tokens).tolist() == hash_buckets(tokens, 1 << 16, 0).tolist()
    assert len(hasher._table) == 4999 + 1
    grown = np.array([4999, 9000])  # a larger top: the table doubles at least
    assert hasher(grown).tolist() == hash_buckets(grown, 1 << 16, 0).tolist()
    assert len(hasher._table) == 10000
    wide = np.array([1, 2**40])  # past the limit: hashed, the table kept
    assert hasher(wide).tolist() == hash_buckets(wide, 1 << 16, 0).tolist()
    assert len(hasher._table) == 10000
    assert pickle.loads(pickle.dumps(hasher))._table is None  # rebuilt where it lands


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(st.binary(max_size=12) | st.sampled_from([b"tag/1", b"tag/2", b""]),
                         max_size=30), min_size=1, max_size=6),
       st.integers(1, 2**40), st.integers(0, 2**64 - 1))
def test_a_hasher_gives_the_buckets_of_strings(batches, num_buckets, salt):
    """Strings' buckets from what a Hasher remembers, batch after batch (seen before,
    new, wider or narrower than those remembered, with NUL bytes), are hash_buckets'."""
    hasher = Hasher(num_buckets, salt)
    for values in batches:
        array = np.array(values, dtype="S") if values else np.zeros(0, "S1")
        got = hasher(array.reshape(-1, 1))
        assert got.dtype == np.int64 and got.shape == (len(values), 1)
        assert got.reshape(-1).tolist() == hash_buckets(array, num_buckets, salt).tolist()


def test_a_hasher_remembers_strings_a_few_times_and_up_to_a_limit(monkeypatch):
    monkeypatch.setattr(hashing, "STRING_LIMIT", 100)
    hasher = Hasher(1 << 16, 3)
    first = np.array([b"tag/%d" % (i % 60) for i in range(1000)])
    assert hasher(first).tolist() == hash_buckets(first, 1 << 16, 3).tolist()
    assert len(hasher._strings[0]) == 60 and hasher._string_updates == 1
    assert hasher(first[::-1]).tolist() == hash_buckets(first[::-1], 1 << 16, 3).tolist()
    assert hasher._string_updates == 1  # nothing new: nothing to remember
    titles = np.array([b"a title of its own %d" % i for i in range(400)])
    for _ in range(hashing.STRING_UPDATES + 2):  # always new: remembered a few times only
        assert hasher(titles).tolist() == hash_buckets(titles, 1 << 16, 3).tolist()
    assert hasher._string_updates == hashing.STRING_UPDATES
    assert len(hasher._strings[0]) == 100  # the limit
    assert pickle.loads(pickle.dumps(hasher))._strings is None
