"""The columns of a batch of subgraphs (convert.py's first step): node sets, edge sets
and context as numpy arrays, merged into one disjoint graph, before PyG's layout.

    nodes, edges, context = merged(graphs, batched)      # GraphTensors, or
    nodes, edges, context = of_batch(example_batch, batched)   # a decoded batch

  nodes    set name -> Nodes: nodes per subgraph, features (dense numeric arrays and the
           `#id`s; BATCH: each node's subgraph, for a batch)
  edges    set name -> Edges: end sets, indices into the merged node sets, dense features
  context  name -> values per subgraph (strings as str)

Only what has a tensor form is kept, in arrays torch may share (fresh, or writable
views of a decoded batch); `keep_all` keeps every feature, for a feature encoder
(sampler.features), which convert.py applies to these columns before it lays them out:
ragged ones as Ragged, strings as tokens (a decoded batch's Strings as their 'S' array,
or their bytes objects when their lengths are uneven).
"""
from __future__ import annotations

import dataclasses

import numpy as np

from sampler.graph_tensor.example_batch import ExampleBatch, Strings
from sampler.graph_tensor.model import GraphTensor
from sampler.output.names import ID_FEATURE
from unigraph.columnar.ragged import Ragged, concat
from unigraph.errors import SamplerError

BATCH = "\0batch"  # the merge's subgraph index per node, beside the features


@dataclasses.dataclass
class Nodes:
    sizes: np.ndarray          # per subgraph
    features: dict             # name -> array over the merged nodes (dense, and #id)

    @property
    def count(self) -> int:
        return int(self.sizes.sum())


@dataclasses.dataclass
class Edges:
    source_set: str
    target_set: str
    source: np.ndarray
    target: np.ndarray
    features: dict


def edge_index(edges: Edges) -> np.ndarray:
    """[source; target] as one 2 x E int array: the array the two are the rows of, when
    they are (a decoded batch's, ExampleBatch.select; moved seeds first), else stacked."""
    source, target = edges.source, edges.target
    pair = source.base
    if (pair is not None and target.base is pair and pair.shape == (2, len(source))
            and pair.flags.c_contiguous and pair.flags.writeable
            and source.strides == target.strides == pair.strides[1:]
            # rows of `pair`, each the whole of one: which one, by where they lie
            and not np.may_share_memory(source, pair[1])
            and not np.may_share_memory(target, pair[0])):
        return pair
    return np.stack([source, target])


def graphs_of(subgraphs) -> tuple[list[GraphTensor], np.ndarray, bool]:
    """(the subgraphs, their default input ids, whether it is a batch)."""
    if isinstance(subgraphs, GraphTensor):
        return [subgraphs], np.zeros(1, np.int64), False
    positions = getattr(subgraphs, "positions", None)  # sampler.api.Subgraphs
    graphs = list(subgraphs)
    for graph in graphs:
        if not isinstance(graph, GraphTensor):
            raise SamplerError(f"to_hetero_data takes GraphTensors (sampler.graph_tensor), "
                               f"got {type(graph).__name__}")
    ids = (np.asarray(positions, np.int64) if positions is not None
           else np.arange(len(graphs), dtype=np.int64))
    return graphs, ids, True


def _dense(value) -> bool:
    return not isinstance(value, (Ragged, Strings)) and value.dtype.kind in "biuf"


def merged(graphs: list[GraphTensor], batched: bool = True, keep_all: bool = False):
    """The subgraphs as one graph: node sets and edge sets concatenated, edge indices
    moved past the nodes of the subgraphs before them. Only what has a tensor form
    (`keep_all`: every feature), in fresh arrays (the tensors share them). `batched`:
    note each node's subgraph."""
    if len(graphs) == 1:
        return _copied(graphs[0], batched, keep_all)
    first = graphs[0]
    try:
        nodes = {}
        for name, node_set in first.node_sets.items():
            sizes = np.array([g.node_sets[name].total_size for g in graphs], np.int64)
            kept = {f: concat([g.node_sets[name].features[f] for g in graphs])
                    for f, value in node_set.features.items()
                    if keep_all or _kept(f, value)}
            kept[BATCH] = np.repeat(np.arange(len(graphs), dtype=np.int64), sizes)
            nodes[name] = Nodes(sizes, kept)
        starts = {name: np.cumsum(n.sizes) - n.sizes for name, n in nodes.items()}
        edges = {}
        for name, edge_set in first.edge_sets.items():
            parts = [g.edge_sets[name] for g in graphs]
            counts = np.array([p.total_size for p in parts], np.int64)
            source, target = edge_set.adjacency.source_name, edge_set.adjacency.target_name
            edges[name] = Edges(
                source, target,
                np.concatenate([p.adjacency.source for p in parts])
                + np.repeat(starts[source], counts),
                np.concatenate([p.adjacency.target for p in parts])
                + np.repeat(starts[target], counts),
                {f: concat([p.features[f] for p in parts])
                 for f, value in edge_set.features.items() if keep_all or _dense(value)})
        context = {name: np.concatenate([g.context.features[name] for g in graphs])
                   for name, value in first.context.features.items()
                   if not isinstance(value, Ragged)}
    except KeyError as e:
        raise SamplerError(f"subgraphs of different schemas cannot be merged: one lacks "
                           f"{e}") from None
    return nodes, edges, _context(context)


def _copied(graph: GraphTensor, batched: bool, keep_all: bool = False):
    """`merged` of one subgraph: copies, nothing to move (a record's common case)."""
    nodes = {}
    for name, node_set in graph.node_sets.items():
        kept = {f: _copy(value) for f, value in node_set.features.items()
                if keep_all or _kept(f, value)}
        if batched:
            kept[BATCH] = np.zeros(node_set.total_size, np.int64)
        nodes[name] = Nodes(np.array(node_set.sizes), kept)
    edges = {name: Edges(edge_set.adjacency.source_name, edge_set.adjacency.target_name,
                          np.array(edge_set.adjacency.source),
                          np.array(edge_set.adjacency.target),
                          {f: _copy(value) for f, value in edge_set.features.items()
                           if keep_all or _dense(value)})
             for name, edge_set in graph.edge_sets.items()}
    context = {name: np.array(value) for name, value in graph.context.features.items()
               if not isinstance(value, Ragged)}
    return nodes, edges, _context(context)


def of_batch(batch: ExampleBatch, batched: bool, keep_all: bool = False):
    """`merged` of a decoded batch: its columns as they are (each record a subgraph),
    string `#id`s as the decoder holds them (Strings, which the vocabulary reads in
    place), arrays that are not writable copied (`keep_all`: every feature, other
    strings as tokens)."""
    nodes = {}
    for name, piece in batch.node_sets.items():
        per_record = batch.per_record(piece.sizes)
        kept = {f: value if isinstance(value, Strings) and f == ID_FEATURE else _tokens(value)
                for f, value in piece.features.items()
                if keep_all or _dense(value) or (f == ID_FEATURE and isinstance(value, Strings)
                                                 and value.lengths.ndim == 1)}
        if batched:
            kept[BATCH] = np.repeat(np.arange(batch.records, dtype=np.int64), per_record)
        nodes[name] = Nodes(np.array(per_record), kept)
    edges = {name: Edges(piece.source_name, piece.target_name, _writable(piece.source),
                          _writable(piece.target),
                          {f: _tokens(value) for f, value in piece.features.items()
                           if keep_all or _dense(value)})
             for name, piece in batch.edge_sets.items()}
    context = {name: value.objects() if isinstance(value, Strings) else _writable(value)
               for name, value in batch.context.features.items()
               if not isinstance(value, Ragged)}
    return nodes, edges, _context(context)


def _tokens(value):
    """A decoded column as a feature encoder takes it: Strings as their 'S' array (which
    reads a value without its trailing NUL bytes, as a vocabulary's tokens do), or as
    bytes objects when their lengths are uneven; within Ragged too; arrays writable."""
    if isinstance(value, Strings):
        return value.objects() if value.as_objects else value.fixed
    if isinstance(value, Ragged):
        return Ragged(_tokens(value.values), value.row_lengths)
    return _writable(value)


def _copy(value):
    """Fresh arrays (the tensors share them), Ragged ones too."""
    if isinstance(value, Ragged):
        return Ragged(_copy(value.values), value.row_lengths)
    return np.array(value)


def _writable(array: np.ndarray) -> np.ndarray:
    """The array itself when torch may share it, else a copy (torch wants writable
    memory)."""
    return array if array.flags.writeable else np.array(array)


def _kept(name: str, value) -> bool:
    """Node features with a tensor form, and the ids."""
    return _dense(value) or (name == ID_FEATURE and not isinstance(value, Ragged))


def _context(features: dict) -> dict:
    return {name: [_text(v) for v in values] if values.dtype.kind == "O" else values
            for name, values in features.items()}


def _text(value: bytes):
    try:
        return value.decode("utf-8")
    except UnicodeDecodeError:
        return value
