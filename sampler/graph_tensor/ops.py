"""Batching, broadcast and pooling on numpy GraphTensors (TF-GNN's names).

  merge_batch_to_components(graphs)    one graph, the inputs' components in order
  broadcast(graph, from_tag, ...)      node -> edge (SOURCE/TARGET), context -> nodes/edges
  pool(graph, to_tag, ...)             edge -> node (SOURCE/TARGET), nodes/edges -> context

Every op works on whole arrays (one numpy call per feature, no Python loop over
items). Pooling reduces dense features only.
"""
from __future__ import annotations

from typing import Optional, Sequence

import numpy as np

from sampler.graph_tensor.model import (CONTEXT, SOURCE, TARGET, Adjacency, Context, EdgeSet,
                                        Field, GraphTensor, NodeSet)
from unigraph.columnar import ragged
from unigraph.errors import GraphTensorError
from unigraph.columnar.ragged import Ragged

REDUCE_TYPES = ("sum", "mean", "max", "min", "max_no_inf", "min_no_inf")


# --- batching ------------------------------------------------------------------

def merge_batch_to_components(graphs: Sequence[GraphTensor], *,
                              validate: bool = True) -> GraphTensor:
    """Concatenates graphs into one whose components are all the inputs' components.

    Edge indices are shifted by the node counts of the graphs before them, so
    every edge still points into its own component. The graphs must share node
    sets, edge sets, feature names, dtypes and per-item shapes."""
    graphs = list(graphs)
    if not graphs:
        raise GraphTensorError("merge_batch_to_components: no graphs to merge")
    first = graphs[0]
    for i, graph in enumerate(graphs[1:], start=1):
        _check_same_structure(first, graph, i)

    context = Context.from_fields(
        features=_concat_features([g.context.features for g in graphs]),
        sizes=np.concatenate([g.context.sizes for g in graphs]))
    node_sets = {
        name: NodeSet.from_fields(
            sizes=np.concatenate([g.node_sets[name].sizes for g in graphs]),
            features=_concat_features([g.node_sets[name].features for g in graphs]))
        for name in first.node_sets}
    # Each graph's indices move past the nodes of all graphs before it.
    node_offsets = {
        name: np.concatenate([[0], np.cumsum([g.node_sets[name].total_size for g in graphs])])
        for name in first.node_sets}
    edge_sets = {}
    for name, edge_set in first.edge_sets.items():
        source_name = edge_set.adjacency.source_name
        target_name = edge_set.adjacency.target_name
        adjacency = Adjacency.from_indices(
            source=(source_name, np.concatenate(
                [g.edge_sets[name].adjacency.source + node_offsets[source_name][i]
                 for i, g in enumerate(graphs)])),
            target=(target_name, np.concatenate(
                [g.edge_sets[name].adjacency.target + node_offsets[target_name][i]
                 for i, g in enumerate(graphs)])))
        edge_sets[name] = EdgeSet.from_fields(
            sizes=np.concatenate([g.edge_sets[name].sizes for g in graphs]),
            adjacency=adjacency,
            features=_concat_features([g.edge_sets[name].features for g in graphs]))
    return GraphTensor.from_pieces(context=context, node_sets=node_sets, edge_sets=edge_sets,
                                   validate=validate)


def _field_signature(field: Field) -> tuple:
    depth = 0
    while isinstance(field, Ragged):
        depth, field = depth + 1, field.values
    return depth, field.dtype.str, field.shape[1:]


def _check_same_structure(first: GraphTensor, graph: GraphTensor, index: int) -> None:
    where = f"merge_batch_to_components: graph {index}"
    for kind, mine, theirs in (("node sets", first.node_sets, graph.node_sets),
                               ("edge sets", first.edge_sets, graph.edge_sets)):
        if sorted(mine) != sorted(theirs):
            raise GraphTensorError(f"{where} has {kind} {sorted(theirs)}, graph 0 has "
                                   f"{sorted(mine)}")
    pieces = [("context", first.context, graph.context)]
    pieces += [(f"node set '{n}'", first.node_sets[n], graph.node_sets[n])
               for n in sorted(first.node_sets)]
    pieces += [(f"edge set '{n}'", first.edge_sets[n], graph.edge_sets[n])
               for n in sorted(first.edge_sets)]
    for what, a, b in pieces:
        if sorted(a.features) != sorted(b.features):
            raise GraphTensorError(f"{where}: {what} has features {sorted(b.features)}, "
                                   f"graph 0 has {sorted(a.features)}")
        for name in sorted(a.features):
            mine, theirs = _field_signature(a.features[name]), _field_signature(b.features[name])
            if mine != theirs:
                raise GraphTensorError(
                    f"{where}: {what} feature '{name}' has (ragged dims, dtype, inner shape) "
                    f"{theirs}, graph 0 has {mine}")
    for name, edge_set in first.edge_sets.items():
        a, b = edge_set.adjacency, graph.edge_sets[name].adjacency
        if (a.source_name, a.target_name) != (b.source_name, b.target_name):
            raise GraphTensorError(
                f"{where}: edge set '{name}' connects {b.source_name}->{b.target_name}, "
                f"graph 0 connects {a.source_name}->{a.target_name}")


def _concat_features(feature_dicts: list) -> dict:
    return {name: ragged.concat([f[name] for f in feature_dicts]) for name in feature_dicts[0]}


# --- broadcast and pool --------------------------------------------------------

def _resolve_value(piece, feature_value, feature_name: Optional[str], where: str) -> Field:
    if (feature_value is None) == (feature_name is None):
        raise GraphTensorError(f"{where}: pass exactly one of feature_value, feature_name")
    if feature_name is not None:
        if feature_name not in piece.features:
            raise GraphTensorError(f"{where}: no feature '{feature_name}' (features: "
                                   f"{', '.join(sorted(piece.features)) or 'none'})")
        return piece.features[feature_name]
    value = feature_value if isinstance(feature_value, Ragged) else np.asarray(feature_value)
    if len(value) != piece.total_size:
        raise GraphTensorError(f"{where}: feature_value has {len(value)} items, expected "
                               f"{piece.total_size}")
    return value


def _one_set(edge_set_name, node_set_name, where: str) -> None:
    if (edge_set_name is None) == (node_set_name is None):
        raise GraphTensorError(f"{where}: pass exactly one of edge_set_name, node_set_name")


def _get(pieces, name: str, kind: str, where: str):
    if name not in pieces:
        raise GraphTensorError(f"{where}: unknown {kind} '{name}' ({kind}s: "
                               f"{', '.join(sorted(pieces)) or 'none'})")
    return pieces[name]


def _component_ids(sizes: np.ndarray) -> np.ndarray:
    return np.repeat(np.arange(len(sizes), dtype=np.int64), sizes)


def broadcast(graph: GraphTensor, from_tag: str, *, edge_set_name: Optional[str] = None,
              node_set_name: Optional[str] = None, feature_value=None,
              feature_name: Optional[str] = None) -> Field:
    """Copies values onto edges (from their SOURCE or TARGET node) or onto the
    nodes/edges of a set (from CONTEXT, by graph component)."""
    where = f"broadcast from {from_tag}"
    if from_tag in (SOURCE, TARGET):
        if edge_set_name is None or node_set_name is not None:
            raise GraphTensorError(f"{where}: node values broadcast onto an edge set; pass "
                                   f"edge_set_name only")
        edge_set = _get(graph.edge_sets, edge_set_name, "edge set", where)
        node_set = graph.node_sets[edge_set.adjacency.node_set_name(from_tag)]
        value = _resolve_value(node_set, feature_value, feature_name,
                               f"{where} node set '{edge_set.adjacency.node_set_name(from_tag)}'")
        return ragged.take(value, edge_set.adjacency.indices(from_tag))
    if from_tag == CONTEXT:
        _one_set(edge_set_name, node_set_name, where)
        target = (_get(graph.node_sets, node_set_name, "node set", where) if node_set_name
                  else _get(graph.edge_sets, edge_set_name, "edge set", where))
        value = _resolve_value(graph.context, feature_value, feature_name, f"{where}")
        return ragged.take(value, _component_ids(target.sizes))
    raise GraphTensorError(f"{where}: tag must be SOURCE, TARGET or CONTEXT")


def pool(graph: GraphTensor, to_tag: str, *, edge_set_name: Optional[str] = None,
         node_set_name: Optional[str] = None, reduce_type: str = "sum", feature_value=None,
         feature_name: Optional[str] = None) -> np.ndarray:
    """Reduces edge values onto their SOURCE or TARGET nodes, or the values of a
    node/edge set onto the CONTEXT of each component.

    Empty groups give 0 for sum, mean and the *_no_inf variants; max and min give
    the lowest/highest value of the dtype (-inf/+inf for floats), as TensorFlow's
    unsorted segment ops do. `mean` of integers returns float64."""
    where = f"pool to {to_tag} ({reduce_type})"
    if reduce_type not in REDUCE_TYPES:
        raise GraphTensorError(f"{where}: reduce_type must be one of {', '.join(REDUCE_TYPES)}")
    if to_tag in (SOURCE, TARGET):
        if edge_set_name is None or node_set_name is not None:
            raise GraphTensorError(f"{where}: edge values pool onto nodes; pass edge_set_name "
                                   f"only")
        edge_set = _get(graph.edge_sets, edge_set_name, "edge set", where)
        value = _resolve_value(edge_set, feature_value, feature_name,
                               f"{where} edge set '{edge_set_name}'")
        segments = edge_set.adjacency.indices(to_tag)
        count = graph.node_sets[edge_set.adjacency.node_set_name(to_tag)].total_size
    elif to_tag == CONTEXT:
        _one_set(edge_set_name, node_set_name, where)
        source = (_get(graph.node_sets, node_set_name, "node set", where) if node_set_name
                  else _get(graph.edge_sets, edge_set_name, "edge set", where))
        value = _resolve_value(source, feature_value, feature_name, where)
        segments, count = _component_ids(source.sizes), graph.num_components
    else:
        raise GraphTensorError(f"{where}: tag must be SOURCE, TARGET or CONTEXT")
    if isinstance(value, Ragged) or value.dtype.kind not in "iuf":
        raise GraphTensorError(f"{where}: only dense numeric features can be pooled")
    return segment_reduce(value, segments, count, reduce_type)


def segment_reduce(values: np.ndarray, segment_ids: np.ndarray, num_segments: int,
                   reduce_type: str) -> np.ndarray:
    """out[s] = reduce(values[segment_ids == s]) for s in range(num_segments)."""
    values = np.asarray(values)
    segment_ids = np.asarray(segment_ids, dtype=np.int64)
    base = reduce_type.replace("_no_inf", "")
    out_dtype = np.float64 if base == "mean" and values.dtype.kind != "f" else values.dtype
    out = np.zeros((num_segments,) + values.shape[1:], dtype=out_dtype)
    present = np.zeros(num_segments, dtype=bool)
    if len(values):
        # Sort once, then one C-level reduceat over contiguous runs of each segment.
        order = np.argsort(segment_ids, kind="stable")
        sorted_ids = segment_ids[order]
        starts = np.flatnonzero(np.concatenate([[True], sorted_ids[1:] != sorted_ids[:-1]]))
        segments = sorted_ids[starts]
        ufunc = {"sum": np.add, "mean": np.add, "max": np.maximum, "min": np.minimum}[base]
        reduced = ufunc.reduceat(values[order], starts, axis=0)
        if base == "mean":
            counts = np.diff(np.concatenate([starts, [len(sorted_ids)]]))
            reduced = reduced / counts.reshape((-1,) + (1,) * (values.ndim - 1))
        out[segments] = reduced
        present[segments] = True
    if base in ("max", "min") and reduce_type == base and not present.all():
        # TensorFlow's unsorted_segment_max/min fill empty segments with the
        # dtype's lowest/highest value; *_no_inf keep 0 there instead.
        info = np.finfo(out_dtype) if out.dtype.kind == "f" else np.iinfo(out_dtype)
        if out.dtype.kind == "f":
            fill = -np.inf if base == "max" else np.inf
        else:
            fill = info.min if base == "max" else info.max
        out[~present] = fill
    return out
