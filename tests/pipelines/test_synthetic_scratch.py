"""The scratch arrays of synthetic-graph (pipelines/synthetic_scratch.py, issue 40): every
block-wise step gives what its whole-array numpy counterpart gives, on disk as in memory,
with blocks that split runs and ranges; and the scratch folder is gone after a run,
whether it succeeded or failed."""
import os
import subprocess

import numpy as np
import pytest

from pipelines import synthetic
from pipelines import synthetic_model
from pipelines import synthetic_scratch as ss

BLOCK = 37  # splits every run and range below


@pytest.fixture(params=["disk", "memory"])
def scratch(request, tmp_path):
    with ss.Scratch(str(tmp_path) if request.param == "disk" else None) as s:
        yield s


@pytest.mark.parametrize("n,size", [(20000, 1000), (20000, 20000), (20000, 399), (20000, 401),
                                    (50000, 4999), (10000, 5000), (10001, 10001), (300, 7)])
def test_choice_is_numpys_and_leaves_the_stream_where_numpy_does(scratch, n, size):
    # Both of numpy's routes: a tail shuffle of arange(n) (n > 10000, size > n // 50),
    # Floyd's algorithm otherwise.
    expected = np.random.default_rng(n + size)
    want = expected.choice(n, size, replace=False)
    rng = np.random.default_rng(n + size)
    assert np.array_equal(ss.choice_no_replace(rng, n, size, scratch, BLOCK), want)
    assert rng.random() == expected.random()


def test_block_steps_are_numpys(scratch):
    rng = np.random.default_rng(4)
    counts = rng.integers(0, 4, 500)
    counts[[0, 17, 499]] = [0, 300, 90]  # an empty first node and runs longer than a block
    out = ss.repeat_into(scratch.empty(int(counts.sum()), np.int64), counts, BLOCK)
    assert np.array_equal(out, np.repeat(np.arange(500), counts))

    starts = rng.integers(0, 10**6, 200)
    lengths = rng.integers(0, 90, 200)
    ranges = ss.ranges_into(scratch.empty(int(lengths.sum()), np.int64), starts, lengths, BLOCK)
    assert np.array_equal(ranges, np.concatenate([np.arange(s, s + n)
                                                  for s, n in zip(starts, lengths)]))

    values = rng.integers(0, 40, 3001)
    splits = np.concatenate([[0], np.cumsum(np.bincount(values, minlength=45))])
    order = ss.stable_order(values, splits, scratch.empty(len(values), np.int64), BLOCK)
    assert np.array_equal(order, np.argsort(values, kind="stable"))

    a, b = rng.integers(0, 30, 4000), rng.integers(0, 30, 4000)
    keys = ss.sorted_keys(a, b, 30, scratch, BLOCK)
    whole = np.sort(a * 30 + b)
    assert np.array_equal(keys, whole)
    assert ss.count_repeats(keys, BLOCK) == len(whole) - len(np.unique(whole))
    values, counts = np.unique(whole, return_counts=True)
    runs = ss.repeated_runs(keys, scratch, BLOCK)
    assert np.array_equal(runs[0], values[counts > 1])
    assert np.array_equal(runs[1], counts[counts > 1])
    long_runs = np.sort(np.repeat(np.arange(6), [1, 80, 2, 1, 40, 3]))  # across blocks
    runs = ss.repeated_runs(long_runs, scratch, BLOCK)
    assert runs[0].tolist() == [1, 2, 4, 5] and runs[1].tolist() == [80, 2, 40, 3]
    assert [len(r) for r in ss.repeated_runs(np.arange(5), scratch, BLOCK)] == [0, 0]
    positions = rng.integers(0, 4000, 999)
    assert np.array_equal(ss.gather(a, positions, scratch, BLOCK), a[positions])
    assert ss.is_sorted(whole, BLOCK) and not ss.is_sorted(a, BLOCK)
    assert ss.is_sorted(np.zeros(0, np.int64), BLOCK)

    shuffled, plain = scratch.empty(1000, np.int64), np.arange(1000)
    shuffled[:] = plain
    np.random.default_rng(9).shuffle(shuffled)  # a view of a map takes numpy's fast path
    np.random.default_rng(9).shuffle(plain)
    assert type(shuffled) is np.ndarray and np.array_equal(shuffled, plain)


def test_free_takes_views_and_close_removes_the_folder(tmp_path):
    s = ss.Scratch(str(tmp_path))
    a, b = s.empty(100, np.int64), s.empty(10, bool)
    assert len(os.listdir(s.folder)) == 2
    s.free(a[:5], np.zeros(3))  # a view frees its array; a foreign array is left alone
    assert len(os.listdir(s.folder)) == 1
    b[:] = True
    s.close()
    assert os.listdir(tmp_path) == [] and b.all()  # mapped pages outlive the file


def _leftovers(folder):
    return [name for name in os.listdir(folder) if name.startswith(".synthetic-scratch-")]


def test_the_scratch_folder_is_gone_after_success_and_failure(tmp_path, monkeypatch):
    monkeypatch.setattr(synthetic_model, "BLOCK", 64)
    out, scratch_dir = tmp_path / "g", tmp_path / "scratch"
    assert synthetic.main(["--scale", "0.002", "--planted", "--hub-edges", "30",
                           "--scratch-dir", str(scratch_dir), "--quiet",
                           "--output", str(out)]) == 0
    assert _leftovers(scratch_dir) == [] and _leftovers(out) == []

    seen = []

    def fail(self, name, sources, *rest):
        seen.append(_leftovers(tmp_path / "h"))  # the scratch exists while drawing
        raise OSError("disk full")

    monkeypatch.setattr(synthetic._Folder, "edges", fail)
    with pytest.raises(OSError, match="disk full"):
        synthetic.write_streamed(str(tmp_path / "h"), "parquet", scale=0.002, seed=0)
    assert len(seen[0]) == 1 and _leftovers(tmp_path / "h") == []
    monkeypatch.setattr(synthetic._Folder, "edges",
                        lambda *a: (_ for _ in ()).throw(KeyboardInterrupt()))
    with pytest.raises(KeyboardInterrupt):
        synthetic.write_streamed(str(tmp_path / "i"), "csv", scale=0.002, seed=0,
                                 scratch_dir=str(scratch_dir))
    assert _leftovers(scratch_dir) == []


def test_a_killed_runs_scratch_is_removed_by_the_next(tmp_path):
    ended = subprocess.Popen(["true"])  # a process that has ended: its pid names no one
    ended.wait()
    stale = tmp_path / f"{ss.PREFIX}{ended.pid}-abc"
    running = tmp_path / f"{ss.PREFIX}{os.getpid()}-x"  # a live process's: left alone
    for folder in (stale, running):
        folder.mkdir()
        (folder / "00001.bin").write_bytes(b"0" * 64)
    others = [f"{ss.PREFIX}notapid-1", f"{ss.PREFIX}1-file"]
    (tmp_path / others[0]).mkdir()
    (tmp_path / others[1]).write_text("a file, not a scratch folder")
    with ss.Scratch(str(tmp_path)) as s:
        assert os.path.isdir(s.folder) and not stale.exists() and running.exists()
    assert sorted(os.listdir(tmp_path)) == sorted([running.name, *others])
