"""Which column holds a set's timestamps, and in which number type times are compared.

A node or edge table may carry a timestamp column: `#timestamp` (or `timestamp`) by
default, another name per set with the set's `metadata.extra { key: "timestamp_column"
value: "year" }`, or for every set at once with `sample --timestamp-column year` (the
flag writes that extra into each set of the loaded schema, so everything downstream
reads one place). A seeds table's cut-off column is `timestamp` or `#timestamp`.

Times are int64 (any unit) or floats. One job compares all its times in one number
type (`time_dtype`): int64, unless a timed set declares its timestamp column as a
float feature in the schema (DT_FLOAT / DT_DOUBLE), then float64. A column that is not
declared is read as int64; a value that is not an integer is then a one-line error
naming the file and line (declare the column as a DT_DOUBLE feature to use floats).
Seed cut-offs are read in the same type, so every comparison `time <= cut-off` is
exact within one number type (int64 times beyond 2**53 in a float64 job round).
"""
from __future__ import annotations

from typing import Protocol

import numpy as np

from unigraph.protos import graph_schema_pb2 as gs


class HasSchema(Protocol):
    """What these functions read of unigraph.schema.LoadedSchema (whose checks call
    this module, so it is not imported here)."""

    schema: gs.GraphSchema

TIMESTAMP_COLUMNS = ("#timestamp", "timestamp")   # defaults, the canonical first
SEED_TIMESTAMP_COLUMNS = ("timestamp", "#timestamp")
TIMESTAMP_COLUMN_KEY = "timestamp_column"         # metadata.extra key naming the column
INT_TIMES, FLOAT_TIMES = np.dtype(np.int64), np.dtype(np.float64)


def _set(loaded: HasSchema, kind: str, name: str):
    return (loaded.schema.node_sets if kind == "nodes" else loaded.schema.edge_sets)[name]


def timestamp_spellings(loaded: HasSchema, kind: str, name: str) -> tuple[str, ...]:
    """The column names a set's timestamps may have: the configured one, or the defaults."""
    for kv in _set(loaded, kind, name).metadata.extra:
        if kv.key == TIMESTAMP_COLUMN_KEY and kv.value:
            return (kv.value,)
    return TIMESTAMP_COLUMNS


def override_timestamp_column(loaded: HasSchema, column: str) -> None:
    """`--timestamp-column`: every set's timestamps are in `column` (replaces the extras)."""
    for sets in (loaded.schema.node_sets, loaded.schema.edge_sets):
        for piece in sets.values():
            extra = [kv for kv in piece.metadata.extra if kv.key != TIMESTAMP_COLUMN_KEY]
            del piece.metadata.extra[:]
            piece.metadata.extra.extend(extra)
            piece.metadata.extra.add(key=TIMESTAMP_COLUMN_KEY, value=column)


def declared_timestamp(loaded: HasSchema, kind: str, name: str) -> str | None:
    """The timestamp column if the schema declares it as a feature of the set."""
    features = _set(loaded, kind, name).features
    return next((c for c in timestamp_spellings(loaded, kind, name) if c in features), None)


def find_timestamp_column(loaded: HasSchema, kind: str, name: str,
                          columns: list[str]) -> str | None:
    """The set's timestamp column among a table's `columns` (or declared), else None."""
    declared = declared_timestamp(loaded, kind, name)
    if declared is not None:
        return declared
    present = set(columns)
    return next((c for c in timestamp_spellings(loaded, kind, name) if c in present), None)


def check_declared_timestamp(loaded: HasSchema, kind: str, name: str, where: str) -> str | None:
    """A message if the set declares its timestamp column as anything but a numeric scalar."""
    column = declared_timestamp(loaded, kind, name)
    if column is None:
        return None
    feature = _set(loaded, kind, name).features[column]
    numeric = (gs.DT_INT64, gs.DT_INT32, gs.DT_FLOAT, gs.DT_DOUBLE)
    if feature.dtype not in numeric or len(feature.shape.dim):
        return (f"{where}: timestamp feature '{column}' must be an int64 or float scalar, "
                f"found {gs.DataType.Name(feature.dtype)} of shape "
                f"{[d.size for d in feature.shape.dim]}")
    return None


def time_dtype(loaded: HasSchema, timed_sets: list[tuple[str, str]]) -> np.dtype:
    """int64, or float64 if one of the (kind, name) sets declares float timestamps."""
    for kind, name in timed_sets:
        column = declared_timestamp(loaded, kind, name)
        if column is not None and _set(loaded, kind, name).features[column].dtype in (
                gs.DT_FLOAT, gs.DT_DOUBLE):
            return FLOAT_TIMES
    return INT_TIMES
