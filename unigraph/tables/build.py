"""Shared by every format reader: which table column feeds what, and the batch itself.

`resolve_columns` maps the schema's needs onto a table's column names (the
`#`-prefixed and plain spellings of id/source/target/weight are both accepted)
and reports a missing column with the columns that are there. `decode_arrow`
decodes the columns of a native Arrow table (Parquet, BigQuery) by the schema.
`make_batch` turns decoded columns into the NodeBatch/EdgeBatch/SeedBatch
contract, swapping the ends of a reversed edge set and numbering rows with
RowIds: positions in a file, or (`rows` given) hashes of the rows' content.
"""
from __future__ import annotations

import dataclasses
from typing import Iterable, Union

import numpy as np

from unigraph.columnar.batches import (EdgeBatch, FeatureValues, NodeBatch, PairBatch, SeedBatch,
                              describe_row, row_ids)
from unigraph.errors import TableError
from unigraph.schema import WEIGHT_COLUMNS
from unigraph.tables import decode
from unigraph.tables.layout import EDGES, NODES, PAIRS, TableLayout, find_column

Batch = Union[NodeBatch, EdgeBatch, SeedBatch, PairBatch]


@dataclasses.dataclass(frozen=True)
class ColumnMap:
    keys: tuple[str, ...]      # id column, or (source, target) as the table stores them
    weight: str | None         # the weight column of an edge table, if it has one
    features: dict[str, str]   # feature name -> column name (the same name)

    def needed(self) -> list[str]:
        names = list(self.keys) + ([self.weight] if self.weight else [])
        return list(dict.fromkeys(names + list(self.features.values())))


def _listing(names: Iterable[str], limit: int = 12) -> str:
    """Column names for a message, quoted, each and the list cut short."""
    names = list(names)
    shown = [repr(n if len(n) <= 40 else n[:37] + "...") for n in names[:limit]]
    more = f", ... ({len(names)} in all)" if len(names) > limit else ""
    return ", ".join(shown) + more if names else "none"


def resolve_columns(layout: TableLayout, names: Iterable[str], where: str) -> ColumnMap:
    """The columns `layout` reads from a table with columns `names`; `where` prefixes errors."""
    names = list(names)
    keys = []
    for spellings in layout.key_columns:
        found = find_column(names, spellings)
        if found is None:
            wanted = " or ".join(f"'{s}'" for s in spellings)
            raise TableError(f"{where}: {layout.what}: missing {spellings[1]} column ({wanted}); "
                             f"columns: {_listing(names)}")
        keys.append(found)
    weight = find_column(names, WEIGHT_COLUMNS) if layout.kind == EDGES else None
    features = {}
    for spec in layout.features:
        if spec.name not in names:
            raise TableError(f"{where}: {layout.what}: missing feature column '{spec.name}'; "
                             f"columns: {_listing(names)}")
        features[spec.name] = spec.name
    return ColumnMap(tuple(keys), weight, features)


Decoded = tuple[list[np.ndarray], Union[np.ndarray, None], dict[str, FeatureValues]]


def decode_arrow(layout: TableLayout, columns: ColumnMap, table,
                 locate: decode.Locate) -> Decoded:
    """(keys, weights, features) of a native Arrow table or record batch, by the schema."""
    keys = [decode.ids_from_arrow(table.column(name), locate, name) for name in columns.keys]
    weights = (decode.weights_from_arrow(table.column(columns.weight), locate, columns.weight)
               if columns.weight else None)
    features = {spec.name: decode.feature_from_arrow(spec, table.column(spec.name), locate,
                                                     spec.name)
                for spec in layout.features}
    return keys, weights, features


def decode_slices(layout: TableLayout, columns: ColumnMap, table, where: str, file_index: int,
                  first_row: int, batch_rows: int):
    """The batches of a native Arrow table (or record batch) holding rows `first_row`...
    of file `file_index`, `batch_rows` at a time; messages name rows as `<where>: row N`."""
    for offset in range(0, table.num_rows, batch_rows):
        part = table.slice(offset, batch_rows)
        start = first_row + offset

        def locate(i: int, start=start) -> str:
            return f"{where}: row {start + i}"

        keys, weights, features = decode_arrow(layout, columns, part, locate)
        yield make_batch(layout, keys, weights, features, file_index, start, locate=locate)


def make_batch(layout: TableLayout, keys: list[np.ndarray], weights: np.ndarray | None,
               features: dict[str, FeatureValues], file_index: int = 0, first_row: int = 0,
               rows: np.ndarray | None = None, locate: decode.Locate | None = None) -> Batch:
    """The batch of decoded columns; RowIds are `rows`, else positions in file `file_index`
    counted from `first_row`. `locate(i)` names row i of the batch in messages."""
    n = len(keys[0])
    if rows is None:
        rows = row_ids(file_index, first_row, n)
    times = None
    if layout.timestamp is not None:
        times = _timestamps(layout, features, rows, locate)
        if layout.timestamp_hidden:
            features = {k: v for k, v in features.items() if k != layout.timestamp.name}
    if layout.kind == NODES:
        return NodeBatch(layout.set_name, keys[0], rows, features, times)
    if layout.kind == EDGES:
        sources, targets = keys
        if layout.reversed:  # the table is stored the other way round
            sources, targets = targets, sources
        return EdgeBatch(layout.set_name, sources, targets, rows, weights, features, times)
    if layout.kind == PAIRS:
        return PairBatch(keys[0], keys[1], rows, features, times)
    return SeedBatch(keys[0], rows, times)


def _timestamps(layout: TableLayout, features: dict[str, FeatureValues], rows: np.ndarray,
                locate: decode.Locate | None) -> np.ndarray:
    """The timestamp column in the job's time type; TableError for a NaN or infinity."""
    column = layout.timestamp
    values = np.asarray(features[column.name]).reshape(-1)
    if values.dtype.kind == "f":
        bad = np.flatnonzero(~np.isfinite(values))
        if len(bad):
            i = int(bad[0])
            if locate is not None:
                where = locate(i)
            else:
                file_index, row = describe_row(rows[i])
                where = f"{layout.what}: file #{file_index} row {row}"
            raise TableError(f"{where}: column '{column.name}': timestamp {values[i]} is not "
                             f"a finite time")
    return values.astype(column.dtype, copy=False)
