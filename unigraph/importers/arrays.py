"""A graph given as numpy arrays (what a PyG or DGL graph holds) as an ImportedGraph.

    nodes  {node type: NodeArrays(count, {attribute: array of count rows})}
    edges  {(source type, relation, target type): EdgeArrays(sources, targets, {attribute: ...})}

Nodes are numbered 0 .. count-1 in each node set, as the frameworks number them, and
their ids are those numbers (`sampler.torch` gives them back as `n_id`). Each
attribute with one row per node (edge) is a feature: its dtype and the shape of one row
from the array (a `[N, 128]` float32 array is a DT_FLOAT feature of shape [128]).
Boolean attributes named like `train_mask` are splits instead: the nodes where it is
True are the seeds of split `train` (`val_mask`: `val`). The labelled node set (the
starting spec's seeds) is the one with a label attribute (`y`, `label` or `labels`),
else the one with splits. Edge sets are named by their relation when it is unique, else
`<source>__<relation>__<target>`; with `reverse_edges`, each edge set that is not
already symmetric also gets `rev_<name>`, reading its table backwards, so that hops
reach the nodes that point at the seeds (PyG's NeighborLoader samples those).

Every index is checked against its node set's size before anything is written or
sampled: an edge naming node 10 of a set of 5 is one line naming the edge type.
"""
from __future__ import annotations

import dataclasses

import numpy as np
import pyarrow as pa

from unigraph.columnar.table_source import TableSource
from unigraph.errors import SchemaError
from unigraph.importers.graph import (ID, PAIR_SOURCE, PAIR_TARGET, SOURCE, TARGET, Builder,
                                      ImportedGraph, Split, set_name)

LABEL_NAMES = ("y", "label", "labels")
MASK_SUFFIX = "_mask"
HOMOGENEOUS_NODES, HOMOGENEOUS_EDGES = "nodes", "edges"   # TF-GNN's converter names them so


@dataclasses.dataclass
class NodeArrays:
    count: int
    attributes: dict[str, np.ndarray]


@dataclasses.dataclass
class EdgeArrays:
    sources: np.ndarray
    targets: np.ndarray
    attributes: dict[str, np.ndarray]
    # Every edge's reverse is there too (no reversed set needed); None: found out here.
    symmetric: bool | None = None


def arrow_column(values: np.ndarray, where: str) -> pa.Array:
    """An array with one row per item as an Arrow column: scalars as they are, each further
    dimension a fixed-size list (no copy for contiguous numbers)."""
    values = np.asarray(values)
    if values.dtype.kind == "f" and values.dtype.itemsize == 2:
        values = values.astype(np.float32)  # float16 rows: Arrow's half floats decode as float32
    if values.dtype.kind not in "biuf" and values.dtype.kind not in "SUO":
        raise SchemaError(f"{where}: values of dtype {values.dtype} have no unigraph dtype")
    if values.dtype.kind == "U":
        values = np.char.encode(values, "utf-8")
    flat = np.ascontiguousarray(values).reshape(-1)
    array = pa.array(flat, pa.binary()) if values.dtype.kind in "SO" else pa.array(flat)
    for size in reversed(values.shape[1:]):
        array = pa.FixedSizeListArray.from_arrays(array, size)
    return array


def _index(values: np.ndarray, count: int, where: str) -> np.ndarray:
    """Node indices, checked to be 0 <= i < count."""
    values = np.asarray(values)
    if values.dtype.kind not in "iu":
        raise SchemaError(f"{where}: node indices of dtype {values.dtype}, expected integers")
    values = values.astype(np.int64, copy=False).reshape(-1)
    if len(values):
        low, high = int(values.min()), int(values.max())
        if low < 0 or high >= count:
            bad = low if low < 0 else high
            raise SchemaError(f"{where}: names node {bad} of a node set of {count:,} nodes")
    return values


def import_arrays(origin: str, nodes: dict[str, NodeArrays],
                  edges: dict[tuple[str, str, str], EdgeArrays], *,
                  reverse_edges: bool = True, homogeneous: bool = False) -> ImportedGraph:
    """The ImportedGraph of arrays (module docstring); `homogeneous`: one node and one edge
    type, named `nodes` and `edges`."""
    builder = Builder(origin)
    names = {node_type: HOMOGENEOUS_NODES if homogeneous else set_name(node_type)
             for node_type in nodes}
    if len(set(names.values())) != len(names):
        raise SchemaError(f"{origin}: node types {sorted(nodes)} are not distinct once '.' "
                          f"is replaced (a set name cannot hold '.')")
    splits: dict[str, dict[str, np.ndarray]] = {}
    labelled = []
    for node_type, arrays in nodes.items():
        name = names[node_type]
        count = int(arrays.count)
        if count < 0:
            raise SchemaError(f"{origin}: node type '{node_type}' has {count} nodes")
        columns = {ID: pa.array(np.arange(count, dtype=np.int64))}
        for attribute, values in arrays.attributes.items():
            values = np.asarray(values)
            where = f"{origin}: node type '{node_type}' attribute '{attribute}'"
            if values.ndim == 0 or values.shape[0] != count:
                builder.note(f"{where}: not one row per node, left out")
                continue
            if attribute.endswith(MASK_SUFFIX) and values.dtype == np.bool_:
                if values.ndim == 1:
                    splits.setdefault(name, {})[attribute[:-len(MASK_SUFFIX)]] = \
                        np.flatnonzero(values)
                else:
                    builder.note(f"{where}: a mask of shape {list(values.shape)} (several "
                                 f"splits at once), left out")
                continue
            if attribute == ID:
                continue
            columns[attribute] = arrow_column(values, where)
            if attribute in LABEL_NAMES:
                labelled.append((name, attribute))
        builder.node_set(name, TableSource.of_table(name, pa.table(columns)), count)
    edge_names = _edge_set_names(edges, names, homogeneous)
    symmetric = set()
    for edge_type, arrays in edges.items():
        source_type, _, target_type = edge_type
        where = f"{origin}: edge type {edge_type}"
        for end in (source_type, target_type):
            if end not in nodes:
                raise SchemaError(f"{where}: node type '{end}' is not among the node types")
        sources = _index(arrays.sources, nodes[source_type].count, f"{where}: a source")
        targets = _index(arrays.targets, nodes[target_type].count, f"{where}: a target")
        if len(sources) != len(targets):
            raise SchemaError(f"{where}: {len(sources)} sources but {len(targets)} targets")
        columns = {SOURCE: pa.array(sources), TARGET: pa.array(targets)}
        for attribute, values in arrays.attributes.items():
            values = np.asarray(values)
            if values.ndim == 0 or values.shape[0] != len(sources):
                builder.note(f"{where} attribute '{attribute}': not one row per edge, left out")
                continue
            columns[attribute] = arrow_column(values, f"{where} attribute '{attribute}'")
        name = edge_names[edge_type]
        builder.edge_set(name, names[source_type], names[target_type],
                         TableSource.of_table(name, pa.table(columns)))
        if arrays.symmetric or (arrays.symmetric is None and source_type == target_type
                                and is_symmetric(sources, targets)):
            symmetric.add(name)
    if reverse_edges:
        added = builder.reversed_edge_sets(skip=symmetric)
        if added:
            builder.note(f"reversed edge sets (read backwards, no table of their own): "
                         f"{', '.join(added)}")
    seed_set, label = _labelled(labelled, splits)
    if seed_set is not None:
        parts = [Split(split, TableSource.of_table(f"seeds-{split}", pa.table(
            {ID: pa.array(ids.astype(np.int64))}))) for split, ids in splits.get(seed_set, {}).items()]
        builder.seeds(seed_set, label, parts)
        for other in sorted(set(splits) - {seed_set}):
            builder.note(f"node set '{other}' has masks too; its splits are not written (the "
                         f"seeds are of '{seed_set}')")
    return builder.graph


def is_symmetric(sources: np.ndarray, targets: np.ndarray) -> bool:
    """Whether every edge (u, v) of one node set has its reverse (v, u), as often as it
    has itself (an undirected graph stored with both directions)."""
    if len(sources) == 0:
        return False
    width = np.int64(max(int(sources.max()), int(targets.max())) + 1)
    if width > 2 ** 31:  # the pair keys below would overflow: compare pairs instead
        forward = np.lexsort((targets, sources))
        backward = np.lexsort((sources, targets))
        return bool(np.array_equal(sources[forward], targets[backward])
                    and np.array_equal(targets[forward], sources[backward]))
    return bool(np.array_equal(np.sort(sources * width + targets),
                               np.sort(targets * width + sources)))


def _labelled(labelled: list[tuple[str, str]], splits: dict) -> tuple[str | None, str | None]:
    """The labelled node set and its label feature: the first with a label and splits,
    else with a label, else with splits."""
    for name, label in labelled:
        if name in splits:
            return name, label
    if labelled:
        return labelled[0]
    return (sorted(splits)[0], None) if splits else (None, None)


def _edge_set_names(edges, names: dict[str, str], homogeneous: bool) -> dict:
    relations = [relation for _, relation, _ in edges]
    result = {}
    for edge_type in edges:
        source_type, relation, target_type = edge_type
        if homogeneous:
            result[edge_type] = HOMOGENEOUS_EDGES
        elif relations.count(relation) == 1:
            result[edge_type] = set_name(relation)
        else:
            result[edge_type] = set_name(f"{names[source_type]}__{relation}__"
                                         f"{names[target_type]}")
    if len(set(result.values())) != len(result) or set(result.values()) & set(names.values()):
        taken = set(names.values())
        for edge_type, name in list(result.items()):
            while name in taken:
                name += "_"
            taken.add(name)
            result[edge_type] = name
    return result


def pairs_source(name: str, sources: np.ndarray, targets: np.ndarray,
                 features: dict[str, np.ndarray]) -> TableSource:
    """A pairs table (link seeds) of node indices and per-pair features."""
    columns = {PAIR_SOURCE: pa.array(np.asarray(sources, np.int64)),
               PAIR_TARGET: pa.array(np.asarray(targets, np.int64))}
    for feature, values in features.items():
        columns[feature] = arrow_column(values, f"pairs '{name}' column '{feature}'")
    return TableSource.of_table(name, pa.table(columns))
