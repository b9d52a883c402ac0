"""sampler.core.node_table: one bucket's node table, duplicates, and the feature lookup."""
import numpy as np
import pytest

from sampler.core.buckets import sample_buckets
from sampler.core.node_table import (build_node_table, features_by_shard, ids_only_table,
                                     lookup_requests)
from sampler.core.pieces import NodeFeatures, Requests
from unigraph.columnar.batches import NodeBatch, row_ids
from unigraph.errors import TableError


def S(*ids):
    return np.array(ids, dtype="S")


def test_table_is_sorted_by_id_whatever_the_batch_order():
    first = NodeBatch("p", S("c", "a"), row_ids(0, 0, 2), {"x": np.array([3, 1])})
    second = NodeBatch("p", S("b"), row_ids(1, 0, 1), {"x": np.array([2])})
    for batches in ([first, second], [second, first]):
        table = build_node_table("p", batches)
        assert table.ids.tolist() == [b"a", b"b", b"c"]
        assert table.features["x"].tolist() == [1, 2, 3]
    assert table.positions_of(S("b", "zz", "c")).tolist() == [1, -1, 2]


def test_duplicate_id_names_both_rows(tmp_path):
    path = tmp_path / "p.csv"
    path.write_text("id\na\nb\na\n")
    batch = NodeBatch("p", S("a", "b", "a"), row_ids(0, 0, 3), {})
    with pytest.raises(TableError, match=rf"node set 'p': duplicate node id 'a' in {path} line 2 "
                                         rf"and {path} line 4"):
        build_node_table("p", [batch], [str(path)])


def test_features_go_once_per_node_and_shard_absent_ids_are_returned():
    table = build_node_table("p", [NodeBatch("p", S("a", "b"), row_ids(0, 0, 2),
                                             {"x": np.array([1.0, 2.0])})])
    samples = np.arange(40)
    requests = Requests.from_ids(samples, np.array([b"a", b"b", b"zz", b"a"] * 10, "S"))
    parts, absent = features_by_shard(table, requests, 3)
    assert absent.tolist() == [b"zz"]
    for shard, features in parts:
        wanted = {n for s, n in zip(requests.samples, requests.nodes)
                  if sample_buckets(np.array([s]), 3)[0] == shard and n != b"zz"}
        assert sorted(features.ids.tolist()) == sorted(wanted)
        assert len(set(features.ids.tolist())) == len(features)


def test_features_by_row_are_the_gathered_features():
    """gather=False (the in-memory engine): pieces point into the table; gathered, taken
    or joined they hold what the copied pieces hold."""
    table = build_node_table("p", [NodeBatch("p", S("a", "b", "c"), row_ids(0, 0, 3),
                                             {"x": np.array([1.0, 2.0, 3.0])})])
    requests = Requests.from_ids(np.arange(30), np.array([b"c", b"a", b"zz"] * 10, "S"))
    copied, absent = features_by_shard(table, requests, 2)
    by_row, absent_too = features_by_shard(table, requests, 2, gather=False)
    assert absent.tolist() == absent_too.tolist() == [b"zz"]
    for (shard, piece), (shard_too, rows_piece) in zip(copied, by_row):
        assert shard == shard_too and rows_piece.features is table.features
        assert rows_piece.ids.tolist() == piece.ids.tolist()
        np.testing.assert_array_equal(rows_piece.gathered().features["x"], piece.features["x"])
        taken = rows_piece.take(np.array([1, 0]))
        assert taken.rows is not None  # still pointing, not copied
        np.testing.assert_array_equal(taken.gathered().features["x"],
                                      piece.take(np.array([1, 0])).features["x"])
    pieces = [p for _, p in by_row]
    joined = NodeFeatures.concat(pieces)  # one table: rows joined, nothing copied
    assert joined.rows is not None and joined.features is table.features
    mixed = NodeFeatures.concat([pieces[0], copied[1][1]])  # copied where they differ
    assert mixed.rows is None
    np.testing.assert_array_equal(
        mixed.features["x"],
        np.concatenate([copied[0][1].features["x"], copied[1][1].features["x"]]))


def test_ids_only_table_is_the_distinct_ids():
    assert ids_only_table("a", [S("y", "x"), S("x")]).ids.tolist() == [b"x", b"y"]
    assert len(ids_only_table("a", []).ids) == 0


@pytest.mark.parametrize("seed", range(5))
def test_lookup_requests_give_the_lookup_every_request_gives(seed):
    """The Beam engine ships one request per (shard, node) to the lookup; the pieces and
    the absent ids are those of all the requests."""
    rng = np.random.default_rng(seed)
    names = np.array([f"n{i}".encode() for i in range(40)])
    table = build_node_table("paper", [NodeBatch("paper", names[::2], row_ids(0, 0, 20), {
        "x": np.arange(20, dtype=np.float32), "v": np.arange(40.0).reshape(20, 2)})], [])
    requests = Requests.from_ids(rng.integers(0, 1 << 62, 300),
                                 names[rng.integers(0, 40, 300)],
                                 cutoffs=rng.integers(0, 9, 300))
    requests.pairs = rng.integers(0, 1 << 62, (300, 2)).astype(np.uint64)
    for shards in (1, 3, 8):
        cut = lookup_requests(requests, shards)
        assert len(cut) < len(requests) and cut.pairs is None and cut.cutoffs is None
        full_pieces, full_absent = features_by_shard(table, requests, shards)
        pieces, absent = features_by_shard(table, cut, shards)
        assert absent.tolist() == full_absent.tolist()
        assert [s for s, _ in pieces] == [s for s, _ in full_pieces]
        for (_, a), (_, b) in zip(pieces, full_pieces):
            assert a.ids.tolist() == b.ids.tolist()
            assert all(np.array_equal(a.features[k], b.features[k]) for k in b.features)
