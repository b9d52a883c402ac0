"""Throughput of the GraphTensor tf.Example codec (no TensorFlow).

    .venv/bin/python -m pipelines.bench.codec_benchmark [--seconds 0.5]

For a few graph shapes it prints encode and decode MB/s of serialized Example
bytes: `encode_example` (numpy buffers straight to the wire format) and
`parse_example` (schema-driven, validation on), next to a baseline that fills
the protobuf message value by value and serializes it, the way code that goes
through Python lists would.
"""
from __future__ import annotations

import argparse
import time
from typing import Callable

import numpy as np

from sampler.graph_tensor import (Adjacency, Context, EdgeSet, GraphTensor, NodeSet, add_readout,
                                  encode_example, parse_example)
from sampler.graph_tensor.codec import flatten_graph
from unigraph.protos import example_pb2
from unigraph.protos import graph_schema_pb2 as gs
from unigraph.columnar.ragged import Ragged


def _add(features, name, dtype, *dims):
    feature = features[name]
    feature.dtype = dtype
    for size in dims:
        feature.shape.dim.add().size = size


def _graph(nodes: int, edges: int, rng, with_features: Callable) -> tuple:
    schema = gs.GraphSchema()
    node_features = with_features(schema.node_sets["paper"].features, nodes, rng)
    edge_set = schema.edge_sets["cites"]
    edge_set.source = edge_set.target = "paper"
    schema.node_sets["_readout"].SetInParent()
    schema.edge_sets["_readout/seed"].source = "paper"
    schema.edge_sets["_readout/seed"].target = "_readout"
    _add(schema.context.features, "seed_id", gs.DT_STRING)
    graph = GraphTensor.from_pieces(
        context=Context.from_fields(features={"seed_id": np.array([b"paper-0"], dtype=object)}),
        node_sets={"paper": NodeSet.from_fields(sizes=[nodes], features=node_features)},
        edge_sets={"cites": EdgeSet.from_fields(sizes=[edges], adjacency=Adjacency.from_indices(
            ("paper", rng.integers(0, nodes, edges)), ("paper", rng.integers(0, nodes, edges))))})
    return schema, add_readout(graph, "seed", "paper")


def dense_floats(width: int):
    def features(proto, nodes, rng):
        _add(proto, "feat", gs.DT_FLOAT, width)
        return {"feat": rng.normal(size=(nodes, width)).astype(np.float32)}
    return features


def sampler_like(proto, nodes, rng):
    """What the sampler writes for OGBN-MAG papers: ids, 128 floats, year, label."""
    _add(proto, "#id", gs.DT_STRING)
    _add(proto, "feat", gs.DT_FLOAT, 128)
    _add(proto, "year", gs.DT_INT64, 1)
    _add(proto, "labels", gs.DT_INT64, 1)
    ids = np.empty(nodes, dtype=object)
    ids[:] = [f"paper-{i}".encode() for i in rng.integers(0, 10 ** 8, nodes)]
    return {"#id": ids, "feat": rng.normal(size=(nodes, 128)).astype(np.float32),
            "year": rng.integers(1990, 2021, (nodes, 1)),
            "labels": rng.integers(0, 349, (nodes, 1))}


def ragged_tokens(proto, nodes, rng):
    _add(proto, "tokens", gs.DT_INT64, -1)
    lengths = rng.integers(0, 40, nodes)
    return {"tokens": Ragged(rng.integers(0, 50_000, int(lengths.sum())), lengths)}


CASES = [
    ("200 nodes x 128 float32, 1000 edges", 200, 1000, dense_floats(128)),
    ("200 nodes sampler-like (#id, 128 floats, year, label)", 200, 1000, sampler_like),
    ("200 nodes ragged int64 tokens (avg 20, varints)", 200, 1000, ragged_tokens),
    ("20 nodes x 8 float32, 40 edges (small record)", 20, 40, dense_floats(8)),
]


def encode_with_protobuf_lists(graph: GraphTensor) -> bytes:
    """The baseline: fill the message value by value from Python lists."""
    example = example_pb2.Example()
    for key, kind, values in flatten_graph(graph):
        target = getattr(example.features.feature[key], kind)
        target.value.extend(values.tolist() if isinstance(values, np.ndarray) else values)
    return example.SerializeToString()


def _rate(fn: Callable[[], object], size: int, seconds: float) -> tuple[float, float]:
    """(MB/s, microseconds per call), best of three timed runs."""
    fn()
    calls = 1
    start = time.perf_counter()
    while time.perf_counter() - start < seconds / 10:
        fn()
        calls += 1
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        best = min(best, (time.perf_counter() - start) / calls)
    return size / best / 1e6, best * 1e6


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=0.5, help="time budget per measure")
    args = parser.parse_args(argv)
    rng = np.random.default_rng(0)
    print(f"{'graph':56} {'bytes':>8} {'encode MB/s':>12} {'decode MB/s':>12} "
          f"{'baseline enc MB/s':>18}")
    for name, nodes, edges, features in CASES:
        schema, graph = _graph(nodes, edges, rng, features)
        data = encode_example(graph, schema)
        assert parse_example(schema, data) == graph
        encode, encode_us = _rate(lambda: encode_example(graph, schema), len(data), args.seconds)
        decode, decode_us = _rate(lambda: parse_example(schema, data), len(data), args.seconds)
        baseline, _ = _rate(lambda: encode_with_protobuf_lists(graph), len(data), args.seconds)
        print(f"{name:56} {len(data):8d} {encode:8.0f} ({encode_us:4.0f}us) "
              f"{decode:6.0f} ({decode_us:4.0f}us) {baseline:10.0f}")


if __name__ == "__main__":
    main()
