"""The batched decoder: many tf.train.Example records into one merged batch at once.

    graph = parse_examples(schema, records)   # a GraphTensor, the records' components in turn
    decoder = BatchDecoder(schema)            # for readers: keeps its work between batches
    batch = decoder.decode(buffer, starts, lengths)          # an ExampleBatch (columns)

`parse_examples(schema, records)` is `merge_batch_to_components([parse_example(schema, r)
for r in records])`, value for value (TF-GNN's `parse_example` on a batch, then
`merge_batch_to_components`), without a GraphTensor per record. Records laid out alike
(what `sample` and TF-GNN's writer produce) are decoded a key at a time across the whole
batch: wire_batch.py finds every key's data in every record in one vectorized walk,
then all int64 lists of the batch are one varint run (unigraph.encoding.wire), all
float lists one copy, all strings one pass (`bytes_list_items`) into fixed-width arrays,
and the pieces are assembled from those columns with a few array operations per
feature. The per-record rules of `parse_example` (item counts against sizes, row
lengths against rows, one component count per record) are checked per record, in bulk;
validation runs once on the merged graph.

Anything else takes the exact path, record by record through `parse_example`: records
laid out otherwise (another key order, an encoding no writer of these records uses; the
reason is logged once per process, `sampler.graph_tensor` logger), and a batch with a
record that breaks a rule, so that the error names the record ("record 17: ...")
exactly as `parse_example` words it.
"""
from __future__ import annotations

import dataclasses
import logging
from typing import Optional, Sequence, Union

import numpy as np

from sampler.graph_tensor import keys as k
from sampler.graph_tensor import wire, wire_batch
from sampler.graph_tensor.batch_columns import Columns, Invalid, Unusual
from sampler.graph_tensor.codec import _restore_dtype, _unwrap, parse_example
from sampler.graph_tensor.example_batch import (BatchPiece, ExampleBatch, Strings,
                                                segment_sums)
from sampler.graph_tensor.ops import merge_batch_to_components
from sampler.graph_tensor.validation import validate_graph
from unigraph.columnar.ragged import Ragged
from unigraph.encoding import tfrecord
from unigraph.encoding.wire import padded
from unigraph.errors import GraphTensorError
from unigraph.protos import example_pb2
from unigraph.schema import NUMPY_DTYPES, dtype_name

log = logging.getLogger("sampler.graph_tensor")
_LOGGED: set[str] = set()   # reasons for the exact path already logged by this process


def _log_once(reason: str) -> None:
    if reason not in _LOGGED:
        _LOGGED.add(reason)
        log.warning("decoding records one at a time (several times slower): %s (logged "
                    "once per process)", reason)


@dataclasses.dataclass(frozen=True)
class _Feature:
    key: str
    kind: str                      # wire kind
    dtype: np.dtype
    shape: tuple[int, ...]         # per item, -1 ragged


@dataclasses.dataclass(frozen=True)
class _Piece:
    name: str
    size_key: Optional[str]        # None for the context
    features: dict[str, _Feature]
    source: Optional[tuple[str, str]] = None   # edge sets: (key, node set)
    target: Optional[tuple[str, str]] = None


class BatchDecoder:
    """Decodes batches of records of one schema (module docstring); keeps the records'
    layout from one batch to the next."""

    def __init__(self, schema, *, validate: bool = True, indices: bool = True):
        """`indices=False`: no edge's #source and #target are read (only `columns`)."""
        self.schema = _unwrap(schema)
        self.validate = validate
        self.indices = indices
        self.context = _Piece("context", None, self._features(
            k.context_key, self.schema.context.features, "context feature"))
        self.node_sets = [
            _Piece(name, k.node_key(name, k.SIZE_NAME), self._features(
                lambda f, s=name: k.node_key(s, f), piece.features,
                f"node set '{name}' feature"))
            for name, piece in sorted(self.schema.node_sets.items())]
        self.edge_sets = [
            _Piece(name, k.edge_key(name, k.SIZE_NAME), self._features(
                lambda f, s=name: k.edge_key(s, f), piece.features,
                f"edge set '{name}' feature"),
                (k.edge_key(name, k.SOURCE_NAME), piece.source),
                (k.edge_key(name, k.TARGET_NAME), piece.target))
            for name, piece in sorted(self.schema.edge_sets.items())]
        self.wanted: dict[str, str] = {}
        for piece in [self.context] + self.node_sets + self.edge_sets:
            ends = [piece.source and piece.source[0], piece.target and piece.target[0]]
            for key in filter(None, [piece.size_key] + (ends if indices else [])):
                self.wanted[key] = wire.INT64
            for feature in piece.features.values():
                self.wanted[feature.key] = feature.kind
                for dimension in k.ragged_dimensions(feature.shape):
                    self.wanted[k.ragged_key(feature.key, dimension)] = wire.INT64
        # The keys by kind (int64 lists first, then floats, then strings), as the walk
        # returns their spans.
        order = {wire.INT64: 0, wire.FLOAT: 1, wire.BYTES: 2}
        self.wanted = dict(sorted(self.wanted.items(), key=lambda item: order[item[1]]))
        self._walk: Optional[wire_batch.Walk] = None

    @staticmethod
    def _features(key_of, declared, where: str) -> dict[str, _Feature]:
        features = {}
        for name, feature in sorted(declared.items()):
            dtype = NUMPY_DTYPES.get(feature.dtype)
            if dtype is None:
                raise GraphTensorError(f"{where} '{name}': schema dtype "
                                       f"{dtype_name(feature.dtype)} has no tf.train.Feature "
                                       f"encoding")
            kind = (wire.INT64 if dtype.kind in "biu" else wire.FLOAT if dtype.kind == "f"
                    else wire.BYTES)
            features[name] = _Feature(key_of(name), kind, dtype,
                                      tuple(d.size for d in feature.shape.dim))
        return features

    # ---- decoding --------------------------------------------------------------------

    def decode(self, buffer: np.ndarray, starts: np.ndarray, lengths: np.ndarray,
               first_index: int = 0) -> ExampleBatch:
        """The records at buffer[starts[i]:+lengths[i]] (buffer padded as
        wire_batch.py says) as one batch; GraphTensorError names the first bad record
        ("record {first_index + i}: ...")."""
        if not self.indices:
            raise ValueError("BatchDecoder(indices=False) reads columns only")
        starts = np.asarray(starts, dtype=np.int64)
        lengths = np.asarray(lengths, dtype=np.int64)
        if not len(starts):
            return self._empty()
        try:
            batch = self._fast(buffer, starts, lengths)
        except Invalid:
            return self._exact(buffer, starts, lengths, first_index)
        except Unusual as unusual:
            _log_once(str(unusual))
            return self._exact(buffer, starts, lengths, first_index)
        return batch

    def columns(self, buffer: np.ndarray, starts: np.ndarray,
                lengths: np.ndarray) -> Optional["Columns"]:
        """Every key's values and per-record counts as the records hold them, none of
        parse_example's rules checked (sample-stats summarizes what is there); None when
        the records are not laid out alike or a list does not decode (then read them one
        by one). Never raises for input."""
        starts = np.asarray(starts, dtype=np.int64)
        lengths = np.asarray(lengths, dtype=np.int64)
        if not len(starts):
            return None
        try:
            return Columns(buffer, self._spans(buffer, starts, lengths), self.wanted,
                           len(starts))
        except Unusual as unusual:
            _log_once(str(unusual))
        except Invalid:
            pass
        return None

    def _spans(self, buffer, starts, lengths) -> wire_batch.Spans:
        """The wanted keys' spans, by the layout of the batch before if it fits, else by
        this batch's first record's. (Threads may share a decoder: each works on its own
        Walk; the one kept is the last made.)"""
        walk = self._walk
        spans = walk.spans(buffer, starts, lengths) if walk is not None else None
        if spans is None or not spans.alike.all():
            first = int(starts[0])
            layout = wire_batch.layout_of(buffer[first:first + int(lengths[0])].tobytes())
            if layout is None:
                raise Unusual("a record whose map entries are not each a key and a "
                              "Feature, or with a key twice")
            if walk is None or layout != walk.layout:
                walk = self._walk = wire_batch.Walk(layout, self.wanted)
                if walk.missing is not None:
                    raise Unusual(f"records without the key '{walk.missing}' (TF-GNN "
                                  f"reads it as empty)")
                spans = walk.spans(buffer, starts, lengths)
        if not spans.alike.all():
            raise Unusual(f"records laid out unlike the batch's first: {spans.reason}")
        return spans

    def _fast(self, buffer, starts, lengths) -> ExampleBatch:
        if not self.node_sets and not self.edge_sets:
            raise Unusual("a schema without node or edge sets (components counted from "
                           "the context)")
        spans = self._spans(buffer, starts, lengths)
        n = len(starts)
        columns = Columns(buffer, spans, self.wanted, n)
        first = min(self.node_sets + self.edge_sets, key=lambda p: p.size_key).size_key
        components = columns.counts(first)
        pieces = {}
        for piece in self.node_sets + self.edge_sets:
            sizes = columns.values(piece.size_key)
            if not np.array_equal(columns.counts(piece.size_key), components):
                raise Invalid
            pieces[piece.name] = sizes
        batch = ExampleBatch(components, None, {}, {})
        one = (components == 1).all()

        def per_record(sizes):
            return sizes if one else segment_sums(sizes, components)

        context_sizes = np.ones(int(components.sum()), dtype=np.int64)
        batch.context = BatchPiece(context_sizes, self._fields(columns, self.context,
                                                               components))
        node_items = {}
        for piece in self.node_sets:
            items = per_record(pieces[piece.name])
            node_items[piece.name] = items
            batch.node_sets[piece.name] = BatchPiece(
                pieces[piece.name], self._fields(columns, piece, items))
        for piece in self.edge_sets:
            items = per_record(pieces[piece.name])
            ends = {}
            for tag, (key, node_set) in (("source", piece.source), ("target", piece.target)):
                if not np.array_equal(columns.counts(key), items):
                    raise Invalid
                nodes = node_items.get(node_set)
                indices = columns.values(key)
                if nodes is not None:  # else validation names the unknown node set
                    before = np.cumsum(nodes) - nodes
                    indices = indices + np.repeat(before, items)
                ends[tag] = indices
            batch.edge_sets[piece.name] = BatchPiece(
                pieces[piece.name], self._fields(columns, piece, items), ends["source"],
                ends["target"], piece.source[1], piece.target[1])
        if self.validate:
            try:
                validate_graph(batch.skeleton())
            except GraphTensorError:
                raise Invalid from None
        return batch

    def _fields(self, columns: "Columns", piece: _Piece, items: np.ndarray) -> dict:
        return {name: self._field(columns, feature, items)
                for name, feature in piece.features.items()}

    @staticmethod
    def _field(columns: "Columns", feature: _Feature, items: np.ndarray):
        """One feature over the batch, its items per record checked as parse_example does."""
        ragged = k.ragged_dimensions(feature.shape)
        depth = ragged[-1] if ragged else 0
        rows, levels = items, []
        for dimension in range(1, depth + 1):
            size = feature.shape[dimension - 1]
            if size == -1:
                key = k.ragged_key(feature.key, dimension)
                lengths = columns.values(key)
                if not np.array_equal(columns.counts(key), rows) or (lengths < 0).any():
                    raise Invalid
                rows = segment_sums(lengths, rows)
            else:
                lengths = np.full(int(rows.sum()), size, dtype=np.int64)
                rows = rows * size
            levels.append(lengths)
        trailing = feature.shape[depth:]
        if not np.array_equal(columns.counts(feature.key),
                              rows * int(np.prod(trailing, dtype=np.int64))):
            raise Invalid
        shape = (int(rows.sum()),) + trailing
        flat = columns.values(feature.key)
        values = (flat.reshape(shape) if isinstance(flat, Strings)
                  else _restore_dtype(flat, feature.dtype).reshape(shape))
        for lengths in reversed(levels):
            values = Ragged(values, lengths)
        return values

    def _empty(self) -> ExampleBatch:
        """A batch of no record."""
        none = np.zeros(0, dtype=np.int64)

        def piece(p: _Piece) -> BatchPiece:
            return BatchPiece(none, {name: _empty_field(f) for name, f in p.features.items()})

        batch = ExampleBatch(none, piece(self.context),
                             {p.name: piece(p) for p in self.node_sets}, {})
        for p in self.edge_sets:
            batch.edge_sets[p.name] = dataclasses.replace(
                piece(p), source=none, target=none, source_name=p.source[1],
                target_name=p.target[1])
        return batch

    # ---- the exact path ----------------------------------------------------------------

    def _exact(self, buffer, starts, lengths, first_index: int) -> ExampleBatch:
        graphs = []
        for i, (start, length) in enumerate(zip(starts.tolist(), lengths.tolist())):
            record = buffer[start:start + length].tobytes()
            try:
                graphs.append(parse_example(self.schema, record, validate=self.validate))
            except GraphTensorError as e:
                raise GraphTensorError(f"record {first_index + i}: {e}") from None
        components = np.array([g.num_components for g in graphs], dtype=np.int64)
        try:
            merged = merge_batch_to_components(graphs, validate=False)
        except GraphTensorError as e:  # records that parse but cannot be merged
            raise GraphTensorError(f"records {first_index}-{first_index + len(graphs) - 1}: "
                                   f"{e}") from None
        return ExampleBatch.of_graph(merged, components)


def _empty_field(feature: _Feature):
    ragged = k.ragged_dimensions(feature.shape)
    depth = ragged[-1] if ragged else 0
    shape = (0,) + tuple(feature.shape[depth:])
    values = (Strings(np.zeros(shape, "S1"), np.zeros(shape, np.int64))
              if feature.kind == wire.BYTES else np.zeros(shape, feature.dtype))
    for _ in range(depth):
        values = Ragged(values, np.zeros(0, np.int64))
    return values


# ---- the public function ----------------------------------------------------------------

Records = Union[Sequence[Union[bytes, example_pb2.Example]], tfrecord.RecordChunk]


def parse_examples(schema, records: Records, *, validate: bool = True):
    """One GraphTensor holding every record's components in turn: what TF-GNN's
    `parse_example` on a batch followed by `merge_batch_to_components` gives, and
    `merge_batch_to_components([parse_example(schema, r) for r in records])`.

    `records`: serialized tf.train.Examples (bytes or messages), or a
    `unigraph.encoding.tfrecord.RecordChunk` (records straight from the framing, no copy).
    A bad record raises GraphTensorError naming its position ("record 3: ...")."""
    buffer, starts, lengths = record_buffer(records)
    return BatchDecoder(schema, validate=validate).decode(buffer, starts, lengths).graph()


def record_buffer(records: Records) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(padded buffer, starts, lengths) of records given as bytes, messages or a chunk."""
    if hasattr(records, "buffer") and hasattr(records, "starts"):
        return records.buffer, records.starts, records.lengths
    data = [r.SerializeToString() if isinstance(r, example_pb2.Example) else bytes(r)
            for r in records]
    lengths = np.fromiter(map(len, data), np.int64, len(data))
    starts = np.cumsum(lengths) - lengths
    return padded(b"".join(data)), starts, lengths
