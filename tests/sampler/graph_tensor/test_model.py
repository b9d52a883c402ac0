"""The data model and its validation: immutability, and one clear error per rule."""
from __future__ import annotations

import numpy as np
import pytest

from sampler.graph_tensor import (READOUT_NODE_SET, Adjacency, Context, EdgeSet, GraphTensor,
                                  NodeSet, add_readout, readout, readout_keys)
from tests.sampler.graph_tensor.fixtures import small_graph
from unigraph.errors import GraphTensorError
from unigraph.columnar.ragged import Ragged


def two_component_graph(**overrides) -> dict:
    pieces = dict(
        node_sets={"a": NodeSet.from_fields(sizes=[2, 1], features={"x": np.arange(3.0)}),
                   "b": NodeSet.from_fields(sizes=[1, 1])},
        edge_sets={"e": EdgeSet.from_fields(sizes=[2, 1], adjacency=Adjacency.from_indices(
            ("a", [0, 1, 2]), ("b", [0, 0, 1])))})
    pieces.update(overrides)
    return pieces


def test_valid_graph_and_properties():
    graph = GraphTensor.from_pieces(**two_component_graph())
    assert graph.num_components == 2
    assert graph.context.sizes.tolist() == [1, 1]  # featureless context: one per component
    assert graph.node_sets["a"].total_size == 3
    assert graph.edge_sets["e"].adjacency.source_name == "a"
    assert graph == GraphTensor.from_pieces(**two_component_graph())
    assert graph != small_graph()


def test_pieces_are_immutable():
    features = np.arange(3.0)
    graph = GraphTensor.from_pieces(node_sets={"a": NodeSet.from_fields(
        sizes=[3], features={"x": features})})
    with pytest.raises(ValueError):
        graph.node_sets["a"]["x"][0] = 5.0
    with pytest.raises(TypeError):
        graph.node_sets["a"].features["y"] = features
    with pytest.raises(TypeError):
        graph.node_sets["b"] = graph.node_sets["a"]
    with pytest.raises(AttributeError):
        graph.node_sets["a"].sizes = np.array([1])
    features[0] = 7.0  # the caller's own array stays writable (a view, not a copy)
    assert features.flags.writeable


def test_strings_become_object_arrays_of_bytes():
    node_set = NodeSet.from_fields(sizes=[2], features={
        "s": np.array(["é", "b"]), "t": np.array([b"x", b"yz"])})
    assert node_set["s"].dtype == object and node_set["s"].tolist() == ["é".encode(), b"b"]
    assert node_set["t"].tolist() == [b"x", b"yz"]


@pytest.mark.parametrize("pieces, message", [
    (two_component_graph(node_sets={
        "a": NodeSet.from_fields(sizes=[2, 1], features={"x": np.arange(4.0)}),
        "b": NodeSet.from_fields(sizes=[1, 1])}),
     r"^node set 'a' feature 'x': 4 items, but its sizes \[2, 1\] declare 3$"),
    (two_component_graph(edge_sets={"e": EdgeSet.from_fields(
        sizes=[2, 1], adjacency=Adjacency.from_indices(("a", [0, 1, 2]), ("b", [0, 0, 2])))}),
     r"^edge set 'e' target: edge 2 has index 2, out of range for node set 'b' with 2 nodes$"),
    (two_component_graph(edge_sets={"e": EdgeSet.from_fields(
        sizes=[2, 1], adjacency=Adjacency.from_indices(("a", [0, 1, 2]), ("c", [0, 0, 1])))}),
     r"^edge set 'e' target: unknown node set 'c' \(node sets: a, b\)$"),
    (two_component_graph(node_sets={"a": NodeSet.from_fields(sizes=[3]),
                                    "b": NodeSet.from_fields(sizes=[1, 1])}),
     r"^node set 'b' sizes: 2 graph components, but node set 'a' has 1$"),
    (two_component_graph(context=Context.from_fields(features={"y": np.zeros(3)})),
     r"^context: 3 graph components \(from its sizes or features\), but node set 'a' has 2$"),
    (two_component_graph(context=Context.from_fields(features={"y": np.zeros(1)},
                                                     sizes=[1, 1])),
     r"^context feature 'y': 1 items, but the graph has 2 components"),
    (two_component_graph(edge_sets={"e": EdgeSet.from_fields(
        sizes=[2, 1], adjacency=Adjacency.from_indices(("a", [0, 1]), ("b", [0, 0, 1])))}),
     r"^edge set 'e' source: 2 indices, but its sizes \[2, 1\] declare 3 edges$"),
    (two_component_graph(edge_sets={"e": EdgeSet.from_fields(
        sizes=[2, 1], adjacency=Adjacency.from_indices(("a", [0, 1, 2]), ("b", [0, 1, 1])))}),
     r"^edge set 'e' target: edge 1 of component 0 points to node 1 of component 1"),
    (two_component_graph(node_sets={
        "a": NodeSet.from_fields(sizes=[2, 1], features={
            "r": Ragged(np.arange(3), [1, 2])}),
        "b": NodeSet.from_fields(sizes=[1, 1])}),
     r"^node set 'a' feature 'r': 2 items, but its sizes \[2, 1\] declare 3$"),
])
def test_validation_errors_name_piece_and_field(pieces, message):
    with pytest.raises(GraphTensorError, match=message):
        GraphTensor.from_pieces(**pieces)
    graph = GraphTensor.from_pieces(**pieces, validate=False)
    with pytest.raises(GraphTensorError, match=message):
        graph.validate()


@pytest.mark.parametrize("sizes, message", [
    ([[1, 2]], r"node set: sizes must be a vector"),
    ([-1], r"node set: sizes must be >= 0, got \[-1\]"),
    ([1.5], r"node set: sizes must be integers"),
])
def test_bad_sizes(sizes, message):
    with pytest.raises(GraphTensorError, match=message):
        NodeSet.from_fields(sizes=sizes)


def test_bad_feature_values():
    with pytest.raises(GraphTensorError, match="feature 'x': a feature needs the item dimension"):
        NodeSet.from_fields(sizes=[1], features={"x": 3.0})
    with pytest.raises(GraphTensorError, match="unsupported dtype complex128"):
        NodeSet.from_fields(sizes=[1], features={"x": np.array([1j])})


# --- readout --------------------------------------------------------------------

def graph_with_seed_readout() -> GraphTensor:
    graph = GraphTensor.from_pieces(**two_component_graph())
    return add_readout(graph, "seed", "a")


def test_add_readout_marks_the_first_node_of_each_component():
    graph = graph_with_seed_readout()
    assert graph.node_sets[READOUT_NODE_SET].sizes.tolist() == [1, 1]
    edges = graph.edge_sets["_readout/seed"]
    assert edges.sizes.tolist() == [1, 1]
    assert edges.adjacency.source.tolist() == [0, 2]
    assert edges.adjacency.target.tolist() == [0, 1]
    np.testing.assert_array_equal(readout(graph, "seed", "x"), [0.0, 2.0])
    assert readout_keys(graph) == ["seed"]


def test_readout_from_several_node_sets_in_target_order():
    graph = GraphTensor.from_pieces(
        node_sets={"a": NodeSet.from_fields(sizes=[2], features={"x": np.array([1.0, 2.0])}),
                   "b": NodeSet.from_fields(sizes=[1], features={"x": np.array([9.0])}),
                   READOUT_NODE_SET: NodeSet.from_fields(sizes=[3])},
        edge_sets={"_readout/seed/a": EdgeSet.from_fields(
                       sizes=[2], adjacency=Adjacency.from_indices(
                           ("a", [1, 0]), (READOUT_NODE_SET, [0, 2]))),
                   "_readout/seed/b": EdgeSet.from_fields(
                       sizes=[1], adjacency=Adjacency.from_indices(
                           ("b", [0]), (READOUT_NODE_SET, [1])))})
    np.testing.assert_array_equal(readout(graph, "seed", "x"), [2.0, 9.0, 1.0])


def _readout_pieces(targets, readout_nodes=2, edge_set_name="_readout/seed",
                    target_set=READOUT_NODE_SET):
    return dict(
        node_sets={"a": NodeSet.from_fields(sizes=[3]),
                   READOUT_NODE_SET: NodeSet.from_fields(sizes=[readout_nodes])},
        edge_sets={edge_set_name: EdgeSet.from_fields(
            sizes=[len(targets)], adjacency=Adjacency.from_indices(
                ("a", list(range(len(targets)))), (target_set, targets)))})


@pytest.mark.parametrize("pieces, message", [
    (_readout_pieces([1, 0]),
     r"^edge set '_readout/seed' target: readout targets must be strictly ascending, but edge "
     r"1 has target 0 after 1$"),
    (_readout_pieces([0]),
     r"^readout key 'seed' \(edge sets _readout/seed\): node 1 of '_readout' is the target of 0 "
     r"edges, expected exactly 1$"),
    (_readout_pieces([0, 0]), r"strictly ascending"),
    (_readout_pieces([0, 1], target_set="a"),
     r"^edge set '_readout/seed' target: readout edges must go to node set '_readout', not 'a'$"),
    (_readout_pieces([0, 1], edge_set_name="sneaky"),
     r"^edge set 'sneaky' targets node set '_readout'; only readout edge sets named "
     r"'_readout/<key>' may$"),
    (dict(node_sets={"a": NodeSet.from_fields(sizes=[1])},
          edge_sets={"_readout/seed": EdgeSet.from_fields(
              sizes=[1], adjacency=Adjacency.from_indices(("a", [0]), ("a", [0])))}),
     r"^edge set '_readout/seed': readout edge set without a '_readout' node set$"),
])
def test_readout_structure_rules(pieces, message):
    with pytest.raises(GraphTensorError, match=message):
        GraphTensor.from_pieces(**pieces)


def test_readout_errors():
    graph = graph_with_seed_readout()
    with pytest.raises(GraphTensorError, match=r"readout key 'label': no edge set "
                                               r"'_readout/label' \(readout keys: seed\)"):
        readout(graph, "label", "x")
    with pytest.raises(GraphTensorError, match="node set 'a' has no feature 'y'"):
        readout(graph, "seed", "y")
    with pytest.raises(GraphTensorError, match="edge set '_readout/seed' already exists"):
        add_readout(graph, "seed", "a")
    empty = GraphTensor.from_pieces(node_sets={"a": NodeSet.from_fields(sizes=[1, 0])})
    with pytest.raises(GraphTensorError, match="node set 'a' has no nodes in component 1"):
        add_readout(empty, "seed", "a")


def test_replace_features_returns_a_new_graph():
    graph = small_graph()
    new = graph.replace_features(node_sets={"author": {"h": np.ones((1, 2))}})
    assert "h" in new.node_sets["author"].features and "h" not in graph.node_sets["author"].features
    with pytest.raises(GraphTensorError, match="node set 'author' feature 'h': 2 items"):
        graph.replace_features(node_sets={"author": {"h": np.ones((2, 2))}})
