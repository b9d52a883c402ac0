"""Conversion to TensorFlow, for training. TensorFlow loads only when called.

`to_tensors(graph)` gives a flat dict keyed like the tf.Example keys
(`nodes/paper.feat`, `edges/cites.#source`, `nodes/paper.#size`, ...) of
tf.Tensor (dense features, sizes, indices) and tf.RaggedTensor (ragged
features), which a plain Keras model can take as its input dict.
`to_tfgnn(graph)` builds a `tensorflow_gnn.GraphTensor` for TF-GNN models.
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from sampler.graph_tensor import keys as k
from sampler.graph_tensor.model import Adjacency, Context, EdgeSet, Field, GraphTensor, NodeSet
from unigraph.protos import graph_schema_pb2 as gs
from unigraph.columnar.ragged import Ragged
from unigraph.errors import require_extra


def _tf():
    # Lazily: about 4 s and 500 MB, only where training needs it; the [tf] extra.
    return require_extra("tensorflow", "tf", "converting to TensorFlow tensors")


def _constant(array: np.ndarray):
    tf = _tf()
    if array.dtype.kind == "O":
        # Straight from the object array: a numpy 'S' array would drop trailing NULs.
        return tf.constant(array, dtype=tf.string)
    return tf.constant(array)


def to_tf_value(field: Field, shape: Optional[tuple[int, ...]] = None):
    """A dense tf.Tensor, or a tf.RaggedTensor for a Ragged field. With the
    feature's per-item `shape` from a schema, fixed dimensions inside the
    ragged nesting become uniform row lengths, as TF-GNN's parser makes them."""
    tf = _tf()
    if not isinstance(field, Ragged):
        return _constant(field)
    levels, values = [], field
    while isinstance(values, Ragged):
        levels.append(values.row_lengths)
        values = values.values
    result = _constant(values)
    for dimension in range(len(levels), 0, -1):
        lengths = levels[dimension - 1]
        size = shape[dimension - 1] if shape is not None else -1
        if size != -1:
            result = tf.RaggedTensor.from_uniform_row_length(result, size,
                                                             nrows=len(lengths))
        else:
            result = tf.RaggedTensor.from_row_lengths(result, lengths)
    return result


def to_tensors(graph: GraphTensor) -> dict:
    """Every field of the graph as a tensor, keyed like its tf.Example key."""
    tf = _tf()
    result = {}
    for name, field in graph.context.features.items():
        result[k.context_key(name)] = to_tf_value(field)
    for set_name, node_set in graph.node_sets.items():
        result[k.node_key(set_name, k.SIZE_NAME)] = tf.constant(node_set.sizes)
        for name, field in node_set.features.items():
            result[k.node_key(set_name, name)] = to_tf_value(field)
    for set_name, edge_set in graph.edge_sets.items():
        result[k.edge_key(set_name, k.SIZE_NAME)] = tf.constant(edge_set.sizes)
        result[k.edge_key(set_name, k.SOURCE_NAME)] = tf.constant(edge_set.adjacency.source)
        result[k.edge_key(set_name, k.TARGET_NAME)] = tf.constant(edge_set.adjacency.target)
        for name, field in edge_set.features.items():
            result[k.edge_key(set_name, name)] = to_tf_value(field)
    return result


def to_tfgnn(graph: GraphTensor, schema: Optional[gs.GraphSchema] = None,
             indices_dtype=None):
    """The same graph as a scalar `tensorflow_gnn.GraphTensor`."""
    tf = _tf()
    tfgnn = require_extra("tensorflow_gnn", "tf", "TF-GNN interop")

    indices_dtype = indices_dtype or tf.int64

    def shape_of(declared, name):
        if declared is None or name not in declared:
            return None
        return tuple(d.size for d in declared[name].shape.dim)

    def features(piece, declared):
        return {n: to_tf_value(f, shape_of(declared, n)) for n, f in piece.features.items()}

    def sizes(values):
        return tf.constant(values, dtype=indices_dtype)

    context = tfgnn.Context.from_fields(
        features=features(graph.context, schema.context.features if schema else None),
        sizes=sizes(graph.context.sizes))
    node_sets = {
        name: tfgnn.NodeSet.from_fields(
            sizes=sizes(piece.sizes),
            features=features(piece, schema.node_sets[name].features
                              if schema and name in schema.node_sets else None))
        for name, piece in graph.node_sets.items()}
    edge_sets = {
        name: tfgnn.EdgeSet.from_fields(
            sizes=sizes(piece.sizes),
            adjacency=tfgnn.Adjacency.from_indices(
                source=(piece.adjacency.source_name, sizes(piece.adjacency.source)),
                target=(piece.adjacency.target_name, sizes(piece.adjacency.target))),
            features=features(piece, schema.edge_sets[name].features
                              if schema and name in schema.edge_sets else None))
        for name, piece in graph.edge_sets.items()}
    return tfgnn.GraphTensor.from_pieces(context=context, node_sets=node_sets,
                                         edge_sets=edge_sets)


def from_tf_value(value) -> Field:
    """The numpy Field of an eager tf.Tensor or tf.RaggedTensor."""
    tf = _tf()
    if isinstance(value, tf.RaggedTensor):
        inner = from_tf_value(value.values)
        return Ragged(inner, value.row_lengths().numpy())
    array = value.numpy()
    if array.dtype.kind in "SO":
        out = np.empty(array.shape, dtype=object)
        out.reshape(-1)[:] = [bytes(v) for v in array.reshape(-1)]
        return out
    return array


def from_tfgnn(tfgnn_graph) -> GraphTensor:
    """A numpy GraphTensor from an eager scalar `tensorflow_gnn.GraphTensor`."""
    def features(piece):
        return {n: from_tf_value(v) for n, v in piece.features.items()}

    context = Context.from_fields(features=features(tfgnn_graph.context),
                                  sizes=tfgnn_graph.context.sizes.numpy())
    node_sets = {n: NodeSet.from_fields(sizes=s.sizes.numpy(), features=features(s))
                 for n, s in tfgnn_graph.node_sets.items()}
    edge_sets = {n: EdgeSet.from_fields(
        sizes=s.sizes.numpy(),
        adjacency=Adjacency.from_indices(
            source=(s.adjacency.source_name, s.adjacency.source.numpy()),
            target=(s.adjacency.target_name, s.adjacency.target.numpy())),
        features=features(s)) for n, s in tfgnn_graph.edge_sets.items()}
    return GraphTensor.from_pieces(context=context, node_sets=node_sets, edge_sets=edge_sets)
