"""An OGB dataset folder, as the `ogb` package stores it, as an ImportedGraph.

The folder is `<root>/<name>/` (e.g. `dataset/ogbn_mag/`, what `ogb` unzips; its
`ogb/io/read_graph_raw.py` reads the same files):

  homogeneous      raw/edge.csv.gz, num-node-list.csv.gz, num-edge-list.csv.gz,
  (ogbn-arxiv)     node-feat.csv.gz, node-label.csv.gz, edge-feat.csv.gz, and extra
                   files node_<x>.csv.gz / edge_<x>.csv.gz (node_year, edge_weight, ...)
  binary           raw/data.npz (edge_index, num_nodes_list, num_edges_list, node_feat,
  (papers100M)     node_<x>, edge_<x>), raw/node-label.npz
  heterogeneous    raw/num-node-dict.csv.gz, triplet-type-list.csv.gz,
  (ogbn-mag)       relations/<source>___<relation>___<target>/{edge, num-edge-list,
                   edge-feat, edge_<x>}.csv.gz, node-feat/<type>/{node-feat,
                   node_<x>}.csv.gz, node-label/<type>/node-label.csv.gz
  splits           split/<scheme>/{train,valid,test}.csv.gz (node indices; per node type
                   in split/<scheme>/<type>/ when heterogeneous), or .pt files of pairs
                   (link property prediction, ogbl-*: unigraph.importers.ogb_splits)

What becomes what: one node set per node type (`nodes` when homogeneous), whose table
(only where the type has a node file) holds `#id` (the node's number), `feat` (node-feat,
float32 [d]), `labels` (node-label), and one feature per extra file (`year`,
`species`: the name after `node_`); one edge set per relation (`edges` when
homogeneous; named by the relation, or `<source>__<relation>__<target>` when a
relation name joins several type pairs) with `feat` (edge-feat) and the extra edge
files (`edge_weight` as the scalar `weight`, which is also the edge weight;
`edge_reltype` only when homogeneous: in a heterogeneous dataset the relation is the
edge set). Datasets `ogb` loads with `add_inverse_edge` (ogbn-proteins, ogbn-products,
ogbl-ppa, ogbl-collab, ogbl-ddi; `--undirected` for others) get every edge both ways;
other edge sets get a reversed edge set `rev_<name>` (no table of its own) unless
`reverse_edges=False`. Node types without node files have no table: their nodes are
the numbers their edges name (`metadata.cardinality` keeps the declared count).
"""
from __future__ import annotations

import dataclasses
import os

import numpy as np
import pyarrow as pa

from unigraph.errors import TableError
from unigraph.importers import ogb_files as files
from unigraph.importers.graph import Builder, ImportedGraph, set_name
from unigraph.importers.ogb_splits import link_splits, node_splits
from unigraph.importers.ogb_tables import Held, Streamed, edge_source, node_source

# The datasets `ogb` loads with add_inverse_edge=True (its master.csv files).
ADD_INVERSE_EDGE = frozenset({"ogbn-proteins", "ogbn-products", "ogbl-ppa", "ogbl-collab",
                              "ogbl-ddi"})
NODE, LINK = "node", "link"
HOMOGENEOUS_NODES, HOMOGENEOUS_EDGES = "nodes", "edges"
GZ = ".csv.gz"


@dataclasses.dataclass
class OgbOptions:
    task: str | None = None          # NODE or LINK; None: from the folder's name or splits
    split: str | None = None         # the split scheme (a folder of split/); None: the only one
    undirected: bool | None = None   # add_inverse_edge; None: as `ogb` loads the dataset
    reverse_edges: bool = True       # rev_<name> for every directed edge set


def is_ogb_folder(path: str) -> bool:
    """Whether `path` (or the one dataset folder inside it) is an OGB dataset folder."""
    try:
        dataset_folder(path)
        return True
    except TableError:
        return False


def dataset_folder(path: str) -> str:
    """The dataset folder `path` names: itself, its parent when it is `raw/`, or the one
    dataset folder inside it (`dataset/` holding `ogbn_mag/`)."""
    path = os.path.abspath(path)
    marks = ("edge.csv.gz", "num-node-dict.csv.gz", "data.npz", "num-node-list.csv.gz",
             "triplet-type-list.csv.gz")

    def has_raw(folder):
        raw = os.path.join(folder, "raw")
        return os.path.isdir(raw) and any(os.path.exists(os.path.join(raw, m)) for m in marks)

    if has_raw(path):
        return path
    if os.path.basename(path) == "raw" and has_raw(os.path.dirname(path)):
        return os.path.dirname(path)
    if os.path.isdir(path):
        inside = sorted(d for d in os.listdir(path) if has_raw(os.path.join(path, d)))
        if len(inside) == 1:
            return os.path.join(path, inside[0])
        if len(inside) > 1:
            raise TableError(f"{path}: holds several OGB datasets ({', '.join(inside)}); "
                             f"give one of them")
    raise TableError(f"{path}: not an OGB dataset folder (no raw/ folder with edge.csv.gz, "
                     f"num-node-dict.csv.gz or data.npz)")


def dataset_name(folder: str) -> str:
    """`ogbn_mag` -> `ogbn-mag`, as `ogb` names the folder of a dataset."""
    return os.path.basename(folder.rstrip("/")).replace("_", "-")


def from_ogb(path: str, options: OgbOptions | None = None) -> ImportedGraph:
    """The ImportedGraph of an OGB dataset folder (module docstring)."""
    options = options or OgbOptions()
    folder = dataset_folder(path)
    name = dataset_name(folder)
    raw = os.path.join(folder, "raw")
    task = options.task or _task(name, folder)
    if task not in (NODE, LINK):
        raise TableError(f"{folder}: {name} is a graph property prediction dataset (many "
                         f"graphs); the sampler samples one graph: node (ogbn-*) and link "
                         f"(ogbl-*) property prediction are imported")
    undirected = options.undirected if options.undirected is not None \
        else name in ADD_INVERSE_EDGE
    builder = Builder(f"OGB {name}")
    if os.path.exists(os.path.join(raw, "num-node-dict.csv.gz")) or os.path.exists(
            os.path.join(raw, "triplet-type-list.csv.gz")):
        counts, both_ways = _heterogeneous(builder, raw, undirected)
    elif os.path.exists(os.path.join(raw, "data.npz")):
        counts, both_ways = _binary(builder, raw, undirected), {HOMOGENEOUS_EDGES}
    else:
        counts, both_ways = _homogeneous(builder, raw, undirected), {HOMOGENEOUS_EDGES}
    if undirected and both_ways:
        builder.note(f"every edge of {', '.join(sorted(both_ways))} is read both ways "
                     f"(add_inverse_edge, as ogb loads {name})")
    if options.reverse_edges:
        added = builder.reversed_edge_sets(skip=both_ways if undirected else set())
        if added:
            builder.note(f"reversed edge sets (read backwards, no table of their own): "
                         f"{', '.join(added)}")
    if task == NODE:
        node_splits(builder, folder, counts, options.split)
    else:
        link_splits(builder, folder, counts, options.split)
    return builder.graph


def _task(name: str, folder: str) -> str:
    prefix = name.split("-", 1)[0]
    if prefix in ("ogbn", "ogbl", "ogbg"):
        return {"ogbn": NODE, "ogbl": LINK, "ogbg": "graph"}[prefix]
    split = os.path.join(folder, "split")
    for root, _, names in os.walk(split):
        if any(n.endswith(".pt") for n in names):
            return LINK
    return NODE


def _extra_name(filename: str, prefix: str) -> str:
    """`node_year.csv.gz` -> `year` (prefix `node_`)."""
    return filename[len(prefix):-len(GZ)]


def _held(path: str, name: str) -> Held:
    return Held(name, path, files.read_values(path))


def _streamed_matrix(path: str, name: str) -> Streamed:
    """A file of d floats a line, streamed as [n, d] float32 blocks (`feat`)."""
    columns = files.column_count(path)
    if columns == 0:
        raise TableError(f"{path}: empty file")

    def blocks():
        for batch in files.stream_numbers(path, columns, pa.float32()):
            yield files.matrix(batch)

    return Streamed(name, path, blocks, pa.list_(pa.float32(), columns))


def _edge_blocks(path: str):
    columns = files.column_count(path)
    if columns not in (0, 2):
        raise TableError(f"{path}: line 1: {columns} values, expected 2 (source,target)")

    def blocks():
        if columns == 0:
            return
        for batch in files.stream_numbers(path, 2, pa.int64()):
            yield files.matrix(batch)

    return blocks


def _node_columns(folder: str, feat: str, label: str | None, prefix: str):
    """(streamed, held) node columns of one folder: `feat` file, `label` file, extras."""
    streamed, held = [], []
    if os.path.exists(feat):
        streamed.append(_streamed_matrix(feat, "feat"))
    if label is not None and os.path.exists(label):
        held.append(_held(label, "labels"))
    if os.path.isdir(folder):
        for filename in sorted(os.listdir(folder)):
            if filename.startswith(prefix) and filename.endswith(GZ):
                held.append(_held(os.path.join(folder, filename),
                                  _extra_name(filename, prefix)))
    return streamed, held


def _edge_columns(folder: str, keep_reltype: bool):
    """(streamed, held) edge columns of one folder: edge-feat and the edge_<x> files."""
    streamed, held = [], []
    feat = os.path.join(folder, "edge-feat" + GZ)
    if os.path.exists(feat):
        streamed.append(_streamed_matrix(feat, "feat"))
    for filename in sorted(os.listdir(folder)):
        if filename.startswith("edge_") and filename.endswith(GZ):
            name = _extra_name(filename, "edge_")
            if name == "reltype" and not keep_reltype:
                continue
            column = _held(os.path.join(folder, filename), name)
            if name == "weight" and column.values.ndim == 2 and column.values.shape[1] == 1:
                column.values = column.values.reshape(-1).astype(np.float64)
            held.append(column)
    return streamed, held


def _single_count(path: str, what: str) -> int:
    if not os.path.exists(path):
        raise TableError(f"{path}: no such file (an OGB dataset lists its {what} there)")
    counts = files.read_counts(path)
    if len(counts) != 1:
        raise TableError(f"{path}: {len(counts)} graphs; the sampler imports a dataset of one "
                         f"graph (node and link property prediction)")
    return counts[0]


def _homogeneous(builder: Builder, raw: str, undirected: bool) -> dict[str, int]:
    nodes = _single_count(os.path.join(raw, "num-node-list" + GZ), "node count")
    edges_path = os.path.join(raw, "edge" + GZ)
    if not os.path.exists(edges_path):
        raise TableError(f"{edges_path}: no such file (an OGB dataset lists its edges there)")
    declared = os.path.join(raw, "num-edge-list" + GZ)
    edges = _single_count(declared, "edge count") if os.path.exists(declared) else None
    streamed, held = _node_columns(raw, os.path.join(raw, "node-feat" + GZ),
                                   os.path.join(raw, "node-label" + GZ), "node_")
    species = os.path.join(raw, "species" + GZ)  # ogbn-proteins' node_species, unrenamed
    if os.path.exists(species) and not any(c.name == "species" for c in held):
        held.append(_held(species, "species"))
    what = f"node set '{HOMOGENEOUS_NODES}' (num-node-list)"
    builder.node_set(HOMOGENEOUS_NODES, node_source(HOMOGENEOUS_NODES, nodes, what,
                                                    streamed, held)
                     if streamed or held else None, nodes)
    e_streamed, e_held = _edge_columns(raw, keep_reltype=True)
    builder.edge_set(HOMOGENEOUS_EDGES, HOMOGENEOUS_NODES, HOMOGENEOUS_NODES,
                     edge_source(HOMOGENEOUS_EDGES, edges_path, _edge_blocks(edges_path),
                                 (nodes, nodes), (HOMOGENEOUS_NODES, HOMOGENEOUS_NODES),
                                 edges, e_streamed, e_held, undirected))
    return {HOMOGENEOUS_NODES: nodes}


def _npz_count(archive: files.NpzMembers, key: str) -> int:
    shape, dtype = archive.shape(key)
    if shape != (1,) or dtype.kind not in "iu":
        raise TableError(f"{archive.path}: '{key}' of shape {list(shape)} and dtype {dtype}; "
                         f"the sampler imports a dataset of one graph")
    return files.checked_count(f"{archive.path} ({key})", archive.whole(key)[0])


def _npz_streamed(archive: files.NpzMembers, key: str, name: str, rows: int,
                  what: str) -> Streamed:
    """A member of one row per node or edge, streamed (floats as float32, as ogb has them)."""
    shape, dtype = archive.shape(key)
    if not shape or shape[0] != rows:
        raise TableError(f"{archive.path}: '{key}' has {shape[0] if shape else 0:,} rows, but "
                         f"the dataset has {rows:,} {what}")
    if dtype.kind not in "biuf":
        raise TableError(f"{archive.path}: '{key}' of dtype {dtype} is not numbers")
    target = np.dtype(np.float32) if dtype.kind == "f" else np.dtype(np.int64)
    arrow = pa.from_numpy_dtype(target)
    for size in reversed(shape[1:]):
        arrow = pa.list_(arrow, size)

    def blocks():
        for block in archive.rows(key):
            yield block.astype(target, copy=False)

    return Streamed(name, f"{archive.path} ({key})", blocks, arrow)


def _binary(builder: Builder, raw: str, undirected: bool) -> dict[str, int]:
    """raw/data.npz (and raw/node-label.npz): one homogeneous graph, streamed by rows."""
    archive = files.NpzMembers(os.path.join(raw, "data.npz"))
    nodes, edges = _npz_count(archive, "num_nodes_list"), _npz_count(archive, "num_edges_list")
    shape, dtype = archive.shape("edge_index")
    if len(shape) != 2 or shape[0] != 2 or shape[1] != edges or dtype.kind not in "iu":
        raise TableError(f"{archive.path}: 'edge_index' of shape {list(shape)} and dtype "
                         f"{dtype}, expected integers of shape [2, {edges}]")
    streamed = [_npz_streamed(archive, key, "feat" if key == "node_feat" else
                              key[len("node_"):], nodes, "nodes")
                for key in sorted(archive.names) if key.startswith("node_")]
    streamed.sort(key=lambda column: column.name != "feat")
    held = []
    labels = os.path.join(raw, "node-label.npz")
    if os.path.exists(labels):
        label_archive = files.NpzMembers(labels)
        key = "node_label" if "node_label" in label_archive.names else min(
            label_archive.names, default="node_label")
        label_archive.shape(key)  # checked before it is read
        held.append(Held("labels", f"{labels} ({key})", label_archive.whole(key)))
    builder.node_set(HOMOGENEOUS_NODES, node_source(
        HOMOGENEOUS_NODES, nodes, f"node set '{HOMOGENEOUS_NODES}' (num_nodes_list)",
        streamed, held) if streamed or held else None, nodes)
    e_streamed = [_npz_streamed(archive, key, "feat" if key == "edge_feat" else
                                key[len("edge_"):], edges, "edges")
                  for key in sorted(archive.names)
                  if key.startswith("edge_") and key != "edge_index"]
    builder.edge_set(HOMOGENEOUS_EDGES, HOMOGENEOUS_NODES, HOMOGENEOUS_NODES,
                     edge_source(HOMOGENEOUS_EDGES, f"{archive.path} (edge_index)",
                                 lambda: archive.columns("edge_index"), (nodes, nodes),
                                 (HOMOGENEOUS_NODES, HOMOGENEOUS_NODES), edges, e_streamed, [],
                                 undirected))
    return {HOMOGENEOUS_NODES: nodes}


def _heterogeneous(builder: Builder, raw: str, undirected: bool
                   ) -> tuple[dict[str, int], set[str]]:
    """The node types' counts, and the edge sets read both ways (within one node type)."""
    counts_path = os.path.join(raw, "num-node-dict" + GZ)
    if not os.path.exists(counts_path):
        raise TableError(f"{counts_path}: no such file (a heterogeneous OGB dataset lists its "
                         f"node types and their counts there)")
    table = files.read_header_table(counts_path)
    if not table:
        raise TableError(f"{counts_path}: no node types")
    counts = {}
    for node_type, values in table.items():
        if len(values) != 1:
            raise TableError(f"{counts_path}: node type '{node_type}' has {len(values)} counts; "
                             f"the sampler imports a dataset of one graph")
        counts[node_type] = files.checked_count(counts_path, values[0])
    names = {t: set_name(t) for t in counts}
    for node_type, count in sorted(counts.items()):
        folder = os.path.join(raw, "node-feat", node_type)
        streamed, held = _node_columns(folder, os.path.join(folder, "node-feat" + GZ),
                                       os.path.join(raw, "node-label", node_type,
                                                    "node-label" + GZ), "node_")
        what = f"node set '{names[node_type]}' (num-node-dict)"
        builder.node_set(names[node_type], node_source(names[node_type], count, what,
                                                       streamed, held)
                         if streamed or held else None, count)
    triplets = _triplets(raw)
    relations = [r for _, r, _ in triplets]
    both_ways = set()
    for source_type, relation, target_type in triplets:
        for node_type in (source_type, target_type):
            if node_type not in counts:
                raise TableError(f"{counts_path}: no node type '{node_type}', which relation "
                                 f"'{source_type}___{relation}___{target_type}' names")
        folder = os.path.join(raw, "relations", f"{source_type}___{relation}___{target_type}")
        edges_path = os.path.join(folder, "edge" + GZ)
        if not os.path.exists(edges_path):
            raise TableError(f"{edges_path}: no such file (the relation's edges)")
        declared = os.path.join(folder, "num-edge-list" + GZ)
        edges = _single_count(declared, "edge count") if os.path.exists(declared) else None
        name = set_name(relation if relations.count(relation) == 1
                        else f"{source_type}__{relation}__{target_type}")
        streamed, held = _edge_columns(folder, keep_reltype=False)
        ends = (names[source_type], names[target_type])
        builder.edge_set(name, *ends, edge_source(
            name, edges_path, _edge_blocks(edges_path),
            (counts[source_type], counts[target_type]), ends, edges, streamed, held,
            undirected and source_type == target_type))
        if source_type == target_type:
            both_ways.add(name)
    return {names[t]: c for t, c in counts.items()}, both_ways


def _triplets(raw: str) -> list[tuple[str, str, str]]:
    """The relations: triplet-type-list.csv.gz, else the folders of relations/."""
    path = os.path.join(raw, "triplet-type-list" + GZ)
    if os.path.exists(path):
        rows = files.read_rows_of_text(path, 3)
        return sorted((h, r, t) for h, r, t in rows)
    folder = os.path.join(raw, "relations")
    if not os.path.isdir(folder):
        raise TableError(f"{path}: no such file, nor {folder} (the relations of a "
                         f"heterogeneous OGB dataset)")
    found = []
    for name in sorted(os.listdir(folder)):
        parts = name.split("___")
        if len(parts) != 3:
            raise TableError(f"{os.path.join(folder, name)}: a relation folder is named "
                             f"<source>___<relation>___<target>")
        found.append(tuple(parts))
    return found
