"""Heavy elements: the pipeline keys its data by bucket, not by node or sample.

Beam pays a fixed cost per element and step, so every keyed join in the
sampler works on buckets: all nodes whose id hashes to bucket b travel as one
element of numpy arrays (their adjacency, their features, every (sample, node)
request that reached them), and all samples that hash to output shard s are
assembled together. The bucket of an id depends on the id alone, never on the
worker or on arrival order, so results are the same on any runner.

Data shapes:
  NodeBucket   = int: hash(node id) % num_node_buckets
  SampleBucket = int: hash(sample id) % num_shards (one output file per bucket)

The split_* functions cut a batch into one part per bucket; engines only move
the parts (Beam keys them, the in-memory engine indexes by them).
"""
from __future__ import annotations

from typing import Iterator

import numpy as np

from sampler.core import rng
from sampler.core.arrays import argsort, run_starts, unique

# Salts keep the node and sample hashes independent of the sampling randomness.
_NODE_BUCKET_SALT = rng.name_salt("node-bucket")
_SAMPLE_BUCKET_SALT = rng.name_salt("sample-bucket")


def node_buckets(ids: np.ndarray, num_buckets: int) -> np.ndarray:
    """The bucket of every id ('S' array)."""
    mixed = rng.mix(rng.fingerprint(ids), np.uint64(_NODE_BUCKET_SALT))
    return (mixed % np.uint64(num_buckets)).astype(np.int64)


def sample_buckets(samples: np.ndarray, num_buckets: int) -> np.ndarray:
    """The output shard of every sample id (int64 array)."""
    mixed = rng.mix(samples.astype(np.int64).view(np.uint64), np.uint64(_SAMPLE_BUCKET_SALT))
    return (mixed % np.uint64(num_buckets)).astype(np.int64)


def split_by_bucket(buckets: np.ndarray) -> Iterator[tuple[int, np.ndarray]]:
    """(bucket, positions in that bucket) for every non-empty bucket, positions ascending."""
    if len(buckets) == 0:
        return
    if int(buckets.min()) >= 0 and int(buckets.max()) < 2**15:
        # numpy sorts 16-bit integers stably by radix: 1M buckets 9 ms, as int64 43 ms.
        order = np.argsort(buckets.astype(np.int16), kind="stable")
    else:
        order = argsort(buckets)
    sorted_buckets = buckets[order]
    starts = np.flatnonzero(run_starts(sorted_buckets))
    ends = np.append(starts[1:], len(order))
    for start, end in zip(starts, ends):
        yield int(sorted_buckets[start]), order[start:end]


def split_by_shard(piece, num_shards: int) -> Iterator[tuple[int, object]]:
    """(output shard, the part of `piece` whose samples go there) per non-empty shard;
    `piece` is any core.pieces type with `samples` and `take(positions)`."""
    sample_ids = getattr(piece, "sample_ids", None)
    if sample_ids is not None:  # samples as codes (EdgePiece): one hash per distinct sample
        shards = sample_buckets(sample_ids, num_shards)[piece.sample_codes]
    else:
        shards = sample_buckets(piece.samples, num_shards)
    for shard, positions in split_by_bucket(shards):
        yield shard, piece.take(positions)


def split_requests(requests, num_buckets: int) -> Iterator[tuple[int, object]]:
    """(node bucket, the requests for nodes in it) per non-empty bucket; `requests` is
    a core.pieces.Requests, hashed once per distinct id."""
    bucket_of_id = node_buckets(requests.ids, num_buckets)
    for bucket, positions in split_by_bucket(bucket_of_id[requests.codes]):
        yield bucket, requests.take(positions)


def split_batch(batch, id_field: str, num_buckets: int) -> Iterator[tuple[int, object]]:
    """(node bucket, rows) of a NodeBatch or EdgeBatch, by the id column `id_field`
    ('ids' for nodes, 'sources' for the adjacency of edges)."""
    ids = getattr(batch, id_field)
    for bucket, positions in split_by_bucket(node_buckets(ids, num_buckets)):
        yield bucket, batch.take(positions)


def distinct_ids_by_bucket(ids: np.ndarray, num_buckets: int) -> Iterator[tuple[int, np.ndarray]]:
    """(node bucket, the distinct ids in it, sorted) for an 'S' id array."""
    for bucket, positions in split_by_bucket(node_buckets(ids, num_buckets)):
        yield bucket, unique(ids[positions])
