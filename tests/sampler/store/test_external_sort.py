"""The external sort and the .npy pieces the bounded store build stands on (issue 40).

ExternalSort: whatever the blocks and the budget (runs of one record, merges in many
passes, or nothing spilled), the records come out in key order, each record whole
(its ragged and byte-string columns with it), and `unique` keeps the first of each
key. NpyAppender writes np.save's bytes; NpyPages finds and gathers as numpy does;
a run file gives its disk back as it is read.
"""
import os

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as hs

from sampler.store import external_sort
from sampler.store.external_sort import Budget, ExternalSort
from sampler.store.npy import NpyAppender, NpyPages, npy_header
from sampler.store.spill import RunReader, RunWriter, block_concat
from unigraph.columnar.ragged import Ragged


@pytest.fixture(autouse=True)
def small_pages(monkeypatch):
    monkeypatch.setattr(external_sort, "MIN_PAGE_BYTES", 256)  # runs of many pages


def _records(seed, n, width):
    rng = np.random.default_rng(seed)
    ids = np.array([b"n" + bytes(str(v), "ascii") * int(1 + v % width)
                    for v in rng.integers(0, max(1, n // 3), n)], dtype="S")
    lengths = rng.integers(0, 3, n)
    return {"ids": ids, "rows": rng.permutation(n).astype(np.int64),
            "vec": rng.normal(size=(n, 2)).astype(np.float32),
            "tag": np.array([b"x" * int(v) for v in rng.integers(0, 4, n)], dtype=object),
            "list": Ragged(rng.integers(0, 9, int(lengths.sum())), lengths)}


def _rows(block):
    """Each record as a hashable tuple."""
    n = len(block["ids"])
    lists = block["list"].to_list()
    return [(bytes(block["ids"][i]), int(block["rows"][i]), block["vec"][i].tobytes(),
             bytes(block["tag"][i]), tuple(int(v) for v in lists[i])) for i in range(n)]


@settings(max_examples=40, deadline=None, derandomize=True)
@given(hs.integers(0, 2**31), hs.integers(0, 300), hs.integers(1, 4),
       hs.sampled_from([64, 600, 5000, 1 << 24]), hs.integers(1, 50))
def test_records_come_out_sorted_and_whole(tmp_path_factory, seed, n, width, work, block):
    records = _records(seed, n, width)
    folder = str(tmp_path_factory.mktemp("s"))
    sorter = ExternalSort(folder, "t", key=("ids", "rows"), budget=Budget(work))
    for lo in range(0, n, block):
        sorter.add({k: v[lo:lo + block] if not isinstance(v, Ragged)
                    else Ragged(v.values[v.row_splits[lo]:v.row_splits[min(n, lo + block)]],
                                v.row_lengths[lo:lo + block]) for k, v in records.items()})
    out = list(sorter.sorted_blocks())
    sorter.close()
    got = [r for b in out for r in _rows(b)]
    assert got == sorted(_rows(records))
    assert os.listdir(folder) == []  # runs deleted as they are merged


@settings(max_examples=30, deadline=None, derandomize=True)
@given(hs.integers(0, 2**31), hs.integers(1, 400), hs.sampled_from([64, 700, 1 << 24]))
def test_unique_keeps_the_first_of_each_id(tmp_path_factory, seed, n, work):
    rng = np.random.default_rng(seed)
    ids = np.array([f"id{v}".encode() for v in rng.integers(0, 60, n)], "S")
    source = rng.integers(0, 2, n).astype(np.int8)
    sorter = ExternalSort(str(tmp_path_factory.mktemp("u")), "u", key=("ids", "source"),
                          budget=Budget(work), unique=1)
    for lo in range(0, n, 7):
        sorter.add({"ids": ids[lo:lo + 7], "source": source[lo:lo + 7]})
    out = block_concat(list(sorter.sorted_blocks()))
    sorter.close()
    distinct = sorted(set(ids.tolist()))
    assert out["ids"].tolist() == distinct
    for value, got in zip(out["ids"].tolist(), out["source"].tolist()):
        assert got == source[ids == value].min()


@pytest.mark.parametrize("rows", [0, 1, 999, 10**5])
@pytest.mark.parametrize("known", [True, False])
def test_an_appended_npy_is_np_saves_bytes(tmp_path, rows, known):
    array = np.arange(rows * 3, dtype=np.float32).reshape(rows, 3)
    np.save(tmp_path / "saved.npy", array)
    appender = NpyAppender(str(tmp_path / "a.npy"), np.float32, (3,), rows if known else None)
    for lo in range(0, rows, 777):
        appender.append(array[lo:lo + 777])
    assert appender.close() == array.shape
    assert (tmp_path / "a.npy").read_bytes() == (tmp_path / "saved.npy").read_bytes()


def test_a_header_that_grows_is_rewritten_by_a_copy(tmp_path, monkeypatch):
    import sampler.store.npy as npy

    real = npy.npy_header
    # A reserved header one line shorter than the final one: the data moves behind it.
    monkeypatch.setattr(npy, "npy_header", lambda dtype, shape: real(dtype, shape)[:-64]
                        if shape[0] == 0 else real(dtype, shape))
    appender = NpyAppender(str(tmp_path / "a.npy"), np.int64)
    appender.append(np.arange(10))
    appender.close()
    np.testing.assert_array_equal(np.load(tmp_path / "a.npy"), np.arange(10))
    assert npy_header(np.int64, (10,)) == real(np.int64, (10,))


def test_pages_find_and_gather_as_numpy(tmp_path):
    rng = np.random.default_rng(1)
    names = np.unique(np.array([f"p{v}".encode() for v in rng.integers(0, 10**6, 5000)], "S"))
    np.save(tmp_path / "names.npy", names)
    pages = NpyPages(str(tmp_path / "names.npy"), page_bytes=100)
    queries = np.concatenate([rng.choice(names, 3000), [b"absent", b"p"]])
    expected = np.searchsorted(names, queries)
    found = pages.find(queries)
    present = expected < len(names)
    present[present] = names[expected[present]] == queries[present]
    np.testing.assert_array_equal(found, np.where(present, expected, -1))
    np.testing.assert_array_equal(pages.gather(found[present]), queries[present])
    with pytest.raises(KeyError):
        pages.positions(queries)


def test_a_run_gives_its_disk_back_as_it_is_read(tmp_path, monkeypatch):
    monkeypatch.setattr(RunReader, "RELEASE_BYTES", 1 << 16)
    path = str(tmp_path / "r")
    writer = RunWriter(path, 1 << 14)
    writer.write({"v": np.arange(200_000, dtype=np.int64)})
    writer.close()
    reader = RunReader(path, writer.kinds)
    total = sum(len(page["v"]) for page in reader.pages())
    blocks = os.stat(path).st_blocks * 512
    assert total == 200_000
    assert os.path.getsize(path) > 1_600_000  # its size is kept
    assert blocks < 200_000, blocks  # but not its disk (where the file system punches holes)
    reader.close()
    assert not os.path.exists(path)
