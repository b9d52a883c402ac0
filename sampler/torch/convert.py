"""Subgraphs (decoded records, or the Python API's) as PyTorch Geometric `HeteroData`.

One subgraph, or a batch of them merged into one disjoint graph, laid out as PyG's own
loaders lay out theirs (docs/torch.md):

  node sets    `data[set]`: `num_nodes`; `n_id` (the `#id`s through a Vocabulary, or the
               ids themselves when they are integers); features as `x` (the dense
               numeric ones concatenated, float32) or each under its own name; `batch`
               (which subgraph a node is of) for a batch.
  edge sets    `data[source, name, target].edge_index` (2 x E, int64) and features as
               `edge_attr` or by name.
  node seeds   (`NeighborLoader`) the seeds first in their node set, in subgraph order:
               `data[seed set].batch_size` and `.input_id`; a label (`label=`) as `.y`.
  link seeds   (`LinkNeighborLoader`) `data[link_edge_type].edge_label_index` (the
               pairs' two nodes), `.edge_label`, `.input_id`.
  context      graph-level attributes (`seed_id`, `seed_timestamp`, ...); the pairs'
               other `_readout` features too.

The `_readout` node set and edge sets are TF-GNN's way to say what the above says; they
are not copied. Without an `encoder`, strings other than `#id` and ragged features have
no tensor form and are left out (the GraphTensor keeps them); with one
(sampler.features.FeatureEncoder, docs/features.md) every feature becomes a tensor by
its spec: categories as int64 indices by name, ragged ones as flat values with
`<name>_offsets` (torch.nn.EmbeddingBag's input) or padded with `<name>_mask`. The
spec is applied once per call, to the merged columns of the whole batch (columns.py).
"""
from __future__ import annotations

import dataclasses
from typing import Optional, Sequence, Union

import numpy as np

from sampler.features import Encoded, FeatureEncoder
from sampler.features.encode import named_arrays
from sampler.graph_tensor.example_batch import ExampleBatch, Strings
from sampler.graph_tensor.model import GraphTensor
from sampler.graph_tensor.readout_structure import READOUT_NODE_SET, READOUT_PREFIX
from sampler.minibatch.batch import MergedBatch
from sampler.output.names import (ID_FEATURE, LINK_READOUT_EDGE_SETS, READOUT_EDGE_SET,
                                  SEED_TIMESTAMP_FEATURE)
from sampler.torch.columns import BATCH, Edges, edge_index, graphs_of, merged, of_batch
from sampler.torch.data import SampledHeteroData
from sampler.torch.minibatch import merged_to_hetero_data
from sampler.torch.vocabulary import Vocabulary, integer_ids
from unigraph.columnar.ragged import take
from unigraph.errors import SamplerError, require_extra

torch = require_extra("torch", "torch", "sampler.torch")
HeteroData = require_extra("torch_geometric.data", "torch", "sampler.torch").HeteroData

FEATURE_MODES = ("x", "names")
LINK_LABEL = "label"  # a link sample's label on `_readout`, as `sample --negatives` writes it
# What PyG itself names on a store: a feature of this name cannot go there by name.
RESERVED = frozenset({"x", "y", "edge_index", "edge_attr", "n_id", "e_id", "batch", "ptr",
                      "num_nodes", "batch_size", "input_id", "edge_label",
                      "edge_label_index"})

EdgeType = tuple[str, str, str]
_NID = "\0n_id"     # and the nodes' n_id


def to_hetero_data(subgraphs, *, vocabulary: Optional[Vocabulary] = None,
                   features: str = "x", label: Optional[str] = None,
                   link_edge_type: Optional[EdgeType] = None,
                   input_id: Optional[Union[int, Sequence[int], np.ndarray]] = None,
                   encoder: Optional[FeatureEncoder] = None) -> "HeteroData":
    """A `HeteroData` of one subgraph (a numpy GraphTensor of one component:
    `parse_example` of a record, an item of `Graph.sample`) or of a batch: a list of
    them, a `Subgraphs` of the Python API, or a GraphTensor of several components
    (`sampler.graph_tensor.parse_examples` of records, `merge_batch_to_components`: each
    component a subgraph), merged into one disjoint graph with seeds first (module
    docstring); or of a mini-batch sampled at once (`Graph.sample_merged`:
    sampler.torch.minibatch).

    vocabulary: maps string `#id`s to `n_id` codes (required unless the ids are
        integers, which are then `n_id` as they are).
    features: "x" (dense numeric node features concatenated into `x`, edge ones into
        `edge_attr`, float32) or "names" (each under its own name, its own dtype).
    label: a feature of the seed node set (becomes `y` of its nodes) or of `_readout`
        (a graph-level `y`, one per subgraph), left out of `x`; link samples default to
        `_readout`'s `label`, which becomes `edge_label`.
    link_edge_type: where link samples put `edge_label_index` (default
        (S, "link", S) for the paired node set S).
    input_id: each subgraph's index in the input (default: a `Subgraphs`' row
        positions, else 0 .. n-1).
    encoder: a sampler.features.FeatureEncoder: every node and edge feature becomes a
        tensor by its spec (strings and ragged ones included; module docstring).
    """
    if isinstance(subgraphs, MergedBatch):  # a mini-batch sampled at once: its own layout
        return merged_to_hetero_data(subgraphs, features=features, label=label,
                                     link_edge_type=link_edge_type, encoder=encoder)
    _check_mode(features)
    if isinstance(subgraphs, GraphTensor) and subgraphs.num_components > 1:
        batch = ExampleBatch.of_graph(subgraphs, np.ones(subgraphs.num_components, np.int64))
        return batch_to_hetero_data(batch, input_id=input_id, vocabulary=vocabulary,
                                    features=features, label=label,
                                    link_edge_type=link_edge_type, encoder=encoder)
    graphs, default_ids, batched = graphs_of(subgraphs)
    if not graphs:
        raise SamplerError("to_hetero_data: no subgraph to convert")
    input_ids = _input_ids(input_id, default_ids)
    return _hetero_data(merged(graphs, batched, keep_all=encoder is not None), input_ids,
                        batched, vocabulary=vocabulary, features=features, label=label,
                        link_edge_type=link_edge_type, encoder=encoder)


def batch_to_hetero_data(batch: ExampleBatch, *, input_id=None,
                         vocabulary: Optional[Vocabulary] = None, features: str = "x",
                         label: Optional[str] = None,
                         link_edge_type: Optional[EdgeType] = None,
                         batched: bool = True,
                         encoder: Optional[FeatureEncoder] = None) -> "HeteroData":
    """`to_hetero_data` of the records of a decoded batch (`sampler.graph_tensor`'s
    ExampleBatch: what SampleDataset reads), each record a subgraph, without a
    GraphTensor: the columns go to PyG as they are (string `#id`s looked up as fixed-width
    arrays). `batched=False`: a batch of one record laid out as one subgraph. `encoder`:
    as to_hetero_data's, applied once to the batch's columns."""
    _check_mode(features)
    if not batch.records:
        raise SamplerError("to_hetero_data: no subgraph to convert")
    input_ids = _input_ids(input_id, np.arange(batch.records, dtype=np.int64))
    return _hetero_data(of_batch(batch, batched, keep_all=encoder is not None), input_ids,
                        batched, vocabulary=vocabulary, features=features, label=label,
                        link_edge_type=link_edge_type, encoder=encoder)


def _check_mode(features: str) -> None:
    if features not in FEATURE_MODES:
        raise SamplerError(f"features={features!r}: give one of {', '.join(FEATURE_MODES)}")


def _input_ids(input_id, default_ids: np.ndarray) -> np.ndarray:
    input_ids = (default_ids if input_id is None
                 else np.asarray(input_id, dtype=np.int64).reshape(-1))
    if len(input_ids) != len(default_ids):
        raise SamplerError(f"input_id: {len(input_ids)} ids for {len(default_ids)} "
                           f"subgraphs")
    return input_ids


def _hetero_data(columns, input_ids: np.ndarray, batched: bool, *,
                 vocabulary: Optional[Vocabulary], features: str, label: Optional[str],
                 link_edge_type: Optional[EdgeType],
                 encoder: Optional[FeatureEncoder] = None) -> "HeteroData":
    """PyG's layout of merged columns (nodes, edges, context): seeds first, readouts as
    PyG's attributes, features as `x`/`edge_attr` or by name (through the encoder when
    there is one), then tensors."""
    nodes, edges, context = columns
    data = SampledHeteroData()
    graph_level: dict = {}
    readout = nodes.pop(READOUT_NODE_SET, None)
    readout_features = readout.features if readout is not None else {}
    readout_features.pop(BATCH, None)
    readouts = {name: edges.pop(name) for name in list(edges)
                if name == READOUT_NODE_SET or name.startswith(READOUT_PREFIX)}

    for set_name, node_set in nodes.items():  # n_id first: codes move cheaper than ids
        ids = node_set.features.pop(ID_FEATURE, None)
        if ids is not None:
            node_set.features[_NID] = _node_codes(set_name, ids, vocabulary)
    orders: dict = {}  # node set -> the Order its rows go to PyG in (seeds first)
    if READOUT_EDGE_SET in readouts:
        seed_set = readouts[READOUT_EDGE_SET].source_set
        seeds = _read_out(readouts[READOUT_EDGE_SET])
        orders[seed_set] = _seeds_first(seed_set, seeds, nodes, edges)
        node_label, graph_label = _node_label(label, seed_set, nodes, readout_features,
                                              orders[seed_set])
        store = data[seed_set]
        store.batch_size = len(seeds)
        store.input_id = torch.from_numpy(input_ids)
        if node_label is not None:
            store.y = torch.from_numpy(node_label)
        if graph_label is not None:
            graph_level["y"] = graph_label
    elif all(name in readouts for name in LINK_READOUT_EDGE_SETS):
        pair_set = readouts[LINK_READOUT_EDGE_SETS[0]].source_set
        ends = np.stack([_read_out(readouts[name]) for name in LINK_READOUT_EDGE_SETS])
        edge_type = tuple(link_edge_type) if link_edge_type else (pair_set, "link", pair_set)
        if len(edge_type) != 3 or edge_type[0] != pair_set or edge_type[2] != pair_set:
            raise SamplerError(f"link_edge_type {edge_type}: give (source set, relation, "
                               f"target set), both sets '{pair_set}' (the pairs' node set)")
        store = data[edge_type]
        store.edge_label_index = torch.from_numpy(ends)
        store.input_id = torch.from_numpy(input_ids)
        name = label if label is not None else (LINK_LABEL if LINK_LABEL in readout_features
                                                else None)
        if name is not None:
            if name not in readout_features:
                raise SamplerError(f"label {name!r}: link samples read their label from "
                                   f"node set '{READOUT_NODE_SET}', which has "
                                   f"{_listed(readout_features)}")
            store.edge_label = torch.from_numpy(_flat_label(readout_features.pop(name)))
    elif label is not None:
        raise SamplerError(f"label {label!r}: the subgraphs have no '{READOUT_EDGE_SET}' or "
                           f"link readout to say whose label it is")
    for name, values in readout_features.items():
        graph_level[name] = values

    subgraphs_of: dict = {}  # node set -> each node's subgraph (None: one subgraph)
    for set_name, node_set in nodes.items():
        store = data[set_name]
        store.num_nodes = node_set.count
        order = orders.get(set_name)
        codes = _in_order(node_set.features.pop(_NID, None), order)
        if codes is not None:
            store.n_id = torch.from_numpy(codes)
        subgraph = _in_order(node_set.features.pop(BATCH, None), order)
        if encoder is not None:
            cutoffs = _cutoffs(encoder, "nodes", set_name, context, subgraph,
                               node_set.count)
            in_order = {name: _in_order(value, order)
                        for name, value in node_set.features.items()}
            _put_encoded(store, encoder.encode("nodes", set_name, in_order,
                                               cutoffs=cutoffs), features, "x",
                         f"node set '{set_name}'")
        else:
            _put_features(store, node_set.features, features, "x", f"node set '{set_name}'",
                          order)
        if batched:
            store.batch = torch.from_numpy(subgraph)
        subgraphs_of[set_name] = subgraph
    for set_name, edge_set in edges.items():
        store = data[edge_set.source_set, set_name, edge_set.target_set]
        store.edge_index = torch.from_numpy(edge_index(edge_set))
        if encoder is not None:
            subgraph = subgraphs_of.get(edge_set.source_set)
            cutoffs = _cutoffs(encoder, "edges", set_name, context,
                               None if subgraph is None else subgraph[edge_set.source],
                               len(edge_set.source))
            _put_encoded(store, encoder.encode("edges", set_name, edge_set.features,
                                               cutoffs=cutoffs), features, "edge_attr",
                         f"edge set '{set_name}'")
        else:
            _put_features(store, edge_set.features, features, "edge_attr",
                          f"edge set '{set_name}'")
    for name, values in list(context.items()) + list(graph_level.items()):
        data[name] = _graph_value(values, batched)
    return data


def _read_out(edge_set: Edges) -> np.ndarray:
    """The nodes a readout edge set reads, in `_readout` node (= subgraph) order."""
    return edge_set.source[np.argsort(edge_set.target, kind="stable")]


@dataclasses.dataclass(frozen=True)
class Order:
    """Rows in a new order: `rows[i]` goes to place i, row j to `places[j]`."""
    rows: np.ndarray
    places: np.ndarray


def _seeds_first(seed_set: str, seeds: np.ndarray, nodes: dict,
                 edges: dict) -> Optional[Order]:
    """The order that puts the seeds at the front of their node set, in subgraph order
    (as PyG's NeighborLoader does), the other nodes after them in their order; None when
    that is their order already (one subgraph: its seed is node 0). Edge indices are
    moved to it here; the node set's rows are taken in it where they are laid out
    (`_in_order`; `_side_by_side`: straight to their place in `x`, one copy each)."""
    node_set = nodes[seed_set]
    if np.array_equal(seeds, np.arange(len(seeds))):
        return None  # the rest after them in their order: as they are
    rest = np.ones(node_set.count, bool)
    rest[seeds] = False
    order = np.concatenate([seeds, np.flatnonzero(rest)]).astype(np.int64, copy=False)
    position = np.empty_like(order)
    position[order] = np.arange(len(order))
    for edge_set in edges.values():
        ends = (edge_set.source_set == seed_set, edge_set.target_set == seed_set)
        if not any(ends):
            continue
        pair = np.empty((2, len(edge_set.source)), np.int64)  # edge_index's rows
        for row, (moved, end) in enumerate(zip(ends, (edge_set.source, edge_set.target))):
            if moved:
                np.take(position, end, out=pair[row])
            else:
                pair[row] = end
        edge_set.source, edge_set.target = pair
    return Order(order, position)


def _in_order(value, order: Optional[Order]):
    """A node feature's rows in `order` (None: as they are); Ragged ones too."""
    if value is None or order is None:
        return value
    # np.take (through ragged.take, which takes Ragged too): faster than fancy indexing
    return take(value, order.rows)


def _node_label(label: Optional[str], seed_set: str, nodes: dict, readout: dict,
                order: Optional[Order]):
    """(`y` of the seed set's nodes in `order`, or a graph-level `y`), whichever holds
    `label`."""
    if label is None:
        return None, None
    if label in readout:
        return None, _flat_label(readout.pop(label))
    features = nodes[seed_set].features
    if label in features and label != ID_FEATURE and not label.startswith("\0"):
        return _flat_label(_in_order(features.pop(label), order)), None
    raise SamplerError(f"label {label!r}: no such dense feature on node set '{seed_set}' "
                       f"(it has {_listed(features)}) or on '{READOUT_NODE_SET}' (it has "
                       f"{_listed(readout)})")


def _flat_label(values: np.ndarray) -> np.ndarray:
    """A label of shape [n] or [n, 1] as [n]."""
    return values.reshape(len(values)) if values.ndim == 2 and values.shape[1] == 1 \
        else values


def _listed(features: dict) -> str:
    names = sorted(n for n in features if n != ID_FEATURE and not n.startswith("\0"))
    return ", ".join(names) or "no dense feature"


def _node_codes(set_name: str, ids, vocabulary: Optional[Vocabulary]):
    """n_id of a node set's ids (an array, or a decoded batch's Strings)."""
    if vocabulary is not None:
        return vocabulary.index(set_name, ids)
    if isinstance(ids, Strings):
        ids = ids.fixed
    codes = integer_ids(ids)
    if codes is None:
        shown = ids[0].decode(errors="replace") if len(ids) else ""
        raise SamplerError(f"node set '{set_name}': its ids are strings ({shown!r}); pass "
                           f"vocabulary=Vocabulary.from_samples(folder), "
                           f"Vocabulary.from_graph(graph) or Vocabulary() to map them to n_id")
    return codes


def _put_features(store, features: dict, mode: str, concatenated: str, where: str,
                  order: Optional[Order] = None) -> None:
    """The dense features on a store, rows in `order` (None: as they are): by name, or
    side by side as float32 `x`/`edge_attr`."""
    dense = {name: value for name, value in sorted(features.items())
             if not name.startswith("\0")}
    if not dense:
        return
    if mode == "names":
        for name, value in dense.items():
            if name in RESERVED and name != concatenated:
                raise SamplerError(f"{where} feature '{name}': PyG reserves that name; use "
                                   f"features='x'")
            store[name] = torch.from_numpy(_in_order(value, order))
        return
    # Not reshape(n, -1): numpy cannot infer -1 for no item (an edge set without edges).
    columns = [value.reshape(len(value), int(np.prod(value.shape[1:], dtype=np.int64)))
               for value in dense.values()]
    store[concatenated] = torch.from_numpy(_side_by_side(columns, order))


def _side_by_side(columns: list[np.ndarray], order: Optional[Order]) -> np.ndarray:
    """2-D columns as one C-contiguous float32 matrix, rows in `order` (None: as they
    are): several columns each copied once, straight to its rows' places (numpy's
    assignment to rows picked by an index writes there; a take would copy them twice).
    (torch's index_select into a strided view would too, but its threads make it
    slower, not faster, where they are not pinned to one.)"""
    if len(columns) == 1 and columns[0].dtype == np.float32:
        # already a fresh array (or the merge's), or taken into one
        return np.ascontiguousarray(columns[0] if order is None
                                    else np.take(columns[0], order.rows, axis=0))
    if order is None:
        return np.concatenate([c.astype(np.float32, copy=False) for c in columns], axis=1)
    matrix = np.empty((len(order.rows), sum(c.shape[1] for c in columns)), np.float32)
    at = 0
    for column in columns:
        matrix[order.places, at:at + column.shape[1]] = column  # cast as astype casts
        at += column.shape[1]
    return matrix


def _graph_value(values, batched: bool):
    """A per-subgraph value as a graph-level attribute: strings as str (a batch: a list
    of them), numbers as a tensor with one row per subgraph."""
    if isinstance(values, list):
        return values if batched else values[0]
    return torch.from_numpy(np.ascontiguousarray(values))


def _cutoffs(encoder: FeatureEncoder, set_kind: str, set_name: str, context: dict,
             subgraph: Optional[np.ndarray], count: int) -> Optional[np.ndarray]:
    """Each item's sample cut-off (the context's `seed_timestamp` of its subgraph), for
    timestamps encoded as ages; None when the spec has none or the samples no cut-off."""
    times = context.get(SEED_TIMESTAMP_FEATURE)
    if not encoder.needs_cutoffs(set_kind, set_name) or times is None:
        return None
    times = np.asarray(times).reshape(-1)
    return times[subgraph] if subgraph is not None else np.repeat(times[:1], count)


def _put_encoded(store, encoded: dict[str, Encoded], mode: str, concatenated: str,
                 where: str) -> None:
    """An encoder's output on a store (sampler.features.encode.named_arrays)."""
    for name, value in encoded.items():  # in mode "x" the dense ones go into `x`
        if (mode == "names" or not value.dense) and name in RESERVED \
                and not (mode == "names" and name == concatenated):
            raise SamplerError(f"{where} feature '{name}': PyG reserves that name; use "
                               f"features='x'")
    for name, value in named_arrays(encoded, mode, concatenated, where).items():
        store[name] = torch.from_numpy(value)
