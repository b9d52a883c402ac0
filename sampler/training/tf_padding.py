"""Padding a merged tf.data batch to fixed total sizes (TPUs and XLA compile once).

The rule is the numpy core's (sampler.graph_tensor.padding.pad_pieces), run here
with TensorFlow operations on the flat tensors of input.py. Labels are padded
with 0 and come with weights, 1 for real and 0 for padding `_readout` nodes,
which Keras takes as sample weights so padding counts in neither loss nor metrics.
"""
from __future__ import annotations

import tensorflow as tf

from sampler.graph_tensor.keys import SIZE_NAME, SOURCE_NAME, TARGET_NAME, edge_key, node_key
from sampler.graph_tensor.padding import EdgePiece, NodePiece, SizeConstraints, pad_pieces
from sampler.graph_tensor.readout_structure import READOUT_NODE_SET
from sampler.training.layout import GraphLayout

Graph = dict  # flat key -> tf.Tensor, as input.py describes


class TensorFlowPadding:
    """graph_tensor.padding.PaddingOps on tf.Tensors; problems fail tf.debugging asserts."""

    def total(self, sizes):
        return tf.reduce_sum(sizes)

    def room(self, total, actual, what):
        extra = total - actual
        tf.debugging.assert_non_negative(
            extra, message=f"padding: {what} has more items than its total size {total}")
        return extra

    def pad_sizes(self, sizes, extra, padding_components, total_components):
        tail = tf.concat([[extra], tf.zeros([padding_components - 1], tf.int64)], 0)
        return tf.ensure_shape(tf.concat([sizes, tail], 0), [total_components])

    def pad_rows(self, values, extra, total):
        padding = [[0, extra]] + [[0, 0]] * (len(values.shape) - 1)
        return tf.ensure_shape(tf.pad(values, padding), [total] + values.shape[1:])

    def pad_indices(self, indices, first, extra, one_to_one, total):
        padding = (first + tf.range(extra, dtype=tf.int64) if one_to_one
                   else tf.fill([extra], first))
        return tf.ensure_shape(tf.concat([indices, padding], 0), [total])


def pad_batch(graph: Graph, labels: tf.Tensor, layout: GraphLayout,
              constraints: SizeConstraints) -> tuple[Graph, tf.Tensor, tf.Tensor]:
    """(padded graph, padded labels, weights): every tensor of a static shape."""
    ops = TensorFlowPadding()
    real_components = tf.shape(graph[node_key(READOUT_NODE_SET, SIZE_NAME)],
                               out_type=tf.int64)[0]
    tf.debugging.assert_positive(
        constraints.total_num_components - real_components,
        message=f"padding: a batch needs fewer than {constraints.total_num_components} "
                f"components, to leave one for padding")
    node_sets = {name: NodePiece(graph[node_key(name, SIZE_NAME)],
                                 {f.name: graph[node_key(name, f.name)] for f in features})
                 for name, features in layout.node_sets.items()}
    edge_sets = {name: EdgePiece(graph[edge_key(name, SIZE_NAME)], source, target,
                                 graph[edge_key(name, SOURCE_NAME)],
                                 graph[edge_key(name, TARGET_NAME)], {})
                 for name, (source, target) in layout.edge_sets.items()}
    nodes, edges, _ = pad_pieces(node_sets, edge_sets, real_components, constraints, ops)
    padded = {}
    for name, piece in nodes.items():
        padded[node_key(name, SIZE_NAME)] = piece.sizes
        padded.update({node_key(name, f): v for f, v in piece.features.items()})
    for name, piece in edges.items():
        padded[edge_key(name, SIZE_NAME)] = piece.sizes
        padded[edge_key(name, SOURCE_NAME)] = piece.source
        padded[edge_key(name, TARGET_NAME)] = piece.target
    real_readout = tf.reduce_sum(graph[node_key(READOUT_NODE_SET, SIZE_NAME)])
    readout_total = constraints.total_num_nodes[READOUT_NODE_SET]
    padded_labels = ops.pad_rows(labels, readout_total - real_readout, readout_total)
    weights = tf.ensure_shape(
        tf.concat([tf.ones([real_readout], tf.float32),
                   tf.zeros([readout_total - real_readout], tf.float32)], 0), [readout_total])
    return padded, padded_labels, weights
