"""Gathers from a store larger than memory ask for their pages first (sampler.store.prefetch):
the same values as a plain mapped array's, plain arrays out, and every page a gather
reads asked for, each once, in runs."""
import mmap
import os

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as hs

from sampler.store import prefetch
from unigraph.columnar.ragged import Ragged, take

pytestmark = pytest.mark.skipif(not hasattr(mmap, "MADV_WILLNEED"),
                                reason="needs madvise(MADV_WILLNEED)")


def mapped(tmp_path, values: np.ndarray, name="a.npy") -> np.ndarray:
    path = str(tmp_path / name)
    np.save(path, values)  # a header of 128 bytes: rows cross page boundaries
    return np.load(path, mmap_mode="r").view(np.ndarray)


@pytest.fixture
def asked(monkeypatch):
    """The (start, length) of every range asked for (MADV_WILLNEED)."""
    calls = []
    real = prefetch.ask_for_pages

    def record(pages, starts, lengths):
        calls.extend(zip(starts.tolist(), lengths.tolist()))
        real(pages, starts, lengths)

    monkeypatch.setattr(prefetch, "ask_for_pages", record)
    return calls


@pytest.mark.parametrize("shape,dtype", [((5000,), np.int64), ((3000, 128), np.float32),
                                         ((300, 3000), np.float32), ((4000,), "S13"),
                                         ((2000, 3), np.int32)])
def test_gathers_give_the_plain_arrays_values(tmp_path, asked, shape, dtype):
    rng = np.random.default_rng(1)
    values = (rng.integers(0, 1 << 30, shape).astype(dtype) if dtype != "S13"
              else np.array([b"id%011d" % i for i in rng.integers(0, 10**9, shape)]))
    plain = mapped(tmp_path, values)
    array = prefetch.prefetching(plain)
    assert isinstance(array, prefetch.PrefetchingArray)
    indices = rng.integers(-len(values), len(values), 2500)  # unsorted, repeats, negative
    for gathered in (take(array, indices), np.take(array, indices, axis=0), array[indices],
                     array.take(indices, axis=0), take(array, indices.astype(np.int32))):
        assert type(gathered) is np.ndarray
        assert gathered.dtype == values.dtype
        assert gathered.tobytes() == values[indices].tobytes()
    assert asked  # the gathers above asked for their pages


def test_every_page_a_gather_reads_is_asked_for_once(tmp_path, asked, monkeypatch):
    monkeypatch.setattr(prefetch, "PIECE", 10**9)  # one piece: one set of runs
    values = np.arange(200_000, dtype=np.float32).reshape(-1, 100)  # 400-byte rows
    plain = mapped(tmp_path, values)
    array = prefetch.prefetching(plain)
    indices = np.array([0, 1, 2, 10, 11, 500, 1999, 10, 0])
    array.take(indices, axis=0)
    start = array._pages.start
    wanted = set()
    for i in indices:
        first, last = start + i * 400, start + i * 400 + 399
        wanted |= set(range(first // mmap.PAGESIZE, last // mmap.PAGESIZE + 1))
    pages = [p for s, n in asked for p in range(s // mmap.PAGESIZE,
                                                 (s + n - 1) // mmap.PAGESIZE + 1)]
    assert all(s % mmap.PAGESIZE == 0 for s, _ in asked)
    assert sorted(pages) == sorted(wanted)  # each needed page once, no other
    runs = [s for s, _ in asked]
    assert runs == sorted(runs) and len(runs) < len(wanted)  # adjacent pages: one call


@settings(max_examples=60, deadline=None)
@given(hs.lists(hs.integers(0, 10**7), min_size=1, max_size=50),
       hs.sampled_from([1, 8, 100, 512, 4096, 5000, 20000]), hs.sampled_from([0, 1, 3, 16]))
def test_page_runs_cover_the_rows_and_only_short_gaps(starts, row_bytes, gap):
    page = mmap.PAGESIZE
    row_starts = np.array(starts, np.int64)
    run_starts, run_stops = prefetch.page_runs(row_starts, row_bytes, gap)
    pages = [p for a, b in zip(run_starts.tolist(), run_stops.tolist()) for p in range(a, b)]
    wanted = sorted({p for s in starts for p in range(s // page, (s + row_bytes - 1) // page + 1)})
    assert pages == sorted(set(pages)) and set(wanted) <= set(pages)
    # a page not wanted lies in a gap of at most `gap` pages between wanted ones
    for p in set(pages) - set(wanted):
        before = max(w for w in wanted if w < p)
        after = min(w for w in wanted if w > p)
        assert after - before - 1 <= gap
    assert all(b + gap < c for b, c in zip(run_stops[:-1].tolist(), run_starts[1:].tolist()))
    if gap == 0:
        assert pages == wanted


def test_a_large_gather_asks_for_its_pages_in_the_arrays_order(tmp_path, asked):
    """Over PIECE indices, a gather goes through them sorted: the pages it asks for,
    piece after piece, ascend across the whole gather, whatever the indices' order."""
    values = np.arange(400_000, dtype=np.int64)
    array = prefetch.prefetching(mapped(tmp_path, values))
    indices = np.random.default_rng(5).permutation(len(values))[:5 * prefetch.PIECE]
    assert array.take(indices).tolist() == indices.tolist()
    starts = [s for s, _ in asked]
    assert len(starts) > 1 and starts == sorted(starts)


def test_numpy_sees_a_plain_array(tmp_path):
    plain = mapped(tmp_path, np.arange(10_000, dtype=np.int64))
    array = prefetch.prefetching(plain)
    for result in (array + 1, np.diff(array), np.concatenate([array, array]), array[5:10],
                   np.searchsorted(array, [3, 7]), np.maximum(array, 3)):
        assert type(result) is np.ndarray
    assert (array[5:10] == plain[5:10]).all() and int(array[-1]) == 9999
    assert np.searchsorted(array, 4096) == 4096
    ragged = Ragged(array, np.full(100, 100, np.int64))
    assert take(ragged, np.arange(0, 100, 3)).equals(take(Ragged(plain, ragged.row_lengths),
                                                          np.arange(0, 100, 3)))


def test_an_index_out_of_range_raises_as_numpy_does(tmp_path):
    array = prefetch.prefetching(mapped(tmp_path, np.arange(100)))
    with pytest.raises(IndexError):
        array.take(np.arange(95, 110))
    with pytest.raises(IndexError):
        array[np.arange(95, 110)]


@pytest.mark.parametrize("vectored", [True, False])
def test_the_kernel_takes_the_advice(tmp_path, monkeypatch, vectored):
    """Many ranges in one call (process_madvise) where the kernel has it, one call per
    range otherwise; either way every call succeeds (a refusal would fall back)."""
    plain = mapped(tmp_path, np.arange(1 << 20, dtype=np.int64))
    array = prefetch.prefetching(plain)
    advice = prefetch._ProcessMadvise()
    monkeypatch.setattr(prefetch, "_PROCESS_MADVISE", advice)
    if not vectored:
        monkeypatch.setattr(advice, "usable", lambda: False)
    indices = np.arange(0, 1 << 20, 1500)  # a run of one page each: 700 ranges
    assert (array[indices] == indices).all()
    if vectored and advice._state is not False:
        assert advice._state[0] == os.getpid()  # it was used, and took every call


def test_arrays_not_mapped_are_left_as_they_are():
    values = np.arange(10)
    assert prefetch.prefetching(values) is values
