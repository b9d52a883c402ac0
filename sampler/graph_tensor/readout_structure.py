"""The structured readout's rules: which edge sets carry a readout, and the checks.

TF-GNN's convention, which the sampler's output follows: an auxiliary node set
`_readout` and, per readout key, edge sets `_readout/<key>` (or several,
`_readout/<key>/<suffix>`, one per source node set) whose edges go from the
nodes to read to the `_readout` nodes. Within each edge set the targets are
ascending, and together the edge sets of one key reach every `_readout` node
exactly once, so readout results line up with the `_readout` nodes.

Only names and checks live here (validation.py runs them); structured_readout.py
builds and reads readouts.
"""
from __future__ import annotations

from typing import Any, Mapping, Optional, Protocol

import numpy as np

from unigraph.errors import GraphTensorError


class GraphParts(Protocol):
    """What the checks read of a GraphTensor (sampler.graph_tensor.model): typed by its
    parts, so that the modules the model calls to check itself need not import it."""

    @property
    def context(self) -> Any: ...

    @property
    def node_sets(self) -> Mapping[str, Any]: ...

    @property
    def edge_sets(self) -> Mapping[str, Any]: ...


READOUT_NODE_SET = "_readout"
READOUT_PREFIX = READOUT_NODE_SET + "/"


def readout_key(edge_set_name: str) -> Optional[str]:
    """'seed' for '_readout/seed' and '_readout/seed/papers'; None for other edge sets."""
    if not edge_set_name.startswith(READOUT_PREFIX):
        return None
    return edge_set_name[len(READOUT_PREFIX):].split("/", 1)[0]


def readout_edge_sets(graph: GraphParts, key: str) -> list[str]:
    """The edge sets that carry readout `key`, in sorted order."""
    return sorted(name for name in graph.edge_sets if readout_key(name) == key)


def readout_keys(graph: GraphParts) -> list[str]:
    """The readout keys of a graph's `_readout/<key>` edge sets, sorted ('seed', ...)."""
    return sorted({k for k in map(readout_key, graph.edge_sets) if k is not None})


def check_readout_structure(graph: GraphParts) -> None:
    """Raises GraphTensorError if the `_readout` edge sets break the rules above.

    Assumes the rest of the graph is valid (indices in range)."""
    for name, edge_set in sorted(graph.edge_sets.items()):
        key = readout_key(name)
        if key is None:
            if edge_set.adjacency.target_name == READOUT_NODE_SET:
                raise GraphTensorError(
                    f"edge set '{name}' targets node set '{READOUT_NODE_SET}'; only readout "
                    f"edge sets named '{READOUT_PREFIX}<key>' may")
            continue
        if not key:
            raise GraphTensorError(f"edge set '{name}': readout edge sets are named "
                                   f"'{READOUT_PREFIX}<key>' with a non-empty key")
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


def _check_key_covers_readout(graph: GraphParts, key: str) -> None:
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
