"""What a table must hold, derived once from the schema: its columns and features.

A TableLayout is small and picklable, so Beam DoFns carry it instead of the
whole schema. Data shapes:
  FeatureSpec = (name, numpy dtype, per-item shape with -1 for ragged dims)
  TableLayout = kind ('nodes' | 'edges' | 'seeds'), set name, the feature specs,
                and for edge sets whether the table is read backwards.
"""
from __future__ import annotations

import dataclasses

import numpy as np

from unigraph.protos import graph_schema_pb2 as gs
from unigraph.errors import SchemaError
from unigraph.schema import (ID_COLUMNS, LINK_READOUT_NODE_SET, SOURCE_COLUMNS, TARGET_COLUMNS,
                             WEIGHT_COLUMNS, LoadedSchema, dtype_name, feature_shape, numpy_dtype)

NODES, EDGES, SEEDS, PAIRS = "nodes", "edges", "seeds", "pairs"
# Rows per emitted batch: big enough to amortise per-element costs in Beam,
# small enough (a few MB for typical features) to ship between workers cheaply.
DEFAULT_BATCH_ROWS = 65536


@dataclasses.dataclass(frozen=True)
class FeatureSpec:
    name: str
    dtype: np.dtype
    shape: tuple[int, ...]  # per item; -1 marks a ragged dimension
    dtype_name: str         # e.g. DT_FLOAT, for messages

    @property
    def is_string(self) -> bool:
        return self.dtype == np.dtype(object)

    @property
    def ragged_dims(self) -> tuple[int, ...]:
        return tuple(i for i, d in enumerate(self.shape) if d == -1)


@dataclasses.dataclass(frozen=True)
class TimeColumn:
    """A timestamp column to read (unigraph.timestamps), and the type times take."""

    name: str
    dtype: str  # "int64" or "float64"


@dataclasses.dataclass(frozen=True)
class TableLayout:
    kind: str                          # NODES, EDGES, SEEDS or PAIRS
    set_name: str                      # node set, edge set, or "seeds"
    features: tuple[FeatureSpec, ...]  # decoded into batch.features, in schema order
    reversed: bool = False             # edge set reading its table backwards
    # The timestamp column goes into batch.timestamps. It is decoded as one more
    # feature: the declared one, or (`timestamp_hidden`) a scalar of the time type
    # appended to `features` and removed from the batch's features again.
    timestamp: TimeColumn | None = None
    timestamp_hidden: bool = False
    # The key columns under other names (plain tables that unigraph-import reads): one
    # tuple of accepted names per key column, instead of `#id`/`id` and the like.
    key_spellings: tuple[tuple[str, ...], ...] | None = None

    @property
    def what(self) -> str:
        """How messages name the set, e.g. "node set 'paper'"."""
        if self.kind == SEEDS:
            return "seeds"
        if self.kind == PAIRS:
            return "pairs table"
        return f"{'node' if self.kind == NODES else 'edge'} set '{self.set_name}'"

    @property
    def key_columns(self) -> tuple[tuple[str, ...], ...]:
        """The accepted spellings of each key column, canonical first."""
        if self.key_spellings is not None:
            return self.key_spellings
        if self.kind in (EDGES, PAIRS):
            return (SOURCE_COLUMNS, TARGET_COLUMNS)
        return (ID_COLUMNS,)

    def key_names(self) -> tuple[str, ...]:
        """Canonical key column names as the table stores them (before any reversal)."""
        return tuple(spellings[0] for spellings in self.key_columns)


def is_reversed(edge_set: gs.EdgeSet) -> bool:
    """True for TF-GNN's `extra { key: "edge_type" value: "reversed" }`."""
    return any(kv.key == "edge_type" and kv.value == "reversed" for kv in edge_set.metadata.extra)


def feature_spec(name: str, feature: gs.Feature) -> FeatureSpec:
    return FeatureSpec(name, numpy_dtype(feature), feature_shape(feature),
                       dtype_name(feature.dtype))


def with_timestamp(layout: TableLayout, column: TimeColumn | None) -> TableLayout:
    """The layout that also reads `column` into the batches' timestamps (None: as is)."""
    if column is None:
        return layout
    if any(spec.name == column.name for spec in layout.features):
        return dataclasses.replace(layout, timestamp=column)
    hidden = FeatureSpec(column.name, np.dtype(column.dtype), (),
                         "DT_INT64" if column.dtype == "int64" else "DT_DOUBLE")
    return dataclasses.replace(layout, features=layout.features + (hidden,),
                               timestamp=column, timestamp_hidden=True)


def table_layout(loaded: LoadedSchema, kind: str, set_name: str,
                 timestamp: TimeColumn | None = None) -> TableLayout:
    """The layout of a node set's ('nodes') or edge set's ('edges') table (reading the
    timestamp column too, if given)."""
    return with_timestamp(_table_layout(loaded, kind, set_name), timestamp)


def _table_layout(loaded: LoadedSchema, kind: str, set_name: str) -> TableLayout:
    schema = loaded.schema
    if kind == NODES:
        if set_name not in schema.node_sets:
            raise SchemaError(f"graph schema {loaded.path}: no node set '{set_name}'")
        node_set = schema.node_sets[set_name]
        # A declared `id`/`#id` feature is the id column itself, not a feature.
        features = tuple(feature_spec(n, f) for n, f in node_set.features.items()
                         if n not in ID_COLUMNS)
        return TableLayout(NODES, set_name, features)
    if kind == EDGES:
        if set_name not in schema.edge_sets:
            raise SchemaError(f"graph schema {loaded.path}: no edge set '{set_name}'")
        edge_set = schema.edge_sets[set_name]
        features = tuple(feature_spec(n, f) for n, f in edge_set.features.items())
        return TableLayout(EDGES, set_name, features, reversed=is_reversed(edge_set))
    raise ValueError(f"table kind must be '{NODES}' or '{EDGES}', got {kind!r}")


def seeds_layout(timestamp: TimeColumn | None = None) -> TableLayout:
    """A seeds table: ids, and with `timestamp` each seed's cut-off column."""
    return with_timestamp(TableLayout(SEEDS, "seeds", ()), timestamp)


def pairs_layout(schema: gs.GraphSchema, generated: tuple[str, ...] = (),
                 timestamp: TimeColumn | None = None) -> TableLayout:
    """The layout of a pairs table (link seeds): `source`, `target`, and one column per
    feature of the schema's auxiliary `_readout` node set (as TF-GNN's link sampler reads
    it). Other columns are not read. `generated`: features the sampler writes itself (the
    label, with negatives), not read from the table. `timestamp`: each pair's time
    cut-off column too (into the batches' timestamps), as for node seeds; a `_readout`
    feature of that name is read once, as the feature and as the cut-off."""
    readout = schema.node_sets[LINK_READOUT_NODE_SET]
    features = tuple(feature_spec(n, f) for n, f in sorted(readout.features.items())
                     if n not in SOURCE_COLUMNS + TARGET_COLUMNS + generated)
    return with_timestamp(TableLayout(PAIRS, "pairs", features), timestamp)


def weight_feature(layout: TableLayout) -> FeatureSpec | None:
    """The declared feature that is also the weight column, if any."""
    for spec in layout.features:
        if spec.name in WEIGHT_COLUMNS:
            return spec
    return None


def find_column(names, spellings: tuple[str, ...]) -> str | None:
    """The first spelling present among `names` (so `#id` wins over `id`)."""
    present = set(names)
    for spelling in spellings:
        if spelling in present:
            return spelling
    return None
