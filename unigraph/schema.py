"""Loading and checking a unigraph GraphSchema.

A schema is a text-format GraphSchema (TF-GNN's format) in a `.pbtxt` file, or a
folder holding `graph_schema.pbtxt`. A set's table is files named relative to
the schema's folder (`metadata.filename`), or a BigQuery table or query
(`metadata.bigquery`; when both are given, the files win, as in TF-GNN).
`load_schema` parses it; `check_schema` enforces what the readers and the
output encoding rely on; `table_files` expands file names, `bigquery_source`
names a BigQuery table.
"""
from __future__ import annotations

import dataclasses
import os
import re
from typing import Mapping

import numpy as np
from google.protobuf import text_format

from unigraph.columnar.table_source import TableSource
from unigraph.storage import bigquery
from unigraph.protos import graph_schema_pb2 as gs
from unigraph.storage import paths
from unigraph.errors import SchemaError, TableError, one_line, text_format_message
from unigraph.store_manifest import MANIFEST_NAME, StoreInfo, check_sets, is_store, read_store
from unigraph.timestamps import check_declared_timestamp

SCHEMA_FILE_NAME = "graph_schema.pbtxt"

# Column names the tables may use for ids, endpoints and edge weights; the first
# spelling is the canonical one.
ID_COLUMNS = ("#id", "id")
SOURCE_COLUMNS = ("#source", "source")
TARGET_COLUMNS = ("#target", "target")
WEIGHT_COLUMNS = ("#weight", "weight")

# Feature names the output encoding writes itself.
RESERVED_FEATURES = {"#size", "#source", "#target", "#id"}
RESERVED_CONTEXT_FEATURES = {"seed_id", "seed_timestamp", "source_id", "target_id"}
READOUT_PREFIX = "_readout"
# TF-GNN's link-prediction schemas declare these auxiliary sets themselves (for
# `symmetric_link_seed_op`): the node set whose features the pairs table gives, and
# one edge set from each endpoint's node set S to it. They have no tables.
LINK_READOUT_NODE_SET = "_readout"
LINK_READOUT_EDGE_SETS = ("_readout/source", "_readout/target")
_RAGGED_SUFFIX = re.compile(r"\.d\d+$")

# Schema dtype -> numpy dtype of the decoded values.
NUMPY_DTYPES = {
    gs.DT_FLOAT: np.dtype(np.float32),
    gs.DT_DOUBLE: np.dtype(np.float64),
    gs.DT_HALF: np.dtype(np.float16),
    gs.DT_INT64: np.dtype(np.int64),
    gs.DT_INT32: np.dtype(np.int32),
    gs.DT_INT16: np.dtype(np.int16),
    gs.DT_INT8: np.dtype(np.int8),
    gs.DT_UINT8: np.dtype(np.uint8),
    gs.DT_UINT16: np.dtype(np.uint16),
    gs.DT_UINT32: np.dtype(np.uint32),
    gs.DT_BOOL: np.dtype(np.bool_),
    gs.DT_STRING: np.dtype(object),  # values are bytes
}


@dataclasses.dataclass(frozen=True)
class LoadedSchema:
    """A parsed GraphSchema and where it came from."""

    schema: gs.GraphSchema
    path: str    # the .pbtxt file (a store's manifest)
    folder: str  # relative table names resolve here
    # A prepared graph store (unigraph.store_manifest): its tables are mapped arrays, and
    # what planning needs to know of the tables comes from its manifest.
    store: StoreInfo | None = None
    # A graph held in memory (unigraph.importers, sampler.api.load_graph of a PyG graph):
    # each table, by its metadata.filename, as Arrow batches instead of files.
    memory: Mapping[str, TableSource] | None = None

    # Beam pickles DoFns with cloudpickle, which cannot pickle upb descriptors; a schema
    # travels to workers as its serialized bytes instead.
    def __getstate__(self):
        return {"schema": self.schema.SerializeToString(), "path": self.path,
                "folder": self.folder, "store": self.store, "memory": self.memory}

    def __setstate__(self, state):
        object.__setattr__(self, "schema", gs.GraphSchema.FromString(state["schema"]))
        object.__setattr__(self, "path", state["path"])
        object.__setattr__(self, "folder", state["folder"])
        object.__setattr__(self, "store", state.get("store"))
        object.__setattr__(self, "memory", state.get("memory"))

    def node_set(self, name: str) -> gs.NodeSet:
        return self.schema.node_sets[name]

    def edge_set(self, name: str) -> gs.EdgeSet:
        return self.schema.edge_sets[name]


def dtype_name(dtype: int) -> str:
    return gs.DataType.Name(dtype) if dtype in gs.DataType.values() else str(dtype)


def feature_shape(feature: gs.Feature) -> tuple[int, ...]:
    """The per-item shape; -1 marks a ragged dimension."""
    return tuple(dim.size for dim in feature.shape.dim)


def numpy_dtype(feature: gs.Feature) -> np.dtype:
    return NUMPY_DTYPES[feature.dtype]


def parse_schema_text(text: str, source: str) -> gs.GraphSchema:
    schema = gs.GraphSchema()
    try:
        text_format.Parse(text, schema)
    except text_format.ParseError as e:
        raise SchemaError(f"graph schema {text_format_message(e, source)}") from None
    return schema


def load_schema(path: str, data_path: str | None = None) -> LoadedSchema:
    """Reads a schema from a `.pbtxt` file or a folder holding graph_schema.pbtxt.

    Its tables are named relative to `data_path` if given (TF-GNN's --data_path), else
    to the schema's own folder."""
    file_path = path
    folder_given = not path.endswith((".pbtxt", ".pb.txt", ".textproto"))
    if folder_given and is_store(path):
        if data_path is not None:
            raise SchemaError(f"--data_path {data_path}: {path} is a graph store, which holds "
                              f"its own data; leave --data_path out")
        text, store = read_store(path)
        manifest = os.path.join(store.folder, MANIFEST_NAME)
        schema = parse_schema_text(text, manifest)
        check_sets(store, list(schema.node_sets),
                   [n for n in schema.edge_sets if not is_link_readout("edge set", n)])
        return LoadedSchema(schema, manifest, store.folder, store)
    if folder_given and paths.exists(paths.join(path, SCHEMA_FILE_NAME)):
        file_path = paths.join(path, SCHEMA_FILE_NAME)
    elif folder_given and paths.exists(paths.join(path, MANIFEST_NAME)):
        read_store(path)  # a damaged or foreign store.json and no schema: say what it is
        raise SchemaError(f"graph schema {path}: no {SCHEMA_FILE_NAME} in it, and its "
                          f"{MANIFEST_NAME} is not a graph store's")
    if not paths.exists(file_path):
        raise SchemaError(f"graph schema {path}: no such file (nor {SCHEMA_FILE_NAME} in it)")
    try:
        text = paths.read_text(file_path)
    except (OSError, UnicodeDecodeError) as e:
        raise SchemaError(f"graph schema {file_path}: cannot read: {one_line(e)}") from None
    if data_path is not None and not paths.is_folder(data_path):
        raise SchemaError(f"--data_path {data_path}: no such folder")
    folder = data_path.rstrip("/") if data_path else paths.dirname(file_path)
    return LoadedSchema(parse_schema_text(text, file_path), file_path, folder)


def _check_feature(where: str, name: str, feature: gs.Feature, reserved: set[str]) -> None:
    if not name:
        raise SchemaError(f"{where}: a feature has an empty name")
    if name in reserved:
        raise SchemaError(f"{where}: feature name '{name}' is reserved by the output encoding")
    if _RAGGED_SUFFIX.search(name):
        raise SchemaError(
            f"{where}: feature name '{name}' ends like a ragged row-length key (.d<k>); rename it")
    if feature.dtype not in NUMPY_DTYPES:
        supported = ", ".join(sorted(dtype_name(d) for d in NUMPY_DTYPES))
        raise SchemaError(
            f"{where}: feature '{name}' has dtype {dtype_name(feature.dtype)}, "
            f"supported: {supported}")
    if feature.shape.unknown_rank:
        raise SchemaError(f"{where}: feature '{name}' has unknown rank; give every dimension")
    for i, size in enumerate(feature_shape(feature)):
        if size < -1:
            raise SchemaError(
                f"{where}: feature '{name}' dimension {i} has size {size}; "
                f"use a size >= 0, or -1 for a ragged dimension")
    problem = shape_problem(feature_shape(feature))
    if problem is not None:
        raise SchemaError(f"{where}: feature '{name}' {problem}")


# A declared shape sizes what the readers allocate per row (a vector's values, the columns
# of CSV's fast path): bounded before anything is read. 2**24 values is a 64 MB float
# vector per row; no feature of a graph one samples comes near.
MAX_RANK, MAX_ITEM_VALUES = 32, 1 << 24


def shape_problem(shape: tuple[int, ...]) -> str | None:
    """Why a declared per-item shape is beyond what the readers take (None: it is not)."""
    if len(shape) > MAX_RANK:
        return f"has {len(shape)} dimensions, more than {MAX_RANK}"
    values = 1
    for size in shape:
        values *= max(size, 1)
        if values > MAX_ITEM_VALUES:
            return (f"has shape {list(shape)}: more than {MAX_ITEM_VALUES} values per item, "
                    f"the most a reader allocates for one")
    return None


def is_link_readout(kind: str, name: str) -> bool:
    """Whether a set is one of the auxiliary sets of a link-prediction schema."""
    return name == LINK_READOUT_NODE_SET if kind == "node set" else name in LINK_READOUT_EDGE_SETS


def link_node_set(schema: gs.GraphSchema) -> str | None:
    """The node set S a link-prediction schema pairs (the source of `_readout/source`)."""
    edge_set = schema.edge_sets.get(LINK_READOUT_EDGE_SETS[0])
    return edge_set.source if edge_set is not None else None


def _check_link_readout(schema: gs.GraphSchema, source: str) -> None:
    """The auxiliary sets, if declared, are TF-GNN's link structure and nothing else."""
    declared = [n for n in LINK_READOUT_EDGE_SETS if n in schema.edge_sets]
    has_node = LINK_READOUT_NODE_SET in schema.node_sets
    if not declared and not has_node:
        return
    where = f"graph schema {source}"
    if len(declared) != 2 or not has_node:
        raise SchemaError(
            f"{where}: a link-prediction schema declares node set '{LINK_READOUT_NODE_SET}' "
            f"and edge sets '{LINK_READOUT_EDGE_SETS[0]}' and '{LINK_READOUT_EDGE_SETS[1]}'; "
            f"found {', '.join(repr(n) for n in ([LINK_READOUT_NODE_SET] if has_node else []) + declared)}")
    ends = [(schema.edge_sets[n].source, schema.edge_sets[n].target) for n in declared]
    for name, (start, end) in zip(declared, ends):
        if end != LINK_READOUT_NODE_SET or not start or start == LINK_READOUT_NODE_SET:
            raise SchemaError(f"{where}: edge set '{name}' must go from the paired node set to "
                              f"'{LINK_READOUT_NODE_SET}', found {start!r} -> {end!r}")
    if ends[0][0] != ends[1][0]:
        raise SchemaError(f"{where}: '{declared[0]}' and '{declared[1]}' must start at one node "
                          f"set, found '{ends[0][0]}' and '{ends[1][0]}'")
    readout = schema.node_sets[LINK_READOUT_NODE_SET]
    if has_table(readout.metadata):
        raise SchemaError(f"{where}: node set '{LINK_READOUT_NODE_SET}' has no table of its own "
                          f"(its features come from the pairs table given with --seeds)")
    for name in declared:
        if has_table(schema.edge_sets[name].metadata) or schema.edge_sets[name].features:
            raise SchemaError(f"{where}: edge set '{name}' is auxiliary: no table, no features")
    for name, feature in readout.features.items():
        if name in SOURCE_COLUMNS + TARGET_COLUMNS:
            continue
        if -1 in feature_shape(feature):
            raise SchemaError(f"{where}: node set '{LINK_READOUT_NODE_SET}': feature '{name}' "
                              f"must have a fixed shape (pairs-table features are not ragged)")


def _check_name(kind: str, name: str, source: str) -> None:
    if not name:
        raise SchemaError(f"graph schema {source}: a {kind} has an empty name")
    if name.startswith(READOUT_PREFIX) and not is_link_readout(kind, name):
        raise SchemaError(
            f"graph schema {source}: {kind} '{name}' uses the prefix '{READOUT_PREFIX}' "
            f"that the output's readout structure reserves")
    if "." in name:
        raise SchemaError(
            f"graph schema {source}: {kind} '{name}' contains '.', which the tf.Example "
            f"keys (nodes/<set>.<feature>) cannot tell apart")


def check_schema(loaded: LoadedSchema, *, check_files: bool = True) -> None:
    """Raises SchemaError/TableError naming the first problem found."""
    schema, source = loaded.schema, loaded.path
    if not schema.node_sets:
        raise SchemaError(f"graph schema {source}: no node sets")
    for name, feature in schema.context.features.items():
        _check_feature(f"graph schema {source}: context", name, feature,
                       RESERVED_FEATURES | RESERVED_CONTEXT_FEATURES)
    _check_link_readout(schema, source)
    for set_name, node_set in schema.node_sets.items():
        _check_name("node set", set_name, source)
        where = f"graph schema {source}: node set '{set_name}'"
        for name, feature in node_set.features.items():
            if set_name == LINK_READOUT_NODE_SET and name in SOURCE_COLUMNS + TARGET_COLUMNS:
                continue  # TF-GNN may declare the pair's ends; they are the key columns
            if name in ID_COLUMNS:
                if feature.dtype != gs.DT_STRING or feature_shape(feature):
                    raise SchemaError(f"{where}: id feature '{name}' must be a DT_STRING scalar")
                continue
            _check_feature(where, name, feature, RESERVED_FEATURES)
        if set_name != LINK_READOUT_NODE_SET and not has_table(node_set.metadata) and any(
                n not in ID_COLUMNS for n in node_set.features):
            raise SchemaError(f"{where}: has features but no table "
                              f"(metadata.filename or metadata.bigquery)")
    for set_name, edge_set in schema.edge_sets.items():
        _check_name("edge set", set_name, source)
        if is_link_readout("edge set", set_name):
            continue  # checked above
        where = f"graph schema {source}: edge set '{set_name}'"
        for end, node_set_name in (("source", edge_set.source), ("target", edge_set.target)):
            if not node_set_name:
                raise SchemaError(f"{where}: no {end} node set")
            if node_set_name not in schema.node_sets:
                known = ", ".join(sorted(schema.node_sets))
                raise SchemaError(
                    f"{where}: {end} node set '{node_set_name}' does not exist (node sets: {known})")
        for name, feature in edge_set.features.items():
            if name in WEIGHT_COLUMNS:
                if feature.dtype not in (gs.DT_FLOAT, gs.DT_DOUBLE, gs.DT_INT64, gs.DT_INT32) \
                        or feature_shape(feature):
                    raise SchemaError(
                        f"{where}: weight feature '{name}' must be a numeric scalar, found "
                        f"{dtype_name(feature.dtype)} of shape {list(feature_shape(feature))}")
                continue
            _check_feature(where, name, feature, RESERVED_FEATURES)
        if not has_table(edge_set.metadata):
            raise SchemaError(f"{where}: no table (metadata.filename or metadata.bigquery)")
    for kind, name in [("nodes", n) for n in schema.node_sets] + [
            ("edges", n) for n in schema.edge_sets]:
        problem = check_declared_timestamp(
            loaded, kind, name, f"graph schema {source}: {kind[:-1]} set '{name}'")
        if problem:
            raise SchemaError(problem)
    for kind, name in set_names(schema):
        # A BigQuery source is checked here for its form; whether the table exists and
        # holds the columns is checked when it is opened for reading (or by --dry-run).
        if bigquery_source(loaded, kind, name) is None and check_files and loaded.store is None:
            table_files(loaded, kind, name)


def has_table(metadata: gs.Metadata) -> bool:
    """Whether a set's metadata names a table: files, or BigQuery."""
    return bool(metadata.filename) or metadata.HasField("bigquery")


def set_names(schema: gs.GraphSchema) -> list[tuple[str, str]]:
    """('nodes', name) and ('edges', name) for every set that has a table."""
    result = [("nodes", n) for n, s in sorted(schema.node_sets.items())
              if has_table(s.metadata)]
    result += [("edges", n) for n, s in sorted(schema.edge_sets.items())
               if not is_link_readout("edge set", n)]
    return result


def _set_metadata(loaded: LoadedSchema, kind: str, name: str) -> tuple[gs.Metadata, str]:
    pieces = loaded.schema.node_sets if kind == "nodes" else loaded.schema.edge_sets
    return pieces[name].metadata, f"{'node' if kind == 'nodes' else 'edge'} set '{name}'"


def bigquery_source(loaded: LoadedSchema, kind: str, name: str) -> bigquery.Source | None:
    """The BigQuery table or query of a set whose table is in BigQuery, else None."""
    metadata, what = _set_metadata(loaded, kind, name)
    if metadata.filename or not metadata.HasField("bigquery"):
        return None
    return bigquery.source_from_metadata(metadata.bigquery, what,
                                         f"graph schema {loaded.path}: {what}")


def memory_source(loaded: LoadedSchema, kind: str, name: str) -> TableSource | None:
    """The Arrow batches of a set's table in a graph held in memory, else None."""
    if loaded.memory is None:
        return None
    metadata, what = _set_metadata(loaded, kind, name)
    if metadata.filename not in loaded.memory:
        raise TableError(f"graph schema {loaded.path}: {what}: table '{metadata.filename}' is "
                         f"not among the tables held in memory")
    return loaded.memory[metadata.filename]


def table_files(loaded: LoadedSchema, kind: str, name: str) -> list[str]:
    """The files of a node set's ('nodes') or edge set's ('edges') table (a table held in
    memory: its name, `memory:<filename>`)."""
    metadata, what = _set_metadata(loaded, kind, name)
    source = memory_source(loaded, kind, name)
    if source is not None:
        return [source.name]
    if loaded.store is not None:
        raise TableError(f"graph store {loaded.store.folder}: {what} is mapped from the store, "
                         f"its table is not kept there (only the in-memory engine reads a store)")
    filename = metadata.filename
    if not filename:
        if metadata.HasField("bigquery"):
            raise TableError(f"graph schema {loaded.path}: {what} is a BigQuery table "
                             f"(metadata.bigquery), not files")
        raise TableError(f"graph schema {loaded.path}: {what} has no table (metadata.filename)")
    files = paths.expand(filename, loaded.folder, what=f"graph schema {loaded.path}: {what}")
    for f in files:
        paths.file_format(f)  # fail early on an unknown format
    return files
