"""Progress lines: throttled per stage, one per shard written."""
import io
import logging
import sys

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


class Terminal(io.StringIO):
    def isatty(self):
        return True


def test_beam_bar_counts_shards_and_seeds_on_a_terminal(monkeypatch):
    terminal = Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    bar = progress.beam_progress(True, shards=4)
    try:
        progress.log_shard(0, 4, 1500, 12.3)
        progress.log_shard(3, 4, 20, 0.1)
        progress.Progress("Hop/x").add(edges=1)  # a throttled line: not a shard, no step
        assert bar._bar.n == 2 and bar.seeds == 1520
    finally:
        progress.end_beam_progress(bar)
    assert bar not in progress.LOGGER.handlers
    shown = terminal.getvalue()
    assert "2/4" in shown and "1,520 seeds" in shown and "shard 1/4 written" not in shown


def test_no_bar_without_a_terminal_or_when_quiet(monkeypatch):
    monkeypatch.setattr(sys, "stderr", io.StringIO())
    assert progress.beam_progress(True, shards=4) is None
    assert not progress.SeedBar(True).enabled
    monkeypatch.setattr(sys, "stderr", Terminal())
    assert progress.beam_progress(False, shards=4) is None
    assert not progress.SeedBar(False).enabled


def test_seed_bar_counts_seeds_on_a_terminal(monkeypatch):
    terminal = Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    bar = progress.SeedBar(True)
    bar.start(10)
    bar.advance(4)
    bar.advance(6)
    bar.close()
    assert "100%" in terminal.getvalue() and "seeds/s" in terminal.getvalue()
