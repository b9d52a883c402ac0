"""sampler.core.seeds: seed rows become samples; the join keeps found seeds, lists the rest."""
import numpy as np

from sampler.core import rng
from sampler.core.buckets import node_buckets, sample_buckets
from sampler.core.node_table import build_node_table, ids_only_table
from sampler.core.pieces import Requests
from sampler.core.seeds import join_seeds, seed_requests, seeds_from_ids, seeds_from_nodes
from unigraph.batches import NodeBatch, SeedBatch, row_ids


def S(*ids):
    return np.array(ids, dtype="S")


def test_sample_ids_are_seed_rows_or_id_fingerprints():
    batch = NodeBatch("p", S("a", "b"), row_ids(1, 5, 2), {})
    assert seeds_from_nodes(batch).rows.tolist() == batch.rows.tolist()
    seeds = seeds_from_ids(S("a", "b"))
    assert seeds.rows.tolist() == rng.fingerprint(S("a", "b")).view(np.int64).tolist()


def test_seed_requests_are_keyed_by_node_bucket():
    batch = SeedBatch(S("a", "b", "a"), np.array([0, 1, 2], np.int64))
    parts = list(seed_requests(batch, 4))
    assert sorted((int(s), n) for _, r in parts for s, n in zip(r.samples, r.nodes)) == [
        (0, b"a"), (1, b"b"), (2, b"a")]
    for bucket, r in parts:
        assert set(node_buckets(r.nodes, 4).tolist()) == {bucket}


def test_join_keeps_found_seeds_and_counts_the_missing():
    table = build_node_table("p", [NodeBatch("p", S("a", "b"), row_ids(0, 0, 2),
                                             {"x": np.array([1.0, 2.0])})])
    # "a" twice (two samples), "zz" not in the graph.
    requests = Requests.from_ids(np.array([10, 11, 12, 13]), S("a", "zz", "a", "b"))
    join = join_seeds(table, requests, num_shards=2)
    assert sorted(zip(join.found.samples.tolist(), join.found.nodes.tolist())) == [
        (10, b"a"), (12, b"a"), (13, b"b")]
    assert (join.stats.seeds_read, join.stats.seeds_missing) == (4, 1)
    assert join.stats.missing_seed_ids == ["zz"]
    seeds = sorted((int(s), i) for _, p in join.seeds_by_shard for s, i in zip(p.samples, p.ids))
    assert seeds == [(10, b"a"), (12, b"a"), (13, b"b")]
    for shard, piece in join.seeds_by_shard:
        assert set(sample_buckets(piece.samples, 2).tolist()) == {shard}
    # Features go once per node and shard, only to shards that hold a sample reaching it.
    for shard, features in join.features_by_shard:
        expected = sorted({i for s, i in seeds if sample_buckets(np.array([s]), 2)[0] == shard})
        assert sorted(features.ids.tolist()) == expected
        assert features.features["x"].tolist() == [{b"a": 1.0, b"b": 2.0}[i]
                                                   for i in features.ids.tolist()]


def test_join_without_features_or_seeds():
    table = ids_only_table("p", [S("a")])
    join = join_seeds(table, Requests.from_ids(np.array([1]), S("a")), num_shards=1)
    assert join.features_by_shard == [] and len(join.found) == 1
    nothing = join_seeds(table, Requests.from_ids(np.array([1]), S("b")), num_shards=1)
    assert len(nothing.found) == 0 and nothing.seeds_by_shard == []
    assert nothing.stats.missing_seed_ids == ["b"]
