"""sampler.core.hop: one op on one bucket, and the cut of its result for later stages."""
import numpy as np

from sampler.core.adjacency import build_adjacency
from sampler.core.buckets import node_buckets, sample_buckets
from sampler.core.hop import hop_bucket, sample_hop
from sampler.core.pieces import Requests
from sampler.plan import sampling_spec_pb2 as ss
from sampler.plan.plan import PlannedOp
from unigraph.columnar.batches import EdgeBatch, row_ids


def S(*ids):
    return np.array(ids, dtype="S")


ADJACENCY = build_adjacency("e", [EdgeBatch(
    "e", S("a", "a", "a", "b", "b"), S("x", "y", "z", "x", "w"), row_ids(0, 0, 5),
    np.array([1.0, 3.0, 2.0, 5.0, 4.0]), {"f": np.arange(5)})])


def op(strategy, k):
    return PlannedOp("op", ("seed",), "e", "n", "n", k, strategy)


def test_top_k_per_request_once_per_sample_node_pair():
    # Sample 1 reaches "a" twice (two input ops): it is sampled once. "c" has no edges.
    requests = Requests.from_ids(np.array([1, 1, 2, 2]), S("a", "a", "b", "c"))
    drawn = sample_hop(ADJACENCY, requests, op(ss.TOP_K, 2), seed=0)
    edges = drawn.edges
    got = sorted(zip(edges.samples.tolist(), edges.sources.tolist(), edges.targets.tolist(),
                     edges.features["f"].tolist()))
    assert got == [(1, b"a", b"y", 1), (1, b"a", b"z", 2), (2, b"b", b"w", 4),
                   (2, b"b", b"x", 3)]
    # Three draws ((1, a), (2, b), (2, c)); a and b had at least k=2 edges, c none.
    assert (drawn.draws, drawn.at_cap) == (3, 2)
    wide = sample_hop(ADJACENCY, requests, op(ss.TOP_K, 3), seed=0)
    assert (wide.draws, wide.at_cap) == (3, 1)  # only a has 3 edges


def test_random_draws_depend_on_the_request_not_its_batch():
    alone = sample_hop(ADJACENCY, Requests.from_ids(np.array([7]), S("a")),
                       op(ss.RANDOM_UNIFORM, 2), seed=3).edges
    batched = sample_hop(ADJACENCY, Requests.from_ids(np.array([9, 7, 8]), S("b", "a", "a")),
                         op(ss.RANDOM_UNIFORM, 2), seed=3).edges
    mine = batched.samples == 7
    assert batched.targets[mine].tolist() == alone.targets.tolist()


def test_hop_bucket_cuts_edges_by_shard_and_reached_nodes_by_bucket():
    requests = Requests.from_ids(np.array([1, 2, 3]), S("a", "b", "a"))
    out = hop_bucket(ADJACENCY, requests, op(ss.TOP_K, 2), 0, num_shards=2, node_buckets=3,
                     emit_reached=True)
    assert out.stats.edges_sampled_per_op == {"op": 6}
    assert out.stats.draws_per_op == {"op": 3} and out.stats.draws_at_cap_per_op == {"op": 3}
    assert sum(len(p) for _, p in out.edges_by_shard) == 6
    for shard, piece in out.edges_by_shard:
        assert set(sample_buckets(piece.samples, 2).tolist()) == {shard}
    reached = sorted((int(s), n) for _, r in out.reached_by_bucket
                     for s, n in zip(r.samples, r.nodes))
    assert reached == [(1, b"y"), (1, b"z"), (2, b"w"), (2, b"x"), (3, b"y"), (3, b"z")]
    for bucket, r in out.reached_by_bucket:
        assert set(node_buckets(r.nodes, 3).tolist()) == {bucket}
    quiet = hop_bucket(ADJACENCY, requests, op(ss.TOP_K, 2), 0, num_shards=2, node_buckets=3,
                       emit_reached=False)
    assert quiet.reached_by_bucket == []
    none = hop_bucket(ADJACENCY, Requests.from_ids(np.array([1]), S("q")), op(ss.TOP_K, 2), 0,
                      num_shards=2, node_buckets=3, emit_reached=True)
    assert none.edges_by_shard == [] and none.stats.edges_sampled_per_op == {"op": 0}


def test_pair_edges_finds_the_edges_between_a_samples_pair():
    """Each query at an end of its pair excludes its row's edges to the other end."""
    from sampler.core import rng
    from sampler.core.adjacency import build_adjacency
    from sampler.core.hop import pair_edges
    from unigraph.columnar.batches import EdgeBatch

    S = lambda *ids: np.array(ids, dtype="S")  # noqa: E731
    adjacency = build_adjacency("e", [EdgeBatch("e", S("a", "a", "a", "b", "b", "c"),
                                                S("b", "c", "b", "a", "b", "a"),
                                                np.arange(6), None, {})])
    rows = adjacency.rows_of(S("a", "b", "c", "b"))
    fp = rng.fingerprint
    pairs = np.stack([fp(S("a", "a", "a", "b")), fp(S("b", "b", "b", "b"))], axis=1)
    splits, positions = pair_edges(adjacency, rows, adjacency.source_fingerprints[rows], pairs)
    # a: edges to b at positions 0, 1 (a->b twice); b in pair (a, b): b->a at 3;
    # c is no end of its pair; b in pair (b, b): its self-loop b->b at 4.
    assert splits.tolist() == [0, 2, 3, 3, 4]
    assert positions.tolist() == [0, 1, 3, 4]
