"""BigQuery tables: one read session per table, one work unit per read stream.

`open_source` prepares a table for reading: a `sql` source runs into a
temporary table first; the table's columns are matched to the layout like any
file's (resolve_columns: `id`, `source`, `target` and an optional `weight`,
since BigQuery column names cannot start with '#'), one read session selects
just those columns, and their Arrow types are checked against the schema on an
empty table before a single row is read, so a missing or mistyped column fails
at once, naming the table and the column. `read_stream` turns one stream's
Arrow record batches into the same typed batches as the Parquet reader, through
the same decode (build.decode_arrow).

BigQuery has no arrays of arrays: a feature with a ragged inner dimension is
stored as ARRAY<STRUCT<v ARRAY<...>>> (one field per struct), which reads as
the nested list it stands for. A multi-dimensional feature may also be one
flat ARRAY per row, as in Parquet.

BigQuery tables have no row order, and the Storage API splits rows into
streams differently from one session to the next, so RowIds are hashes of the
rows' content (unigraph.encoding.row_hash), never positions. Messages name a row by its
read stream and its position there.
"""
from __future__ import annotations

import contextlib
import dataclasses
from typing import Iterator

import pyarrow as pa

from unigraph.storage import bigquery
from unigraph.errors import TableError
from unigraph.encoding.row_hash import row_hashes
from unigraph.tables import decode
from unigraph.tables.build import Batch, decode_arrow, make_batch, resolve_columns
from unigraph.tables.layout import TableLayout


@dataclasses.dataclass(frozen=True, order=True)
class ReadStream:
    """One read stream of a session: the unit of parallel work."""

    source: str                   # the Source's name, for messages
    name: str                     # the Storage API's stream name
    index: int                    # position among the session's `count` streams (messages)
    count: int
    schema: bytes = dataclasses.field(compare=False, repr=False)  # Arrow IPC schema

    @property
    def where(self) -> str:
        return f"{self.source}, read stream {self.index + 1} of {self.count}"


@dataclasses.dataclass(frozen=True)
class OpenedSource:
    """A source ready to read: its read streams, and what to clean up afterwards."""

    source: bigquery.Source
    table: bigquery.TableRef       # the table read: a temporary one for a `sql` source
    temporary: bool                # drop `table` once every stream has been read
    rows: int | None               # as the table's metadata counts them
    streams: tuple[ReadStream, ...]


def open_source(layout: TableLayout, source: bigquery.Source) -> OpenedSource:
    """Runs a `sql` source, opens one read session on the columns `layout` reads, and
    checks their types; TableError names the table and the column."""
    if source.sql is not None:
        table, temporary = bigquery.run_into_temporary_table(source), True
    else:
        table, temporary = bigquery.resolve(source.table, source.name), False
    try:
        info = bigquery.table_info(table, source.name)
        columns = resolve_columns(layout, info.columns, f"{source.name}: table schema")
        session = bigquery.open_session(table, columns.needed(), source.name)
        schema = pa.ipc.read_schema(pa.py_buffer(session.schema))
        decode_arrow(layout, columns, _unwrap_records(schema.empty_table()),
                     lambda _: source.name)
    except BaseException:
        if temporary:
            with contextlib.suppress(TableError):  # the first error is the one to report
                bigquery.drop_table(table)
        raise
    streams = tuple(ReadStream(source.name, name, i, len(session.streams), session.schema)
                    for i, name in enumerate(session.streams))
    return OpenedSource(source, table, temporary, info.rows, streams)


def close_source(opened: OpenedSource) -> None:
    """Drops the temporary table of a `sql` source (nothing to do for a table)."""
    if opened.temporary:
        bigquery.drop_table(opened.table)


def describe_source(layout: TableLayout, source: bigquery.Source) -> str:
    """One line for `--dry-run`: rows and read streams of a table; a query is only
    validated (BigQuery's dry run), since running it would cost."""
    if source.sql is not None:
        query = bigquery.dry_run(source)
        resolve_columns(layout, query.columns, f"{source.name}: query result")
        scanned = (f", scans {query.bytes_processed:,} bytes"
                   if query.bytes_processed is not None else "")
        return (f"{source.name}: valid query{scanned}; it runs into a temporary table when "
                f"sampling starts")
    opened = open_source(layout, source)
    rows = f"{opened.rows:,} rows" if opened.rows is not None else "rows unknown"
    return f"{source.name}: {rows}, {len(opened.streams)} read stream(s)"


def read_stream(layout: TableLayout, stream: ReadStream, batch_rows: int) -> Iterator[Batch]:
    """Batches of at most `batch_rows` rows from one read stream."""
    schema = pa.ipc.read_schema(pa.py_buffer(stream.schema))
    columns = resolve_columns(layout, schema.names, f"{stream.source}: table schema")
    pending: list[pa.RecordBatch] = []
    pending_rows = first_row = 0
    for record_batch in bigquery.read_stream(stream.name, schema, stream.where):
        pending.append(record_batch)
        pending_rows += record_batch.num_rows
        if pending_rows < batch_rows:
            continue
        table = pa.Table.from_batches(pending, schema)
        whole = pending_rows - pending_rows % batch_rows
        for offset in range(0, whole, batch_rows):
            yield _batch(layout, columns, table.slice(offset, batch_rows), stream,
                         first_row + offset)
        first_row += whole
        pending = table.slice(whole).to_batches()
        pending_rows -= whole
    if pending_rows:
        yield _batch(layout, columns, pa.Table.from_batches(pending, schema), stream, first_row)


def _batch(layout: TableLayout, columns, table: pa.Table, stream: ReadStream,
           first_row: int) -> Batch:
    def locate(i: int) -> str:
        return f"{stream.where}: row {first_row + i}"

    keys, weights, features = decode_arrow(layout, columns, _unwrap_records(table), locate)
    content = keys + ([weights] if weights is not None else []) + [
        features[spec.name] for spec in layout.features]
    return make_batch(layout, keys, weights, features, rows=row_hashes(content), locate=locate)


def _unwrap_records(table: pa.Table) -> pa.Table:
    """ARRAY<STRUCT<v ARRAY<T>>> columns as list<list<T>> (BigQuery's nested arrays)."""
    for i, field in enumerate(table.schema):
        if _is_wrapped(field.type):
            chunks = [_unwrap(chunk) for chunk in table.column(i).chunks]
            unwrapped = (pa.chunked_array(chunks) if chunks
                         else pa.chunked_array([], _unwrapped_type(field.type)))
            table = table.set_column(i, field.name, unwrapped)
    return table


def _is_wrapped(arrow_type: pa.DataType) -> bool:
    """A list whose items are structs of exactly one list field, at any depth."""
    while decode.is_list(arrow_type):
        item = arrow_type.value_type
        if (pa.types.is_struct(item) and item.num_fields == 1
                and decode.is_list(item.field(0).type)):
            return True
        arrow_type = item
    return False


def _unwrapped_type(arrow_type: pa.DataType) -> pa.DataType:
    if not decode.is_list(arrow_type):
        return arrow_type
    item = arrow_type.value_type
    if pa.types.is_struct(item) and item.num_fields == 1 and decode.is_list(item.field(0).type):
        item = item.field(0).type
    return pa.list_(_unwrapped_type(item))


def _unwrap(array: pa.Array) -> pa.Array:
    if not decode.is_list(array.type):
        return array
    items = array.values
    if pa.types.is_struct(items.type) and items.type.num_fields == 1 and decode.is_list(
            items.type.field(0).type):
        items = items.flatten()[0]  # the struct's one field, its offset applied
    mask = array.is_null() if array.null_count else None
    offsets = array.offsets
    return pa.ListArray.from_arrays(offsets, _unwrap(items), mask=mask)
