"""An imported graph before it is written: a GraphSchema whose tables are Arrow sources.

Every importer (OGB folders, PyG and DGL graphs, plain tables) builds an
`ImportedGraph`: the schema with every set, feature, dtype and shape declared, each
table as an `TableSource` (unigraph.columnar.table_source) holding the columns a table
file of the graph has (`#id`; `#source`, `#target`; one column per feature), the
labelled node set and the splits (one seeds or pairs table each). From there it is
either written (unigraph.importers.write: tables in any format, the schema, the
splits and a starting sampling spec) or sampled as it is (`loaded()`, which
`sampler.api.load_graph` takes): both read the sources through the same readers, so
the subgraphs are the same.

Features are declared from the Arrow types of the columns (`feature_of`): numbers
and strings as scalars, fixed-size lists as fixed dimensions, lists as ragged ones.
The schema names a table by its stem (`paper`); the writer adds the extension.
"""
from __future__ import annotations

import dataclasses
import re

import pyarrow as pa

from unigraph.columnar.table_source import TableSource
from unigraph.errors import SchemaError
from unigraph.protos import graph_schema_pb2 as gs
from unigraph.schema import (ID_COLUMNS, LINK_READOUT_EDGE_SETS, LINK_READOUT_NODE_SET,
                             SOURCE_COLUMNS, TARGET_COLUMNS, WEIGHT_COLUMNS, LoadedSchema)

ID, SOURCE, TARGET = ID_COLUMNS[0], SOURCE_COLUMNS[0], TARGET_COLUMNS[0]
PAIR_SOURCE, PAIR_TARGET = SOURCE_COLUMNS[1], TARGET_COLUMNS[1]  # as a pairs table names them
REVERSED_PREFIX = "rev_"   # PyG's ToUndirected names a reversed edge type so
SEEDS_PREFIX, PAIRS_PREFIX = "seeds-", "pairs-"

_ARROW_DTYPES = {
    pa.float32(): gs.DT_FLOAT, pa.float64(): gs.DT_DOUBLE, pa.float16(): gs.DT_HALF,
    pa.int64(): gs.DT_INT64, pa.int32(): gs.DT_INT32, pa.int16(): gs.DT_INT16,
    pa.int8(): gs.DT_INT8, pa.uint8(): gs.DT_UINT8, pa.uint16(): gs.DT_UINT16,
    pa.uint32(): gs.DT_UINT32, pa.bool_(): gs.DT_BOOL, pa.string(): gs.DT_STRING,
    pa.binary(): gs.DT_STRING, pa.large_string(): gs.DT_STRING,
    pa.large_binary(): gs.DT_STRING,
}
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")


@dataclasses.dataclass
class Split:
    """One split's seeds (`#id`) or pairs (`source`, `target`, the pairs' features)."""

    name: str             # "train", "valid", "test", ...: the file is seeds-<name>.<ext>
    source: TableSource


@dataclasses.dataclass
class ImportedGraph:
    origin: str                                   # what was imported, for messages
    schema: gs.GraphSchema                        # metadata.filename: table stems
    tables: dict[str, TableSource]                # stem -> its rows
    seed_set: str | None = None                   # the labelled node set (the spec's seeds)
    link: bool = False                            # splits are pairs of seed_set's nodes
    label: str | None = None                      # seed_set's feature holding the labels
    splits: list[Split] = dataclasses.field(default_factory=list)
    notes: list[str] = dataclasses.field(default_factory=list)  # what the importer decided

    def loaded(self) -> LoadedSchema:
        """The graph as the readers and the sampler take it, tables held in memory."""
        schema = gs.GraphSchema()
        schema.CopyFrom(self.schema)
        return LoadedSchema(schema, f"({self.origin})", ".", memory=dict(self.tables))

    def split_file_stem(self, split: Split) -> str:
        return f"{PAIRS_PREFIX if self.link else SEEDS_PREFIX}{split.name}"


def file_stem(name: str) -> str:
    """A set's name as a file name: other characters than letters, digits, `_` and `-`
    become `_` (never a path, never hidden)."""
    return _UNSAFE.sub("_", name)[:120] or "table"


def set_name(name: str) -> str:
    """A name from the input as a set name the schema allows (no '.', not `_readout`)."""
    name = str(name).replace(".", "_") or "unnamed"
    return "x" + name if name.startswith("_readout") else name


def feature_of(arrow_type: pa.DataType, where: str) -> gs.Feature:
    """The schema's Feature (dtype, shape) of a column of this Arrow type."""
    feature = gs.Feature()
    dims = []
    while pa.types.is_list(arrow_type) or pa.types.is_large_list(arrow_type) \
            or pa.types.is_fixed_size_list(arrow_type):
        dims.append(arrow_type.list_size if pa.types.is_fixed_size_list(arrow_type) else -1)
        arrow_type = arrow_type.value_type
    if arrow_type not in _ARROW_DTYPES:
        raise SchemaError(f"{where}: values of type {arrow_type} have no unigraph dtype "
                          f"(numbers, booleans and strings do)")
    feature.dtype = _ARROW_DTYPES[arrow_type]
    for size in dims:
        feature.shape.dim.add(size=size)
    return feature


def _declare(features, schema: pa.Schema, skip: tuple[str, ...], where: str) -> None:
    for field in schema:
        if field.name not in skip:
            features[field.name].CopyFrom(feature_of(field.type, f"{where} column "
                                                                 f"'{field.name}'"))


class Builder:
    """Declares sets and their tables into an ImportedGraph, one call per set."""

    def __init__(self, origin: str):
        self.graph = ImportedGraph(origin, gs.GraphSchema(), {})
        self._stems: set[str] = set()

    def _table(self, name: str, source: TableSource) -> str:
        stem = file_stem(name)
        while stem in self._stems or stem.startswith((SEEDS_PREFIX, PAIRS_PREFIX)):
            stem = "_" + stem
        self._stems.add(stem)
        self.graph.tables[stem] = source
        return stem

    def node_set(self, name: str, source: TableSource | None = None,
                 count: int | None = None,
                 features: dict[str, gs.Feature] | None = None) -> gs.NodeSet:
        """A node set; its table (an `#id` column and the features) if it has one. The
        features are declared from the source's Arrow types unless given."""
        node_set = self.graph.schema.node_sets[name]
        if source is not None:
            node_set.metadata.filename = self._table(name, source)
            if features is None:
                _declare(node_set.features, source.schema, ID_COLUMNS, f"node set '{name}':")
        for feature_name, feature in (features or {}).items():
            node_set.features[feature_name].CopyFrom(feature)
        if count is not None:
            node_set.metadata.cardinality = count
        return node_set

    def edge_set(self, name: str, source_set: str, target_set: str, source: TableSource,
                 features: dict[str, gs.Feature] | None = None) -> gs.EdgeSet:
        """An edge set and its table (`#source`, `#target`, features; a `#weight` column
        is the weight, not a feature, and `weight` both)."""
        edge_set = self.graph.schema.edge_sets[name]
        edge_set.source, edge_set.target = source_set, target_set
        edge_set.metadata.filename = self._table(name, source)
        if features is None:
            _declare(edge_set.features, source.schema,
                     SOURCE_COLUMNS + TARGET_COLUMNS + WEIGHT_COLUMNS[:1], f"edge set '{name}':")
        for feature_name, feature in (features or {}).items():
            edge_set.features[feature_name].CopyFrom(feature)
        return edge_set

    def reversed_edge_sets(self, skip: set[str] = frozenset()) -> list[str]:
        """For every edge set not in `skip`, `rev_<name>` reading its table backwards
        (TF-GNN's `edge_type: reversed`; no table of its own). Returns the new names."""
        schema = self.graph.schema
        added = []
        for name in sorted(schema.edge_sets):
            if name in skip or name.startswith(LINK_READOUT_NODE_SET):
                continue
            forward = schema.edge_sets[name]
            new = REVERSED_PREFIX + name
            while new in schema.edge_sets:
                new = "_" + new if new.startswith(REVERSED_PREFIX) else new + "_"
            reverse = schema.edge_sets[new]
            reverse.source, reverse.target = forward.target, forward.source
            reverse.metadata.filename = forward.metadata.filename
            reverse.metadata.extra.add(key="edge_type", value="reversed")
            for feature_name, feature in forward.features.items():
                reverse.features[feature_name].CopyFrom(feature)
            added.append(new)
        return added

    def seeds(self, seed_set: str, label: str | None, splits: list[Split]) -> None:
        self.graph.seed_set, self.graph.label, self.graph.link = seed_set, label, False
        self.graph.splits = splits

    def pairs(self, link_set: str, splits: list[Split]) -> None:
        """Link seeds: pairs of `link_set`'s nodes, with TF-GNN's `_readout` sets whose
        features are the pairs tables' columns besides `source` and `target`."""
        schema = self.graph.schema
        readout = schema.node_sets[LINK_READOUT_NODE_SET]
        if splits:
            _declare(readout.features, splits[0].source.schema, SOURCE_COLUMNS + TARGET_COLUMNS,
                     "pairs:")
        for name in LINK_READOUT_EDGE_SETS:
            schema.edge_sets[name].source = link_set
            schema.edge_sets[name].target = LINK_READOUT_NODE_SET
        self.graph.seed_set, self.graph.link, self.graph.splits = link_set, True, splits

    def note(self, text: str) -> None:
        self.graph.notes.append(text)
