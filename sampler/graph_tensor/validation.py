"""Checks that a GraphTensor is well formed; the first broken rule raises.

Every message is one line naming the piece and field, e.g.
  node set 'paper' feature 'feat': 3 items, but its sizes [2, 2] declare 4
The checks are vectorized, so validating a decoded subgraph costs microseconds
per piece rather than per item.
"""
from __future__ import annotations

from typing import Union

import numpy as np

from sampler.graph_tensor.readout_structure import GraphParts, check_readout_structure
from unigraph.errors import GraphTensorError
from unigraph.columnar.ragged import Ragged

Field = Union[np.ndarray, Ragged]  # a feature's values: dense, or ragged (model.py uses it)


def validate_graph(graph: GraphParts) -> None:
    """Raises GraphTensorError (one line, the module docstring) at the first rule the
    graph breaks: its components' counts, its context, each node and edge set's
    features against its sizes, edges' indices within their node sets, and the
    structured readout (readout_structure)."""
    _check_component_counts(graph)
    _check_context(graph)
    for name, node_set in sorted(graph.node_sets.items()):
        _check_features(f"node set '{name}'", node_set.features, node_set.total_size,
                        node_set.sizes)
    for name, edge_set in sorted(graph.edge_sets.items()):
        where = f"edge set '{name}'"
        _check_features(where, edge_set.features, edge_set.total_size, edge_set.sizes)
        _check_adjacency(graph, name)
    check_readout_structure(graph)


def _check_component_counts(graph: GraphParts) -> None:
    pieces = [(f"node set '{n}'", p) for n, p in sorted(graph.node_sets.items())]
    pieces += [(f"edge set '{n}'", p) for n, p in sorted(graph.edge_sets.items())]
    if pieces:
        first_name, first = pieces[0]
        for name, piece in pieces[1:]:
            if piece.num_components != first.num_components:
                raise GraphTensorError(
                    f"{name} sizes: {piece.num_components} graph components, but "
                    f"{first_name} has {first.num_components}")
        if graph.context.num_components != first.num_components:
            raise GraphTensorError(
                f"context: {graph.context.num_components} graph components (from its sizes or "
                f"features), but {first_name} has {first.num_components}")
    if (graph.context.sizes != 1).any():
        raise GraphTensorError(
            f"context sizes: every graph component has exactly one context item, got "
            f"{graph.context.sizes.tolist()}")


def _check_context(graph: GraphParts) -> None:
    for name, field in sorted(graph.context.features.items()):
        if len(field) != graph.num_components:
            raise GraphTensorError(
                f"context feature '{name}': {len(field)} items, but the graph has "
                f"{graph.num_components} components (one context item each)")
        _check_field_dtype(f"context feature '{name}'", field)


def _check_features(where: str, features, total: int, sizes: np.ndarray) -> None:
    for name, field in sorted(features.items()):
        if len(field) != total:
            raise GraphTensorError(
                f"{where} feature '{name}': {len(field)} items, but its sizes "
                f"{_short(sizes)} declare {total}")
        _check_field_dtype(f"{where} feature '{name}'", field)


def _check_field_dtype(where: str, field: Field) -> None:
    flat = field.flat_values if isinstance(field, Ragged) else field
    if flat.dtype.kind == "O":
        bad = next((v for v in flat.reshape(-1) if not isinstance(v, bytes)), None)
        if bad is not None:
            raise GraphTensorError(f"{where}: string values must be bytes, found "
                                   f"{type(bad).__name__} {bad!r}")


def _check_adjacency(graph: GraphParts, name: str) -> None:
    edge_set = graph.edge_sets[name]
    adjacency = edge_set.adjacency
    for tag, set_name, indices in (("source", adjacency.source_name, adjacency.source),
                                   ("target", adjacency.target_name, adjacency.target)):
        where = f"edge set '{name}' {tag}"
        if set_name not in graph.node_sets:
            known = ", ".join(sorted(graph.node_sets)) or "none"
            raise GraphTensorError(f"{where}: unknown node set '{set_name}' (node sets: {known})")
        if len(indices) != edge_set.total_size:
            raise GraphTensorError(
                f"{where}: {len(indices)} indices, but its sizes {_short(edge_set.sizes)} "
                f"declare {edge_set.total_size} edges")
        node_sizes = graph.node_sets[set_name].sizes
        node_total = int(node_sizes.sum())
        if len(edge_set.sizes) == 1:
            outside = (indices < 0) | (indices >= node_total)  # in range means inside it
        else:
            # An edge must stay inside its own graph component; merging and padding
            # rely on it, and a violation is the typical symptom of a batching bug.
            # Each edge's component's nodes are [low, high): two repeats, no search.
            node_splits = np.zeros(len(node_sizes) + 1, dtype=np.int64)
            np.cumsum(node_sizes, out=node_splits[1:])
            low = np.repeat(node_splits[:-1], edge_set.sizes)
            outside = (indices < low) | (indices >= low + np.repeat(node_sizes, edge_set.sizes))
        if not outside.any():
            continue
        out_of_range = np.flatnonzero((indices < 0) | (indices >= node_total))
        if out_of_range.size:
            i = int(out_of_range[0])
            raise GraphTensorError(
                f"{where}: edge {i} has index {int(indices[i])}, out of range for node set "
                f"'{set_name}' with {node_total} nodes")
        i = int(np.flatnonzero(outside)[0])
        index = int(indices[i])
        edge_component = int(np.searchsorted(np.cumsum(edge_set.sizes), i, side="right"))
        node_component = int(np.searchsorted(np.cumsum(node_sizes), index, side="right"))
        raise GraphTensorError(
            f"{where}: edge {i} of component {edge_component} points to node {index} of "
            f"component {node_component} of node set '{set_name}'")


def _short(values: np.ndarray, limit: int = 8) -> str:
    items = values[:limit].tolist()
    return str(items) if len(values) <= limit else str(items)[:-1] + ", ...]"
