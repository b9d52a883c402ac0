"""Regenerates the golden files in this folder with real TF-GNN (see README.md).

    cd /work/main && .venv/bin/python tests/testdata/graph_tensor/make_golden.py

Each graph is built here directly with TensorFlow tensors (not with our code),
written by `tfgnn.write_example`, and saved as
  <name>.example.pb      the serialized tf.train.Example (deterministic map order)
  <name>.schema.pbtxt    `tfgnn.create_schema_pb_from_graph_spec` of the graph
                         (written by hand for `shapes`: TF-GNN derives schemas
                         from one-component graphs only)
"""
import os

os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import tensorflow as tf  # noqa: E402
import tensorflow_gnn as tfgnn  # noqa: E402
from google.protobuf import text_format  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))


def paper_author():
    """One component: papers, authors, a ragged feature, strings, seed readout."""
    return tfgnn.GraphTensor.from_pieces(
        context=tfgnn.Context.from_fields(features={"seed_id": tf.constant([b"p1"])}),
        node_sets={
            "paper": tfgnn.NodeSet.from_fields(sizes=tf.constant([2]), features={
                "#id": tf.constant([b"p1", b"p2"]),
                "feat": tf.constant([[1.0, 2.0], [3.0, 4.5]]),
                "year": tf.constant([[2019], [2020]], tf.int64),
                "words": tf.ragged.constant([[7, 8], [9]], tf.int64),
            }),
            "author": tfgnn.NodeSet.from_fields(sizes=tf.constant([1])),
            "_readout": tfgnn.NodeSet.from_fields(sizes=tf.constant([1])),
        },
        edge_sets={
            "writes": tfgnn.EdgeSet.from_fields(
                sizes=tf.constant([2]),
                adjacency=tfgnn.Adjacency.from_indices(("author", tf.constant([0, 0])),
                                                       ("paper", tf.constant([0, 1]))),
                features={"weight": tf.constant([0.5, 0.25])}),
            "_readout/seed": tfgnn.EdgeSet.from_fields(
                sizes=tf.constant([1]),
                adjacency=tfgnn.Adjacency.from_indices(("paper", tf.constant([0])),
                                                       ("_readout", tf.constant([0])))),
        })


def shapes():
    """Two components, an empty node set, and every shape rule: float64, bool,
    int32 [2, 2], ragged [-1, 2], [2, -1] (fixed dimension before a ragged
    one), [-1, -1], negative int64, a ragged context feature."""
    ragged_then_fixed = tf.RaggedTensor.from_row_lengths(
        tf.constant([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]), [2, 0, 1])
    fixed_then_ragged = tf.RaggedTensor.from_uniform_row_length(
        tf.RaggedTensor.from_row_lengths(tf.constant([1, 2, 3, 4], tf.int64),
                                         [1, 0, 2, 0, 0, 1]), 2)
    return tfgnn.GraphTensor.from_pieces(
        context=tfgnn.Context.from_fields(features={
            "tags": tf.ragged.constant([[b"a", b"b"], []]),
            "score": tf.constant([0.1, -2.5], tf.float64),
        }),
        node_sets={
            "a": tfgnn.NodeSet.from_fields(sizes=tf.constant([2, 1]), features={
                "f64": tf.constant([0.1, 1e-3, 123456789.123], tf.float64),
                "flag": tf.constant([True, False, True]),
                "m": tf.constant([[[1, -2], [3, 4]], [[5, 6], [7, 8]], [[9, 10], [11, -12]]],
                                 tf.int32),
                "pts": ragged_then_fixed,
                "grid": fixed_then_ragged,
                "nest": tf.RaggedTensor.from_nested_row_lengths(
                    tf.constant([b"x", b"", b"yz"]), [[1, 0, 1], [2, 1]]),
                "big": tf.constant([-1, 2 ** 62, -(2 ** 63)], tf.int64),
            }),
            "empty": tfgnn.NodeSet.from_fields(sizes=tf.constant([0, 0]), features={
                "v": tf.zeros([0, 3], tf.float32)}),
        },
        edge_sets={
            "loop": tfgnn.EdgeSet.from_fields(
                sizes=tf.constant([1, 1]),
                adjacency=tfgnn.Adjacency.from_indices(("a", tf.constant([1, 2])),
                                                       ("a", tf.constant([0, 2])))),
            "none": tfgnn.EdgeSet.from_fields(
                sizes=tf.constant([0, 0]),
                adjacency=tfgnn.Adjacency.from_indices(("a", tf.constant([], tf.int32)),
                                                       ("empty", tf.constant([], tf.int32)))),
        })


SHAPES_SCHEMA = """\
context {
  features { key: "tags" value { dtype: DT_STRING shape { dim { size: -1 } } } }
  features { key: "score" value { dtype: DT_DOUBLE } }
}
node_sets { key: "a" value {
  features { key: "f64" value { dtype: DT_DOUBLE } }
  features { key: "flag" value { dtype: DT_BOOL } }
  features { key: "m" value { dtype: DT_INT32 shape { dim { size: 2 } dim { size: 2 } } } }
  features { key: "pts" value { dtype: DT_FLOAT shape { dim { size: -1 } dim { size: 2 } } } }
  features { key: "grid" value { dtype: DT_INT64 shape { dim { size: 2 } dim { size: -1 } } } }
  features { key: "nest" value { dtype: DT_STRING shape { dim { size: -1 } dim { size: -1 } } } }
  features { key: "big" value { dtype: DT_INT64 } }
} }
node_sets { key: "empty" value {
  features { key: "v" value { dtype: DT_FLOAT shape { dim { size: 3 } } } }
} }
edge_sets { key: "loop" value { source: "a" target: "a" } }
edge_sets { key: "none" value { source: "a" target: "empty" } }
"""


def main():
    for name, build in (("paper_author", paper_author), ("shapes", shapes)):
        graph = build()
        example = tfgnn.write_example(graph)
        with open(os.path.join(HERE, f"{name}.example.pb"), "wb") as f:
            f.write(example.SerializeToString(deterministic=True))
        if graph.num_components == 1:
            schema_text = text_format.MessageToString(
                tfgnn.create_schema_pb_from_graph_spec(graph))
        else:  # TF-GNN derives schemas from one-component graphs only
            schema_text = SHAPES_SCHEMA
        with open(os.path.join(HERE, f"{name}.schema.pbtxt"), "w") as f:
            f.write(schema_text)
        print("wrote", name)


if __name__ == "__main__":
    main()
