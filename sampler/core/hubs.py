"""Hubs as bounded elements: which nodes have long rows, and where their edges and
requests go in an engine that moves adjacency by key (the Beam pipeline).

A hub is a node with more than `chunk_edges` edges in an edge set (core.long_rows).
Its edges never join its bucket's adjacency: they travel keyed by (hub id, chunk),
one element per chunk, built into a one-row AdjacencyBucket; a request that reaches
a hub goes to every chunk of it, and once more, keyed by the sample's output shard,
to the merge that keeps the k best of the chunks' candidates (core.hop).

Data shapes:
  SourceCounts = (ids 'S' sorted distinct, int64 counts): edges per source id
  HubTable     = (ids 'S' sorted distinct, int64 chunk counts): the set's hubs
  ChunkKey     = (hub id: bytes, chunk: int)
"""
from __future__ import annotations

from typing import Iterable, Iterator, Sequence

import numpy as np

from sampler.core import rng
from sampler.core.arrays import unique_inverse
from sampler.core.buckets import node_buckets, split_by_bucket, split_by_shard
from sampler.core.long_rows import chunk_counts, chunk_of_edges
from sampler.core.pieces import Requests
from unigraph.batches import EdgeBatch

SourceCounts = tuple[np.ndarray, np.ndarray]
HubTable = tuple[np.ndarray, np.ndarray]


def source_counts(batch: EdgeBatch, num_buckets: int) -> Iterator[tuple[int, SourceCounts]]:
    """(node bucket, edges per source id) of one batch, per bucket."""
    ids, codes = unique_inverse(batch.sources)
    counts = np.bincount(codes, minlength=len(ids)).astype(np.int64)
    for bucket, positions in split_by_bucket(node_buckets(ids, num_buckets)):
        yield bucket, (ids[positions], counts[positions])


def hubs_of(parts: Iterable[SourceCounts], chunk_edges: int) -> list[tuple[bytes, int]]:
    """The (id, chunk count) of every source whose counts over `parts` (one bucket's)
    add up to more than chunk_edges."""
    parts = list(parts)
    if not parts:
        return []
    ids, codes = unique_inverse(np.concatenate([p[0] for p in parts]))
    degrees = np.zeros(len(ids), np.int64)
    np.add.at(degrees, codes, np.concatenate([p[1] for p in parts]))
    long = np.flatnonzero(degrees > chunk_edges)
    return [(bytes(i), int(n)) for i, n in zip(ids[long], chunk_counts(degrees[long],
                                                                        chunk_edges))]


def hub_table(hubs: Sequence[tuple[bytes, int]]) -> HubTable:
    """The side input's (id, chunk count) pairs as sorted arrays."""
    if not hubs:
        return np.zeros(0, "S1"), np.zeros(0, np.int64)
    ids = np.array([h[0] for h in hubs])
    order = np.argsort(ids, kind="stable")
    return ids[order], np.array([h[1] for h in hubs], np.int64)[order]


def _hub_index(table: HubTable, ids: np.ndarray) -> np.ndarray:
    """Each id's index in the hub table, -1 for an id that is not a hub."""
    hub_ids = table[0]
    if not len(hub_ids) or not len(ids):
        return np.full(len(ids), -1, np.int64)
    at = np.minimum(np.searchsorted(hub_ids, ids), len(hub_ids) - 1)
    return np.where(hub_ids[at] == ids, at, -1).astype(np.int64)


def plain_edges(batch: EdgeBatch, table: HubTable) -> EdgeBatch:
    """The batch without the edges of hubs."""
    keep = _hub_index(table, batch.sources) < 0
    return batch if keep.all() else batch.take(np.flatnonzero(keep))


def hub_chunk_edges(batch: EdgeBatch, table: HubTable
                    ) -> Iterator[tuple[tuple[bytes, int], EdgeBatch]]:
    """((hub id, chunk), its edges) for every hub edge of the batch: the chunk a long
    row's edge falls in (core.long_rows.chunk_of_edges), as the in-memory CSR has it."""
    hub = _hub_index(table, batch.sources)
    at_hub = np.flatnonzero(hub >= 0)
    if not at_hub.size:
        return
    chunks = chunk_of_edges(rng.fingerprint(batch.targets[at_hub]), table[1][hub[at_hub]])
    key = hub[at_hub] * int(table[1].max()) + chunks
    for _, positions in split_by_bucket(key):
        edges = at_hub[positions]
        yield (bytes(table[0][hub[edges[0]]]), int(chunks[positions[0]])), batch.take(edges)


def route_requests(requests: Requests, table: HubTable, num_shards: int
                   ) -> tuple[Requests, list[tuple[tuple[bytes, int], Requests]],
                              list[tuple[int, Requests]]]:
    """Splits one bucket's requests: those of plain nodes; those of hubs, once per chunk
    of the hub, keyed by chunk; and those of hubs again, keyed by their sample's output
    shard, for the merge of the chunks' candidates."""
    hub = _hub_index(table, requests.ids)[requests.codes]
    at_hub = np.flatnonzero(hub >= 0)
    if not at_hub.size:
        return requests, [], []
    plain = requests.take(np.flatnonzero(hub < 0))
    to_chunks = []
    for index, positions in split_by_bucket(hub[at_hub]):
        of_hub = requests.take(at_hub[positions])
        to_chunks += [((bytes(table[0][index]), chunk), of_hub)
                      for chunk in range(int(table[1][index]))]
    return plain, to_chunks, list(split_by_shard(requests.take(at_hub), num_shards))
