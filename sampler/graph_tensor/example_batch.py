"""Many records decoded together: their graphs merged, as `parse_examples` builds them.

An `ExampleBatch` holds what `merge_batch_to_components` of the records' GraphTensors
holds (every record's components in order, edge indices moved past the nodes of the
records before), as plain columns, so that readers which never need a GraphTensor
(PyG's HeteroData, sample-stats, sample-check) skip building one:

  components           graph components of each record (1 for `sample`'s records)
  context, node_sets,  a BatchPiece each: `sizes` per component, `features` merged
  edge_sets            (numpy arrays or Ragged), edge sets `source`/`target` indices
                       into the batch's nodes
  string values        `Strings`: one fixed-width numpy array ('S') and each value's
                       exact length; Python bytes objects are made only when asked
                       (`objects()`, and `graph()` asks)

`graph()` is the merged GraphTensor, `select(a, b)` the batch of records a..b-1 (views,
edge indices moved back), `ExampleBatch.of_graphs` a batch from decoded GraphTensors
(the exact path's result), `concat` several batches as one.
"""
from __future__ import annotations

import dataclasses
import types
from typing import Mapping, Optional, Sequence, Union

import numpy as np

from sampler.graph_tensor.model import (Adjacency, Context, EdgeSet, GraphTensor, NodeSet,
                                        as_sizes, trusted_features)
from unigraph.columnar.ragged import Ragged
from unigraph.encoding.wire import windows


_KEEP_BYTES = np.array([(1 << (8 * k)) - 1 for k in range(9)], dtype=np.uint64)


class Strings:
    """String values without a Python object each, as long as their lengths are alike:
    `fixed`, an 'S' array shaped like the feature's values (numpy drops a value's
    trailing NUL bytes there), `lengths`, each value's exact byte length (same shape),
    and `exact`, the values that do end in NUL bytes, by flat position (so `objects()`
    is exact). Values of very uneven lengths (one long text among short ones) are kept
    as bytes objects instead, so that no fixed-width array is as wide as the longest
    times their count; `fixed` is then made when asked."""

    __slots__ = ("_fixed", "lengths", "exact", "_objects")

    def __init__(self, fixed: Optional[np.ndarray], lengths: np.ndarray,
                 exact: Optional[Mapping[int, bytes]] = None,
                 objects: Optional[np.ndarray] = None):
        self._fixed, self.lengths, self.exact = fixed, lengths, dict(exact or {})
        self._objects = objects

    def __len__(self) -> int:
        return len(self.lengths)

    @property
    def shape(self) -> tuple[int, ...]:
        return self.lengths.shape

    @property
    def fixed(self) -> np.ndarray:
        if self._fixed is None:
            items = self._objects.reshape(-1).tolist()
            self._fixed = (np.array(items, dtype="S") if items else np.zeros(0, "S1")
                           ).reshape(self._objects.shape)
        return self._fixed

    @property
    def as_objects(self) -> bool:
        """Whether the values are held as bytes objects (uneven lengths)."""
        return self._objects is not None

    @classmethod
    def from_spans(cls, buffer: np.ndarray, starts: np.ndarray,
                   lengths: np.ndarray) -> "Strings":
        """The values buffer[starts[i]:+lengths[i]] of a uint8 array, as a vector (the
        buffer is copied when its end is too near the last start for the widest value)."""
        n = len(starts)
        lengths = lengths.astype(np.int64)
        words = max(1, -(-int(lengths.max()) // 8)) if n else 1
        if n * words * 8 > _UNEVEN * (int(lengths.sum()) + 8 * n) + (1 << 20):
            view = memoryview(buffer)
            objects = np.empty(n, dtype=object)
            objects[:] = [bytes(view[s:s + k]) for s, k in zip(starts.tolist(),
                                                                lengths.tolist())]
            return cls(None, lengths, objects=objects)
        if n and int(starts.max()) + 8 * words + 8 > len(buffer):
            buffer = np.concatenate([buffer, np.zeros(8 * words + 8, dtype=np.uint8)])
        # Each value as `words` little-endian uint64s, the bytes past its end masked to
        # NUL: a gather and a few whole-array operations per 8 bytes, nothing per byte.
        at = windows(buffer)
        rows = np.empty((n, words), dtype=np.uint64)
        for j in range(words):  # written in place: no column copied twice
            kept = np.clip(lengths - 8 * j, 0, 8)
            np.bitwise_and(at[starts + 8 * j], _KEEP_BYTES[kept], out=rows[:, j])
        nul = np.flatnonzero((lengths > 0) & (buffer[np.maximum(starts + lengths - 1, 0)] == 0))
        exact = {int(i): buffer[starts[i]:starts[i] + lengths[i]].tobytes() for i in nul}
        return cls(rows.view(f"S{8 * words}").reshape(n), lengths, exact)

    @classmethod
    def from_objects(cls, values: np.ndarray) -> "Strings":
        """Bytes objects (an object array of any shape), kept as they are."""
        items = values.reshape(-1).tolist()
        lengths = np.fromiter(map(len, items), np.int64, len(items)).reshape(values.shape)
        return cls(None, lengths, objects=values)

    def reshape(self, shape: tuple[int, ...]) -> "Strings":
        return Strings(None if self._fixed is None else self._fixed.reshape(shape),
                       self.lengths.reshape(shape), self.exact,
                       None if self._objects is None else self._objects.reshape(shape))

    def objects(self) -> np.ndarray:
        """The values as an object array of bytes (the shape of `fixed`)."""
        if self._objects is not None:
            return self._objects
        out = self._fixed.astype(object)
        flat = out.reshape(-1)
        for i, value in self.exact.items():
            flat[i] = value
        return out

    def item(self, i: int) -> bytes:
        """The value at flat position i, exactly."""
        if self._objects is not None:
            return self._objects.reshape(-1)[i]
        return self.exact.get(i, bytes(self._fixed.reshape(-1)[i]))

    def slice(self, start: int, stop: int) -> "Strings":
        """Items start..stop-1 (along the first dimension)."""
        if self._objects is not None:
            return Strings(None, self.lengths[start:stop], objects=self._objects[start:stop])
        inner = int(np.prod(self._fixed.shape[1:], dtype=np.int64))
        low, high = start * inner, stop * inner
        exact = {i - low: v for i, v in self.exact.items() if low <= i < high}
        return Strings(self._fixed[start:stop], self.lengths[start:stop], exact)

    @classmethod
    def concat(cls, parts: Sequence["Strings"]) -> "Strings":
        lengths = np.concatenate([p.lengths for p in parts])
        if any(p.as_objects for p in parts):
            return cls(None, lengths, objects=np.concatenate([p.objects() for p in parts]))
        width = max(p.fixed.dtype.itemsize for p in parts)
        exact, at = {}, 0
        for part in parts:
            exact.update({i + at: v for i, v in part.exact.items()})
            at += part.fixed.size
        return cls(np.concatenate([p.fixed.astype(f"S{width}") for p in parts]), lengths,
                   exact)


_UNEVEN = 8  # fixed-width values may take this many times their bytes (plus 1 MB)


Field = Union[np.ndarray, Ragged, Strings]


@dataclasses.dataclass
class BatchPiece:
    """The context, a node set or an edge set of a batch."""

    sizes: np.ndarray                       # items per component
    features: dict[str, Field]              # merged over the batch
    source: Optional[np.ndarray] = None     # edge sets: indices into the batch's nodes
    target: Optional[np.ndarray] = None
    source_name: str = ""
    target_name: str = ""
    _offsets: Optional[np.ndarray] = dataclasses.field(default=None, repr=False,
                                                       compare=False)

    def offsets(self) -> np.ndarray:
        """Where each component's items start (and, last, their total); kept."""
        if self._offsets is None:
            self._offsets = _offsets(self.sizes)
        return self._offsets


@dataclasses.dataclass
class ExampleBatch:
    components: np.ndarray                  # graph components of each record
    context: BatchPiece
    node_sets: dict[str, BatchPiece]
    edge_sets: dict[str, BatchPiece]
    _first: Optional[np.ndarray] = dataclasses.field(default=None, repr=False, compare=False)

    @property
    def records(self) -> int:
        return len(self.components)

    def per_record(self, sizes: np.ndarray) -> np.ndarray:
        """Items of each record, from a piece's sizes per component."""
        if len(sizes) == self.records:
            return sizes  # one component per record, the usual case
        return segment_sums(sizes, self.components)

    def graph(self) -> GraphTensor:
        """The merged GraphTensor (strings as object arrays of bytes), not validated
        here: the decoder validated what it decoded."""
        context = Context(as_sizes(self.context.sizes, "context"),
                          trusted_features(_objects(self.context.features)))
        node_sets = {name: NodeSet(as_sizes(piece.sizes, "node set"),
                                   trusted_features(_objects(piece.features)))
                     for name, piece in self.node_sets.items()}
        edge_sets = {name: EdgeSet(as_sizes(piece.sizes, "edge set"),
                                   Adjacency.from_indices((piece.source_name, piece.source),
                                                          (piece.target_name, piece.target)),
                                   trusted_features(_objects(piece.features)))
                     for name, piece in self.edge_sets.items()}
        return GraphTensor(context, types.MappingProxyType(node_sets),
                           types.MappingProxyType(edge_sets))

    def skeleton(self) -> GraphTensor:
        """The graph without features (sizes and edges): what validation checks."""
        return GraphTensor.from_pieces(
            context=Context.from_fields(sizes=self.context.sizes),
            node_sets={n: NodeSet.from_fields(sizes=p.sizes) for n, p in self.node_sets.items()},
            edge_sets={n: EdgeSet.from_fields(sizes=p.sizes, adjacency=Adjacency.from_indices(
                (p.source_name, p.source), (p.target_name, p.target)))
                for n, p in self.edge_sets.items()}, validate=False)

    def select(self, start: int, stop: int) -> "ExampleBatch":
        """The records start..stop-1 as a batch of their own (views where possible)."""
        if self._first is None:
            self._first = component_offsets(self.components)
        first = self._first
        a, b = int(first[start]), int(first[stop])

        def piece(p: BatchPiece, nodes: Optional[dict] = None) -> BatchPiece:
            offsets = p.offsets()
            lo, hi = int(offsets[a]), int(offsets[b])
            features = {name: slice_field(f, lo, hi) for name, f in p.features.items()}
            cut = BatchPiece(p.sizes[a:b], features, source_name=p.source_name,
                             target_name=p.target_name)
            if p.source is not None:
                cut.source = p.source[lo:hi] - nodes[p.source_name]
                cut.target = p.target[lo:hi] - nodes[p.target_name]
            return cut

        nodes = {name: int(p.offsets()[a]) for name, p in self.node_sets.items()}
        return ExampleBatch(self.components[start:stop], piece(self.context),
                            {n: piece(p) for n, p in self.node_sets.items()},
                            {n: piece(p, nodes) for n, p in self.edge_sets.items()})

    @classmethod
    def of_graph(cls, graph: GraphTensor, components: np.ndarray) -> "ExampleBatch":
        """A merged GraphTensor whose records had `components` components each."""
        def features(piece) -> dict:
            return {name: _strings(f) for name, f in piece.features.items()}

        return cls(np.asarray(components, np.int64),
                   BatchPiece(np.array(graph.context.sizes), features(graph.context)),
                   {name: BatchPiece(np.array(p.sizes), features(p))
                    for name, p in graph.node_sets.items()},
                   {name: BatchPiece(np.array(p.sizes), features(p),
                                     np.array(p.adjacency.source), np.array(p.adjacency.target),
                                     p.adjacency.source_name, p.adjacency.target_name)
                    for name, p in graph.edge_sets.items()})

    @classmethod
    def concat(cls, batches: Sequence["ExampleBatch"]) -> "ExampleBatch":
        """Batches one after the other, as one (edge indices moved past the nodes before)."""
        if len(batches) == 1:
            return batches[0]
        first = batches[0]
        shift = {name: np.cumsum([0] + [int(b.node_sets[name].sizes.sum()) for b in batches])
                 for name in first.node_sets}

        def piece(name: Optional[str], pieces: list[BatchPiece]) -> BatchPiece:
            p0 = pieces[0]
            joined = BatchPiece(np.concatenate([p.sizes for p in pieces]),
                                {f: concat_fields([p.features[f] for p in pieces])
                                 for f in p0.features},
                                source_name=p0.source_name, target_name=p0.target_name)
            if p0.source is not None:
                joined.source = np.concatenate([p.source + shift[p0.source_name][i]
                                                for i, p in enumerate(pieces)])
                joined.target = np.concatenate([p.target + shift[p0.target_name][i]
                                                for i, p in enumerate(pieces)])
            return joined

        return cls(np.concatenate([b.components for b in batches]),
                   piece(None, [b.context for b in batches]),
                   {n: piece(n, [b.node_sets[n] for b in batches]) for n in first.node_sets},
                   {n: piece(n, [b.edge_sets[n] for b in batches]) for n in first.edge_sets})


def _offsets(sizes: np.ndarray) -> np.ndarray:
    offsets = np.zeros(len(sizes) + 1, dtype=np.int64)
    np.cumsum(sizes, out=offsets[1:])
    return offsets


def component_offsets(components: np.ndarray) -> np.ndarray:
    """Where each record's components start (and, last, their total)."""
    return _offsets(components)


def segment_sums(values: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Sums of consecutive runs of `values`, run i being `counts[i]` long."""
    running = np.zeros(len(values) + 1, dtype=np.int64)
    np.cumsum(values, out=running[1:])
    ends = _offsets(counts)
    return running[ends[1:]] - running[ends[:-1]]


def slice_field(field: Field, start: int, stop: int) -> Field:
    """Items start..stop-1 of a feature."""
    if isinstance(field, Ragged):
        splits = field.row_splits
        return Ragged(slice_field(field.values, int(splits[start]), int(splits[stop])),
                      field.row_lengths[start:stop])
    if isinstance(field, Strings):
        return field.slice(start, stop)
    return field[start:stop]


def concat_fields(parts: list[Field]) -> Field:
    if isinstance(parts[0], Ragged):
        return Ragged(concat_fields([p.values for p in parts]),
                      np.concatenate([p.row_lengths for p in parts]))
    if isinstance(parts[0], Strings):
        return Strings.concat(parts)
    return np.concatenate(parts)


def flat_values(field: Field):
    """The innermost values of a feature (an array, or Strings)."""
    while isinstance(field, Ragged):
        field = field.values
    return field


def _object_field(field: Field):
    if isinstance(field, Ragged):
        return Ragged(_object_field(field.values), field.row_lengths)
    return field.objects() if isinstance(field, Strings) else field


def _objects(features: dict) -> dict:
    return {name: _object_field(field) for name, field in features.items()}


def _strings(field):
    if isinstance(field, Ragged):
        return Ragged(_strings(field.values), field.row_lengths)
    return Strings.from_objects(field) if field.dtype.kind == "O" else field
