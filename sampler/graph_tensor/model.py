"""The immutable numpy GraphTensor: Context, NodeSet, EdgeSet, Adjacency.

Names and constructors follow TF-GNN (`GraphTensor.from_pieces`,
`NodeSet.from_fields`, ...) so code reads the same on both sides. A graph holds
one or more graph components; every piece has `sizes`, an int64 vector with one
entry per component (context sizes are all 1). Features are numpy arrays with
the item dimension first, or `unigraph.columnar.ragged.Ragged` when a dimension varies.

Data shapes:
  Field    = np.ndarray [items, *dims] | Ragged (item dimension = outer rows)
  Features = read-only mapping feature name -> Field
  Indices  = int64 np.ndarray [edges], indices into this graph's node set

Pieces are immutable: constructors take read-only views of the arrays (no
copy), and mapping fields are read-only proxies. Builders return new objects.
"""
from __future__ import annotations

import dataclasses
import types
from typing import Callable, Mapping, Optional, Sequence

import numpy as np

from sampler.graph_tensor.validation import Field, validate_graph
from unigraph.errors import GraphTensorError
from unigraph.columnar.ragged import Ragged, values_equal

Features = Mapping[str, Field]  # Field: an array, or a Ragged one (validation.py)

SOURCE = "source"
TARGET = "target"
CONTEXT = "context"


def _read_only(array: np.ndarray) -> np.ndarray:
    # A view, so the caller's own array keeps its flags and nothing is copied.
    view = array.view()
    view.flags.writeable = False
    return view


def as_field(value, where: str) -> Field:
    """Normalizes a feature value: numpy array (strings as object arrays of bytes) or Ragged.

    Nested Python lists whose rows differ in length become a Ragged, read as TF's
    `tf.ragged.constant` reads them (every nested list level a ragged dimension; numpy
    arrays inside keep their trailing dimensions); rectangular lists stay a dense array.
    """
    if isinstance(value, Ragged):
        return Ragged(as_field(value.values, where), _read_only(value.row_lengths))
    if isinstance(value, (list, tuple)) and _is_ragged_nesting(value):
        return as_field(_ragged_from_lists(value, where), where)
    try:
        array = np.asarray(value)
    except ValueError:  # lists that are neither rectangular nor ragged rows
        return as_field(_ragged_from_lists(value, where), where)
    if array.dtype.kind in "SU":
        # One string representation everywhere: object arrays of bytes, as the
        # table readers produce and the decoder returns.
        array = _strings_as_bytes(array)
    elif array.dtype.kind == "O":
        array = _strings_as_bytes(array) if array.size else array
    elif array.dtype.kind not in "biuf":
        raise GraphTensorError(f"{where}: unsupported dtype {array.dtype}; "
                               f"use bool, integer, float or bytes")
    if array.ndim == 0:
        raise GraphTensorError(f"{where}: a feature needs the item dimension first, got a scalar")
    return _read_only(array)


def _is_ragged_nesting(rows: Sequence) -> bool:
    """Whether these rows are sequences of differing lengths (or hold such rows)."""
    if not rows or not all(isinstance(r, (list, tuple, np.ndarray)) for r in rows):
        return False
    if len({len(r) for r in rows}) > 1:
        return True
    inner = [item for r in rows for item in r]
    return isinstance(inner[0] if inner else None, (list, tuple)) and _is_ragged_nesting(inner)


def _ragged_from_lists(rows: Sequence, where: str) -> Ragged:
    """One Ragged level per nested list level, down to scalars or numpy arrays."""
    odd = [r for r in rows if not isinstance(r, (list, tuple, np.ndarray))]
    if odd:
        raise GraphTensorError(f"{where}: a ragged feature's rows must all be lists, got "
                               f"{type(odd[0]).__name__} {odd[0]!r}")
    lengths = np.fromiter((len(r) for r in rows), dtype=np.int64, count=len(rows))
    inner = [item for r in rows for item in r]
    if inner and all(isinstance(i, (list, tuple)) for i in inner):
        return Ragged(_ragged_from_lists(inner, where), lengths)
    if any(isinstance(i, (list, tuple)) for i in inner):
        raise GraphTensorError(f"{where}: a ragged feature mixes lists and scalars at one "
                               f"nesting level")
    if not inner:
        return Ragged(np.zeros(0, np.float32), lengths)  # tf.ragged.constant's default
    try:
        values = np.asarray(inner)
    except ValueError as e:  # arrays of differing shapes at the innermost level
        raise GraphTensorError(f"{where}: the innermost values differ in shape ({e})") from None
    return Ragged(values, lengths)


def _strings_as_bytes(array: np.ndarray) -> np.ndarray:
    out = np.empty(array.shape, dtype=object)
    flat_in, flat_out = array.reshape(-1), out.reshape(-1)
    for i, item in enumerate(flat_in):
        if isinstance(item, str):
            item = item.encode("utf-8")
        elif isinstance(item, np.bytes_):
            item = bytes(item)
        elif not isinstance(item, bytes):
            raise GraphTensorError(f"string feature holds {type(item).__name__} {item!r}, "
                                   f"expected bytes or str")
        flat_out[i] = item
    return out


def as_sizes(value, where: str) -> np.ndarray:
    sizes = np.asarray(value)
    if sizes.ndim != 1:
        raise GraphTensorError(f"{where}: sizes must be a vector (one entry per graph "
                               f"component), got shape {list(sizes.shape)}")
    if sizes.size and sizes.dtype.kind not in "iu":
        raise GraphTensorError(f"{where}: sizes must be integers, got dtype {sizes.dtype}")
    sizes = sizes.astype(np.int64, copy=False)
    if (sizes < 0).any():
        raise GraphTensorError(f"{where}: sizes must be >= 0, got {sizes.tolist()}")
    return _read_only(sizes)


def _as_indices(value, where: str) -> np.ndarray:
    indices = np.asarray(value)
    if indices.ndim != 1:
        raise GraphTensorError(f"{where}: indices must be a vector, got shape "
                               f"{list(indices.shape)}")
    if indices.size and indices.dtype.kind not in "iu":
        raise GraphTensorError(f"{where}: indices must be integers, got dtype {indices.dtype}")
    return _read_only(indices.astype(np.int64, copy=False))


def _as_features(features: Optional[Mapping], where: str) -> Features:
    result = {}
    for name, value in (features or {}).items():
        if not isinstance(name, str) or not name:
            raise GraphTensorError(f"{where}: feature names must be non-empty strings, got {name!r}")
        result[name] = as_field(value, f"{where} feature '{name}'")
    return types.MappingProxyType(result)


def trusted_features(features: Mapping[str, "Field | Deferred"]) -> Features:
    """Features a codec made (numeric arrays, strings as object arrays of bytes, Ragged):
    read-only views, without `as_field`'s per-value pass over strings. For decoders whose
    output is right by construction; anything else goes through `from_fields`. A
    `Deferred` feature is made when first read, then kept."""
    if any(isinstance(f, Deferred) for f in features.values()):
        return types.MappingProxyType(_DeferredFeatures(
            {name: f if isinstance(f, Deferred) else _trusted(f)
             for name, f in features.items()}))
    return types.MappingProxyType({name: _trusted(f) for name, f in features.items()})


def _trusted(field: Field) -> Field:
    if isinstance(field, Ragged):
        return Ragged(_trusted(field.values), _read_only(field.row_lengths))
    return _read_only(field)


class Deferred:
    """A feature `trusted_features` makes when it is first read (`make()`: a decoder's
    string values as bytes objects, which most readers of a batch never read)."""

    __slots__ = ("make",)

    def __init__(self, make: Callable[[], Field]):
        self.make = make


class _DeferredFeatures(Mapping):
    """Features some of which are Deferred: each made on first read, then kept (two
    threads reading it first may both make it; both get equal values)."""

    def __init__(self, fields: dict):
        self._fields = fields

    def __getitem__(self, name: str) -> Field:
        field = self._fields[name]
        if isinstance(field, Deferred):
            field = self._fields[name] = _trusted(field.make())
        return field

    def __iter__(self):
        return iter(self._fields)

    def __len__(self) -> int:
        return len(self._fields)

    def copy(self) -> dict:
        return dict(self.items())


def field_length(field: Field) -> int:
    """The number of items (the first dimension)."""
    return len(field)


def fields_equal(a: Field, b: Field) -> bool:
    """Same values, same structure, same dtype (NaN equals NaN)."""
    if isinstance(a, Ragged) != isinstance(b, Ragged):
        return False
    if isinstance(a, Ragged):
        return (np.array_equal(a.row_lengths, b.row_lengths)
                and fields_equal(a.values, b.values))
    return a.dtype == b.dtype and values_equal(a, b)


def _features_equal(a: Features, b: Features) -> bool:
    return a.keys() == b.keys() and all(fields_equal(a[k], b[k]) for k in a)


class _Piece:
    """Shared by the pieces that hold sizes and features."""

    sizes: np.ndarray
    features: Features

    @property
    def total_size(self) -> int:
        return int(self.sizes.sum())

    @property
    def num_components(self) -> int:
        return len(self.sizes)

    def __getitem__(self, feature_name: str) -> Field:
        return self.features[feature_name]


@dataclasses.dataclass(frozen=True, eq=False)
class Context(_Piece):
    sizes: np.ndarray
    features: Features

    @classmethod
    def from_fields(cls, *, features: Optional[Mapping] = None, sizes=None) -> "Context":
        """Context features have one item per component. Without `sizes` the
        component count comes from the features, or from the other pieces."""
        features = _as_features(features, "context")
        if sizes is None:
            if not features:
                return cls(None, features)  # resolved by GraphTensor.from_pieces
            sizes = np.ones(len(next(iter(features.values()))), dtype=np.int64)
        return cls(as_sizes(sizes, "context"), features)

    def __eq__(self, other) -> bool:
        return (isinstance(other, Context) and np.array_equal(self.sizes, other.sizes)
                and _features_equal(self.features, other.features))

    __hash__ = None


@dataclasses.dataclass(frozen=True, eq=False)
class NodeSet(_Piece):
    sizes: np.ndarray
    features: Features

    @classmethod
    def from_fields(cls, *, sizes, features: Optional[Mapping] = None) -> "NodeSet":
        return cls(as_sizes(sizes, "node set"), _as_features(features, "node set"))

    def __eq__(self, other) -> bool:
        return (isinstance(other, NodeSet) and np.array_equal(self.sizes, other.sizes)
                and _features_equal(self.features, other.features))

    __hash__ = None


@dataclasses.dataclass(frozen=True, eq=False)
class Adjacency:
    source_name: str
    source: np.ndarray
    target_name: str
    target: np.ndarray

    @classmethod
    def from_indices(cls, source: tuple, target: tuple) -> "Adjacency":
        """`source=(node_set_name, indices)`, `target=(node_set_name, indices)`."""
        (source_name, source_indices), (target_name, target_indices) = source, target
        return cls(source_name, _as_indices(source_indices, f"adjacency source '{source_name}'"),
                   target_name, _as_indices(target_indices, f"adjacency target '{target_name}'"))

    def node_set_name(self, tag: str) -> str:
        return {SOURCE: self.source_name, TARGET: self.target_name}[tag]

    def indices(self, tag: str) -> np.ndarray:
        return {SOURCE: self.source, TARGET: self.target}[tag]

    def __eq__(self, other) -> bool:
        return (isinstance(other, Adjacency) and self.source_name == other.source_name
                and self.target_name == other.target_name
                and np.array_equal(self.source, other.source)
                and np.array_equal(self.target, other.target))

    __hash__ = None


@dataclasses.dataclass(frozen=True, eq=False)
class EdgeSet(_Piece):
    sizes: np.ndarray
    adjacency: Adjacency
    features: Features

    @classmethod
    def from_fields(cls, *, sizes, adjacency: Adjacency,
                    features: Optional[Mapping] = None) -> "EdgeSet":
        if not isinstance(adjacency, Adjacency):
            raise GraphTensorError(f"edge set: adjacency must be an Adjacency, got "
                                   f"{type(adjacency).__name__}")
        return cls(as_sizes(sizes, "edge set"), adjacency, _as_features(features, "edge set"))

    def __eq__(self, other) -> bool:
        return (isinstance(other, EdgeSet) and np.array_equal(self.sizes, other.sizes)
                and self.adjacency == other.adjacency
                and _features_equal(self.features, other.features))

    __hash__ = None


@dataclasses.dataclass(frozen=True, eq=False)
class GraphTensor:
    context: Context
    node_sets: Mapping[str, NodeSet]
    edge_sets: Mapping[str, EdgeSet]

    @classmethod
    def from_pieces(cls, *, context: Optional[Context] = None,
                    node_sets: Optional[Mapping[str, NodeSet]] = None,
                    edge_sets: Optional[Mapping[str, EdgeSet]] = None,
                    validate: bool = True) -> "GraphTensor":
        node_sets = dict(node_sets or {})
        edge_sets = dict(edge_sets or {})
        for kind, pieces, piece_type in (("node set", node_sets, NodeSet),
                                         ("edge set", edge_sets, EdgeSet)):
            for name, piece in pieces.items():
                if not isinstance(piece, piece_type):
                    raise GraphTensorError(f"{kind} '{name}': expected a {piece_type.__name__}, "
                                           f"got {type(piece).__name__}")
        context = context if context is not None else Context.from_fields()
        if context.sizes is None:
            # A featureless context has one entry per component of the other pieces.
            any_piece = next(iter(list(node_sets.values()) + list(edge_sets.values())), None)
            count = any_piece.num_components if any_piece is not None else 1
            context = Context(as_sizes(np.ones(count, np.int64), "context"), context.features)
        graph = cls(context, types.MappingProxyType(node_sets),
                    types.MappingProxyType(edge_sets))
        if validate:
            graph.validate()
        return graph

    @property
    def num_components(self) -> int:
        return self.context.num_components

    def validate(self) -> "GraphTensor":
        """Raises GraphTensorError naming the first broken rule; returns self."""
        validate_graph(self)
        return self

    def replace_features(self, *, context: Optional[Mapping] = None,
                         node_sets: Optional[Mapping[str, Mapping]] = None,
                         edge_sets: Optional[Mapping[str, Mapping]] = None,
                         validate: bool = True) -> "GraphTensor":
        """A new graph whose named pieces get these features (all of them replaced)."""
        new_context = self.context if context is None else Context.from_fields(
            features=context, sizes=self.context.sizes)
        new_nodes = dict(self.node_sets)
        for name, features in (node_sets or {}).items():
            new_nodes[name] = NodeSet.from_fields(sizes=self.node_sets[name].sizes,
                                                  features=features)
        new_edges = dict(self.edge_sets)
        for name, features in (edge_sets or {}).items():
            old = self.edge_sets[name]
            new_edges[name] = EdgeSet.from_fields(sizes=old.sizes, adjacency=old.adjacency,
                                                  features=features)
        return GraphTensor.from_pieces(context=new_context, node_sets=new_nodes,
                                       edge_sets=new_edges, validate=validate)

    def __eq__(self, other) -> bool:
        return (isinstance(other, GraphTensor) and self.context == other.context
                and dict(self.node_sets) == dict(other.node_sets)
                and dict(self.edge_sets) == dict(other.edge_sets))

    __hash__ = None

    def __repr__(self) -> str:
        nodes = ", ".join(f"{n}: {s.sizes.tolist()}" for n, s in sorted(self.node_sets.items()))
        edges = ", ".join(f"{n}: {s.sizes.tolist()}" for n, s in sorted(self.edge_sets.items()))
        return (f"GraphTensor(components={self.num_components}, node_sets={{{nodes}}}, "
                f"edge_sets={{{edges}}})")
