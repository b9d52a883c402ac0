"""Progress lines: throttled per stage, one per shard written."""
import logging

from sampler.job import progress


def test_progress_is_throttled_and_counts_accumulate(caplog, monkeypatch):
    caplog.set_level(logging.INFO, logger="sampler.job.progress")
    clock = iter([0.0, 1.0, 6.0, 7.0])
    monkeypatch.setattr(progress.time, "monotonic", lambda: next(clock))
    p = progress.Progress("Hop/x")          # created at t=0
    p.add(buckets=1, edges=10)               # t=1: too soon
    p.add(buckets=1, edges=5)                # t=6: logs the totals
    p.add(buckets=1, edges=1)                # t=7: too soon again
    assert [r.getMessage() for r in caplog.records] == ["Hop/x: 2 buckets, 15 edges"]


def test_shard_lines(caplog):
    caplog.set_level(logging.INFO, logger="sampler.job.progress")
    progress.log_shard(2, 8, 1500, 12.345)
    assert caplog.records[-1].getMessage() == "shard 3/8 written: 1,500 subgraphs, 12.3 MB"
