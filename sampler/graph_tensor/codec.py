"""The exact tf.train.Example codec of a GraphTensor, without TensorFlow.

`encode_example` writes the bytes TF-GNN's `tfgnn.write_example` would produce
(same keys, same serialized Feature per key), with keys in sorted order so the
bytes are deterministic. `parse_example` reads any key order, driven by a
GraphSchema like `tfgnn.parse_example` with a spec made from that schema.

Encoding rules (checked against tensorflow_gnn 1.0.3, see keys.py for names):
  - bool and integer features -> int64_list (uint64 keeps its bit pattern);
    float16/32/64 -> float_list (float64 is rounded to float32: lossy, and
    results below float32's smallest normal become 0, as TensorFlow's cast
    flushes them);
    bytes -> bytes_list.
  - values are flattened in row-major order; ragged features write their flat
    values plus `.d<k>` row lengths for every ragged dimension k. Fixed
    dimensions inside a Ragged (e.g. shape [3, -1]) are only known from a
    schema: pass it to write them as TF-GNN does (no `.d1` for the fixed 3).
  - a scalar feature and a shape-[1] feature write the same values; only the
    schema tells the parser which shape to restore.
  - every key of an empty set or feature is still written, with an empty list
    of the right kind (TF-GNN does the same).
  - a missing key parses as an empty list, as TF-GNN's parser does; the
    validation then reports it if the set has items.
"""
from __future__ import annotations

from typing import Callable, Optional, Union

import numpy as np

from sampler.graph_tensor import keys as k
from sampler.graph_tensor import wire
from sampler.graph_tensor.model import (Adjacency, Context, EdgeSet, Field, GraphTensor,
                                        NodeSet)
from unigraph.protos import example_pb2
from unigraph.protos import graph_schema_pb2 as gs
from unigraph.errors import GraphTensorError
from unigraph.columnar.ragged import Ragged
from unigraph.schema import NUMPY_DTYPES, dtype_name

Schema = gs.GraphSchema
FlatEntry = tuple  # (key, kind, flat values)


# --- writing -------------------------------------------------------------------

def encode_example(graph: GraphTensor, schema: Optional[Schema] = None) -> bytes:
    """The serialized tf.train.Example of `graph`, features in sorted key order."""
    return wire.encode_example_bytes(
        (key, wire.encode_feature(kind, values))
        for key, kind, values in flatten_graph(graph, schema))


def write_example(graph: GraphTensor, schema: Optional[Schema] = None) -> example_pb2.Example:
    """`encode_example` as a message (unigraph.protos.example_pb2.Example)."""
    return example_pb2.Example.FromString(encode_example(graph, schema))


def flatten_graph(graph: GraphTensor, schema: Optional[Schema] = None) -> list[FlatEntry]:
    """(key, Feature kind, flat values) for every key the graph writes, sorted by key."""
    schema = _unwrap(schema)
    entries: list[FlatEntry] = []

    def add_features(key_of: Callable[[str], str], features, declared) -> None:
        for name, field in features.items():
            shape = _declared_shape(declared, name)
            entries.extend(flatten_field(key_of(name), field, shape))

    add_features(k.context_key, graph.context.features,
                 schema.context.features if schema else None)
    for name, node_set in graph.node_sets.items():
        entries.append((k.node_key(name, k.SIZE_NAME), wire.INT64, node_set.sizes))
        add_features(lambda f, s=name: k.node_key(s, f), node_set.features,
                     schema.node_sets[name].features if schema and name in schema.node_sets
                     else None)
    for name, edge_set in graph.edge_sets.items():
        entries.append((k.edge_key(name, k.SIZE_NAME), wire.INT64, edge_set.sizes))
        entries.append((k.edge_key(name, k.SOURCE_NAME), wire.INT64, edge_set.adjacency.source))
        entries.append((k.edge_key(name, k.TARGET_NAME), wire.INT64, edge_set.adjacency.target))
        add_features(lambda f, s=name: k.edge_key(s, f), edge_set.features,
                     schema.edge_sets[name].features if schema and name in schema.edge_sets
                     else None)
    entries.sort(key=lambda entry: entry[0])
    return entries


def _declared_shape(declared, name: str) -> Optional[tuple[int, ...]]:
    if declared is None or name not in declared:
        return None
    return tuple(d.size for d in declared[name].shape.dim)


def flatten_field(key: str, field: Field, shape: Optional[tuple[int, ...]]) -> list[FlatEntry]:
    if shape is not None and not isinstance(field, Ragged):
        field = _uniform_ragged(field, shape)
    levels = []  # row lengths of each Ragged nesting level = dimensions 1, 2, ...
    values = field
    while isinstance(values, Ragged):
        levels.append(values.row_lengths)
        values = values.values
    entries = [(key, _kind_of(values.dtype, key), _io_values(values))]
    if shape is not None:
        _check_declared_shape(key, levels, values, shape)
    for dimension, lengths in enumerate(levels, start=1):
        if shape is None or shape[dimension - 1] == -1:
            entries.append((k.ragged_key(key, dimension), wire.INT64, lengths))
    return entries


def _uniform_ragged(values: np.ndarray, shape: tuple[int, ...]) -> Field:
    """A dense field whose schema declares ragged dimensions, as the Ragged of uniform
    rows it is an instance of (nested lists of equal lengths arrive dense: model.as_field);
    anything else as it is, for _check_declared_shape to judge."""
    ragged = k.ragged_dimensions(shape)
    if not ragged or values.ndim != len(shape) + 1:
        return values
    depth = ragged[-1]
    flat = values.reshape((-1,) + values.shape[depth + 1:])
    field: Field = flat
    for dimension in range(depth, 0, -1):  # innermost level first
        rows = int(np.prod(values.shape[:dimension]))
        field = Ragged(field, np.full(rows, values.shape[dimension], np.int64))
    return field


def _check_declared_shape(key: str, levels: list, values: np.ndarray,
                          shape: tuple[int, ...]) -> None:
    ragged = k.ragged_dimensions(shape)
    depth = ragged[-1] if ragged else 0
    actual = ["?"] * len(levels) + [str(d) for d in values.shape[1:]]
    declared = [str(d) if d != -1 else "?" for d in shape]
    if len(levels) != depth or tuple(values.shape[1:]) != shape[depth:]:
        raise GraphTensorError(f"{key}: feature of shape [{', '.join(actual)}] per item, but "
                               f"the schema declares [{', '.join(declared)}]")
    for dimension, lengths in enumerate(levels, start=1):
        size = shape[dimension - 1]
        if size != -1 and (lengths != size).any():
            raise GraphTensorError(f"{key}: dimension {dimension} is declared of size {size} "
                                   f"but has rows of length {int(lengths[lengths != size][0])}")


def _kind_of(dtype: np.dtype, key: str) -> str:
    if dtype.kind in "biu":
        return wire.INT64
    if dtype.kind == "f":
        return wire.FLOAT
    if dtype.kind == "O":
        return wire.BYTES
    raise GraphTensorError(f"{key}: dtype {dtype} has no tf.train.Feature encoding")


def _io_values(values: np.ndarray):
    flat = values.reshape(-1)
    if flat.dtype == np.uint64:
        return flat.view(np.int64)  # same bit pattern, as TF-GNN writes it
    if flat.dtype.kind == "O":
        return list(flat)
    if flat.dtype == np.float64:
        with np.errstate(over="ignore"):  # beyond float32 range: inf, as in TensorFlow
            return flush_subnormals(flat.astype(np.float32))
    return flat


def flush_subnormals(values: np.ndarray) -> np.ndarray:
    """Float results too small for a normal float32 become signed zeros.

    TensorFlow casts between float64 and float32 with flush-to-zero on, so
    TF-GNN writes (and parses) those values as 0; we do the same to keep the
    bytes identical. float32 features are not cast, so they keep subnormals."""
    tiny = np.finfo(np.float32).tiny
    small = np.abs(values) < tiny
    if small.any():
        values = np.where(small, np.copysign(values.dtype.type(0), values), values)
    return values


# --- reading -------------------------------------------------------------------

def parse_example(schema: Union[Schema, object], serialized: Union[bytes, example_pb2.Example],
                  *, validate: bool = True) -> GraphTensor:
    """The GraphTensor in one serialized tf.train.Example, shaped by `schema`.

    Keys the schema does not name are ignored (as tf.io.parse_example does)."""
    schema = _unwrap(schema)
    if isinstance(serialized, example_pb2.Example):
        serialized = serialized.SerializeToString()
    raw = wire.split_example(serialized)
    reader = _FeatureReader(raw)
    components = _count_components(schema, reader)

    context_features = {}
    for name, feature in schema.context.features.items():
        context_features[name] = reader.field(k.context_key(name), feature, components,
                                              f"context feature '{name}'")
    node_sets = {}
    for set_name, node_set in schema.node_sets.items():
        sizes = reader.sizes(k.node_key(set_name, k.SIZE_NAME), components)
        total = int(sizes.sum())
        features = {name: reader.field(k.node_key(set_name, name), feature, total,
                                       f"node set '{set_name}' feature '{name}'")
                    for name, feature in node_set.features.items()}
        node_sets[set_name] = NodeSet.from_fields(sizes=sizes, features=features)
    edge_sets = {}
    for set_name, edge_set in schema.edge_sets.items():
        sizes = reader.sizes(k.edge_key(set_name, k.SIZE_NAME), components)
        total = int(sizes.sum())
        features = {name: reader.field(k.edge_key(set_name, name), feature, total,
                                       f"edge set '{set_name}' feature '{name}'")
                    for name, feature in edge_set.features.items()}
        adjacency = Adjacency.from_indices(
            source=(edge_set.source, reader.int64(k.edge_key(set_name, k.SOURCE_NAME))),
            target=(edge_set.target, reader.int64(k.edge_key(set_name, k.TARGET_NAME))))
        edge_sets[set_name] = EdgeSet.from_fields(sizes=sizes, adjacency=adjacency,
                                                  features=features)
    context = Context.from_fields(features=context_features,
                                  sizes=np.ones(components, dtype=np.int64))
    return GraphTensor.from_pieces(context=context, node_sets=node_sets, edge_sets=edge_sets,
                                   validate=validate)


def _unwrap(schema):
    """Accepts a GraphSchema or a unigraph.schema.LoadedSchema."""
    if schema is None or isinstance(schema, Schema):
        return schema
    inner = getattr(schema, "schema", None)
    if isinstance(inner, Schema):
        return inner
    raise GraphTensorError(f"expected a GraphSchema, got {type(schema).__name__}")


def _count_components(schema: Schema, reader: "_FeatureReader") -> int:
    """From the first #size present; else from the context features; else 1
    (TF-GNN's schema-made specs always have exactly one component)."""
    size_keys = sorted([k.node_key(n, k.SIZE_NAME) for n in schema.node_sets]
                       + [k.edge_key(n, k.SIZE_NAME) for n in schema.edge_sets])
    for key in size_keys:
        if key in reader.raw:
            return len(reader.int64(key))
    for name, feature in sorted(schema.context.features.items()):
        key = k.context_key(name)
        shape = [d.size for d in feature.shape.dim]
        if key not in reader.raw:
            continue
        if shape and shape[0] == -1:
            return len(reader.int64(k.ragged_key(key, 1)))
        if -1 not in shape and int(np.prod(shape)) > 0:
            return len(reader.values(key, None)[1]) // int(np.prod(shape))
    return 1


class _FeatureReader:
    """Decodes the Features of one Example on demand, by key."""

    def __init__(self, raw: dict):
        self.raw = raw

    def values(self, key: str, expected_kind: Optional[str]):
        if key not in self.raw:
            return None, []
        kind, values = wire.decode_feature(self.raw[key], key)
        if kind is not None and expected_kind is not None and kind != expected_kind:
            raise GraphTensorError(f"tf.Example key '{key}': expected {expected_kind}, "
                                   f"found {kind}")
        return kind, values

    def int64(self, key: str) -> np.ndarray:
        _, values = self.values(key, wire.INT64)
        return np.asarray(values, dtype=np.int64)

    def sizes(self, key: str, components: int) -> np.ndarray:
        if key not in self.raw:
            return np.zeros(components, dtype=np.int64)  # TF-GNN's default for #size
        return self.int64(key)

    def field(self, key: str, feature: gs.Feature, items: int, where: str) -> Field:
        dtype = NUMPY_DTYPES.get(feature.dtype)
        if dtype is None:
            raise GraphTensorError(f"{where}: schema dtype {dtype_name(feature.dtype)} has no "
                                   f"tf.train.Feature encoding")
        kind = wire.INT64 if dtype.kind in "biu" else wire.FLOAT if dtype.kind == "f" \
            else wire.BYTES
        if key not in self.raw and items:
            raise GraphTensorError(f"{where}: tf.Example key '{key}' is missing, but the "
                                   f"piece has {items} items")
        _, flat = self.values(key, kind)
        flat = _restore_dtype(flat, dtype)
        shape = tuple(d.size for d in feature.shape.dim)
        return _unflatten(flat, items, shape, lambda dim: self.int64(k.ragged_key(key, dim)),
                          key)


def _restore_dtype(flat, dtype: np.dtype) -> np.ndarray:
    if dtype.kind == "O":
        array = np.empty(len(flat), dtype=object)
        array[:] = flat
        return array
    flat = np.asarray(flat)
    if dtype.kind == "b":
        return flat != 0
    if dtype == np.uint64:
        return flat.astype(np.int64).view(np.uint64)
    if dtype == np.float64:
        return flush_subnormals(flat.astype(np.float64))  # as TF-GNN's cast does
    return flat.astype(dtype, copy=False)


def _unflatten(flat: np.ndarray, items: int, shape: tuple[int, ...],
               row_lengths: Callable[[int], np.ndarray], key: str) -> Field:
    """Rebuilds [items, *shape] from flat values and .d<k> row lengths."""
    ragged = k.ragged_dimensions(shape)
    depth = ragged[-1] if ragged else 0
    rows, levels = items, []
    for dimension in range(1, depth + 1):
        size = shape[dimension - 1]
        if size == -1:
            lengths = row_lengths(dimension)
            if len(lengths) != rows:
                raise GraphTensorError(
                    f"tf.Example key '{k.ragged_key(key, dimension)}': {len(lengths)} row "
                    f"lengths for {rows} rows")
            if (lengths < 0).any():
                raise GraphTensorError(f"tf.Example key '{k.ragged_key(key, dimension)}': "
                                       f"negative row length")
        else:
            lengths = np.full(rows, size, dtype=np.int64)
        levels.append(lengths)
        rows = int(lengths.sum())
    trailing = shape[depth:]
    expected = rows * int(np.prod(trailing, dtype=np.int64))
    if len(flat) != expected:
        dims = ", ".join(str(d) for d in trailing)
        raise GraphTensorError(
            f"tf.Example key '{key}': {len(flat)} values, expected {expected} for {rows} "
            f"rows of shape [{dims}]")
    values: Field = flat.reshape((rows,) + trailing)
    for lengths in reversed(levels):
        values = Ragged(values, lengths)
    return values


def graph_keys(graph: GraphTensor, schema: Optional[gs.GraphSchema] = None) -> list[str]:
    """Every key `encode_example(graph, schema)` writes, sorted."""
    return [key for key, _, _ in flatten_graph(graph, schema)]
