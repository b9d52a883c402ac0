"""Many records decoded together: their graphs merged, as `parse_examples` builds them.

An `ExampleBatch` holds what `merge_batch_to_components` of the records' GraphTensors
holds (every record's components in order, edge indices moved past the nodes of the
records before), as plain columns, so that readers which never need a GraphTensor
(PyG's HeteroData, sample-stats, sample-check) skip building one:

  components           graph components of each record (1 for `sample`'s records)
  context, node_sets,  a BatchPiece each: `sizes` per component, `features` merged
  edge_sets            (numpy arrays or Ragged), edge sets `source`/`target` indices
                       into the batch's nodes
  string values        `Strings` (strings.py): where the values lie in the decoded
                       bytes, and each one's length; a fixed-width numpy array ('S') or
                       Python bytes objects are made only when asked (`fixed`,
                       `objects()`; `graph()` asks when a feature is first read)

`graph()` is the merged GraphTensor, `select(a, b)` the batch of records a..b-1 (views,
edge indices moved back), `ExampleBatch.of_graphs` a batch from decoded GraphTensors
(the exact path's result), `concat` several batches as one.
"""
from __future__ import annotations

import dataclasses
import functools
import types
from typing import Optional, Sequence, Union

import numpy as np

from sampler.graph_tensor.model import (Adjacency, Context, Deferred, EdgeSet, GraphTensor,
                                        NodeSet, as_sizes, trusted_features)
from sampler.graph_tensor.strings import Strings
from unigraph.columnar.ragged import Ragged


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
        """The merged GraphTensor (strings as object arrays of bytes, made when a
        string feature is first read), not validated here: the decoder validated what it
        decoded."""
        context = Context(as_sizes(self.context.sizes, "context"),
                          trusted_features(_deferred_objects(self.context.features)))
        node_sets = {name: NodeSet(as_sizes(piece.sizes, "node set"),
                                   trusted_features(_deferred_objects(piece.features)))
                     for name, piece in self.node_sets.items()}
        edge_sets = {name: EdgeSet(as_sizes(piece.sizes, "edge set"),
                                   Adjacency.from_indices((piece.source_name, piece.source),
                                                          (piece.target_name, piece.target)),
                                   trusted_features(_deferred_objects(piece.features)))
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
            if p.source is not None:  # the two rows of one array (PyG's edge_index)
                pair = np.empty((2, hi - lo), np.result_type(p.source, p.target))
                np.subtract(p.source[lo:hi], nodes[p.source_name], out=pair[0])
                np.subtract(p.target[lo:hi], nodes[p.target_name], out=pair[1])
                cut.source, cut.target = pair
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


def _deferred_objects(features: dict) -> dict:
    """The features, those holding Strings made bytes objects when first read."""
    return {name: Deferred(functools.partial(_object_field, field))
            if isinstance(flat_values(field), Strings) else field
            for name, field in features.items()}


def _strings(field):
    if isinstance(field, Ragged):
        return Ragged(_strings(field.values), field.row_lengths)
    return Strings.from_objects(field) if field.dtype.kind == "O" else field
