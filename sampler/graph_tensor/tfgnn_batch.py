"""TF-GNN's batched GraphTensor from the batched decoder: what
`tfgnn.parse_example(spec, records)` gives for a batch of records (a GraphTensor of
shape [batch], each record one graph), value for value and spec for spec.

    batches = TfgnnBatches(schema)
    arrays = batches.arrays(records)          # numpy: the decoder's columns, flat
    dataset = tf.data.Dataset.from_generator(..., output_signature=batches.signature())
    dataset = dataset.map(batches.graph)      # tensors -> tfgnn.GraphTensor, in TF ops

`arrays` decodes the records with the batched decoder (batch_codec.py) and lays its
merged columns out as the flat pieces of TF-GNN's batched layout: per node and edge
set its sizes ([batch, 1], int32) and where each record's items start (row splits);
each feature's values over the batch (ragged ones with their row splits per level);
edge indices back to each record's own nodes (int32); context features
[batch, 1, ...]. `graph` (numpy-free, so tf.data traces it once) makes the ragged
tensors from those pieces and the GraphTensor from them, as TF-GNN's parser shapes
them (fixed dimensions inside a ragged feature as uniform row lengths).

`TfgnnBatches.unsupported(schema)` names what this layout does not cover (a dtype
TF-GNN parses otherwise); the caller then keeps TF-GNN's parser (sampler.api's
`to_tf_dataset` compares the two element specs too, and says once why it keeps it; it
keeps it anyway while this route measures slower: sampler.api.tf_dataset's
DECODER_BEATS_TFGNN).
Records of more than one graph component each, which TF-GNN's parser refuses too,
raise GraphTensorError. TensorFlow is imported when a TfgnnBatches is made (it traces
TF-GNN's parser once for its spec); `arrays` itself is numpy. Everything derived
(row splits in the parser's dtype, local edge indices) is computed there, so that the
GraphTensor is built of the tensors as they come. (Even so, tf.data's from_generator
and the GraphTensor's pieces cost more per batch than TF-GNN's parse: decode benchmark,
`tf_decoder`.)
"""
from __future__ import annotations

import dataclasses
from typing import Optional, Sequence

import numpy as np

from sampler.graph_tensor.batch_codec import BatchDecoder
from sampler.graph_tensor.example_batch import BatchPiece, ExampleBatch, Strings
from unigraph.columnar.ragged import Ragged
from unigraph.encoding.wire import padded
from unigraph.errors import GraphTensorError, require_extra
from unigraph.protos import graph_schema_pb2 as gs

# The dtypes TF-GNN's parser gives (its tf.Example lists are float, int64 and bytes; it
# casts them to the schema's dtype, as the decoder does).
_DTYPES = {gs.DT_FLOAT: "float32", gs.DT_DOUBLE: "float64", gs.DT_INT64: "int64",
           gs.DT_INT32: "int32", gs.DT_BOOL: "bool", gs.DT_STRING: "string"}


@dataclasses.dataclass(frozen=True)
class _Feature:
    name: str
    dtype: str                 # a numpy dtype's name, or "string"
    shape: tuple[int, ...]     # per item, -1 for a ragged dimension
    levels: int                # ragged nesting of the values (dims up to the last -1)


@dataclasses.dataclass(frozen=True)
class _Set:
    kind: str                  # "context", "nodes" or "edges"
    name: str
    features: tuple[_Feature, ...]
    source: str = ""
    target: str = ""


class TfgnnBatches:
    """Records -> the flat arrays of TF-GNN's batched GraphTensor -> the GraphTensor
    (module docstring)."""

    def __init__(self, schema: gs.GraphSchema):
        reason = self.unsupported(schema)
        if reason:
            raise GraphTensorError(f"TF-GNN's batched layout from the decoder: {reason}")
        self.schema = schema
        self.decoder = BatchDecoder(schema)
        self._parsed_spec = None
        # The parser's row splits are int64 or int32 by the schema: made so in numpy
        self.splits_dtype = np.dtype(self.parsed_spec().row_splits_dtype.as_numpy_dtype)
        self.sets = ([_Set("context", "", _features(schema.context.features))]
                     + [_Set("nodes", name, _features(node_set.features))
                        for name, node_set in sorted(schema.node_sets.items())]
                     + [_Set("edges", name, _features(edge_set.features), edge_set.source,
                             edge_set.target)
                        for name, edge_set in sorted(schema.edge_sets.items())])

    @staticmethod
    def unsupported(schema: gs.GraphSchema) -> Optional[str]:
        """What of the schema this layout does not cover, or None."""
        pieces = ([("context", schema.context.features)]
                  + [(f"node set '{n}'", p.features) for n, p in schema.node_sets.items()]
                  + [(f"edge set '{n}'", p.features) for n, p in schema.edge_sets.items()])
        for where, features in pieces:
            for name, feature in features.items():
                if feature.dtype not in _DTYPES:
                    return (f"{where} feature '{name}' has dtype "
                            f"{gs.DataType.Name(feature.dtype)}")
                if where == "context" and any(d.size == -1 for d in feature.shape.dim):
                    return f"context feature '{name}' is ragged"
        return None

    # ---- numpy: records -> arrays ------------------------------------------------------

    def arrays(self, records: Sequence[bytes]) -> list[np.ndarray]:
        """The flat arrays of these serialized records (`signature` says which)."""
        lengths = np.fromiter(map(len, records), np.int64, len(records))
        starts = np.cumsum(lengths) - lengths
        return self.arrays_of(self.decoder.decode(padded(b"".join(records)), starts,
                                                  lengths))

    def arrays_of(self, batch: ExampleBatch) -> list[np.ndarray]:
        """The flat arrays of a decoded batch whose records have one component each."""
        if not (batch.components == 1).all():
            raise GraphTensorError("TF-GNN's batched GraphTensor takes records of one "
                                   "graph component each; a record has "
                                   f"{int(batch.components.max())}")
        records = batch.records
        out: list[np.ndarray] = []
        for item in self.sets:
            if item.kind == "context":
                out.append(np.ones((records, 1), np.int32))
                for feature in item.features:
                    values = _plain(batch.context.features[feature.name], feature.dtype)
                    out.append(values.reshape((records, 1) + values.shape[1:]))
                continue
            piece = (batch.node_sets if item.kind == "nodes" else batch.edge_sets)[item.name]
            out += [piece.sizes.astype(np.int32).reshape(records, 1),
                    piece.offsets().astype(self.splits_dtype, copy=False)]
            if item.kind == "edges":
                counts = piece.sizes
                for end, name in ((piece.source, item.source), (piece.target, item.target)):
                    before = batch.node_sets[name].offsets()[:-1]  # records' first nodes
                    out.append((end - np.repeat(before, counts)).astype(np.int32))
            for feature in item.features:
                out += _feature_arrays(piece, feature, self.splits_dtype)
        return out

    # ---- TensorFlow: arrays -> GraphTensor --------------------------------------------

    def signature(self) -> tuple:
        """The tf.TensorSpec of each array (tf.data's output signature)."""
        tf = _tf()
        splits = self.parsed_spec().row_splits_dtype
        specs = []
        for item in self.sets:
            if item.kind == "context":
                specs.append(tf.TensorSpec([None, 1], tf.int32))
                specs += [tf.TensorSpec([None, 1, *f.shape], _tf_dtype(f.dtype))
                          for f in item.features]
                continue
            specs += [tf.TensorSpec([None, 1], tf.int32), tf.TensorSpec([None], splits)]
            if item.kind == "edges":
                specs += [tf.TensorSpec([None], tf.int32)] * 2
            for feature in item.features:
                inner = feature.shape[feature.levels:]
                specs.append(tf.TensorSpec([None, *inner], _tf_dtype(feature.dtype)))
                specs += [tf.TensorSpec([None], splits)] * feature.levels
        return tuple(specs)

    def graph(self, *tensors):
        """The tfgnn.GraphTensor of shape [batch] of `arrays`' tensors, in TF ops."""
        tf = _tf()
        tfgnn = require_extra("tensorflow_gnn", "tf", "TF-GNN's GraphTensor")
        splits = self.parsed_spec().row_splits_dtype
        rest = list(tensors)
        context, node_sets, edge_sets = None, {}, {}
        for item in self.sets:
            if item.kind == "context":
                sizes = rest.pop(0)
                features = {f.name: rest.pop(0) for f in item.features}
                context = tfgnn.Context.from_fields(features=features, sizes=sizes)
                continue
            sizes, splits = rest.pop(0), rest.pop(0)
            ends = [rest.pop(0), rest.pop(0)] if item.kind == "edges" else []
            features = {}
            for feature in item.features:
                value = rest.pop(0)
                inner = [rest.pop(0) for _ in range(feature.levels)]  # row splits
                for level in range(feature.levels - 1, -1, -1):
                    size = feature.shape[level]
                    if size == -1:
                        value = tf.RaggedTensor.from_row_splits(value, inner[level],
                                                                validate=False)
                    else:
                        value = tf.RaggedTensor.from_uniform_row_length(
                            value, size, nrows=tf.shape(inner[level], splits)[0] - 1,
                            validate=False)
                features[feature.name] = tf.RaggedTensor.from_row_splits(value, splits,
                                                                         validate=False)
            if item.kind == "nodes":
                node_sets[item.name] = tfgnn.NodeSet.from_fields(features=features,
                                                                 sizes=sizes)
                continue
            source, target = (tf.RaggedTensor.from_row_splits(end, splits, validate=False)
                              for end in ends)
            edge_sets[item.name] = tfgnn.EdgeSet.from_fields(
                features=features, sizes=sizes,
                adjacency=tfgnn.Adjacency.from_indices(source=(item.source, source),
                                                       target=(item.target, target)))
        graph = tfgnn.GraphTensor.from_pieces(context=context, node_sets=node_sets,
                                              edge_sets=edge_sets)
        return graph

    def parsed_spec(self):
        """The spec of `tfgnn.parse_example`'s GraphTensor of a batch of these records
        (shape [None]), from tracing it once."""
        if self._parsed_spec is None:
            tf = _tf()
            tfgnn = require_extra("tensorflow_gnn", "tf", "TF-GNN's GraphTensor")
            spec = tfgnn.create_graph_spec_from_schema_pb(
                tfgnn.GraphSchema.FromString(self.schema.SerializeToString()))
            traced = tf.function(lambda records: tfgnn.parse_example(spec, records))
            self._parsed_spec = traced.get_concrete_function(
                tf.TensorSpec([None], tf.string)).structured_outputs.spec
        return self._parsed_spec


def _features(declared) -> tuple[_Feature, ...]:
    out = []
    for name, feature in sorted(declared.items()):
        shape = tuple(d.size for d in feature.shape.dim)
        ragged = [i for i, size in enumerate(shape) if size == -1]
        out.append(_Feature(name, _DTYPES[feature.dtype], shape,
                            ragged[-1] + 1 if ragged else 0))
    return tuple(out)


def _feature_arrays(piece: BatchPiece, feature: _Feature, splits) -> list[np.ndarray]:
    """A feature's values over the batch, then its row splits, outermost level first."""
    value, lengths = piece.features[feature.name], []
    for _ in range(feature.levels):
        if not isinstance(value, Ragged):
            raise GraphTensorError(f"feature '{feature.name}' of shape {list(feature.shape)} "
                                   f"decoded without its ragged levels")
        lengths.append(np.asarray(value.row_splits).astype(splits, copy=False))
        value = value.values
    values = _plain(value, feature.dtype)
    count = len(values) if feature.levels else piece.offsets()[-1]
    return [values.reshape((count,) + feature.shape[feature.levels:])] + lengths


def _plain(value, dtype: str) -> np.ndarray:
    """A numeric array in the schema's dtype, strings as bytes: fixed-width where that
    loses no trailing NUL byte (TensorFlow reads an 'S' array as numpy does), else
    objects."""
    if isinstance(value, Strings):
        return value.objects() if value.as_objects or value.exact else value.fixed
    if dtype == "string":
        return np.asarray(value, dtype=object)
    return np.asarray(value).astype(dtype, copy=False)


def _tf():
    return require_extra("tensorflow", "tf", "TF-GNN's GraphTensor")


def _tf_dtype(name: str):
    return getattr(_tf(), name)
