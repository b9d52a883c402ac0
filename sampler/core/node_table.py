"""Node features of one bucket of nodes, and the lookup join that copies them into samples.

Features are looked up once per (bucket, node) and then copied, by numpy
fancy indexing, into every sample that reached the node.
"""
from __future__ import annotations

import dataclasses
from typing import Sequence

import numpy as np

from sampler.core.arrays import argsort, index_beside, run_starts, unique, unique_codes
from sampler.core.buckets import sample_buckets, split_by_bucket
from sampler.core.pieces import NodeFeatures, Requests
from unigraph.columnar.batches import FeatureValues, NodeBatch, describe_row
from unigraph.errors import TableError
from unigraph.columnar.ragged import concat, take
from unigraph.tables.read import row_location


@dataclasses.dataclass(eq=False)
class NodeTableBucket:
    node_set: str
    ids: np.ndarray   # 'S', unique and sorted
    features: dict[str, FeatureValues]
    timestamps: np.ndarray | None = None  # per node, when the job reads the set's times

    def positions_of(self, node_ids: np.ndarray) -> np.ndarray:
        """Position of each id in this bucket, -1 where it is absent."""
        return index_beside(self, "_index", self.ids).positions(node_ids)


def build_node_table(node_set: str, batches: Sequence[NodeBatch],
                     files: Sequence[str] = ()) -> NodeTableBucket:
    """One bucket's node table; TableError on a duplicate id (naming both rows)."""
    batches = [b for b in batches if len(b)]
    if not batches:
        return NodeTableBucket(node_set, np.zeros(0, "S1"), {})
    ids = np.concatenate([b.ids for b in batches])
    rows = np.concatenate([b.rows for b in batches])
    order = np.lexsort((rows, ids))
    ids, rows = ids[order], rows[order]
    duplicate = np.flatnonzero(ids[1:] == ids[:-1])
    if len(duplicate):
        i = duplicate[0]
        raise duplicate_id(node_set, ids[i], rows[i], rows[i + 1], files)
    features = {name: take(concat([b.features[name] for b in batches]), order)
                for name in batches[0].features}
    timed = batches[0].timestamps is not None
    return NodeTableBucket(node_set, ids, features,
                           np.concatenate([b.timestamps for b in batches])[order] if timed
                           else None)


def duplicate_id(node_set: str, node_id: bytes, row: int, other_row: int,
                 files: Sequence[str] = ()) -> TableError:
    """The error for a node id in two rows of a node table (both named)."""
    return TableError(f"node set '{node_set}': duplicate node id "
                      f"{bytes(node_id).decode(errors='replace')!r} in {_where(row, files)} "
                      f"and {_where(other_row, files)}")


def ids_only_table(node_set: str, id_arrays: Sequence[np.ndarray]) -> NodeTableBucket:
    """A featureless node set's nodes in one bucket: the distinct ids its edges name."""
    arrays = [a for a in id_arrays if len(a)]
    ids = unique(np.concatenate(arrays)) if arrays else np.zeros(0, "S1")
    return NodeTableBucket(node_set, ids, {})


def features_by_shard(table: NodeTableBucket, requests: Requests, num_shards: int,
                      gather: bool = True) -> tuple[list[tuple[int, NodeFeatures]], np.ndarray]:
    """The features each output shard needs, every node once per shard; and the
    distinct requested ids that are absent from the table. `gather=False`: the pieces
    point into the table (NodeFeatures.rows) instead of copying its rows, for a caller
    that keeps the table until the shard is encoded (the in-memory engine, sampler.api)."""
    shards = sample_buckets(requests.samples, num_shards)
    positions_of_ids = table.positions_of(requests.ids)  # one search per distinct id
    result = []
    for shard, positions in split_by_bucket(shards):
        codes = unique_codes(requests.codes[positions], len(requests.ids))
        codes = codes[positions_of_ids[codes] >= 0]
        if not len(codes):
            continue  # every node this shard wants is absent: nothing to send
        rows = positions_of_ids[codes]
        if gather:
            piece = NodeFeatures(table.node_set, requests.ids[codes],
                                 {k: take(v, rows) for k, v in table.features.items()})
        else:
            piece = NodeFeatures(table.node_set, requests.ids[codes], table.features, rows)
        result.append((shard, piece))
    used = unique_codes(requests.codes, len(requests.ids))
    return result, requests.ids[used[positions_of_ids[used] < 0]]


def lookup_requests(requests: Requests, num_shards: int) -> Requests:
    """The requests cut to one per (output shard, node), without pairs or cut-offs: all
    that features_by_shard reads (each shard's nodes), so it gives the same pieces and
    absent ids for these as for all the requests. The Beam engine ships these to its
    lookup, not every (sample, node) request."""
    if len(requests) == 0:
        return Requests(requests.samples, requests.codes, requests.ids)
    shards = sample_buckets(requests.samples, num_shards).astype(np.int64)
    keys = shards * len(requests.ids) + requests.codes
    order = argsort(keys)  # stable: each key's first request first (as np.unique's index)
    kept = requests.take(order[run_starts(keys[order])])
    return Requests(kept.samples, kept.codes, kept.ids)


def _where(row_id: int, files: Sequence[str]) -> str:
    if not files:
        file_index, row = describe_row(row_id)
        return f"file #{file_index} row {row}"
    return row_location(list(files), row_id)
