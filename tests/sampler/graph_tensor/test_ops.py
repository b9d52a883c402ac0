"""Batching, broadcast, pool and padding on numpy GraphTensors."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings

from sampler.graph_tensor import (CONTEXT, READOUT_NODE_SET, SOURCE, TARGET, Adjacency, Context,
                                  EdgeSet, GraphTensor, NodeSet, SizeConstraints, add_readout,
                                  broadcast, merge_batch_to_components, pad_to_total_sizes, pool,
                                  readout, segment_reduce, tight_size_constraints)
from tests.sampler.graph_tensor.fixtures import schemas_and_graphs, small_graph
from unigraph.errors import GraphTensorError
from unigraph.columnar.ragged import Ragged


def chain(n: int, offset: float = 0.0) -> GraphTensor:
    """n nodes 0 -> 1 -> ... -> n-1, node feature x = offset + index, seed readout."""
    graph = GraphTensor.from_pieces(
        context=Context.from_fields(features={"label": np.array([n])}),
        node_sets={"v": NodeSet.from_fields(sizes=[n], features={
            "x": offset + np.arange(n, dtype=np.float32),
            "r": Ragged(np.arange(n, dtype=np.int64), np.ones(n, np.int64))})},
        edge_sets={"e": EdgeSet.from_fields(sizes=[n - 1], adjacency=Adjacency.from_indices(
            ("v", np.arange(n - 1)), ("v", np.arange(1, n))),
            features={"w": np.ones(n - 1, np.float32)})})
    return add_readout(graph, "seed", "v")


def test_merge_shifts_indices_and_keeps_components():
    merged = merge_batch_to_components([chain(3), chain(2, 10.0), chain(4, 20.0)])
    assert merged.num_components == 3
    assert merged.node_sets["v"].sizes.tolist() == [3, 2, 4]
    assert merged.edge_sets["e"].adjacency.source.tolist() == [0, 1, 3, 5, 6, 7]
    assert merged.edge_sets["e"].adjacency.target.tolist() == [1, 2, 4, 6, 7, 8]
    assert merged.context["label"].tolist() == [3, 2, 4]
    assert merged.node_sets["v"]["r"].row_lengths.tolist() == [1] * 9
    np.testing.assert_array_equal(readout(merged, "seed", "x"), [0.0, 10.0, 20.0])


@given(schemas_and_graphs(components=1))
@settings(max_examples=30, deadline=None)
def test_merge_of_random_graphs_is_valid(schema_and_graph):
    _, graph = schema_and_graph
    merged = merge_batch_to_components([graph, graph, graph])  # validates
    assert merged.num_components == 3
    for name, node_set in graph.node_sets.items():
        assert merged.node_sets[name].total_size == 3 * node_set.total_size


def test_merge_rejects_different_structures():
    other = chain(3).replace_features(node_sets={"v": {"x": np.zeros(3, np.float64),
                                                       "r": chain(3).node_sets["v"]["r"]}})
    with pytest.raises(GraphTensorError, match=r"graph 1: node set 'v' feature 'x' has"):
        merge_batch_to_components([chain(3), other])
    with pytest.raises(GraphTensorError, match=r"graph 1 has node sets"):
        merge_batch_to_components([chain(3), small_graph()])
    with pytest.raises(GraphTensorError, match="no graphs"):
        merge_batch_to_components([])


def star() -> GraphTensor:
    """Component 0: edges 1->0, 2->0 (w 1, 3); component 1: node 3 alone, node 4 -> 3 (w 5)."""
    return GraphTensor.from_pieces(
        context=Context.from_fields(features={"c": np.array([[1.0, 2.0], [3.0, 4.0]])}),
        node_sets={"n": NodeSet.from_fields(sizes=[3, 3], features={
            "x": np.array([10, 20, 30, 40, 50, 60], np.int64)})},
        edge_sets={"e": EdgeSet.from_fields(
            sizes=[2, 1], adjacency=Adjacency.from_indices(("n", [1, 2, 4]), ("n", [0, 0, 3])),
            features={"w": np.array([1.0, 3.0, 5.0], np.float32)})})


def test_broadcast():
    graph = star()
    assert broadcast(graph, SOURCE, edge_set_name="e", feature_name="x").tolist() == [20, 30, 50]
    assert broadcast(graph, TARGET, edge_set_name="e", feature_name="x").tolist() == [10, 10, 40]
    assert broadcast(graph, CONTEXT, node_set_name="n", feature_name="c").tolist() == (
        [[1.0, 2.0]] * 3 + [[3.0, 4.0]] * 3)
    assert broadcast(graph, CONTEXT, edge_set_name="e",
                     feature_value=np.array([7, 8])).tolist() == [7, 7, 8]


@pytest.mark.parametrize("reduce_type, expected", [
    ("sum", [4.0, 0.0, 0.0, 5.0, 0.0, 0.0]),
    ("mean", [2.0, 0.0, 0.0, 5.0, 0.0, 0.0]),
    ("max", [3.0, -np.inf, -np.inf, 5.0, -np.inf, -np.inf]),
    ("min", [1.0, np.inf, np.inf, 5.0, np.inf, np.inf]),
    ("max_no_inf", [3.0, 0.0, 0.0, 5.0, 0.0, 0.0]),
])
def test_pool_edges_to_nodes(reduce_type, expected):
    pooled = pool(star(), TARGET, edge_set_name="e", reduce_type=reduce_type, feature_name="w")
    assert pooled.dtype == np.float32
    np.testing.assert_array_equal(pooled, expected)


def test_pool_to_context_and_integer_features():
    graph = star()
    assert pool(graph, CONTEXT, node_set_name="n", feature_name="x").tolist() == [60, 150]
    assert pool(graph, CONTEXT, node_set_name="n", reduce_type="mean",
                feature_name="x").tolist() == [20.0, 50.0]
    assert pool(graph, CONTEXT, edge_set_name="e", reduce_type="max",
                feature_name="w").tolist() == [3.0, 5.0]
    assert pool(graph, SOURCE, edge_set_name="e", reduce_type="max",
                feature_name="w").tolist()[1] == 1.0
    empty_int = pool(graph, TARGET, edge_set_name="e", reduce_type="min",
                     feature_value=np.array([1, 2, 3]))
    assert empty_int[1] == np.iinfo(np.int64).max


def test_segment_reduce_matches_a_loop():
    rng = np.random.default_rng(7)
    values = rng.normal(size=(50, 3))
    ids = rng.integers(0, 12, size=50)
    for reduce_type, fn in (("sum", np.sum), ("mean", np.mean), ("max", np.max),
                            ("min", np.min)):
        out = segment_reduce(values, ids, 12, reduce_type)
        for s in range(12):
            if (ids == s).any():
                np.testing.assert_allclose(out[s], fn(values[ids == s], axis=0))


def test_pool_and_broadcast_errors():
    graph = star()
    with pytest.raises(GraphTensorError, match="reduce_type must be one of"):
        pool(graph, TARGET, edge_set_name="e", reduce_type="median", feature_name="w")
    with pytest.raises(GraphTensorError, match=r"edge set 'e': no feature 'q' \(features: w\)"):
        pool(graph, TARGET, edge_set_name="e", feature_name="q")
    with pytest.raises(GraphTensorError, match="unknown edge set 'f'"):
        broadcast(graph, SOURCE, edge_set_name="f", feature_name="x")
    with pytest.raises(GraphTensorError, match="exactly one of edge_set_name, node_set_name"):
        broadcast(graph, CONTEXT, feature_name="c")
    with pytest.raises(GraphTensorError, match="feature_value has 2 items, expected 3"):
        pool(graph, TARGET, edge_set_name="e", feature_value=np.ones(2))
    ragged_graph = chain(3)
    with pytest.raises(GraphTensorError, match="only dense numeric features can be pooled"):
        pool(ragged_graph, CONTEXT, node_set_name="v", feature_name="r")


def test_pad_to_total_sizes():
    batch = merge_batch_to_components([chain(3), chain(2)])
    constraints = SizeConstraints(total_num_components=4,
                                  total_num_nodes={"v": 8, READOUT_NODE_SET: 4},
                                  total_num_edges={"e": 6, "_readout/seed": 4})
    padded, mask = pad_to_total_sizes(batch, constraints)
    assert mask.tolist() == [True, True, False, False]
    assert padded.num_components == 4
    assert padded.node_sets["v"].sizes.tolist() == [3, 2, 3, 0]
    assert padded.edge_sets["e"].sizes.tolist() == [2, 1, 3, 0]
    # Padding edges connect the first padding node to itself.
    assert padded.edge_sets["e"].adjacency.source.tolist()[3:] == [5, 5, 5]
    assert padded.edge_sets["e"].adjacency.target.tolist()[3:] == [5, 5, 5]
    assert padded.node_sets["v"]["x"].tolist()[5:] == [0.0, 0.0, 0.0]
    assert padded.node_sets["v"]["r"].row_lengths.tolist()[5:] == [0, 0, 0]
    assert padded.context["label"].tolist() == [3, 2, 0, 0]
    # The readout stays valid: padding readout nodes get one padding edge each.
    assert padded.edge_sets["_readout/seed"].adjacency.target.tolist() == [0, 1, 2, 3]
    np.testing.assert_array_equal(readout(padded, "seed", "x")[mask], [0.0, 0.0])
    node_mask = broadcast(padded, CONTEXT, node_set_name="v", feature_value=mask)
    assert node_mask.tolist() == [True] * 5 + [False] * 3


def test_pad_errors():
    graph = chain(3)
    with pytest.raises(GraphTensorError, match="node set 'v' has 3 items, more than its total "
                                               "size 2"):
        pad_to_total_sizes(graph, SizeConstraints(2, {"v": 2, READOUT_NODE_SET: 1},
                                                  {"e": 2, "_readout/seed": 1}))
    with pytest.raises(GraphTensorError, match="leaves no padding component"):
        pad_to_total_sizes(graph, SizeConstraints(1, {"v": 4, READOUT_NODE_SET: 1},
                                                  {"e": 2, "_readout/seed": 1}))
    with pytest.raises(GraphTensorError, match="edge set 'e' needs 1 padding edges but node set "
                                               "'v' has no room for a padding node"):
        pad_to_total_sizes(graph, SizeConstraints(2, {"v": 3, READOUT_NODE_SET: 1},
                                                  {"e": 3, "_readout/seed": 1}))


def test_tight_size_constraints_fit_any_batch():
    graphs = [chain(3), chain(5), chain(2)]
    constraints = tight_size_constraints(graphs, batch_size=2)
    assert constraints.total_num_nodes["v"] == 11 and constraints.total_num_components == 3
    for pair in ([graphs[1], graphs[1]], [graphs[0], graphs[2]]):
        padded, mask = pad_to_total_sizes(merge_batch_to_components(pair), constraints)
        assert padded.node_sets["v"].total_size == 11 and mask.sum() == 2
