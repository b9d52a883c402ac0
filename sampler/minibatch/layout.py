"""A mini-batch's layout, once its ops have sampled (sampler.minibatch.sample): each edge
set's edges of every op in one list (each edge once), nodes a set's table lacks left out,
and nodes and edges ordered by hop, a node's hop its distance from the seeds."""
from __future__ import annotations

import numpy as np

from sampler.core.arrays import run_starts
from sampler.memory.graph import GraphInMemory
from sampler.minibatch.batch import EdgeSetBatch, NodeSetBatch


def edge_set(name: str, pieces: list, num_hops: int) -> EdgeSetBatch:
    """An edge set's edges of every op that sampled it, hop after hop (plan order within
    a hop), each edge once: an edge two ops drew is kept where it came first."""
    op = pieces[0][1]
    sources = np.concatenate([p[2] for p in pieces])
    targets = np.concatenate([p[3] for p in pieces])
    positions = np.concatenate([p[4] for p in pieces])
    hops = np.concatenate([np.full(len(p[4]), p[0], np.int64) for p in pieces])
    if len(pieces) > 1:  # (source, position) names an edge of one sample (disjoint: of
        order = np.lexsort((np.arange(len(positions)), positions, sources))  # one seed)
        first = order[np.flatnonzero(run_starts(sources[order], positions[order]))]
        kept = np.sort(first)
        sources, targets, positions, hops = (sources[kept], targets[kept], positions[kept],
                                             hops[kept])
    counts = np.bincount(hops, minlength=num_hops + 1)[1:]
    return EdgeSetBatch(name, op.source_set, op.target_set, sources, targets,
                        positions.astype(np.int64), [int(c) for c in counts])


def leave_out_absent(graph: GraphInMemory, nodes: dict, edges: dict) -> dict[str, int]:
    """Nodes of a set with a table that the table lacks are left out, and so are the
    edges that touch them, as the assembly leaves them out of a subgraph (the ops still
    sampled from them: the same draws). Returns the edges left out per edge set."""
    kept = {}
    for name, node_set in nodes.items():
        table = graph.node_tables.get(name)
        if table is None or len(table.ids) == len(graph.names[name]) or not len(node_set):
            continue
        present = table.positions_of(node_set.codes) >= 0
        if present.all():
            continue
        hops = np.repeat(np.arange(len(node_set.num_sampled_nodes)),
                         node_set.num_sampled_nodes)[present]
        kept[name] = np.cumsum(present) - 1, present
        nodes[name] = NodeSetBatch(
            node_set.codes[present],
            np.bincount(hops, minlength=len(node_set.num_sampled_nodes)).tolist(),
            None if node_set.slots is None else node_set.slots[present])
    dropped = {}
    for name, edge_set in list(edges.items()):
        keep = np.ones(len(edge_set), bool)
        for end, local in ((edge_set.source_set, edge_set.sources),
                           (edge_set.target_set, edge_set.targets)):
            if end in kept:
                keep &= kept[end][1][local]
        if keep.all() and edge_set.source_set not in kept and edge_set.target_set not in kept:
            continue
        hops = np.repeat(np.arange(1, len(edge_set.num_sampled_edges) + 1),
                         edge_set.num_sampled_edges)[keep]
        renumber = {end: kept[end][0] for end in (edge_set.source_set, edge_set.target_set)
                    if end in kept}
        sources, targets = edge_set.sources[keep], edge_set.targets[keep]
        if edge_set.source_set in renumber:
            sources = renumber[edge_set.source_set][sources]
        if edge_set.target_set in renumber:
            targets = renumber[edge_set.target_set][targets]
        edges[name] = EdgeSetBatch(
            name, edge_set.source_set, edge_set.target_set, sources, targets,
            edge_set.positions[keep],
            np.bincount(hops - 1, minlength=len(edge_set.num_sampled_edges)).tolist())
        if not keep.all():
            dropped[name] = int((~keep).sum())
    return dropped


def by_distance(nodes: dict, edges: dict, seed_set: str, num_hops: int) -> None:
    """Lays nodes and edges out by hop as a GNN reads them: a node's hop is its distance
    from the seeds along the sampled edges (an op deep in the spec may sample from a
    seed: its edges are still the seed's), an edge's hop one more than its source's.
    So a layer's edges reach exactly the nodes the layers after it need (trim_to_layer
    keeps them); nodes of one hop by the hop an op first reached them at, then by id
    (hop 0: the seeds in their order), edges of one hop in the order sampled. The hop a
    node was first reached at bounds its distance (_relax finds it); a node reached only
    from nodes left out keeps that hop."""
    first = {name: np.repeat(np.arange(num_hops + 1), n.num_sampled_nodes)
             for name, n in nodes.items()}
    distance = {name: hops.copy() for name, hops in first.items()}
    hops = _relax(edges, distance, num_hops)
    for name, node_set in nodes.items():
        d = distance[name]
        if np.array_equal(d, first[name]):
            continue  # each node was first reached at its distance: laid out so already
        order = _by_small(d)  # by distance, then as laid out (first hop, then id)
        renumber = np.empty(len(order), np.int64)
        renumber[order] = np.arange(len(order))
        nodes[name] = NodeSetBatch(node_set.codes[order],
                                   np.bincount(d, minlength=num_hops + 1).tolist(),
                                   None if node_set.slots is None else node_set.slots[order])
        distance[name] = d[order]
        for edge_set in edges.values():
            if edge_set.source_set == name:
                edge_set.sources = renumber[edge_set.sources]
            if edge_set.target_set == name:
                edge_set.targets = renumber[edge_set.targets]
    for name, edge_set in edges.items():
        edge_hops = hops[name]
        counts = np.bincount(edge_hops, minlength=num_hops + 1)[1:num_hops + 1].tolist()
        if counts != edge_set.num_sampled_edges:
            order = _by_small(edge_hops)
            edge_set.sources, edge_set.targets = edge_set.sources[order], edge_set.targets[order]
            edge_set.positions = edge_set.positions[order]
            edge_set.num_sampled_edges = counts


def _relax(edges: dict, distance: dict, num_hops: int) -> dict:
    """Bellman-Ford over the batch's edges, in the order they were sampled, from upper
    bounds of the distances (updated in place); each edge's hop (its source's distance
    + 1). One pass finds them unless a node's distance shrank after edges from it were
    relaxed: those edge sets are checked again, and only a change there (rare: a deep
    op sampled from a seed a node that earlier ops sampled from) takes another pass."""
    for _ in range(num_hops + 1):
        hops, seen_at = {}, {}
        version = dict.fromkeys(distance, 0)
        for name, edge_set in edges.items():
            seen_at[name] = version[edge_set.source_set]
            candidate = distance[edge_set.source_set][edge_set.sources] + 1
            reached = distance[edge_set.target_set]
            shorter = candidate < reached[edge_set.targets]
            if shorter.any():
                np.minimum.at(reached, edge_set.targets[shorter], candidate[shorter])
                version[edge_set.target_set] += 1
            hops[name] = candidate
        stale = False
        for name, edge_set in edges.items():
            if version[edge_set.source_set] != seen_at[name]:
                now = distance[edge_set.source_set][edge_set.sources] + 1
                if not np.array_equal(now, hops[name]):
                    stale = True
                    break
        if not stale:
            return hops
    return hops


def _by_small(values: np.ndarray) -> np.ndarray:
    """A stable argsort of small non-negative integers (hops): numpy radix-sorts int8."""
    return np.argsort(values.astype(np.int8), kind="stable")
