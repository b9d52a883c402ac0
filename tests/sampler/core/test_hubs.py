"""core.hubs: finding hubs from per-batch counts, and routing their edges and requests."""
import numpy as np

from sampler.core import rng
from sampler.core.adjacency import build_adjacency
from sampler.core.hubs import (hub_chunk_edges, hub_table, hubs_of, plain_edges, route_requests,
                               source_counts)
from sampler.core.buckets import node_buckets, sample_buckets
from sampler.core.long_rows import chunk_of_edges
from sampler.core.pieces import Requests
from unigraph.batches import EdgeBatch, row_ids


def S(*ids):
    return np.array(ids, dtype="S")


def batch(sources, targets, start=0):
    return EdgeBatch("e", S(*sources), S(*targets), row_ids(0, start, len(sources)), None, {})


def test_hubs_are_the_nodes_whose_counts_over_all_batches_pass_chunk_edges():
    batches = [batch(["a", "a", "b", "c"], ["x", "y", "x", "x"]),
               batch(["a", "b", "b"], ["z", "y", "z"], 4)]
    by_bucket = {}
    for b in batches:
        for bucket, counts in source_counts(b, 2):
            assert set(node_buckets(counts[0], 2)) == {bucket}
            by_bucket.setdefault(bucket, []).append(counts)
    hubs = sorted(h for parts in by_bucket.values() for h in hubs_of(parts, 2))
    assert hubs == [(b"a", 2), (b"b", 2)]          # 3 edges each: two chunks of <= 2
    assert sorted(h for parts in by_bucket.values() for h in hubs_of(parts, 3)) == []


def test_hub_edges_go_to_the_chunk_the_in_memory_layout_puts_them_in():
    edges = batch(["a"] * 7 + ["b"], ["t%d" % i for i in range(8)])
    table = hub_table([(b"a", 3)])
    assert plain_edges(edges, table).sources.tolist() == [b"b"]
    routed = list(hub_chunk_edges(edges, table))
    chunks = {key: part.targets.tolist() for key, part in routed}
    assert sum(len(v) for v in chunks.values()) == 7 and all(k[0] == b"a" for k in chunks)
    for (_, chunk), targets in chunks.items():
        assert set(chunk_of_edges(rng.fingerprint(S(*targets)), 3)) == {chunk}
    layout = build_adjacency("e", [edges], chunk_edges=3).long_rows
    sizes = (layout.chunk_ends - layout.chunk_starts).tolist()
    assert sorted(sizes) == sorted(len(chunks.get((b"a", c), [])) for c in range(3))


def test_requests_of_hubs_go_to_every_chunk_and_to_their_samples_shard():
    requests = Requests.from_ids(np.array([1, 2, 2, 5]), S("a", "a", "x", "b"))
    plain, to_chunks, to_merge = route_requests(requests, hub_table([(b"a", 2), (b"b", 3)]), 4)
    assert plain.nodes.tolist() == [b"x"]
    assert sorted((k, r.samples.tolist()) for k, r in to_chunks) == [
        ((b"a", 0), [1, 2]), ((b"a", 1), [1, 2]),
        ((b"b", 0), [5]), ((b"b", 1), [5]), ((b"b", 2), [5])]
    for shard, part in to_merge:
        assert set(sample_buckets(part.samples, 4)) == {shard}
    assert sorted(s for _, r in to_merge for s in r.samples.tolist()) == [1, 2, 5]
    untouched, none, nothing = route_requests(requests, hub_table([]), 4)
    assert untouched is requests and none == [] and nothing == []
