"""sampler.core.buckets: stable buckets, and batches cut into one part per bucket."""
import numpy as np

from sampler.core import buckets
from sampler.core.pieces import EdgePiece, Requests
from unigraph.columnar.batches import EdgeBatch, NodeBatch, row_ids


def S(*ids):
    return np.array(ids, dtype="S")


def test_node_buckets_depend_on_the_id_alone():
    narrow, wide = np.array([b"ab", b"c"], "S2"), np.array([b"ab", b"c"], "S9")
    assert buckets.node_buckets(narrow, 97).tolist() == buckets.node_buckets(wide, 97).tolist()
    spread = buckets.node_buckets(np.array([f"n{i}".encode() for i in range(10000)]), 16)
    assert np.bincount(spread, minlength=16).min() > 500  # 625 expected per bucket (5 sigma)


def test_split_by_bucket_gives_ascending_positions_per_bucket():
    parts = dict(buckets.split_by_bucket(np.array([2, 0, 2, 1, 0])))
    assert {b: p.tolist() for b, p in parts.items()} == {0: [1, 4], 1: [3], 2: [0, 2]}
    assert list(buckets.split_by_bucket(np.zeros(0, np.int64))) == []


def test_split_batch_keeps_each_row_with_its_columns():
    batch = NodeBatch("n", S("a", "b", "c", "a2"), row_ids(0, 0, 4), {"x": np.arange(4) * 10})
    parts = list(buckets.split_batch(batch, "ids", 3))
    rows = sorted((i, int(r), int(x)) for _, part in parts
                  for i, r, x in zip(part.ids.tolist(), part.rows, part.features["x"]))
    assert rows == [(b"a", 0, 0), (b"a2", 3, 30), (b"b", 1, 10), (b"c", 2, 20)]
    expected = buckets.node_buckets(batch.ids, 3)
    for bucket, part in parts:
        assert set(buckets.node_buckets(part.ids, 3).tolist()) == {bucket}
    assert sorted(b for b, _ in parts) == sorted(set(expected.tolist()))
    edges = EdgeBatch("e", S("a", "b"), S("x", "y"), row_ids(0, 0, 2), np.ones(2), {})
    for bucket, part in buckets.split_batch(edges, "sources", 3):
        assert set(buckets.node_buckets(part.sources, 3).tolist()) == {bucket}
        assert len(part.weights) == len(part)


def test_split_requests_and_split_by_shard_partition_the_pairs():
    requests = Requests.from_ids(np.array([5, 5, 6, 7]), S("x", "y", "x", "z"))
    parts = list(buckets.split_requests(requests, 4))
    pairs = sorted((int(s), n) for _, part in parts for s, n in zip(part.samples, part.nodes))
    assert pairs == [(5, b"x"), (5, b"y"), (6, b"x"), (7, b"z")]
    for bucket, part in parts:
        assert set(buckets.node_buckets(part.nodes, 4).tolist()) == {bucket}
    edges = EdgePiece.from_ids("e", np.array([5, 6, 7, 5]), S("a", "a", "b", "c"),
                               S("x", "y", "z", "x"), np.arange(4), {})
    shards = list(buckets.split_by_shard(edges, 3))
    assert sum(len(part) for _, part in shards) == 4
    for shard, part in shards:
        assert set(buckets.sample_buckets(part.samples, 3).tolist()) == {shard}


def test_distinct_ids_by_bucket():
    parts = dict(buckets.distinct_ids_by_bucket(S("b", "a", "b", "c"), 2))
    assert sorted(i for ids in parts.values() for i in ids.tolist()) == [b"a", b"b", b"c"]
    assert all(np.array_equal(ids, np.unique(ids)) for ids in parts.values())
