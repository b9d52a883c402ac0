"""core.hubs: a bucket's hubs, and where their edges and requests go."""
import numpy as np

from sampler.core import rng
from sampler.core.adjacency import build_adjacency
from sampler.core.buckets import sample_buckets
from sampler.core.hubs import by_chunk, chunk_keys, find_hubs, route_requests, split_hub_edges
from sampler.core.long_rows import chunk_of_edges
from sampler.core.pieces import Requests
from unigraph.columnar.batches import EdgeBatch, row_ids


def S(*ids):
    return np.array(ids, dtype="S")


def batch(sources, targets, start=0):
    return EdgeBatch("e", S(*sources), S(*targets), row_ids(0, start, len(sources)), None, {})


def test_hubs_are_the_sources_whose_edges_over_all_batches_pass_chunk_edges():
    batches = [batch(["a", "a", "b", "c"], ["x", "y", "x", "x"]),
               batch(["a", "b", "b"], ["z", "y", "z"], 4)]
    ids, chunks = find_hubs(batches, 2)
    assert ids.tolist() == [b"a", b"b"] and chunks.tolist() == [2, 2]  # 3 edges each
    assert len(find_hubs(batches, 3)[0]) == 0 and len(find_hubs([], 1)[0]) == 0


def test_hub_edges_go_to_the_chunk_the_in_memory_layout_puts_them_in():
    edges = batch(["a"] * 7 + ["b"], ["t%d" % i for i in range(8)])
    table = find_hubs([edges], 3)
    plain, routed = split_hub_edges(edges, table)
    assert plain.sources.tolist() == [b"b"]
    chunks = {}
    for key, (chunk, part) in routed:
        assert key == chunk_keys(S("a"), np.array([chunk]))[0]
        assert set(chunk_of_edges(rng.fingerprint(part.targets), 3)) == {chunk}
        chunks[chunk] = part.rows.tolist()
    layout = build_adjacency("e", [edges], chunk_edges=3)
    long_rows = layout.long_rows
    for c in range(3):
        span = slice(long_rows.chunk_starts[c], long_rows.chunk_ends[c])
        assert sorted(layout.rows[span].tolist()) == sorted(chunks.get(c, []))


def test_requests_of_hubs_go_to_every_chunk_and_to_their_samples_shard():
    requests = Requests.from_ids(np.array([1, 2, 2, 5]), S("a", "a", "x", "b"))
    table = (S("a", "b"), np.array([2, 3]))
    plain, to_chunks, to_merge = route_requests(requests, table, 4)
    assert plain.nodes.tolist() == [b"x"]
    keys = {(b"a", c): chunk_keys(S("a"), np.array([c]))[0] for c in range(2)}
    keys.update({(b"b", c): chunk_keys(S("b"), np.array([c]))[0] for c in range(3)})
    got = sorted((key, chunk, r.samples.tolist()) for key, (chunk, r) in to_chunks)
    assert got == sorted((keys[h, c], c, [1, 2] if h == b"a" else [5]) for h, c in keys)
    for shard, part in to_merge:
        assert set(sample_buckets(part.samples, 4)) == {shard}
    assert sorted(s for _, r in to_merge for s in r.samples.tolist()) == [1, 2, 5]
    untouched, none, nothing = route_requests(requests, (S(), np.zeros(0, np.int64)), 4)
    assert untouched is requests and none == [] and nothing == []


def test_values_of_a_chunk_key_are_told_apart_by_chunk():
    assert list(by_chunk([(1, "x"), (0, "y"), (1, "z")])) == [(0, ["y"]), (1, ["x", "z"])]
