"""The structured readout: which nodes a model reads its predictions from.

TF-GNN's convention, which the sampler's output follows: an auxiliary node set
`_readout` and, per readout key, edge sets `_readout/<key>` (or several,
`_readout/<key>/<suffix>`, one per source node set) whose edges go from the
nodes to read to the `_readout` nodes. Within each edge set the targets are
ascending, and together the edge sets of one key reach every `_readout` node
exactly once, so readout results line up with the `_readout` nodes.

The sampler writes one `_readout` node per component and `_readout/seed` with
the edge seed -> readout node; `add_readout` builds exactly that.
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from sampler.graph_tensor.model import EdgeSet, Field, GraphTensor, NodeSet, Adjacency
from unigraph.errors import GraphTensorError
from unigraph import ragged

READOUT_NODE_SET = "_readout"
_PREFIX = READOUT_NODE_SET + "/"


def readout_key(edge_set_name: str) -> Optional[str]:
    """'seed' for '_readout/seed' and '_readout/seed/papers'; None for other edge sets."""
    if not edge_set_name.startswith(_PREFIX):
        return None
    return edge_set_name[len(_PREFIX):].split("/", 1)[0]


def readout_edge_sets(graph: GraphTensor, key: str) -> list[str]:
    """The edge sets that carry readout `key`, in sorted order."""
    return sorted(name for name in graph.edge_sets if readout_key(name) == key)


def readout_keys(graph: GraphTensor) -> list[str]:
    return sorted({k for k in map(readout_key, graph.edge_sets) if k is not None})


def check_readout_structure(graph: GraphTensor) -> None:
    """Raises GraphTensorError if the `_readout` edge sets break the rules above.

    Assumes the rest of the graph is valid (indices in range)."""
    for name, edge_set in sorted(graph.edge_sets.items()):
        key = readout_key(name)
        if key is None:
            if edge_set.adjacency.target_name == READOUT_NODE_SET:
                raise GraphTensorError(
                    f"edge set '{name}' targets node set '{READOUT_NODE_SET}'; only readout "
                    f"edge sets named '{_PREFIX}<key>' may")
            continue
        if not key:
            raise GraphTensorError(f"edge set '{name}': readout edge sets are named "
                                   f"'{_PREFIX}<key>' with a non-empty key")
        if READOUT_NODE_SET not in graph.node_sets:
            raise GraphTensorError(f"edge set '{name}': readout edge set without a "
                                   f"'{READOUT_NODE_SET}' node set")
        adjacency = edge_set.adjacency
        if adjacency.target_name != READOUT_NODE_SET:
            raise GraphTensorError(
                f"edge set '{name}' target: readout edges must go to node set "
                f"'{READOUT_NODE_SET}', not '{adjacency.target_name}'")
        if adjacency.source_name == READOUT_NODE_SET:
            raise GraphTensorError(f"edge set '{name}' source: readout edges cannot start at "
                                   f"node set '{READOUT_NODE_SET}'")
        steps = np.diff(adjacency.target)
        if (steps <= 0).any():
            i = int(np.flatnonzero(steps <= 0)[0])
            raise GraphTensorError(
                f"edge set '{name}' target: readout targets must be strictly ascending, but "
                f"edge {i + 1} has target {int(adjacency.target[i + 1])} after "
                f"{int(adjacency.target[i])}")
    for key in readout_keys(graph):
        _check_key_covers_readout(graph, key)


def _check_key_covers_readout(graph: GraphTensor, key: str) -> None:
    readout_count = graph.node_sets[READOUT_NODE_SET].total_size
    names = readout_edge_sets(graph, key)
    targets = np.concatenate([graph.edge_sets[n].adjacency.target for n in names])
    hits = np.bincount(targets, minlength=readout_count)
    wrong = np.flatnonzero(hits != 1)
    if wrong.size:
        node = int(wrong[0])
        raise GraphTensorError(
            f"readout key '{key}' (edge sets {', '.join(names)}): node {node} of "
            f"'{READOUT_NODE_SET}' is the target of {int(hits[node])} edges, expected exactly 1")


def add_readout(graph: GraphTensor, key: str, source_set: str,
                source_indices=None, *, validate: bool = True) -> GraphTensor:
    """Adds edge set `_readout/<key>` from `source_set` to `_readout`.

    `source_indices` (indices into `source_set`, one per `_readout` node) default
    to the first node of `source_set` in every component: the sampler's seed.
    Creates `_readout` with one node per component if the graph has none.
    """
    if not key or "/" in key:
        raise GraphTensorError(f"readout key {key!r}: use a non-empty name without '/'")
    name = _PREFIX + key
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
        raise GraphTensorError(f"readout key '{key}': no edge set '{_PREFIX}{key}' (readout "
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
