"""The pure entry points: one table file (or Parquet row group, or BigQuery read
stream) -> batches.

No Beam here; beam_io.py wires these into transforms. The format comes from
the file name (paths.file_format). A WorkUnit is what one Beam worker reads at a
time: a whole CSV/TFRecord/text file, one row group of a Parquet file, or one
read stream of a BigQuery table (`open_bigquery` makes those, one read session
per table; `close_bigquery` drops a query's temporary table afterwards).
"""
from __future__ import annotations

import dataclasses
from typing import Iterator

from unigraph.storage import bigquery, paths
from unigraph.columnar.table_source import TableSource, is_memory_name
from unigraph.columnar.batches import PairBatch, SeedBatch, describe_row
from unigraph.errors import SamplerError, TableError
from unigraph.schema import LoadedSchema, bigquery_source, memory_source, table_files
from unigraph.tables.bigquery import (OpenedSource, ReadStream, close_source, open_source,
                                      read_stream)
from unigraph.tables.build import Batch, decode_arrow, decode_slices, make_batch, resolve_columns
from unigraph.tables.csv import line_of_row, read_csv
from unigraph.tables.layout import (DEFAULT_BATCH_ROWS, TableLayout, TimeColumn, seeds_layout,
                                    table_layout)
from unigraph.tables.parquet import read_parquet, row_groups
from unigraph.tables.text import read_text_ids
from unigraph.tables.tfrecord import read_tfrecord


@dataclasses.dataclass(frozen=True, order=True)
class WorkUnit:
    path: str                       # the file, or the BigQuery source's name
    file_index: int                 # position in the table's expanded, sorted file list
    row_group: int | None = None    # Parquet only: read just this row group
    stream: ReadStream | None = None  # BigQuery only: read this read stream


def split_file(path: str, file_index: int) -> list[WorkUnit]:
    """A file's work units: one per Parquet row group, else the whole file."""
    if paths.file_format(path) == "parquet":
        groups = row_groups(path)
        if groups:
            return [WorkUnit(path, file_index, g) for g in range(len(groups))]
    return [WorkUnit(path, file_index)]


def read_unit(layout: TableLayout, unit: WorkUnit,
              batch_rows: int = DEFAULT_BATCH_ROWS) -> Iterator[Batch]:
    """Every batch of one work unit, each at most `batch_rows` rows."""
    if batch_rows < 1:
        raise ValueError(f"batch_rows must be >= 1, got {batch_rows}")
    if unit.stream is not None:
        return read_stream(layout, unit.stream, batch_rows)
    fmt = paths.file_format(unit.path)
    if fmt == "csv":
        return read_csv(layout, unit.path, unit.file_index, batch_rows)
    if fmt == "tfrecord":
        return read_tfrecord(layout, unit.path, unit.file_index, batch_rows)
    if fmt == "parquet":
        return read_parquet(layout, unit.path, unit.file_index, batch_rows, unit.row_group)
    if layout.kind == "seeds":
        return read_text_ids(unit.path, unit.file_index, batch_rows)
    raise TableError(f"{unit.path}: a .txt file can only list seed ids; tables (and pairs) "
                     f"must be .csv, .tfrecord or .parquet")


def read_table(loaded: LoadedSchema, kind: str, set_name: str, path: str, file_index: int, *,
               row_group: int | None = None,
               batch_rows: int = DEFAULT_BATCH_ROWS) -> Iterator[Batch]:
    """NodeBatch (kind 'nodes') or EdgeBatch (kind 'edges') of one table file.

    `file_index` is the file's position in `table_files(loaded, kind, set_name)`;
    it goes into the RowIds. Raises TableError on the first bad value.
    """
    layout = table_layout(loaded, kind, set_name)
    return read_unit(layout, WorkUnit(path, file_index, row_group), batch_rows)


def open_bigquery(layout: TableLayout, source: bigquery.Source) -> tuple[
        OpenedSource, list[WorkUnit]]:
    """One read session on a BigQuery table (a query runs into a temporary table first)
    and its work units, one per read stream. Call `close_bigquery` once they are read."""
    opened = open_source(layout, source)
    return opened, [WorkUnit(source.name, 0, stream=stream) for stream in opened.streams]


def close_bigquery(opened: OpenedSource) -> None:
    """Drops the temporary table of a query once its streams are read."""
    close_source(opened)


def read_memory(layout: TableLayout, source: TableSource, *,
                batch_rows: int = DEFAULT_BATCH_ROWS) -> Iterator[Batch]:
    """Every batch of a table held in memory (or made as it is read), decoded as a Parquet
    file's columns are and numbered as the rows of one file; a table without rows gives
    one empty batch, so that a writer still knows its columns."""
    if source.read is not None:
        yield from source.read(layout, batch_rows)
        return
    columns = resolve_columns(layout, source.columns, source.name)
    rows = 0
    for part in source.batches():
        yield from decode_slices(layout, columns, part, source.name, 0, rows, batch_rows)
        rows += part.num_rows
    if rows == 0:
        empty = source.schema.empty_table()
        keys, weights, features = decode_arrow(layout, columns, empty,
                                               lambda i: f"{source.name}: row {i}")
        yield make_batch(layout, keys, weights, features)


def read_bigquery(layout: TableLayout, source: bigquery.Source, *,
                  batch_rows: int = DEFAULT_BATCH_ROWS) -> Iterator[Batch]:
    """Every batch of a BigQuery table, stream after stream (in-process)."""
    opened, units = open_bigquery(layout, source)
    try:
        for unit in units:
            yield from read_unit(layout, unit, batch_rows)
    finally:
        close_bigquery(opened)


def read_set(loaded: LoadedSchema, kind: str, set_name: str, *,
             batch_rows: int = DEFAULT_BATCH_ROWS,
             timestamp: TimeColumn | None = None) -> Iterator[Batch]:
    """Every batch of a set's table, file after file or read stream after read stream
    (in-process; for tools, tests and the in-memory engine); `timestamp`: also that
    column, into the batches' timestamps."""
    if loaded.store is not None:
        raise SamplerError(f"graph store {loaded.store.folder}: {kind[:-1]} set '{set_name}' is "
                           f"mapped, not read as rows; only the in-memory engine reads a store")
    layout = table_layout(loaded, kind, set_name, timestamp)
    held = memory_source(loaded, kind, set_name)
    if held is not None:
        yield from read_memory(layout, held, batch_rows=batch_rows)
        return
    source = bigquery_source(loaded, kind, set_name)
    if source is not None:
        yield from read_bigquery(layout, source, batch_rows=batch_rows)
        return
    for index, path in enumerate(table_files(loaded, kind, set_name)):
        yield from read_unit(layout, WorkUnit(path, index), batch_rows)


def table_locations(loaded: LoadedSchema, kind: str, set_name: str) -> list[str]:
    """What `row_location` needs to name a row of a set's table: its files, or the name
    of its BigQuery source (a store's: those of the tables it was built from)."""
    if loaded.store is not None:
        return list(loaded.store.table(kind, set_name).locations)
    source = bigquery_source(loaded, kind, set_name)
    return [source.name] if source is not None else table_files(loaded, kind, set_name)


def seeds_source(pattern: str) -> bigquery.Source | None:
    """The BigQuery table a seeds argument `bq://project.dataset.table` names, else None."""
    return bigquery.source_from_uri(pattern, "seeds") if bigquery.is_uri(pattern) else None


def read_seed_set(pattern: str, base_dir: str = ".", *, batch_rows: int = DEFAULT_BATCH_ROWS,
                  timestamp: TimeColumn | None = None) -> Iterator[SeedBatch]:
    """Every SeedBatch a seeds argument names: files, or a BigQuery table (in-process);
    with `timestamp`, each seed's cut-off from that column too."""
    yield from _read_seeds_like(seeds_layout(timestamp), pattern, base_dir, batch_rows)


def read_pair_set(layout: TableLayout, pattern: str, base_dir: str = ".", *,
                  batch_rows: int = DEFAULT_BATCH_ROWS) -> Iterator[PairBatch]:
    """Every PairBatch a pairs argument names (`layout` from `pairs_layout`): files
    (`@N`, globs), or a BigQuery table (in-process)."""
    yield from _read_seeds_like(layout, pattern, base_dir, batch_rows)


def _read_seeds_like(layout: TableLayout, pattern: str, base_dir: str, batch_rows: int):
    """A seeds-like table (seeds or pairs) a command-line argument names: files, or a
    BigQuery table `bq://...`."""
    source = seeds_source(pattern)
    if source is not None:
        yield from read_bigquery(layout, source, batch_rows=batch_rows)
        return
    for index, path in enumerate(seed_files(pattern, base_dir)):
        yield from read_unit(layout, WorkUnit(path, index), batch_rows)


def seed_files(pattern: str, base_dir: str = ".") -> list[str]:
    """The files a seeds argument names (`@N`, globs; relative to `base_dir`)."""
    files = paths.expand(pattern, base_dir, what="seeds")
    for f in files:
        paths.file_format(f)
    return files


def read_seeds(path: str, file_index: int = 0, *, row_group: int | None = None,
               batch_rows: int = DEFAULT_BATCH_ROWS) -> Iterator[SeedBatch]:
    """SeedBatch of one seeds file: a table with an id column, or .txt with one id a line."""
    return read_unit(seeds_layout(), WorkUnit(path, file_index, row_group), batch_rows)


def row_location(files: list[str], row_id: int) -> str:
    """'<file> line N' (CSV, header = line 1) / 'record N' (TFRecord) / 'row N' (Parquet);
    a BigQuery row (`files` = [its source's name]) by the hash of its content."""
    if len(files) == 1 and bigquery.is_source_name(files[0]):
        return f"{files[0]} (the row whose content hashes to {int(row_id) & (2**64 - 1):016x})"
    file_index, row = describe_row(row_id)
    path = files[file_index]
    if is_memory_name(path):
        return f"{path} row {row}"
    fmt = paths.file_format(path)
    if fmt == "csv":  # rescans the file: only on the error path
        return f"{path} line {line_of_row(path, row)}"
    if fmt == "tfrecord":
        return f"{path} record {row}"
    if fmt == "text":
        return f"{path} line {row + 1}"
    return f"{path} row {row}"
