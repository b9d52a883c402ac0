"""Padding a batch to fixed total sizes, for models that need static shapes.

Like TF-GNN's `pad_to_total_sizes`: padding goes into extra graph components
appended at the end. The first padding component holds all padding nodes and
edges; padding edges connect padding nodes only (the first padding node of
their endpoint sets), so real nodes never see them, except readout edge sets
`_readout/<key>`, whose padding edges reach the padding `_readout` nodes one to
one so the readout structure stays valid. Features pad with zeros (b"" for
strings, empty rows for ragged features).

The rule is written once, in `pad_pieces`, over a few array operations
(PaddingOps): `pad_to_total_sizes` runs it with numpy on a GraphTensor of the
core, and sampler.training runs it with TensorFlow on the flat tensors of a
tf.data batch (training/tf_padding.py).
"""
from __future__ import annotations

import dataclasses
from typing import Any, Mapping, Protocol

import numpy as np

from sampler.graph_tensor.model import Adjacency, Context, EdgeSet, GraphTensor, NodeSet
from sampler.graph_tensor.readout_structure import READOUT_NODE_SET, readout_key
from unigraph.columnar import ragged
from unigraph.errors import GraphTensorError
from unigraph.columnar.ragged import Ragged

Array = Any  # a numpy array (or Ragged), or a tf.Tensor: whatever the PaddingOps take


@dataclasses.dataclass(frozen=True)
class SizeConstraints:
    """Totals a padded graph must have (TF-GNN's SizeConstraints)."""

    total_num_components: int
    total_num_nodes: Mapping[str, int]
    total_num_edges: Mapping[str, int]


@dataclasses.dataclass
class NodePiece:
    sizes: Array                     # [components]
    features: dict[str, Array]       # [nodes, ...] each


@dataclasses.dataclass
class EdgePiece:
    sizes: Array                     # [components]
    source_set: str
    target_set: str
    source: Array                    # [edges] indices into the source set
    target: Array                    # [edges]
    features: dict[str, Array]


class PaddingOps(Protocol):
    """The array operations the padding rule needs."""

    def total(self, sizes: Array) -> Array:
        """The sum of a sizes vector."""

    def room(self, total: int, actual: Array, what: str) -> Array:
        """total - actual, failing (naming `what`) if negative."""

    def pad_sizes(self, sizes: Array, extra: Array, padding_components: Array,
                  total_components: int) -> Array:
        """sizes + [extra, 0, 0, ...] up to total_components entries."""

    def pad_rows(self, values: Array, extra: Array, total: int) -> Array:
        """values with `extra` zero rows appended (total rows in all)."""

    def pad_indices(self, indices: Array, first: Array, extra: Array, one_to_one: bool,
                    total: int) -> Array:
        """indices + `extra` padding indices: all `first`, or first, first + 1, ..."""


def pad_pieces(node_sets: Mapping[str, NodePiece], edge_sets: Mapping[str, EdgePiece],
               real_components: Array, constraints: SizeConstraints, ops: PaddingOps
               ) -> tuple[dict[str, NodePiece], dict[str, EdgePiece], Array]:
    """(padded node sets, padded edge sets, number of padding components)."""
    components = constraints.total_num_components
    padding_components = components - real_components
    real_nodes, padded_nodes = {}, {}
    for name, piece in node_sets.items():
        total = _total(constraints.total_num_nodes, "node set", name)
        real_nodes[name] = ops.total(piece.sizes)
        extra = ops.room(total, real_nodes[name], f"node set '{name}'")
        padded_nodes[name] = NodePiece(
            ops.pad_sizes(piece.sizes, extra, padding_components, components),
            {k: ops.pad_rows(v, extra, total) for k, v in piece.features.items()})
    padded_edges = {}
    for name, piece in edge_sets.items():
        total = _total(constraints.total_num_edges, "edge set", name)
        extra = ops.room(total, ops.total(piece.sizes), f"edge set '{name}'")
        # Padding edges join the first padding node of each end; a readout edge set's
        # reach the padding `_readout` nodes one to one.
        one_to_one = readout_key(name) is not None and piece.target_set == READOUT_NODE_SET
        padded_edges[name] = EdgePiece(
            ops.pad_sizes(piece.sizes, extra, padding_components, components),
            piece.source_set, piece.target_set,
            ops.pad_indices(piece.source, real_nodes[piece.source_set], extra, False, total),
            ops.pad_indices(piece.target, real_nodes[piece.target_set], extra, one_to_one,
                            total),
            {k: ops.pad_rows(v, extra, total) for k, v in piece.features.items()})
    return padded_nodes, padded_edges, padding_components


def _total(totals: Mapping[str, int], kind: str, name: str) -> int:
    if name not in totals:
        raise GraphTensorError(f"pad_to_total_sizes: no total size for {kind} '{name}'")
    return int(totals[name])


class NumpyPadding:
    """PaddingOps on numpy arrays and Ragged values; problems raise GraphTensorError."""

    def total(self, sizes):
        return int(np.sum(sizes))

    def room(self, total, actual, what):
        if actual > total:
            raise GraphTensorError(f"pad_to_total_sizes: {what} has {actual} items, more "
                                   f"than its total size {total}")
        return total - actual

    def pad_sizes(self, sizes, extra, padding_components, total_components):
        tail = np.zeros(padding_components, dtype=np.int64)
        if padding_components:
            tail[0] = extra
        return np.concatenate([sizes, tail])

    def pad_rows(self, values, extra, total):
        if isinstance(values, Ragged):
            inner = values.values
            empty_inner = inner[:0] if not isinstance(inner, Ragged) else ragged.take(inner, [])
            return ragged.concat([values, Ragged(empty_inner, np.zeros(extra, dtype=np.int64))])
        if values.dtype.kind == "O":
            filler = np.empty((extra,) + values.shape[1:], dtype=object)
            filler.fill(b"")
        else:
            filler = np.zeros((extra,) + values.shape[1:], dtype=values.dtype)
        return np.concatenate([values, filler])

    def pad_indices(self, indices, first, extra, one_to_one, total):
        padding = (first + np.arange(extra, dtype=np.int64) if one_to_one
                   else np.full(extra, first, dtype=np.int64))
        return np.concatenate([indices, padding])


def pad_to_total_sizes(graph: GraphTensor, constraints: SizeConstraints, *,
                       validate: bool = True) -> tuple[GraphTensor, np.ndarray]:
    """(padded graph, bool mask of real components)."""
    ops = NumpyPadding()
    real_components = graph.num_components
    node_sets = {n: NodePiece(p.sizes, dict(p.features)) for n, p in graph.node_sets.items()}
    edge_sets = {n: EdgePiece(p.sizes, p.adjacency.source_name, p.adjacency.target_name,
                              p.adjacency.source, p.adjacency.target, dict(p.features))
                 for n, p in graph.edge_sets.items()}
    _check_room(graph, constraints, ops)
    nodes, edges, padding_components = pad_pieces(node_sets, edge_sets, real_components,
                                                  constraints, ops)
    context = Context.from_fields(
        features={n: ops.pad_rows(f, padding_components, constraints.total_num_components)
                  for n, f in graph.context.features.items()},
        sizes=np.ones(constraints.total_num_components, dtype=np.int64))
    padded = GraphTensor.from_pieces(
        context=context,
        node_sets={n: NodeSet.from_fields(sizes=p.sizes, features=p.features)
                   for n, p in nodes.items()},
        edge_sets={n: EdgeSet.from_fields(
            sizes=p.sizes, features=p.features,
            adjacency=Adjacency.from_indices(source=(p.source_set, p.source),
                                             target=(p.target_set, p.target)))
                   for n, p in edges.items()},
        validate=validate)
    mask = np.arange(constraints.total_num_components) < real_components
    return padded, mask


def _check_room(graph: GraphTensor, constraints: SizeConstraints, ops: NumpyPadding) -> None:
    """Checks that need the whole graph at once: a padding component exists when padding
    is needed, and every set that receives padding edges has room for a padding node."""
    padding = {}
    for kind, pieces, totals in (("node set", graph.node_sets, constraints.total_num_nodes),
                                 ("edge set", graph.edge_sets, constraints.total_num_edges)):
        for name, piece in pieces.items():
            padding[name] = ops.room(_total(totals, kind, name), piece.total_size,
                                     f"{kind} '{name}'")
    padding_components = constraints.total_num_components - graph.num_components
    if padding_components < 0 or (padding_components == 0 and any(padding.values())):
        raise GraphTensorError(
            f"pad_to_total_sizes: total_num_components {constraints.total_num_components} "
            f"leaves no padding component for a graph of {graph.num_components} components")
    for name, edge_set in sorted(graph.edge_sets.items()):
        for end in (edge_set.adjacency.source_name, edge_set.adjacency.target_name):
            if padding[name] and not padding[end]:
                raise GraphTensorError(
                    f"pad_to_total_sizes: edge set '{name}' needs {padding[name]} padding "
                    f"edges but node set '{end}' has no room for a padding node "
                    f"(total_num_nodes {constraints.total_num_nodes[end]})")


def tight_size_constraints(graphs, batch_size: int) -> SizeConstraints:
    """The smallest constraints that fit any `batch_size` of these graphs plus padding:
    batch_size times the largest graph, one more node per node set (and one more
    edge per readout edge set, for the padding `_readout` node), one more component."""
    graphs = list(graphs)
    if not graphs:
        raise GraphTensorError("tight_size_constraints: no graphs")
    first = graphs[0]
    nodes = {n: batch_size * max(g.node_sets[n].total_size for g in graphs) + 1
             for n in first.node_sets}
    # Readout edge sets get one padding edge per padding `_readout` node.
    edges = {n: batch_size * max(g.edge_sets[n].total_size for g in graphs)
             + (1 if readout_key(n) is not None else 0)
             for n in first.edge_sets}
    components = batch_size * max(g.num_components for g in graphs) + 1
    return SizeConstraints(components, nodes, edges)
