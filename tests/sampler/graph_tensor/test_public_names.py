"""sampler.graph_tensor's public names are enough: every kind of record the sampler writes
(node seeds with every feature kind, link seeds with negatives) is built from plain Python
values with those names alone and encodes to the very bytes `sample` wrote, and a graph
written by hand with nested lists for its ragged features reads back as it was built."""
import os

import numpy as np
import pytest

import sampler.graph_tensor as gt
from sampler import api
from tests.conftest import TESTDATA
from tests.pipelines.sampled_output import read_records

LINK = os.path.join(TESTDATA, "link")


def plain(field):
    """A feature as a user holds it: nested Python lists (an empty one stays an array of its
    dtype, as `tf.constant([], tf.int64)` would be needed in TensorFlow)."""
    if isinstance(field, gt.Ragged):
        return field.to_list() if field.flat_values.size else field
    return field.tolist() if field.size else field


def rebuilt(graph: gt.GraphTensor) -> gt.GraphTensor:
    """The graph built anew from plain values with the public constructors only."""
    def features(piece):
        return {name: plain(value) for name, value in piece.features.items()}

    return gt.GraphTensor.from_pieces(
        context=gt.Context.from_fields(features=features(graph.context),
                                       sizes=graph.context.sizes.tolist()),
        node_sets={name: gt.NodeSet.from_fields(sizes=piece.sizes.tolist(),
                                                features=features(piece))
                   for name, piece in graph.node_sets.items()},
        edge_sets={name: gt.EdgeSet.from_fields(
            sizes=piece.sizes.tolist(), features=features(piece),
            adjacency=gt.Adjacency.from_indices(
                (piece.adjacency.source_name, piece.adjacency.source.tolist()),
                (piece.adjacency.target_name, piece.adjacency.target.tolist())))
            for name, piece in graph.edge_sets.items()})


def assert_rebuilt_from_plain_values(records, schema):
    assert records
    for record in records:
        graph = gt.parse_example(schema, record)
        encoded = gt.encode_example(rebuilt(graph), schema)
        assert encoded == record
        assert gt.parse_example(schema, encoded) == graph


@pytest.mark.parametrize("name", ["demo", "mixed"])
def test_node_records_are_built_from_public_names(sampled_outputs, name):
    folder = sampled_outputs[name]   # mixed: string, int, float, fixed [3], ragged int/string
    schema = gt.read_schema(folder)  # the folder's graph_schema.pbtxt
    assert isinstance(schema, gt.GraphSchema)
    assert_rebuilt_from_plain_values(read_records(folder), schema)


def test_link_records_with_negatives_are_built_from_public_names():
    graph = api.load_graph(LINK, os.path.join(LINK, "sampling_spec.pbtxt"), negatives=2)
    subgraphs = graph.sample_pairs(["u1", "u2"], ["u2", "u3"], seed=3)
    assert len(subgraphs) == 6 and sorted(subgraphs.labels.tolist()) == [0, 0, 0, 0, 1, 1]
    schema = gt.parse_schema(str(graph.output_schema))
    assert_rebuilt_from_plain_values(subgraphs.to_examples(), schema)


SCHEMA = """
context { features { key: "seed_id" value { dtype: DT_STRING } } }
node_sets { key: "paper" value {
  features { key: "#id" value { dtype: DT_STRING } }
  features { key: "tokens" value { dtype: DT_INT64 shape { dim { size: -1 } } } }
  features { key: "spans" value { dtype: DT_FLOAT shape { dim { size: -1 } dim { size: -1 } } } }
  features { key: "emb" value { dtype: DT_FLOAT shape { dim { size: 2 } } } } } }
node_sets { key: "_readout" value {} }
edge_sets { key: "cites" value { source: "paper" target: "paper"
  features { key: "words" value { dtype: DT_STRING shape { dim { size: -1 } } } } } }
edge_sets { key: "_readout/seed" value { source: "paper" target: "_readout" } }
"""


def test_a_graph_written_by_hand_with_nested_lists_reads_back():
    schema = gt.parse_schema(SCHEMA)
    graph = gt.GraphTensor.from_pieces(
        context=gt.Context.from_fields(features={"seed_id": ["p1"]}),
        node_sets={
            "paper": gt.NodeSet.from_fields(sizes=[3], features={
                "#id": ["p1", "p2", "p3"],
                "tokens": [[4, 5, 6], [], [7]],                     # ragged
                "spans": [[[0.5], [1.0, 2.0]], [], [[3.0, 4.0, 5.0]]],  # two ragged levels
                "emb": [[0.0, 1.0], [2.0, 3.0], [4.0, 5.0]]}),       # fixed [2]
            "_readout": gt.NodeSet.from_fields(sizes=[1])},
        edge_sets={
            "cites": gt.EdgeSet.from_fields(
                sizes=[2], adjacency=gt.Adjacency.from_indices(("paper", [0, 0]),
                                                               ("paper", [1, 2])),
                features={"words": [["a", "b"], ["c"]]}),
            "_readout/seed": gt.EdgeSet.from_fields(
                sizes=[1], adjacency=gt.Adjacency.from_indices(("paper", [0]),
                                                               ("_readout", [0])))})
    tokens = graph.node_sets["paper"]["tokens"]
    assert isinstance(tokens, gt.Ragged) and tokens.row_lengths.tolist() == [3, 0, 1]
    assert graph.node_sets["paper"]["spans"].ragged_rank == 2
    assert graph.edge_sets["cites"]["words"].to_list() == [[b"a", b"b"], [b"c"]]
    back = gt.parse_example(schema, gt.encode_example(graph, schema))
    assert back.node_sets["paper"]["tokens"].to_list() == [[4, 5, 6], [], [7]]
    assert back.node_sets["paper"]["spans"].to_list() == [[[0.5], [1.0, 2.0]], [],
                                                          [[3.0, 4.0, 5.0]]]
    assert back.node_sets["paper"]["emb"].tolist() == [[0.0, 1.0], [2.0, 3.0], [4.0, 5.0]]
    assert back.edge_sets["cites"]["words"].to_list() == [[b"a", b"b"], [b"c"]]
    assert gt.readout(back, "seed", "#id").tolist() == [b"p1"]


def test_equal_length_rows_of_a_ragged_feature_encode_as_ragged():
    """Nested lists of equal lengths arrive dense (as np.asarray reads them); a schema
    that declares the dimension ragged writes them as ragged rows all the same."""
    schema = gt.parse_schema(SCHEMA)
    graph = gt.GraphTensor.from_pieces(context=gt.Context.from_fields(
        features={"seed_id": ["p1"]}), node_sets={
        "paper": gt.NodeSet.from_fields(sizes=[2], features={
            "#id": ["p1", "p2"], "tokens": [[1, 2], [3, 4]],
            "spans": [[[1.0], [2.0]], [[3.0], [4.0]]], "emb": [[0.0, 0.0], [1.0, 1.0]]}),
        "_readout": gt.NodeSet.from_fields(sizes=[0])})
    assert isinstance(graph.node_sets["paper"]["tokens"], np.ndarray)
    back = gt.parse_example(schema, gt.encode_example(graph, schema))
    assert back.node_sets["paper"]["tokens"].to_list() == [[1, 2], [3, 4]]
    assert back.node_sets["paper"]["spans"].to_list() == [[[1.0], [2.0]], [[3.0], [4.0]]]


@pytest.mark.parametrize("value, message", [
    ([[1, 2], 3], "rows must all be lists, got int 3"),
    ([[[1], 2], [3]], "mixes lists and scalars"),
])
def test_malformed_nesting_is_one_clear_error(value, message):
    with pytest.raises(gt.GraphTensorError, match=message):
        gt.NodeSet.from_fields(sizes=[2], features={"x": value})
