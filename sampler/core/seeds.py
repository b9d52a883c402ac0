"""Seeds: every row of the seeds table becomes a sample, joined with its node set's table.

A sample's id is the RowId of its seed row (so a seed listed twice is two
samples with their own draws); without a seeds table every node of the seed set
is a seed, with the fingerprint of its id as sample id. The join keeps the seeds
found in the seed node set and counts (and lists) the others; a found seed is
the first (sample, node) request of its sample, its sample's seed piece for the
assembly, and a node whose features its output shard needs.
"""
from __future__ import annotations

import dataclasses
from typing import Iterator

import numpy as np

from sampler.core import rng
from sampler.core.buckets import split_by_shard, split_requests
from sampler.core.node_table import NodeTableBucket, features_by_shard
from sampler.core.pieces import NodeFeatures, Requests, SeedPiece
from sampler.core.stats import MAX_LISTED_IDS, RunStats
from unigraph.batches import NodeBatch, SeedBatch


def seeds_from_nodes(batch: NodeBatch) -> SeedBatch:
    """Every row of the seed set's own table is a seed; its RowId is the sample id."""
    return SeedBatch(batch.ids, batch.rows)


def seeds_from_ids(ids: np.ndarray) -> SeedBatch:
    """Every node of a table-less seed set is a seed; its id's fingerprint is the sample id
    (there is no table row to number it by)."""
    return SeedBatch(ids, rng.fingerprint(ids).view(np.int64))


def seed_requests(batch: SeedBatch, num_buckets: int) -> Iterator[tuple[int, Requests]]:
    """(node bucket, the seeds of that bucket as (sample, node) requests)."""
    yield from split_requests(Requests.from_ids(batch.rows, batch.ids), num_buckets)


@dataclasses.dataclass(eq=False)
class SeedJoin:
    """What one node bucket's seeds give the later stages."""

    found: Requests                                       # the first hop's input
    seeds_by_shard: list[tuple[int, SeedPiece]]           # for the assembly
    features_by_shard: list[tuple[int, NodeFeatures]]     # the seeds' own features
    stats: RunStats


def join_seeds(table: NodeTableBucket, requests: Requests, num_shards: int) -> SeedJoin:
    """Seeds of one bucket ⋈ the seed set's nodes in that bucket."""
    found = (table.positions_of(requests.ids) >= 0)[requests.codes]
    absent = requests.nodes[~found]
    stats = RunStats(seeds_read=len(requests), seeds_missing=len(absent),
                     missing_seed_ids=[i.decode(errors="replace")
                                       for i in np.unique(absent)[:MAX_LISTED_IDS].tolist()])
    seeds = requests.take(np.flatnonzero(found))
    if not len(seeds):
        return SeedJoin(seeds, [], [], stats)
    features = features_by_shard(table, seeds, num_shards)[0] if table.features else []
    return SeedJoin(seeds, list(split_by_shard(SeedPiece(seeds.samples, seeds.nodes), num_shards)),
                    features, stats)
