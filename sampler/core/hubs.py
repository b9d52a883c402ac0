"""Hubs as bounded elements: which nodes of a bucket have long rows, and where their
edges and requests go in an engine that moves adjacency by key (the Beam pipeline).

A hub is a node with more than `chunk_edges` edges in an edge set (core.long_rows).
Its edges never join its bucket's adjacency: they travel keyed by chunk, one
element per chunk, built into a small AdjacencyBucket; the bucket's adjacency only
names its hubs (`AdjacencyBucket.hubs`). A request that reaches a hub goes to every
chunk of it, and once more, keyed by its sample's output shard, to the merge that
keeps the k best of the chunks' candidates (core.hop).

Keys are ints, as every group key of the pipeline (docs/architecture.md, "Beam
rules"): a chunk's key is a hash of (hub id, chunk), and the chunk's index travels in
the value, so two chunks whose keys collide are still told apart.

Data shapes:
  HubTable = (ids 'S' sorted distinct, int64 chunk counts): a bucket's hubs
  ChunkKey = int; values (chunk index, EdgeBatch) or (chunk index, Requests)
"""
from __future__ import annotations

from typing import Iterable, Iterator

import numpy as np

from sampler.core import rng
from sampler.core.arrays import unique_inverse
from sampler.core.buckets import split_by_bucket, split_by_shard
from sampler.core.long_rows import chunk_counts, chunk_of_edges
from sampler.core.pieces import Requests, merge
from unigraph.columnar.batches import EdgeBatch

HubTable = tuple[np.ndarray, np.ndarray]
_KEY_SALT = rng.name_salt("hub chunk key")


def find_hubs(parts: Iterable[EdgeBatch], chunk_edges: int) -> HubTable:
    """The hubs among the sources of one bucket's edge batches: one pass, holding a count
    per distinct source (never the edges)."""
    ids, counts = np.zeros(0, "S1"), np.zeros(0, np.int64)
    for part in parts:
        part_ids, codes = unique_inverse(part.sources)
        merged, all_codes = merge([ids, part_ids], [np.arange(len(ids)), codes])
        totals = np.zeros(len(merged), np.int64)
        np.add.at(totals, all_codes, np.r_[counts, np.ones(len(codes), np.int64)])
        ids, counts = merged, totals
    long = np.flatnonzero(counts > chunk_edges)
    return ids[long], chunk_counts(counts[long], chunk_edges)


def chunk_keys(hub_ids: np.ndarray, chunks: np.ndarray) -> np.ndarray:
    """The int group key of each (hub, chunk)."""
    mixed = rng.mix(rng.fingerprint(hub_ids), _KEY_SALT, np.asarray(chunks, np.int64))
    return (mixed >> np.uint64(1)).astype(np.int64)


def _hub_index(table: HubTable, ids: np.ndarray) -> np.ndarray:
    """Each id's index in the hub table, -1 for an id that is not a hub."""
    hub_ids = table[0]
    if not len(hub_ids) or not len(ids):
        return np.full(len(ids), -1, np.int64)
    at = np.minimum(np.searchsorted(hub_ids, ids), len(hub_ids) - 1)
    return np.where(hub_ids[at] == ids, at, -1).astype(np.int64)


def split_hub_edges(part: EdgeBatch, table: HubTable
                    ) -> tuple[EdgeBatch, list[tuple[int, tuple[int, EdgeBatch]]]]:
    """A batch's plain edges, and its hubs' edges as (chunk key, (chunk, edges)): the
    chunk each edge of a long row falls in (core.long_rows.chunk_of_edges), as the
    in-memory engine's CSR has it."""
    hub = _hub_index(table, part.sources)
    at_hub = np.flatnonzero(hub >= 0)
    if not at_hub.size:
        return part, []
    chunks = chunk_of_edges(rng.fingerprint(part.targets[at_hub]), table[1][hub[at_hub]])
    out = []
    for _, positions in split_by_bucket(hub[at_hub] * int(table[1].max()) + chunks):
        edges = at_hub[positions]
        chunk = int(chunks[positions[0]])
        key = int(chunk_keys(table[0][hub[edges[:1]]], np.array([chunk]))[0])
        out.append((key, (chunk, part.take(edges))))
    return part.take(np.flatnonzero(hub < 0)), out


def route_requests(requests: Requests, table: HubTable, num_shards: int
                   ) -> tuple[Requests, list[tuple[int, tuple[int, Requests]]],
                              list[tuple[int, Requests]]]:
    """Splits one bucket's requests: those of plain nodes; those of hubs, once per chunk
    of the hub, as (chunk key, (chunk, requests)); and those of hubs again, keyed by
    their sample's output shard, for the merge of the chunks' candidates."""
    hub = _hub_index(table, requests.ids)[requests.codes]
    at_hub = np.flatnonzero(hub >= 0)
    if not at_hub.size:
        return requests, [], []
    to_chunks = []
    for index, positions in split_by_bucket(hub[at_hub]):
        of_hub = requests.take(at_hub[positions])
        chunks = np.arange(int(table[1][index]))
        keys = chunk_keys(np.repeat(table[0][index:index + 1], len(chunks)), chunks)
        to_chunks += [(int(key), (int(chunk), of_hub)) for key, chunk in zip(keys, chunks)]
    return (requests.take(np.flatnonzero(hub < 0)), to_chunks,
            list(split_by_shard(requests.take(at_hub), num_shards)))


def by_chunk(values: Iterable[tuple[int, object]]) -> Iterator[tuple[int, list]]:
    """A chunk key's grouped (chunk, payload) values, by chunk (keys may collide)."""
    grouped: dict[int, list] = {}
    for chunk, payload in values:
        grouped.setdefault(chunk, []).append(payload)
    return iter(sorted(grouped.items()))
