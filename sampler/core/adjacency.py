"""Adjacency of one bucket of source nodes, built once per edge set.

An AdjacencyBucket holds every edge whose source falls in the bucket as flat
numpy arrays in canonical order: by source id, then target id, then the row's
position in its table (RowId). Edges that carry (effective) timestamps are in time
order instead: by source id, then time, then target id, then RowId, so a cut-off
is a binary search in a row (sampler.core.temporal). The per-source CSR `row_splits` lets the
strategies address a node's edges by position, and since the order depends on
the data alone, so does every sampled result. A row of more than chunk_edges edges
is laid out chunk after chunk, each chunk in the order above (core.long_rows).
"""
from __future__ import annotations

import dataclasses
from typing import Callable, Sequence

import numpy as np

from sampler.core import rng
from sampler.core.arrays import index_beside, order_keys
from sampler.core.long_rows import LongRows, long_row_layout
from sampler.core.pieces import encode_ids
from unigraph.columnar.batches import EdgeBatch, FeatureValues
from unigraph.columnar.ragged import concat, take


@dataclasses.dataclass(eq=False)
class AdjacencyBucket:
    edge_set: str
    sources: np.ndarray      # 'S', unique source ids, sorted
    row_splits: np.ndarray   # int64 [len(sources) + 1]: CSR into the edge arrays
    target_codes: np.ndarray  # int32 per edge, into target_ids
    target_ids: np.ndarray   # 'S', sorted distinct targets
    rows: np.ndarray         # int64 RowId, per edge
    weights: np.ndarray | None
    features: dict[str, FeatureValues]
    # uint64 fingerprint of each source's id (its random streams), computed once here
    # rather than on every hop that reaches it.
    source_fingerprints: np.ndarray | None = None
    # uint64 fingerprint of each target id (aligned with target_ids), for engines whose ids
    # are codes (sampler/memory); None: hashed from target_ids when needed.
    target_fingerprints: np.ndarray | None = None
    # Time-ordered edge sets (sampler.plan.timing): every edge's effective time, each
    # row sorted by it (core.temporal); None for canonical rows.
    times: np.ndarray | None = None
    # Rows of more than the job's chunk_edges edges, laid out chunk after chunk
    # (core.long_rows); None when there are none.
    long_rows: LongRows | None = None
    # Hubs of this bucket whose edges travel as chunk elements instead (core.hubs: the
    # Beam pipeline): (ids 'S' sorted, chunk counts); None when there are none.
    hubs: tuple[np.ndarray, np.ndarray] | None = None
    # Whether every source and target here has a row in its node set's table (or its
    # set has none). Then the assembly drops no edge for an absent end, and an edge's
    # table row, which only names a dropped edge in the run report, is never read:
    # edge_rows does not gather it (on a store larger than memory, those gathers were
    # about a fifth of the pages a hop reads). Set by the memory engine, which can tell
    # (sampler.memory.graph); False wherever it is not known (the Beam pipeline).
    ends_in_tables: bool = False

    def target_fingerprints_of(self, codes: np.ndarray) -> np.ndarray:
        """Fingerprints of the targets with these codes (link samples' leakage check)."""
        if self.target_fingerprints is not None:
            return self.target_fingerprints[codes]
        return rng.fingerprint(self.target_ids[codes])

    @property
    def targets(self) -> np.ndarray:
        return self.target_ids[self.target_codes]

    def edge_rows(self, positions: np.ndarray) -> np.ndarray:
        """The table row (RowId) of the edges at these positions; -1 each when no edge
        can be dropped (`ends_in_tables`), so nothing will ask for them."""
        if self.ends_in_tables:
            return np.full(len(positions), -1, np.int64)
        return take(self.rows, positions)

    def rows_of(self, node_ids: np.ndarray) -> np.ndarray:
        """CSR row of each node id, -1 where the node has no edges here."""
        return index_beside(self, "_source_index", self.sources).positions(node_ids)


def canonical_adjacency(sources: np.ndarray, targets: np.ndarray, rows: np.ndarray,
                        times: np.ndarray | None = None) -> np.ndarray:
    """The permutation that sorts edges by source id, then target id, then table row;
    with `times`, by source id, then time, then target id, then table row.

    `sources`, `targets` are 'S' byte arrays (compared bytewise, as numpy does),
    `rows` int64 RowIds. This order is part of the output contract: strategies
    break ties and address edges by their position in it.
    """
    sources, targets, rows = np.asarray(sources), np.asarray(targets), np.asarray(rows)
    if not (sources.shape == targets.shape == rows.shape) or sources.ndim != 1:
        raise ValueError(f"canonical_adjacency: need three 1-D arrays of one length, got shapes "
                         f"{sources.shape}, {targets.shape}, {rows.shape}")
    # Byte strings with a shared prefix sort by their integer keys, in the same order.
    sources, targets = order_keys(sources), order_keys(targets)
    if times is not None:
        return np.lexsort((rows, targets, times, sources))
    if (sources.dtype.kind == targets.dtype.kind == "i" and len(rows)
            and bool(np.all(rows[1:] > rows[:-1]))):
        # Integer codes (the in-memory engine) with rows in table order: one stable sort
        # of a packed (source, target) key keeps the rows in order within equal keys.
        width = int(targets.max()) + 1
        if (int(sources.max()) + 1) * width < 2**62 and sources.min() >= 0 <= targets.min():
            return np.argsort(sources.astype(np.int64) * width + targets, kind="stable")
    return np.lexsort((rows, targets, sources))


def build_adjacency(edge_set: str, pieces: Sequence[EdgeBatch],
                    fingerprint_of: Callable[[np.ndarray], np.ndarray] = rng.fingerprint,
                    chunk_edges: int | None = None,
                    target_fingerprint_of: Callable[[np.ndarray], np.ndarray] = rng.fingerprint
                    ) -> AdjacencyBucket:
    """One bucket's adjacency from the edge batches (any order) that fell into it.

    `fingerprint_of(source ids)` gives the ids' fingerprints; an engine whose ids are
    integer codes (sampler/memory) passes a lookup of the real ids' fingerprints, and
    `target_fingerprint_of` likewise for targets. Rows of more than `chunk_edges` edges
    are laid out chunk after chunk (core.long_rows); None: no row is long."""
    pieces = [p for p in pieces if len(p)]
    if not pieces:
        return AdjacencyBucket(edge_set, np.zeros(0, "S1"), np.zeros(1, np.int64),
                               np.zeros(0, np.int32), np.zeros(0, "S1"), np.zeros(0, np.int64),
                               None, {}, np.zeros(0, np.uint64))
    sources = np.concatenate([p.sources for p in pieces])
    targets = np.concatenate([p.targets for p in pieces])
    rows = np.concatenate([p.rows for p in pieces])
    has_weights = [p.weights is not None for p in pieces]
    weights = np.concatenate([p.weights for p in pieces]) if all(has_weights) else None
    if weights is not None and not np.isfinite(weights).all():  # the readers' promise
        raise ValueError(f"build_adjacency: edge set '{edge_set}': weights must be finite "
                         f"(found NaN or infinity)")
    timed = [p.timestamps is not None for p in pieces]
    if any(timed) and not all(timed):
        raise ValueError(f"build_adjacency: edge set '{edge_set}': batches with and without "
                         f"timestamps")
    times = np.concatenate([p.timestamps for p in pieces]) if all(timed) else None
    order = canonical_adjacency(sources, targets, rows, times)
    sources, targets, rows = sources[order], targets[order], rows[order]
    features = {name: take(concat([p.features[name] for p in pieces]), order)
                for name in pieces[0].features}
    starts = np.flatnonzero(np.r_[True, sources[1:] != sources[:-1]])
    row_splits = np.r_[starts, len(sources)].astype(np.int64)
    weights = None if weights is None else weights[order]
    times = None if times is None else times[order]
    permutation, long_rows = long_row_layout(
        row_splits, lambda positions: target_fingerprint_of(targets[positions]), chunk_edges)
    if permutation is not None:
        targets, rows = targets[permutation], rows[permutation]
        weights = None if weights is None else weights[permutation]
        times = None if times is None else times[permutation]
        features = {name: take(values, permutation) for name, values in features.items()}
    target_ids, target_codes = encode_ids(targets)
    return AdjacencyBucket(edge_set, sources[starts], row_splits, target_codes, target_ids, rows,
                           weights, features, fingerprint_of(sources[starts]), times=times,
                           long_rows=long_rows)


def concat_edge_batches(edge_set: str, batches: Sequence[EdgeBatch]) -> EdgeBatch:
    """All rows of an edge set's table in one batch (what a single-bucket CSR is built
    from: sampler.memory.graph, sampler.store.build)."""
    batches = [b for b in batches if len(b)]
    if not batches:  # a table of a header only
        return EdgeBatch(edge_set, np.zeros(0, "S1"), np.zeros(0, "S1"), np.zeros(0, np.int64),
                         None, {})
    if len(batches) == 1:
        return batches[0]
    has_weights = all(b.weights is not None for b in batches)
    has_times = all(b.timestamps is not None for b in batches)
    return EdgeBatch(edge_set, np.concatenate([b.sources for b in batches]),
                     np.concatenate([b.targets for b in batches]),
                     np.concatenate([b.rows for b in batches]),
                     np.concatenate([b.weights for b in batches]) if has_weights else None,
                     {k: concat([b.features[k] for b in batches]) for k in batches[0].features},
                     np.concatenate([b.timestamps for b in batches]) if has_times else None)
