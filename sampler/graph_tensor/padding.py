"""Padding a batch to fixed total sizes, for models that need static shapes.

Like TF-GNN's `pad_to_total_sizes`: padding goes into extra graph components
appended at the end. The first padding component holds all padding nodes and
edges; padding edges connect padding nodes only (the first padding node of
their endpoint sets), so real nodes never see them, except readout edge sets
`_readout/<key>`, whose padding edges reach the padding `_readout` nodes one to
one so the readout structure stays valid. Features pad with zeros (b"" for
strings, empty rows for ragged features). The returned mask is True for every
real component; broadcast it from CONTEXT to get per-node or per-edge masks.
"""
from __future__ import annotations

import dataclasses
from typing import Mapping

import numpy as np

from sampler.graph_tensor.model import (Adjacency, Context, EdgeSet, Field, GraphTensor,
                                        NodeSet)
from sampler.graph_tensor.structured_readout import READOUT_NODE_SET, readout_key
from unigraph import ragged
from unigraph.errors import GraphTensorError
from unigraph.ragged import Ragged


@dataclasses.dataclass(frozen=True)
class SizeConstraints:
    """Totals a padded graph must have (TF-GNN's SizeConstraints)."""

    total_num_components: int
    total_num_nodes: Mapping[str, int]
    total_num_edges: Mapping[str, int]


def pad_to_total_sizes(graph: GraphTensor, constraints: SizeConstraints, *,
                       validate: bool = True) -> tuple[GraphTensor, np.ndarray]:
    """(padded graph, bool mask of real components)."""
    real_components = graph.num_components
    padding_components = constraints.total_num_components - real_components
    node_padding = {name: _padding_count("node set", name, piece.total_size,
                                         constraints.total_num_nodes)
                    for name, piece in graph.node_sets.items()}
    edge_padding = {name: _padding_count("edge set", name, piece.total_size,
                                         constraints.total_num_edges)
                    for name, piece in graph.edge_sets.items()}
    needs_padding = any(node_padding.values()) or any(edge_padding.values())
    if padding_components < 0 or (padding_components == 0 and needs_padding):
        raise GraphTensorError(
            f"pad_to_total_sizes: total_num_components {constraints.total_num_components} "
            f"leaves no padding component for a graph of {real_components} components")
    for name, edge_set in sorted(graph.edge_sets.items()):
        for end in (edge_set.adjacency.source_name, edge_set.adjacency.target_name):
            if edge_padding[name] and not node_padding[end]:
                raise GraphTensorError(
                    f"pad_to_total_sizes: edge set '{name}' needs {edge_padding[name]} padding "
                    f"edges but node set '{end}' has no room for a padding node "
                    f"(total_num_nodes {constraints.total_num_nodes[end]})")

    def padded_sizes(sizes: np.ndarray, extra: int) -> np.ndarray:
        tail = np.zeros(padding_components, dtype=np.int64)
        if padding_components:
            tail[0] = extra
        return np.concatenate([sizes, tail])

    context = Context.from_fields(
        features={n: _pad_field(f, padding_components) for n, f in graph.context.features.items()},
        sizes=np.ones(constraints.total_num_components, dtype=np.int64))
    node_sets = {
        name: NodeSet.from_fields(
            sizes=padded_sizes(piece.sizes, node_padding[name]),
            features={n: _pad_field(f, node_padding[name]) for n, f in piece.features.items()})
        for name, piece in graph.node_sets.items()}
    edge_sets = {}
    for name, piece in graph.edge_sets.items():
        extra, adjacency = edge_padding[name], piece.adjacency
        first_padding_source = graph.node_sets[adjacency.source_name].total_size
        first_padding_target = graph.node_sets[adjacency.target_name].total_size
        pad_source = np.full(extra, first_padding_source, dtype=np.int64)
        if readout_key(name) is not None and adjacency.target_name == READOUT_NODE_SET:
            pad_target = first_padding_target + np.arange(extra, dtype=np.int64)
        else:
            pad_target = np.full(extra, first_padding_target, dtype=np.int64)
        edge_sets[name] = EdgeSet.from_fields(
            sizes=padded_sizes(piece.sizes, extra),
            adjacency=Adjacency.from_indices(
                source=(adjacency.source_name, np.concatenate([adjacency.source, pad_source])),
                target=(adjacency.target_name, np.concatenate([adjacency.target, pad_target]))),
            features={n: _pad_field(f, extra) for n, f in piece.features.items()})
    padded = GraphTensor.from_pieces(context=context, node_sets=node_sets, edge_sets=edge_sets,
                                     validate=validate)
    mask = np.arange(constraints.total_num_components) < real_components
    return padded, mask


def _padding_count(kind: str, name: str, actual: int, totals: Mapping[str, int]) -> int:
    if name not in totals:
        raise GraphTensorError(f"pad_to_total_sizes: no total size for {kind} '{name}'")
    extra = int(totals[name]) - actual
    if extra < 0:
        raise GraphTensorError(f"pad_to_total_sizes: {kind} '{name}' has {actual} items, more "
                               f"than its total size {int(totals[name])}")
    return extra


def _pad_field(field: Field, count: int) -> Field:
    if isinstance(field, Ragged):
        inner = field.values
        empty_inner = inner[:0] if not isinstance(inner, Ragged) else ragged.take(inner, [])
        return ragged.concat([field, Ragged(empty_inner, np.zeros(count, dtype=np.int64))])
    if field.dtype.kind == "O":
        filler = np.empty((count,) + field.shape[1:], dtype=object)
        filler.fill(b"")
    else:
        filler = np.zeros((count,) + field.shape[1:], dtype=field.dtype)
    return np.concatenate([field, filler])


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
