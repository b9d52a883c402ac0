"""The tf.Example codec without TensorFlow: keys, encoding rules, wire format,
round trips (hypothesis), any key order, and clear errors on bad input."""
from __future__ import annotations

import sys

import numpy as np
import pytest
from google.protobuf import text_format
from hypothesis import given, settings
from hypothesis import strategies as st

from sampler.graph_tensor import (Adjacency, Context, EdgeSet, GraphTensor, NodeSet,
                                  encode_example, graph_keys, parse_example, schema_keys,
                                  write_example)
from sampler.graph_tensor import wire
from tests.conftest import REPO_ROOT
from tests.sampler.graph_tensor.fixtures import (as_written, schemas_and_graphs,
                                                      small_graph, small_schema)
from unigraph.protos import example_pb2
from unigraph.protos import graph_schema_pb2 as gs
from unigraph.errors import GraphTensorError
from unigraph.columnar.ragged import Ragged


def feature_values(example, key):
    feature = example.features.feature[key]
    return feature.WhichOneof("kind"), list(getattr(feature, feature.WhichOneof("kind")).value)


def test_keys_follow_tfgnn_names():
    assert graph_keys(small_graph()) == [
        "context/seed_id",
        "edges/cites.#size", "edges/cites.#source", "edges/cites.#target",
        "edges/writes.#size", "edges/writes.#source", "edges/writes.#target",
        "edges/writes.weight",
        "nodes/author.#size",
        "nodes/paper.#id", "nodes/paper.#size", "nodes/paper.feat", "nodes/paper.words",
        "nodes/paper.words.d1", "nodes/paper.year",
    ]
    assert schema_keys(small_schema()) == graph_keys(small_graph())


def test_encoding_rules():
    example = write_example(small_graph())
    assert feature_values(example, "nodes/paper.#size") == ("int64_list", [2])
    assert feature_values(example, "nodes/paper.feat") == ("float_list", [1.0, 2.0, 3.0, 4.5])
    assert feature_values(example, "nodes/paper.year") == ("int64_list", [2019, 2020])
    assert feature_values(example, "nodes/paper.#id") == ("bytes_list", [b"p1", b"p2"])
    assert feature_values(example, "nodes/paper.words") == ("int64_list", [7, 8, 9])
    assert feature_values(example, "nodes/paper.words.d1") == ("int64_list", [2, 1])
    assert feature_values(example, "edges/writes.#source") == ("int64_list", [0, 0])
    assert feature_values(example, "edges/writes.#target") == ("int64_list", [0, 1])
    assert feature_values(example, "context/seed_id") == ("bytes_list", [b"p1"])
    assert "context/#size" not in example.features.feature  # TF-GNN writes none


def test_empty_lists_keep_their_kind():
    graph = GraphTensor.from_pieces(node_sets={"a": NodeSet.from_fields(
        sizes=[0], features={"f": np.zeros((0, 4), np.float32), "s": np.zeros(0, object),
                             "r": Ragged(np.zeros(0, np.int64), [])})})
    raw = wire.split_example(encode_example(graph))
    assert bytes(raw["nodes/a.f"]) == b"\x12\x00"      # float_list {}
    assert bytes(raw["nodes/a.s"]) == b"\x0a\x00"      # bytes_list {}
    assert bytes(raw["nodes/a.r"]) == b"\x1a\x00"      # int64_list {}
    assert bytes(raw["nodes/a.r.d1"]) == b"\x1a\x00"
    assert bytes(raw["nodes/a.#size"]) == b"\x1a\x03\x0a\x01\x00"


def test_scalar_and_shape_one_write_the_same_and_parse_by_schema():
    def graph(values):
        return GraphTensor.from_pieces(node_sets={"a": NodeSet.from_fields(
            sizes=[3], features={"y": values})})

    scalar, column = graph(np.array([1, 2, 3])), graph(np.array([[1], [2], [3]]))
    assert encode_example(scalar) == encode_example(column)
    schema = text_format.Parse(
        'node_sets { key: "a" value { features { key: "y" value { dtype: DT_INT64 '
        'shape { dim { size: 1 } } } } } }', gs.GraphSchema())
    assert parse_example(schema, encode_example(scalar)).node_sets["a"]["y"].shape == (3, 1)
    del schema.node_sets["a"].features["y"].shape.dim[:]
    assert parse_example(schema, encode_example(column)).node_sets["a"]["y"].shape == (3,)


def test_float64_is_rounded_to_float32():
    value = np.array([0.1, 1e300, 2.0 ** -149 / 3], dtype=np.float64)
    graph = GraphTensor.from_pieces(node_sets={"a": NodeSet.from_fields(
        sizes=[3], features={"x": value})})
    schema = text_format.Parse('node_sets { key: "a" value { features { key: "x" value '
                               '{ dtype: DT_DOUBLE } } } }', gs.GraphSchema())
    parsed = parse_example(schema, encode_example(graph)).node_sets["a"]["x"]
    assert parsed.dtype == np.float64
    assert parsed[0] == np.float64(np.float32(0.1)) != 0.1
    assert parsed[1] == np.inf and parsed[2] == 0.0


def test_float64_subnormal_results_flush_to_signed_zero_like_tensorflow():
    graph = GraphTensor.from_pieces(node_sets={"a": NodeSet.from_fields(sizes=[3], features={
        "d": np.array([1e-40, -1e-40, 1e-30]), "f": np.array([1e-40, -1e-40, 1e-30], np.float32)})})
    example = write_example(graph)
    doubles = feature_values(example, "nodes/a.d")[1]
    assert doubles[:2] == [0.0, 0.0] and np.signbit(doubles[1]) and doubles[2] != 0
    assert feature_values(example, "nodes/a.f")[1][0] != 0.0  # float32 is not cast: kept


def test_int_and_bool_widths():
    graph = GraphTensor.from_pieces(node_sets={"a": NodeSet.from_fields(sizes=[2], features={
        "b": np.array([True, False]), "u8": np.array([255, 0], np.uint8),
        "i32": np.array([-1, 2 ** 31 - 1], np.int32),
        "u64": np.array([2 ** 64 - 1, 5], np.uint64)})})
    example = write_example(graph)
    assert feature_values(example, "nodes/a.b") == ("int64_list", [1, 0])
    assert feature_values(example, "nodes/a.u8") == ("int64_list", [255, 0])
    assert feature_values(example, "nodes/a.i32") == ("int64_list", [-1, 2 ** 31 - 1])
    assert feature_values(example, "nodes/a.u64") == ("int64_list", [-1, 5])  # bit pattern


def test_ragged_dimensions_are_numbered_from_the_item_dimension():
    # Per-item shape [-1, 2, -1]: ragged dims 1 and 3 get keys, the fixed 2 does not
    # when the schema says so; without a schema every nesting level is written.
    inner = Ragged(np.arange(6, dtype=np.int64), [1, 0, 2, 3])
    field = Ragged(Ragged(inner, [2, 2]), [1, 1])
    graph = GraphTensor.from_pieces(node_sets={"a": NodeSet.from_fields(
        sizes=[2], features={"r": field})})
    schema = text_format.Parse(
        'node_sets { key: "a" value { features { key: "r" value { dtype: DT_INT64 '
        'shape { dim { size: -1 } dim { size: 2 } dim { size: -1 } } } } } }', gs.GraphSchema())
    assert [k for k in graph_keys(graph, schema) if ".r" in k] == [
        "nodes/a.r", "nodes/a.r.d1", "nodes/a.r.d3"]
    assert [k for k in graph_keys(graph) if ".r" in k] == [
        "nodes/a.r", "nodes/a.r.d1", "nodes/a.r.d2", "nodes/a.r.d3"]
    assert feature_values(write_example(graph, schema), "nodes/a.r.d3") == (
        "int64_list", [1, 0, 2, 3])
    for written in (encode_example(graph, schema), encode_example(graph)):
        assert parse_example(schema, written) == graph


def test_schema_shape_mismatch_on_write_is_reported():
    graph = GraphTensor.from_pieces(node_sets={"a": NodeSet.from_fields(
        sizes=[1], features={"r": Ragged(Ragged(np.arange(3), [3]), [1])})})
    schema = text_format.Parse(
        'node_sets { key: "a" value { features { key: "r" value { dtype: DT_INT64 '
        'shape { dim { size: 2 } dim { size: -1 } } } } } }', gs.GraphSchema())
    with pytest.raises(GraphTensorError, match=r"nodes/a.r: dimension 1 is declared of size 2"):
        encode_example(graph, schema)


def test_several_components_and_context():
    graph = GraphTensor.from_pieces(
        context=Context.from_fields(features={"label": np.array([[1], [0]]),
                                              "tags": Ragged(np.array([b"x"], object), [0, 1])}),
        node_sets={"a": NodeSet.from_fields(sizes=[2, 1], features={"x": np.arange(3.0)})},
        edge_sets={"e": EdgeSet.from_fields(sizes=[1, 1], adjacency=Adjacency.from_indices(
            ("a", [1, 2]), ("a", [0, 2])))})
    schema = text_format.Parse("""
      context { features { key: "label" value { dtype: DT_INT64 shape { dim { size: 1 } } } }
                features { key: "tags" value { dtype: DT_STRING shape { dim { size: -1 } } } } }
      node_sets { key: "a" value { features { key: "x" value { dtype: DT_DOUBLE } } } }
      edge_sets { key: "e" value { source: "a" target: "a" } }""", gs.GraphSchema())
    example = write_example(graph)
    assert feature_values(example, "nodes/a.#size") == ("int64_list", [2, 1])
    assert feature_values(example, "context/tags.d1") == ("int64_list", [0, 1])
    parsed = parse_example(schema, encode_example(graph))
    assert parsed == graph and parsed.num_components == 2


def protobuf_bytes_in_sorted_order(example) -> bytes:
    """What protobuf writes for `example` with its map entries in sorted key order.

    (upb's own deterministic=True order puts 'x.d1' before 'x', so each entry is
    serialized by protobuf alone and the entries are joined in byte order.)"""
    body = b""
    for key in sorted(example.features.feature):
        single = example_pb2.Example()
        single.features.feature[key].CopyFrom(example.features.feature[key])
        features = single.features.SerializeToString()
        body += features
    return b"\x0a" + wire.varint(len(body)) + body


def test_bytes_are_deterministic_and_match_protobuf():
    graph = small_graph()
    data = encode_example(graph)
    assert data == encode_example(small_graph())
    assert list(wire.split_example(data)) == graph_keys(graph)
    assert data == protobuf_bytes_in_sorted_order(write_example(graph))


def test_parse_accepts_any_key_order_and_protobuf_encodings():
    graph, schema = small_graph(), small_schema()
    example = write_example(graph)
    keys = sorted(example.features.feature)
    for order in (list(reversed(keys)), keys[1::2] + keys[0::2]):
        shuffled = example_pb2.Example()
        for key in order:
            shuffled.features.feature[key].CopyFrom(example.features.feature[key])
        assert parse_example(schema, shuffled.SerializeToString()) == graph
    assert parse_example(schema, example) == graph


def test_parse_accepts_unpacked_repeated_scalars_and_ignores_unknown_keys():
    unpacked_sizes = b"\x1a\x02\x08\x02"                      # int64_list { value: 2 } unpacked
    unpacked_floats = (b"\x12\x0a" + b"\x0d" + np.float32(1.5).tobytes()
                       + b"\x0d" + np.float32(-2).tobytes())  # float_list, two unpacked floats
    data = wire.encode_example_bytes([
        ("nodes/a.#size", unpacked_sizes), ("nodes/a.x", unpacked_floats),
        ("nodes/a.unknown", wire.encode_feature(wire.INT64, np.array([1])))])
    schema = text_format.Parse('node_sets { key: "a" value { features { key: "x" value '
                               '{ dtype: DT_FLOAT } } } }', gs.GraphSchema())
    parsed = parse_example(schema, data)
    np.testing.assert_array_equal(parsed.node_sets["a"]["x"], [1.5, -2.0])


def test_missing_keys_parse_as_empty_like_tfgnn():
    schema = small_schema()
    del schema.context.features["seed_id"]
    parsed = parse_example(schema, b"")
    assert parsed.num_components == 1
    assert parsed.node_sets["paper"].sizes.tolist() == [0]
    assert parsed.node_sets["paper"]["feat"].shape == (0, 2)
    # A context feature has one item per component, so it cannot be missing
    # (TF-GNN's parser also requires it).
    with pytest.raises(GraphTensorError, match="context feature 'seed_id': tf.Example key "
                                               "'context/seed_id' is missing"):
        parse_example(small_schema(), b"")


@pytest.mark.parametrize("mutate, message", [
    (lambda e: e.features.feature["nodes/paper.feat"].float_list.value.pop(),
     r"nodes/paper.feat': 3 values, expected 4 for 2 rows of shape \[2\]"),
    (lambda e: e.features.feature["nodes/paper.words.d1"].int64_list.value.append(0),
     r"nodes/paper.words.d1': 3 row lengths for 2 rows"),
    (lambda e: e.features.feature["nodes/paper.feat"].int64_list.value.append(1),
     r"nodes/paper.feat': expected float_list, found int64_list"),
    (lambda e: e.features.feature.pop("nodes/paper.#id"),
     r"node set 'paper' feature '#id': tf.Example key 'nodes/paper.#id' is missing, but the "
     r"piece has 2 items"),
    (lambda e: e.features.feature["edges/cites.#target"].int64_list.value.__setitem__(0, 5),
     r"edge set 'cites' target: edge 0 has index 5, out of range for node set 'paper' with 2"),
    (lambda e: e.features.feature["nodes/author.#size"].int64_list.value.append(0),
     r"node set 'paper' sizes: 1 graph components, but node set 'author' has 2"),
])
def test_parse_errors_name_the_key(mutate, message):
    example = write_example(small_graph())
    mutate(example)
    with pytest.raises(GraphTensorError, match=message) as info:
        parse_example(small_schema(), example.SerializeToString())
    assert "\n" not in str(info.value)


def test_parse_rejects_garbage_in_one_line():
    with pytest.raises(GraphTensorError, match="tf.Example") as info:
        parse_example(small_schema(), b"\x0a\xff\xff\xff")
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("values", [
    [0, 1, 127, 128, 300, 2 ** 32, 2 ** 62, 2 ** 63 - 1, -1, -2 ** 63, -300],
    list(range(0, 100)),
])
def test_varints_match_protobuf(values):
    ours = wire.encode_varints(np.array(values, dtype=np.int64))
    theirs = example_pb2.Int64List(value=values).SerializeToString()
    assert theirs == b"\x0a" + wire.varint(len(ours)) + ours
    np.testing.assert_array_equal(wire.decode_varints(ours, "test"), values)


@given(st.lists(st.integers(-2 ** 63, 2 ** 63 - 1), max_size=50))
@settings(max_examples=200, deadline=None)
def test_varint_property(values):
    ours = wire.encode_varints(np.array(values, dtype=np.int64))
    assert ours == b"".join(example_pb2.Int64List(value=[v]).SerializeToString()[2:]
                            for v in values)
    np.testing.assert_array_equal(wire.decode_varints(ours, "test"),
                                  np.array(values, dtype=np.int64))


@given(schemas_and_graphs())
@settings(max_examples=150, deadline=None)
def test_round_trip_property(schema_and_graph):
    schema, graph = schema_and_graph
    data = encode_example(graph, schema)
    assert parse_example(schema, data) == as_written(graph)
    # The schema-free writer differs only by .d<k> keys for fixed dims, which the
    # parser ignores.
    assert parse_example(schema, encode_example(graph)) == as_written(graph)
    assert data == protobuf_bytes_in_sorted_order(write_example(graph, schema))
    assert sorted(wire.split_example(data)) == sorted(
        k for k in graph_keys(graph, schema))


def test_codec_does_not_import_tensorflow():
    import subprocess
    code = ("import sys; from sampler.graph_tensor import *; "
            "from tests.sampler.graph_tensor.fixtures import small_graph, small_schema; "
            "g = small_graph(); parse_example(small_schema(), encode_example(g)).validate(); "
            "assert 'tensorflow' not in sys.modules, 'tensorflow imported'")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=REPO_ROOT)
