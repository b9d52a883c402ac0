"""sampler.core.node_table: one bucket's node table, duplicates, and the feature lookup."""
import numpy as np
import pytest

from sampler.core.buckets import sample_buckets
from sampler.core.node_table import build_node_table, features_by_shard, ids_only_table
from sampler.core.pieces import Requests
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


def test_ids_only_table_is_the_distinct_ids():
    assert ids_only_table("a", [S("y", "x"), S("x")]).ids.tolist() == [b"x", b"y"]
    assert len(ids_only_table("a", []).ids) == 0
