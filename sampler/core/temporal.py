"""Time in the hop: effective edge times, and a cut-off as an eligible prefix of a row.

Rule (docs/architecture.md, "Time"): a sample with cut-off c considers, at every hop
and whatever the op's strategy, only edges whose effective time is <= c. An edge's
effective time is the later of its own timestamp and its target node's (edge sets or
node sets without a timestamp column contribute nothing: an edge set with neither is
timeless, always eligible). So a node created after the cut-off is never reached,
and an edge from before its target existed counts from the target's creation.

Rows of time-ordered edge sets are sorted by (effective time, canonical order)
(core.adjacency), so the eligible edges of a row are a prefix, found by one binary
search per query; the strategy then samples that prefix (core.strategies, `limit`).
"""
from __future__ import annotations

import numpy as np

from unigraph.columnar.batches import EdgeBatch


def lowest_time(dtype) -> np.integer | np.floating:
    """A time no cut-off is below: what a missing timestamp contributes to a maximum."""
    dtype = np.dtype(dtype)
    return np.iinfo(dtype).min if dtype.kind == "i" else dtype.type(-np.inf)


def effective_times(edge_times: np.ndarray | None, target_times: np.ndarray | None,
                    dtype) -> np.ndarray | None:
    """max(edge time, target node time) per edge; either may be None (no column)."""
    if target_times is None:
        return None if edge_times is None else edge_times.astype(dtype, copy=False)
    target_times = target_times.astype(dtype, copy=False)
    if edge_times is None:
        return target_times
    return np.maximum(edge_times.astype(dtype, copy=False), target_times)


def with_target_times(batch: EdgeBatch, target_ids: np.ndarray, target_times: np.ndarray,
                      dtype) -> EdgeBatch:
    """The batch with effective times, its targets' times looked up among (`target_ids`
    sorted, `target_times`): one bucket of the target node set's table. A target absent
    from it (a dangling edge, dropped later) adds nothing."""
    times = np.full(len(batch), lowest_time(dtype), dtype=dtype)
    if len(target_ids):
        at = np.minimum(np.searchsorted(target_ids, batch.targets), len(target_ids) - 1)
        found = target_ids[at] == batch.targets
        times[found] = target_times[at[found]]
    return EdgeBatch(batch.edge_set, batch.sources, batch.targets, batch.rows, batch.weights,
                     batch.features, effective_times(batch.timestamps, times, dtype))


def eligible_prefix(row_splits: np.ndarray, times: np.ndarray, query_rows: np.ndarray,
                    cutoffs: np.ndarray) -> np.ndarray:
    """Per query, how many edges of its row have time <= its cut-off (rows sorted by time).

    One vectorized binary search for all queries: ~log2(max degree) rounds of numpy
    operations over the queries, never a scan of a row.
    """
    lo = row_splits[query_rows].copy()
    hi = row_splits[query_rows + 1].copy()
    start = lo.copy()
    cutoffs = np.asarray(cutoffs).astype(times.dtype, copy=False)
    active = np.flatnonzero(lo < hi)
    while active.size:
        mid = (lo[active] + hi[active]) >> 1
        fits = times[mid] <= cutoffs[active]
        lo[active] = np.where(fits, mid + 1, lo[active])
        hi[active] = np.where(fits, hi[active], mid)
        active = active[lo[active] < hi[active]]
    return lo - start
