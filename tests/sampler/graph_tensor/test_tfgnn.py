"""Live interop with real TF-GNN: its writer produces our bytes feature for
feature, its parser reads our bytes, and our tensors feed a Keras model.

TensorFlow is imported inside the fixtures only, so collecting this module (and
running the other GraphTensor tests) never loads it."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

from sampler.graph_tensor import (READOUT_NODE_SET, SizeConstraints, encode_example,
                                  merge_batch_to_components, pad_to_total_sizes, parse_example,
                                  to_tensors)
from sampler.graph_tensor import wire
from sampler.graph_tensor.tf_convert import from_tfgnn, to_tfgnn
from tests.sampler.graph_tensor.fixtures import (SHAPES_TFGNN_PARSES, as_written,
                                                      schemas_and_graphs, small_graph,
                                                      small_schema)


@pytest.fixture(scope="module")
def tfgnn():
    pytest.importorskip("tensorflow")
    import tensorflow_gnn
    return tensorflow_gnn


def tfgnn_schema(tfgnn, schema):
    """Our GraphSchema as TF-GNN's message (same field numbers)."""
    return tfgnn.GraphSchema.FromString(schema.SerializeToString())


def assert_same_features(ours: bytes, theirs: bytes):
    ours_by_key, theirs_by_key = wire.split_example(ours), wire.split_example(theirs)
    assert sorted(ours_by_key) == sorted(theirs_by_key)
    for key in theirs_by_key:
        assert bytes(ours_by_key[key]) == bytes(theirs_by_key[key]), key


SETTINGS = settings(max_examples=25, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.function_scoped_fixture])


@given(schemas_and_graphs())
@SETTINGS
def test_tfgnn_writes_our_bytes(tfgnn, schema_and_graph):
    schema, graph = schema_and_graph
    theirs = tfgnn.write_example(to_tfgnn(graph, schema)).SerializeToString()
    assert_same_features(encode_example(graph, schema), theirs)


@given(schemas_and_graphs(components=1, shapes=SHAPES_TFGNN_PARSES))
@SETTINGS
def test_tfgnn_parses_our_bytes(tfgnn, schema_and_graph):
    import tensorflow as tf
    schema, graph = schema_and_graph
    spec = tfgnn.create_graph_spec_from_schema_pb(tfgnn_schema(tfgnn, schema),
                                                  indices_dtype=tf.int64)
    parsed = tfgnn.parse_single_example(spec, tf.constant(encode_example(graph, schema)))
    assert from_tfgnn(parsed) == as_written(graph)


@given(schemas_and_graphs(components=1))
@SETTINGS
def test_we_parse_tfgnn_bytes(tfgnn, schema_and_graph):
    schema, graph = schema_and_graph
    theirs = tfgnn.write_example(to_tfgnn(graph, schema)).SerializeToString()
    assert parse_example(schema, theirs) == as_written(graph)


def test_to_tensors_feeds_a_keras_model(tfgnn):
    import tensorflow as tf
    graphs = [small_graph(), small_graph()]
    batch = merge_batch_to_components(graphs)
    tensors = to_tensors(batch)
    assert isinstance(tensors["nodes/paper.words"], tf.RaggedTensor)
    assert tensors["nodes/paper.feat"].shape == (4, 2)
    assert tensors["edges/writes.#source"].numpy().tolist() == [0, 0, 1, 1]

    feat = tf.keras.Input(shape=(2,), name="nodes/paper.feat")
    hidden = tf.keras.layers.Dense(3)(feat)
    model = tf.keras.Model({"nodes/paper.feat": feat}, tf.keras.layers.Dense(1)(hidden))
    out = model({"nodes/paper.feat": tensors["nodes/paper.feat"]})
    assert out.shape == (4, 1)


def test_padded_batch_converts_to_a_tfgnn_graph(tfgnn):
    from sampler.graph_tensor import add_readout
    graph = add_readout(small_graph(), "seed", "paper")
    batch = merge_batch_to_components([graph, graph, graph])
    constraints = SizeConstraints(
        4, {"paper": 7, "author": 4, READOUT_NODE_SET: 4},
        {"writes": 6, "cites": 3, "_readout/seed": 4})
    padded, mask = pad_to_total_sizes(batch, constraints)
    tf_graph = to_tfgnn(padded)
    assert tf_graph.num_components.numpy() == 4
    seeds = tfgnn.structured_readout(tf_graph, "seed", feature_name="feat")
    assert seeds.numpy()[mask].tolist() == [[1.0, 2.0]] * 3


def test_golden_schema_parses_with_tfgnn(tfgnn):
    import tensorflow as tf
    spec = tfgnn.create_graph_spec_from_schema_pb(tfgnn_schema(tfgnn, small_schema()))
    parsed = tfgnn.parse_single_example(spec, tf.constant(encode_example(small_graph())))
    assert parsed.node_sets["paper"]["words"].to_list() == [[7, 8], [9]]
    assert parsed.context["seed_id"].numpy().tolist() == [b"p1"]


def test_strings_keep_trailing_nuls(tfgnn):
    from sampler.graph_tensor import GraphTensor, NodeSet
    values = np.empty(2, dtype=object)
    values[:] = [b"ab\x00", b"\x00"]
    graph = GraphTensor.from_pieces(node_sets={"a": NodeSet.from_fields(
        sizes=[2], features={"s": values})})
    assert to_tensors(graph)["nodes/a.s"].numpy().tolist() == [b"ab\x00", b"\x00"]
    assert from_tfgnn(to_tfgnn(graph)) == graph
