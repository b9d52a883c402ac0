"""Seeds: the rows of the seeds table become numbered samples, joined with their node set.

A sample's id depends on the seed rows as a multiset, never on their order, their
file, the files' format or the number of buckets, and a row listed once has the id
of its content alone, whatever else the table holds:

    sample id = the top 63 bits of a 64-bit fingerprint of the row's content

except that ids must be unique: rows sorted by (that fingerprint, a second,
independent one) whose ids would not increase take the next free id after the row
before them. So a seed listed k times is k samples with ids f, f+1, ..., f+k-1
(identical rows are interchangeable, so which copy gets which does not matter), and
a row whose id another row's probing took (two distinct contents within a few ids
of each other among 2**63: practically never) is moved by one. Ids are unique
without any birthday bound. A row's subgraph depends on its id (the random streams
are keyed by it), so the subgraph of a seed listed once is the same whether the
table holds it alone or among millions: `sampler.api` samples single seeds to the
CLI's bytes.

The probing stays inside the row's *numbering group* (the fingerprint's top
NUMBERING_GROUP_BITS bits: the Beam engine numbers whole groups per element), which
owns the ids [g << 51, (g + 1) << 51): a group whose last ids would pass its end is
probed down from that end instead, so numbering by group equals numbering at once.
Without a seeds
table every node of the seed set is a seed. The join keeps the seeds found in
the seed node set and counts (and lists) the others; a found seed is the first
(sample, node) request of its sample, its sample's seed piece for the assembly,
and a node whose features its output shard needs.
"""
from __future__ import annotations

import dataclasses
from typing import Iterator, Sequence

import numpy as np

from sampler.core import rng
from sampler.core.arrays import unique
from sampler.core.buckets import split_by_bucket, split_by_shard, split_requests
from sampler.core.node_table import NodeTableBucket, features_by_shard
from sampler.core.pieces import NodeFeatures, Requests, SeedPiece
from sampler.core.stats import MAX_LISTED_IDS, RunStats
from unigraph.columnar.batches import NodeBatch, SeedBatch

NUMBERING_GROUP_BITS = 12  # 4096 groups: a fixed cut, independent of the job's buckets
_ID_BITS = 63  # sample ids are non-negative int64
_GROUP_SHIFT = _ID_BITS - NUMBERING_GROUP_BITS  # a group's ids: [g << 51, (g + 1) << 51)
_SECOND_SALT = rng.name_salt("seed-content-2")


def seeds_from_nodes(batch: NodeBatch) -> SeedBatch:
    """Every row of the seed set's own table is a seed (with no cut-off)."""
    return SeedBatch(batch.ids, batch.rows)


def seeds_from_ids(ids: np.ndarray) -> SeedBatch:
    """Every node of a table-less seed set is a seed (the ids its edges name)."""
    return SeedBatch(ids, np.zeros(len(ids), np.int64))


def _content_fingerprints(batch: SeedBatch) -> tuple[np.ndarray, np.ndarray]:
    """Two independent 64-bit fingerprints of every seed row's content: the id, and the
    cut-off's bits when the seeds have one (so a seed listed with two cut-offs is two
    distinct rows, numbered the same way whatever their order)."""
    first, second = rng.fingerprint(batch.ids), rng.fingerprint(batch.ids, salt=_SECOND_SALT)
    if batch.timestamps is None:
        return first, second
    bits = np.ascontiguousarray(batch.timestamps + 0).view(np.uint64)  # + 0: -0.0 is 0.0
    return rng.mix(first, bits), rng.mix(second, bits, np.uint64(_SECOND_SALT))


def numbering_groups(batch: SeedBatch, keys: int = 1 << NUMBERING_GROUP_BITS
                     ) -> Iterator[tuple[int, SeedBatch]]:
    """(key, the rows of that key): all rows that `number_seeds` must rank together.
    `keys` (a power of two up to 2**NUMBERING_GROUP_BITS) numbering groups' worth of
    rows: key k holds the consecutive groups whose top bits are k (see numbering_key)."""
    first, _ = _content_fingerprints(batch)
    for key, positions in split_by_bucket(numbering_key(first, keys)):
        yield key, batch.take(positions)


def numbering_key(first: np.ndarray, keys: int) -> np.ndarray:
    """The numbering key of rows with first content fingerprint `first`, out of `keys`:
    the fingerprint's top log2(keys) bits. A key holds whole numbering groups, and
    numbering several groups at once equals numbering each alone (`unique_ids`), so
    the key count only cuts the work, like node buckets."""
    bits = keys.bit_length() - 1
    if keys < 1 or keys != 1 << bits or bits > NUMBERING_GROUP_BITS:
        raise ValueError(f"numbering keys: a power of two up to "
                         f"{1 << NUMBERING_GROUP_BITS}, got {keys}")
    if bits == 0:
        return np.zeros(len(first), np.int64)
    return (first >> np.uint64(64 - bits)).astype(np.int64)


def number_seeds(parts: Sequence[SeedBatch]) -> Requests:
    """The seeds of whole numbering groups (in any order and split) as (sample, node)
    requests, sorted by sample id."""
    parts = [p for p in parts if len(p)]
    if not parts:
        return Requests.concat([])
    timed = parts[0].timestamps is not None
    batch = SeedBatch(np.concatenate([p.ids for p in parts]),
                      np.concatenate([p.rows for p in parts]),
                      np.concatenate([p.timestamps for p in parts]) if timed else None)
    return numbered_seed_rows(batch)[0]


def numbered_seed_rows(batch: SeedBatch) -> tuple[Requests, np.ndarray]:
    """(the rows as requests sorted by sample id, each row's sample id in row order)."""
    order, samples = number_by_content(*_content_fingerprints(batch))
    by_row = np.empty(len(order), np.int64)
    by_row[order] = samples
    return Requests.from_ids(samples, batch.ids[order],
                             None if batch.timestamps is None else batch.timestamps[order]), by_row


def number_by_content(first: np.ndarray, second: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(order, sample ids): rows sorted by their two content fingerprints, each numbered
    by the top 63 bits of `first`, probed to the next free id where that is taken (see
    the module docstring). Any seed kind whose rows share a numbering group (top bits of
    `first`) is numbered this way."""
    order = np.lexsort((second, first))
    wanted = (first[order] >> np.uint64(64 - _ID_BITS)).astype(np.int64)
    return order, unique_ids(wanted)


def unique_ids(wanted: np.ndarray) -> np.ndarray:
    """Strictly increasing int64 ids for ascending `wanted` ids: each the larger of its
    wanted id and the id before it plus one, within its numbering group's range (a
    group whose ids would pass its end takes the ids below that end instead)."""
    ids = _next_free(wanted)
    group = wanted >> np.int64(_GROUP_SHIFT)
    if (ids > _group_end(group)).any():
        # A group full up to its end (practically never): each group on its own, so the
        # overflow neither leaves the group nor moves the next group's ids.
        starts = np.flatnonzero(np.r_[True, group[1:] != group[:-1]])
        for lo, hi in zip(starts, np.r_[starts[1:], len(ids)]):
            within = _next_free(wanted[lo:hi])
            position = np.arange(hi - lo, dtype=np.int64)
            capped = np.minimum(within, _group_end(group[lo])) - position
            ids[lo:hi] = np.minimum.accumulate(capped[::-1])[::-1] + position
    return ids


def _next_free(wanted: np.ndarray) -> np.ndarray:
    position = np.arange(len(wanted), dtype=np.int64)
    return np.maximum.accumulate(wanted - position) + position if len(wanted) else wanted


def _group_end(group):
    """The last id of numbering group(s) `group`."""
    return ((group + 1) << np.int64(_GROUP_SHIFT)) - 1


def seed_requests(requests: Requests, num_buckets: int) -> Iterator[tuple[int, Requests]]:
    """(node bucket, the numbered seeds of that bucket)."""
    yield from split_requests(requests, num_buckets)


@dataclasses.dataclass(eq=False)
class SeedJoin:
    """What one node bucket's seeds give the later stages."""

    found: Requests                                       # the first hop's input
    seeds_by_shard: list[tuple[int, SeedPiece]]           # for the assembly
    features_by_shard: list[tuple[int, NodeFeatures]]     # the seeds' own features
    stats: RunStats


def join_seeds(table: NodeTableBucket, requests: Requests, num_shards: int, *,
               with_features: bool = True) -> SeedJoin:
    """Seeds of one bucket ⋈ the seed set's nodes in that bucket; `with_features=False`
    leaves the seeds' features to be looked up with the other nodes'."""
    found = (table.positions_of(requests.ids) >= 0)[requests.codes]
    absent = requests.nodes[~found]
    stats = RunStats(seeds_read=len(requests), seeds_missing=len(absent),
                     missing_seed_ids=[i.decode(errors="replace")
                                       for i in unique(absent)[:MAX_LISTED_IDS].tolist()])
    seeds = requests.take(np.flatnonzero(found))
    if not len(seeds):
        return SeedJoin(seeds, [], [], stats)
    # Sent even without features: the assembly keeps a node of a set with a table only
    # if the table sent it (a seed set whose table has ids alone, say).
    features = features_by_shard(table, seeds, num_shards)[0] if with_features else []
    return SeedJoin(seeds, list(split_by_shard(SeedPiece(seeds.samples, seeds.nodes,
                                                         seeds.cutoffs), num_shards)),
                    features, stats)
