"""The numbers of `sample-stats`: what an output folder holds, read record by record.

    stats = folder_stats("out/")      # one pass over every shard, streaming
    stats.as_dict()                   # what out/stats/stats.json holds

Per record it keeps a few integers in numpy arrays (the serialized size, nodes
per node set, edges per edge set), so count and size quantiles are exact even
for ten million records. Feature values go into mergeable summaries
(sketches.py): exact count, mean, std, min, max, NaN and inf counts; quantiles
exact for integer features with at most sketches.CAPACITY distinct values, else
within sketches.ALPHA (0.8%) of the value; top values and distinct counts of
strings (and integers) exact up to that capacity, else bounded (the JSON says
which and how much).

Records are never fully decoded: wire.feature_spans finds every key's bytes,
`#size` values are read in place, and each feature's packed data is gathered
over a chunk of records and decoded at once. Each shard is summarized on its
own and the summaries merged in file order, so the numbers do not depend on the
number of worker processes (`workers`).

The cap-hit rate per op cannot be derived from the records (two ops may sample
one edge set); it comes from the run report (sample_report.json, draws_per_op
and draws_at_cap_per_op) when the folder has one.

The parts: stats_layout.py (the keys to read), stats_features.py (per-feature
summaries), stats_shard.py (one shard -> a Tally); this module merges the shards of a
folder and gives the numbers of stats.json.
"""
from __future__ import annotations

import concurrent.futures
import dataclasses
import math
import multiprocessing
import os
from typing import Callable, Iterator, Optional

import numpy as np

from sampler.output.folder import (SampleFolder, SamplesError, open_samples,
                                   read_run_report)
from sampler.output.sketches import ALPHA, CAPACITY, DISTINCT_K, QUANTILE_NAMES, QUANTILES
from sampler.output.stats_features import plain_number
from sampler.output.stats_layout import Layout
from sampler.output.stats_shard import LISTED_SEEDS, Tally, summarize_shard
from unigraph.storage import paths
from unigraph.interrupts import quiet_worker, workers_forked_quietly

PARALLEL_MIN_BYTES = 64 << 20  # smaller folders are read in-process

QUANTILE_METHOD = ("per-record counts and sizes: exact, numpy's default 'linear' "
                   "interpolation; feature values: the value at rank floor(q*(n-1)), exact "
                   f"for integers with at most {CAPACITY} distinct values, else within "
                   f"{ALPHA:.1%} of it (log-linear buckets)")


@dataclasses.dataclass
class FolderStats:
    """A folder's Tally merged over every shard, with the run report when there is one."""

    folder: str
    files: tuple[str, ...]
    tally: Tally
    report: dict | None

    @property
    def layout(self) -> Layout:
        return self.tally.layout

    @property
    def record_bytes(self) -> np.ndarray:
        return _joined(self.tally.record_bytes, np.int64)

    def nodes(self, name: str) -> np.ndarray:
        """Nodes of node set `name` in every record, in file order."""
        column = self.layout.node_sets.index(name)
        return _joined(self.tally.nodes, np.int32, len(self.layout.node_sets))[:, column]

    def edges(self, name: str) -> np.ndarray:
        column = self.layout.edge_sets.index(name)
        return _joined(self.tally.edges, np.int32, len(self.layout.edge_sets))[:, column]

    def ops(self) -> dict | None:
        """op -> draws, draws at the cap, their ratio and edges sampled (None: no report)."""
        if self.report is None or not isinstance(self.report.get("draws_per_op"), dict):
            return None
        # The report is a file in the folder: only counts are taken from it (a value of
        # another type is no count, and is not shown).
        per_op = {key: self.report.get(key) if isinstance(self.report.get(key), dict) else {}
                  for key in ("edges_sampled_per_op", "draws_per_op", "draws_at_cap_per_op")}
        result = {}
        for op, sampled in per_op["edges_sampled_per_op"].items():
            sampled = _count(sampled)
            draws = _count(per_op["draws_per_op"].get(op, 0))
            at_cap = _count(per_op["draws_at_cap_per_op"].get(op, 0))
            if sampled is None or draws is None or at_cap is None:
                continue
            result[op] = {"draws": draws, "draws_at_cap": at_cap,
                          "cap_hit_rate": at_cap / draws if draws else None,
                          "edges_sampled": sampled}
        return result

    def as_dict(self) -> dict:
        """The numbers of stats.json (JSON-ready: no NaN, strings for bytes)."""
        tally = self.tally
        result = {
            "folder": self.folder,
            "files": len(self.files),
            "records": tally.records,
            "bytes": int(self.record_bytes.sum()),
            "quantile_method": QUANTILE_METHOD,
            "bytes_per_record": count_quantiles(self.record_bytes),
            "subgraphs": {"empty": tally.empty, "seed_only": tally.seed_only,
                          "seed_only_seed_ids": tally.seed_only_ids},
            "node_sets": {name: count_quantiles(self.nodes(name))
                          for name in self.layout.node_sets},
            "edge_sets": {name: count_quantiles(self.edges(name))
                          for name in self.layout.edge_sets},
            "ops": self.ops(),
            "run_report": _report_summary(self.report),
            "features": _features_dict(self),
            "summaries": {"top_values_capacity": CAPACITY, "distinct_k": DISTINCT_K,
                          "relative_error": ALPHA},
        }
        return json_safe(result)


def _joined(parts: list, dtype, columns: int | None = None) -> np.ndarray:
    if parts:
        return parts[0] if len(parts) == 1 else np.concatenate(parts)
    return np.zeros((0, columns) if columns is not None else 0, dtype)


def count_quantiles(values: np.ndarray) -> dict:
    """min, p5, p50, p95, max, mean, total and the records with 0, of per-record numbers."""
    values = np.asarray(values)
    if not values.size:
        return {**{name: None for name in QUANTILE_NAMES}, "mean": None, "total": 0,
                "zero": 0}
    q = np.percentile(values, [100 * x for x in QUANTILES])
    return {**{name: plain_number(v) for name, v in zip(QUANTILE_NAMES, q)},
            "mean": float(values.mean()), "total": int(values.sum()),
            "zero": int((values == 0).sum())}


def _features_dict(stats: FolderStats) -> dict:
    result: dict = {"context": {}, "node_sets": {}, "edge_sets": {}}
    for ref in stats.layout.features:
        summary = stats.tally.features[ref.key].as_dict()
        if ref.scope == "context":
            result["context"][ref.name] = summary
        else:
            scope = "node_sets" if ref.scope == "nodes" else "edge_sets"
            result[scope].setdefault(ref.set_name, {})[ref.name] = summary
    return result


_REPORT_KEYS = ("seeds_read", "subgraphs_written", "seeds_missing", "missing_seed_ids",
                "dangling_edges_dropped", "nodes_missing_from_tables", "bytes_written",
                "wall_time_s")


def _report_summary(report: dict | None) -> dict | None:
    """The run report's counts (and the first missing seed ids, as text); values of other
    types are left out: the report is data in the folder, not ours to trust."""
    if report is None:
        return None
    summary = {}
    for key in _REPORT_KEYS:
        value = report.get(key)
        if key == "missing_seed_ids" and isinstance(value, list):
            summary[key] = [str(v) for v in value[:LISTED_SEEDS]]
        elif key == "dangling_edges_dropped" and isinstance(value, dict):
            summary[key] = {str(k): v for k, v in value.items() if _count(v) is not None}
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            summary[key] = value
    return summary


def _count(value) -> int | None:
    """A count read from the run report, or None when the value is not one."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0 or \
            value != value or value == math.inf:
        return None
    return int(value)


def json_safe(value):
    """NaN and infinities as strings (JSON has no such numbers), numpy scalars as Python's."""
    if isinstance(value, dict):
        return {str(key): json_safe(v) for key, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    return value


Progress = Callable[[int, int, str, int], None]   # (files done, files, path, records)


def folder_stats(folder: str, *, workers: int | None = None, keep_seed_ids: bool = False,
                 progress: Optional[Progress] = None) -> FolderStats:
    """Every shard of `folder` summarized and merged in file order.

    workers: processes reading shards at once (default: one per CPU, capped by the
    number of shards; folders under PARALLEL_MIN_BYTES are read in-process). The
    numbers are the same for any count."""
    samples = open_samples(folder)
    try:
        layout = Layout.of(samples.schema)
    except SamplesError as e:
        raise SamplesError(f"{samples.schema_path}: {e}".replace(": graph schema:", ":")) \
            from None
    report = read_run_report(samples.folder)
    tallies = _shard_tallies(samples, layout, _worker_count(samples, workers), keep_seed_ids,
                             progress)
    total = Tally(layout, seed_ids=[] if keep_seed_ids else None)
    for tally in tallies:
        total.merge(tally)
    total.compact()
    return FolderStats(samples.folder, samples.files, total, report)


def _worker_count(samples: SampleFolder, workers: int | None) -> int:
    if workers is not None and workers < 1:
        raise SamplesError(f"--workers {workers}: must be at least 1")
    if paths.is_remote(samples.folder) or len(samples.files) == 1:
        return 1
    if workers is not None:
        return min(workers, len(samples.files))
    if sum(os.path.getsize(f) for f in samples.files) < PARALLEL_MIN_BYTES:
        return 1
    return max(1, min(_usable_cpus(), len(samples.files)))


def _usable_cpus() -> int:
    """CPUs this process may run on (a container's limit, not the host's count)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:   # not on Linux
        return os.cpu_count() or 1


def _shard_tallies(samples: SampleFolder, layout: Layout, workers: int, keep_seed_ids: bool,
                   progress: Optional[Progress]) -> Iterator[Tally]:
    files = samples.files
    if workers == 1:
        for done, path in enumerate(files, start=1):
            tally = summarize_shard(path, layout, keep_seed_ids)
            if progress:
                progress(done, len(files), path, tally.records)
            yield tally
        return
    # Forked workers start at once and need no `if __name__ == "__main__"` guard in a
    # notebook or script; remote folders are read in-process (a forked GCS client is
    # not safe), see _worker_count.
    # Workers leave Ctrl-C to this process (unigraph.interrupts.quiet_worker), which
    # drops the work left and does not wait for the shards being read.
    context = multiprocessing.get_context("fork")
    pool = concurrent.futures.ProcessPoolExecutor(workers, mp_context=context,
                                                  initializer=quiet_worker)
    try:
        with workers_forked_quietly():  # the executor forks its workers on submit
            results = pool.map(summarize_shard, files, [layout] * len(files),
                               [keep_seed_ids] * len(files))
        for done, (path, tally) in enumerate(zip(files, results), start=1):
            if progress:
                progress(done, len(files), path, tally.records)
            yield tally
    except BaseException:
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    pool.shutdown()


def sample_stats(folder: str, *, workers: int | None = None) -> dict:
    """The numbers of `sample-stats FOLDER` (what stats.json holds), for notebooks."""
    return folder_stats(folder, workers=workers).as_dict()
