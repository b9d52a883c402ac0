"""The structured readout: which nodes a model reads its predictions from.

The rules (names, checks) are in readout_structure.py. Here: `add_readout` builds
a readout edge set (the sampler writes one `_readout` node per component and
`_readout/seed` with the edge seed -> readout node), and `readout` reads a
feature out through one.
"""
from __future__ import annotations

import numpy as np

from sampler.graph_tensor.model import Adjacency, EdgeSet, Field, GraphTensor, NodeSet
from sampler.graph_tensor.readout_structure import (READOUT_NODE_SET, READOUT_PREFIX,
                                                    readout_edge_sets, readout_keys)
from unigraph.columnar import ragged
from unigraph.errors import GraphTensorError

def add_readout(graph: GraphTensor, key: str, source_set: str,
                source_indices=None, *, validate: bool = True) -> GraphTensor:
    """Adds edge set `_readout/<key>` from `source_set` to `_readout`.

    `source_indices` (indices into `source_set`, one per `_readout` node) default
    to the first node of `source_set` in every component: the sampler's seed.
    Creates `_readout` with one node per component if the graph has none.
    """
    if not key or "/" in key:
        raise GraphTensorError(f"readout key {key!r}: use a non-empty name without '/'")
    name = READOUT_PREFIX + key
    if name in graph.edge_sets:
        raise GraphTensorError(f"edge set '{name}' already exists")
    if source_set not in graph.node_sets:
        known = ", ".join(sorted(graph.node_sets)) or "none"
        raise GraphTensorError(f"readout key '{key}': unknown source node set '{source_set}' "
                               f"(node sets: {known})")
    node_sets = dict(graph.node_sets)
    if READOUT_NODE_SET not in node_sets:
        node_sets[READOUT_NODE_SET] = NodeSet.from_fields(
            sizes=np.ones(graph.num_components, np.int64))
    readout_sizes = node_sets[READOUT_NODE_SET].sizes
    if source_indices is None:
        source_sizes = graph.node_sets[source_set].sizes
        if not np.array_equal(readout_sizes, np.ones_like(readout_sizes)):
            raise GraphTensorError(f"readout key '{key}': give source_indices, the default "
                                   f"(first node per component) needs one readout node each")
        empty = np.flatnonzero(source_sizes == 0)
        if empty.size:
            raise GraphTensorError(f"readout key '{key}': node set '{source_set}' has no nodes "
                                   f"in component {int(empty[0])} to read out")
        source_indices = np.concatenate([[0], np.cumsum(source_sizes)[:-1]])
    source_indices = np.asarray(source_indices, dtype=np.int64)
    if len(source_indices) != int(readout_sizes.sum()):
        raise GraphTensorError(
            f"readout key '{key}': {len(source_indices)} source indices for "
            f"{int(readout_sizes.sum())} '{READOUT_NODE_SET}' nodes")
    edge_sets = dict(graph.edge_sets)
    edge_sets[name] = EdgeSet.from_fields(
        sizes=readout_sizes,
        adjacency=Adjacency.from_indices(
            source=(source_set, source_indices),
            target=(READOUT_NODE_SET, np.arange(len(source_indices), dtype=np.int64))))
    return GraphTensor.from_pieces(context=graph.context, node_sets=node_sets,
                                   edge_sets=edge_sets, validate=validate)


def readout(graph: GraphTensor, key: str, feature_name: str) -> Field:
    """The feature of the nodes read out by `key`, one item per `_readout` node."""
    names = readout_edge_sets(graph, key)
    if not names:
        raise GraphTensorError(f"readout key '{key}': no edge set '{READOUT_PREFIX}{key}' (readout "
                               f"keys: {', '.join(readout_keys(graph)) or 'none'})")
    parts, targets = [], []
    for name in names:
        adjacency = graph.edge_sets[name].adjacency
        source = graph.node_sets[adjacency.source_name]
        if feature_name not in source.features:
            raise GraphTensorError(f"readout key '{key}': node set '{adjacency.source_name}' "
                                   f"has no feature '{feature_name}'")
        parts.append(ragged.take(source.features[feature_name], adjacency.source))
        targets.append(adjacency.target)
    if len(parts) == 1:
        return parts[0]  # targets are 0..n-1 in a valid graph
    _check_same_kind([p for p in parts], key, feature_name)
    order = np.argsort(np.concatenate(targets), kind="stable")
    return ragged.take(ragged.concat(parts), order)


def _check_same_kind(parts: list, key: str, feature_name: str) -> None:
    first = parts[0]
    for part in parts[1:]:
        same = (isinstance(part, ragged.Ragged) == isinstance(first, ragged.Ragged)
                and part.dtype == first.dtype
                and (isinstance(part, ragged.Ragged) or part.shape[1:] == first.shape[1:]))
        if not same:
            raise GraphTensorError(f"readout key '{key}': feature '{feature_name}' differs in "
                                   f"dtype or shape between its source node sets")
