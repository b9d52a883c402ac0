"""Progress lines for long runs, from inside the pipeline's DoFns.

Each stage reports through the `sampler.job.progress` logger at most once every few
seconds per worker process, plus once per output shard written, so a local run
prints a steady trickle and Dataflow shows the same lines in its worker logs.
"""
from __future__ import annotations

import logging
import sys
import time

LOGGER = logging.getLogger("sampler.job.progress")
INTERVAL_S = 5.0


class Progress:
    """Counts per stage; logs a line when INTERVAL_S has passed since the last one."""

    def __init__(self, stage: str):
        self.stage = stage
        self.counts: dict[str, int] = {}
        self.last = time.monotonic()

    def add(self, **counts: int) -> None:
        for name, value in counts.items():
            self.counts[name] = self.counts.get(name, 0) + value
        now = time.monotonic()
        if now - self.last >= INTERVAL_S:
            self.last = now
            LOGGER.info("%s: %s", self.stage, ", ".join(
                f"{v:,} {k}" for k, v in self.counts.items()))


def log_shard(index: int, count: int, subgraphs: int, megabytes: float) -> None:
    LOGGER.info("shard %d/%d written: %s subgraphs, %.1f MB", index + 1, count,
                f"{subgraphs:,}", megabytes, extra={"shard_subgraphs": subgraphs})


class _Stderr(logging.StreamHandler):
    """Writes to whatever sys.stderr is when a line is logged (not when the handler was
    made), so a caller that swaps stderr, like a test, never meets a closed stream."""

    @property
    def stream(self):
        return sys.stderr

    @stream.setter
    def stream(self, value):
        pass


def enable_console(verbose: bool) -> None:
    """Shows progress lines on stderr (the CLI calls this; library use stays quiet)."""
    if not verbose or LOGGER.handlers:
        return
    handler = _Stderr()
    handler.setFormatter(logging.Formatter("[sample %(asctime)s] %(message)s", "%H:%M:%S"))
    LOGGER.addHandler(handler)
    LOGGER.setLevel(logging.INFO)
    LOGGER.propagate = False


class ShardBar(logging.Handler):
    """The Beam engine's progress bar: output shards written (with the seeds in them),
    rate and ETA, advanced by the "shard written" lines of log_shard. It sees them
    where the shards are written in this process (Beam's in-process runner); on a
    remote runner they stay in the workers' logs and the bar stays at 0.
    Installed on LOGGER instead of the console lines, which would break the bar."""

    def __init__(self, shards: int):
        super().__init__()
        from tqdm import tqdm  # only when a terminal will show it

        self.seeds = 0
        self._bar = tqdm(total=shards, unit=" shards", file=sys.stderr, dynamic_ncols=True,
                         desc="writing")

    def emit(self, record: logging.LogRecord) -> None:
        subgraphs = getattr(record, "shard_subgraphs", None)
        if subgraphs is not None:
            self.seeds += subgraphs
            self._bar.set_postfix_str(f"{self.seeds:,} seeds", refresh=False)
            self._bar.update(1)

    def close(self) -> None:
        self._bar.close()
        super().close()


def beam_progress(verbose: bool, shards: int) -> ShardBar | None:
    """A ShardBar on a terminal, else the throttled progress lines (when verbose)."""
    if verbose and sys.stderr.isatty():
        bar = ShardBar(shards)
        LOGGER.addHandler(bar)
        LOGGER.setLevel(logging.INFO)
        LOGGER.propagate = False
        return bar
    enable_console(verbose)
    return None


def end_beam_progress(bar: ShardBar | None) -> None:
    if bar is not None:
        LOGGER.removeHandler(bar)
        bar.close()


class SeedBar:
    """A progress bar of seeds written; every method is a no-op when it is off."""

    def __init__(self, enabled: bool):
        self.enabled = enabled and sys.stderr.isatty()
        self._bar = None

    def start(self, total: int) -> None:
        if self.enabled and self._bar is None:
            from tqdm import tqdm  # only when a terminal will show it

            self._bar = tqdm(total=total, unit=" seeds", unit_scale=True, file=sys.stderr,
                             dynamic_ncols=True, desc="sampling")

    def advance(self, seeds: int) -> None:
        if self._bar is not None:
            self._bar.update(seeds)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None
