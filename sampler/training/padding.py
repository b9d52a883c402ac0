"""Padding merged batches to fixed total sizes, so every batch has the same shapes
(TPUs and XLA compile once for all batches).

The same rules as the numpy core's `pad_to_total_sizes` (its docstring has the
details), applied to the flat tensors of input.py: padding goes into extra
components at the end, the first of which holds all padding nodes and edges;
padding edges join padding nodes only, except `_readout/seed`, whose padding
edges reach the padding `_readout` nodes one to one. Labels are padded with 0
and come with weights, 1 for real and 0 for padding `_readout` nodes, which
Keras takes as sample weights so padding counts in neither loss nor metrics.
"""
from __future__ import annotations

from typing import Sequence

import tensorflow as tf

from sampler.graph_tensor import READOUT_NODE_SET, SizeConstraints
from sampler.graph_tensor.keys import SIZE_NAME, SOURCE_NAME, TARGET_NAME, edge_key, node_key
from sampler.training.layout import GraphLayout
from sampler.training.input import Graph, record_dataset
from sampler.output.folder import SamplesError


def pad_to_total_sizes(graph: Graph, labels: tf.Tensor, layout: GraphLayout,
                       constraints: SizeConstraints) -> tuple[Graph, tf.Tensor, tf.Tensor]:
    """(padded graph, padded labels, weights): every tensor of a static shape."""
    real_components = tf.shape(graph[node_key(READOUT_NODE_SET, SIZE_NAME)],
                               out_type=tf.int64)[0]
    padding_components = constraints.total_num_components - real_components
    tf.debugging.assert_positive(
        padding_components, message=f"padding: a batch needs fewer than "
        f"{constraints.total_num_components} components, to leave one for padding")

    def pad_sizes(sizes, extra, total_components):
        tail = tf.concat([[extra], tf.zeros([padding_components - 1], tf.int64)], 0)
        return tf.ensure_shape(tf.concat([sizes, tail], 0), [total_components])

    def pad_rows(values, extra, total):
        padding = [[0, extra]] + [[0, 0]] * (len(values.shape) - 1)
        return tf.ensure_shape(tf.pad(values, padding), [total] + values.shape[1:])

    padded, real_nodes = {}, {}
    for set_name, features in layout.node_sets.items():
        sizes = graph[node_key(set_name, SIZE_NAME)]
        total = constraints.total_num_nodes[set_name]
        real_nodes[set_name] = tf.reduce_sum(sizes)
        extra = _room(total - real_nodes[set_name], f"node set '{set_name}'", total)
        padded[node_key(set_name, SIZE_NAME)] = pad_sizes(sizes, extra,
                                                          constraints.total_num_components)
        for feature in features:
            key = node_key(set_name, feature.name)
            padded[key] = pad_rows(graph[key], extra, total)
    for set_name, (source, target) in layout.edge_sets.items():
        sizes = graph[edge_key(set_name, SIZE_NAME)]
        total = constraints.total_num_edges[set_name]
        extra = _room(total - tf.reduce_sum(sizes), f"edge set '{set_name}'", total)
        padded[edge_key(set_name, SIZE_NAME)] = pad_sizes(sizes, extra,
                                                          constraints.total_num_components)
        # Padding edges start and end at the first padding node of their sets...
        pad_source = tf.fill([extra], real_nodes[source])
        pad_target = tf.fill([extra], real_nodes[target])
        if target == READOUT_NODE_SET:
            # ...but each padding `_readout` node is reached exactly once.
            pad_target = real_nodes[target] + tf.range(extra, dtype=tf.int64)
        for tag, padding in ((SOURCE_NAME, pad_source), (TARGET_NAME, pad_target)):
            key = edge_key(set_name, tag)
            padded[key] = tf.ensure_shape(tf.concat([graph[key], padding], 0), [total])
    readout_total = constraints.total_num_nodes[READOUT_NODE_SET]
    label_padding = readout_total - real_nodes[READOUT_NODE_SET]
    padded_labels = pad_rows(labels, label_padding, readout_total)
    weights = tf.ensure_shape(
        tf.concat([tf.ones([real_nodes[READOUT_NODE_SET]], tf.float32),
                   tf.zeros([label_padding], tf.float32)], 0), [readout_total])
    return padded, padded_labels, weights


def _room(extra: tf.Tensor, what: str, total: int) -> tf.Tensor:
    tf.debugging.assert_non_negative(
        extra, message=f"padding: {what} has more items than its total size {total}")
    return extra


def fixed_size_constraints(files: Sequence[str], layout: GraphLayout,
                           batch_size: int) -> SizeConstraints:
    """Constraints that fit any `batch_size` records of these files, padding included:
    batch_size times the largest record per set, plus room for the padding
    (as `sampler.graph_tensor.tight_size_constraints`). Reads every record's sizes."""
    size_keys = [node_key(n, SIZE_NAME) for n in layout.node_sets]
    size_keys += [edge_key(n, SIZE_NAME) for n in layout.edge_sets]
    spec = {key: tf.io.RaggedFeature(tf.int64, row_splits_dtype=tf.int64) for key in size_keys}

    components_key = node_key(READOUT_NODE_SET, SIZE_NAME) + " components"

    def largest(batch):
        parsed = tf.io.parse_example(batch, spec)
        result = {key: tf.reduce_max(tf.reduce_sum(parsed[key], axis=1)) for key in size_keys}
        result[components_key] = tf.reduce_max(
            parsed[node_key(READOUT_NODE_SET, SIZE_NAME)].row_lengths())
        return result

    maxima = {key: 0 for key in size_keys + [components_key]}
    for batch_max in record_dataset(files).batch(4096).map(largest):
        maxima = {key: max(value, int(batch_max[key])) for key, value in maxima.items()}
    if not maxima[components_key]:
        raise SamplesError("padding: the records hold no subgraph")
    nodes = {n: batch_size * maxima[node_key(n, SIZE_NAME)] + 1 for n in layout.node_sets}
    edges = {n: batch_size * maxima[edge_key(n, SIZE_NAME)] + (target == READOUT_NODE_SET)
             for n, (_, target) in layout.edge_sets.items()}
    components = batch_size * maxima[components_key] + 1
    return SizeConstraints(components, nodes, edges)
