"""Our codec against tf.Examples that real TF-GNN wrote (tests/testdata/graph_tensor).

No TensorFlow here: the golden bytes were made once by make_golden.py (see the
README there), and the same graphs are rebuilt below with numpy."""
from __future__ import annotations

import os

import numpy as np
import pytest
from google.protobuf import text_format

from sampler.graph_tensor import (Adjacency, Context, EdgeSet, GraphTensor, NodeSet, add_readout,
                                  encode_example, parse_example)
from sampler.graph_tensor import wire
from tests.conftest import TESTDATA
from unigraph.protos import graph_schema_pb2 as gs
from unigraph.columnar.ragged import Ragged

GOLDEN = os.path.join(TESTDATA, "graph_tensor")


def strings(*items):
    out = np.empty(len(items), dtype=object)
    out[:] = list(items)
    return out


def paper_author() -> GraphTensor:
    graph = GraphTensor.from_pieces(
        context=Context.from_fields(features={"seed_id": strings(b"p1")}),
        node_sets={
            "paper": NodeSet.from_fields(sizes=[2], features={
                "#id": strings(b"p1", b"p2"),
                "feat": np.array([[1.0, 2.0], [3.0, 4.5]], np.float32),
                "year": np.array([[2019], [2020]], np.int64),
                "words": Ragged(np.array([7, 8, 9], np.int64), [2, 1])}),
            "author": NodeSet.from_fields(sizes=[1]),
        },
        edge_sets={"writes": EdgeSet.from_fields(
            sizes=[2], adjacency=Adjacency.from_indices(("author", [0, 0]), ("paper", [0, 1])),
            features={"weight": np.array([0.5, 0.25], np.float32)})})
    return add_readout(graph, "seed", "paper")


def shapes() -> GraphTensor:
    return GraphTensor.from_pieces(
        context=Context.from_fields(features={
            "tags": Ragged(strings(b"a", b"b"), [2, 0]),
            "score": np.array([0.1, -2.5], np.float64)}),
        node_sets={
            "a": NodeSet.from_fields(sizes=[2, 1], features={
                "f64": np.array([0.1, 1e-3, 123456789.123], np.float64),
                "flag": np.array([True, False, True]),
                "m": np.array([[[1, -2], [3, 4]], [[5, 6], [7, 8]], [[9, 10], [11, -12]]],
                              np.int32),
                "pts": Ragged(np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], np.float32),
                              [2, 0, 1]),
                "grid": Ragged(Ragged(np.array([1, 2, 3, 4], np.int64), [1, 0, 2, 0, 0, 1]),
                               [2, 2, 2]),
                "nest": Ragged(Ragged(strings(b"x", b"", b"yz"), [2, 1]), [1, 0, 1]),
                "big": np.array([-1, 2 ** 62, -(2 ** 63)], np.int64)}),
            "empty": NodeSet.from_fields(sizes=[0, 0], features={
                "v": np.zeros((0, 3), np.float32)}),
        },
        edge_sets={
            "loop": EdgeSet.from_fields(sizes=[1, 1], adjacency=Adjacency.from_indices(
                ("a", [1, 2]), ("a", [0, 2]))),
            "none": EdgeSet.from_fields(sizes=[0, 0], adjacency=Adjacency.from_indices(
                ("a", []), ("empty", []))),
        })


def load(name):
    with open(os.path.join(GOLDEN, f"{name}.example.pb"), "rb") as f:
        data = f.read()
    with open(os.path.join(GOLDEN, f"{name}.schema.pbtxt")) as f:
        schema = text_format.Parse(f.read(), gs.GraphSchema())
    return data, schema


CASES = [("paper_author", paper_author), ("shapes", shapes)]


@pytest.mark.parametrize("name, build", CASES)
def test_we_write_what_tfgnn_wrote(name, build):
    golden, schema = load(name)
    theirs = wire.split_example(golden)
    ours = wire.split_example(encode_example(build(), schema))
    assert sorted(ours) == sorted(theirs)
    for key in theirs:
        assert bytes(ours[key]) == bytes(theirs[key]), key


@pytest.mark.parametrize("name, build", CASES)
def test_we_read_what_tfgnn_wrote(name, build):
    golden, schema = load(name)
    expected = build()
    if name == "shapes":  # float64 went through float32
        a = expected.node_sets["a"]
        features = dict(a.features, f64=a["f64"].astype(np.float32).astype(np.float64))
        context = dict(expected.context.features,
                       score=expected.context["score"].astype(np.float32).astype(np.float64))
        expected = expected.replace_features(node_sets={"a": features}, context=context)
    assert parse_example(schema, golden) == expected
