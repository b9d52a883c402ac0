"""CSV tables: a header row of column names, one row per node or edge.

Parsing runs in Arrow's multi-threaded C++ CSV reader. Quoted cells may hold
commas and newlines. Empty lines are skipped. Line numbers in messages are
1-based physical lines with the header on line 1; Arrow does not track them, so
when something is wrong the file is scanned again with Python's csv module to
find the exact line (only on the error path).

Two ways through a file:
  fast     Arrow converts numeric scalar columns (weights, scalar int/float
           features) while it parses; fixed-length numeric vectors (one cell of
           space-separated values) are parsed by a second Arrow CSV pass over
           that column's cells with ' ' as the delimiter (`_vectors`).
  precise  every cell read as text and converted by decode.py, which names
           the exact line, column and value of the first problem.
Both give the same values (Arrow's CSV conversion and its cast from text are
one parser). When Arrow rejects something on the fast way (a value that does
not convert, a vector cell of another shape, a non-finite weight), the file
is read the precise way from the first row not yet delivered: so the message
is today's exact one, and valid but unusual cells (padded with spaces, say)
are read as before.
"""
from __future__ import annotations

import contextlib
import csv
import io
import sys
from typing import Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pa_csv

from unigraph.storage import paths
from unigraph.columnar.batches import FeatureValues
from unigraph.errors import TableError, one_line
from unigraph.tables.read_ahead import read_ahead
from unigraph.tables import decode
from unigraph.tables.build import Batch, make_batch, resolve_columns
from unigraph.tables.layout import FeatureSpec, TableLayout

# Arrow parses in blocks of this many bytes, on several threads; small enough
# blocks keep both cores busy on batch-sized inputs (measured: 1 MB beats 8 MB).
_BLOCK_BYTES = 1 << 20
_VECTOR_BLOCK_BYTES = 1 << 20
# Vectors of more values than this take the precise way (the fast one makes an Arrow column
# per value).
_VECTOR_COLUMNS = 4096
# The longest row (and so the largest block) read: a bound on what one row may allocate.
MAX_ROW_BYTES = 1 << 28


def _python_rows(path: str) -> Iterator[tuple[int, list[str]]]:
    """(first physical line, cells) of every non-empty row, header included."""
    csv.field_size_limit(sys.maxsize)
    with paths.open_binary(path) as raw:
        text = io.TextIOWrapper(raw, encoding="utf-8-sig", errors="replace", newline="")
        reader = csv.reader(text)
        line = 1
        try:
            for cells in reader:
                if cells:
                    yield line, cells
                line = reader.line_num + 1
        except csv.Error as e:  # e.g. Python 3.10's csv reads no line holding a NUL byte
            raise TableError(f"{path}: line {reader.line_num}: {one_line(e)}") from None


def line_of_row(path: str, row: int) -> int:
    """The 1-based line where data row `row` (0-based, header excluded) starts."""
    for index, (line, _) in enumerate(_python_rows(path)):
        if index == row + 1:
            return line
    return -1


def read_header(path: str) -> list[str]:
    for _, cells in _python_rows(path):
        names = list(cells)
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise TableError(f"{path}: line 1: duplicate column name(s) "
                             f"{', '.join(repr(d) for d in duplicates)}")
        return names
    raise TableError(f"{path}: line 1: empty file, expected a header row")


def _column_count_error(path: str, expected: int, fallback: Exception) -> TableError:
    for index, (line, cells) in enumerate(_python_rows(path)):
        if index and len(cells) != expected:
            return TableError(f"{path}: line {line}: expected {expected} columns, found "
                              f"{len(cells)}: {decode.show(','.join(cells))}")
    return TableError(f"{path}: {one_line(fallback)}")


class _Declined(Exception):
    """The fast way met something it leaves to the precise way."""


class _RowTooLong(Exception):
    """A row does not fit in Arrow's block: read again with larger blocks."""


def _arrow_batches(path: str, header: list[str], needed: list[str],
                   typed: dict[str, pa.DataType]) -> Iterator[pa.RecordBatch]:
    """Arrow's batches of the needed columns: `typed` ones converted, the rest text.

    With `typed` columns, a conversion Arrow rejects raises _Declined. Arrow needs each
    row inside one block: a longer row (a legitimate cell of megabytes) makes the file be
    read again, from the first row not yet delivered, with blocks four times as large,
    up to MAX_ROW_BYTES; a row longer than that is one TableError line.
    """
    block, delivered = _BLOCK_BYTES, 0
    while True:
        try:
            batches = _arrow_pass(path, header, needed, typed, block)
            for batch in _skipped(batches, delivered) if delivered else batches:
                delivered += batch.num_rows
                yield batch
            return
        except _RowTooLong:
            if block >= MAX_ROW_BYTES:
                raise TableError(f"{path}: a row after data row {delivered} is longer than "
                                 f"{MAX_ROW_BYTES >> 20} MiB, the longest the CSV reader "
                                 f"takes") from None
            block = min(block * 4, MAX_ROW_BYTES)


def _arrow_pass(path: str, header: list[str], needed: list[str],
                typed: dict[str, pa.DataType], block: int) -> Iterator[pa.RecordBatch]:
    read_options = pa_csv.ReadOptions(block_size=block, use_threads=True)
    parse_options = pa_csv.ParseOptions(newlines_in_values=True)
    types = {name: pa.string() for name in header}
    types.update(typed)
    convert_options = pa_csv.ConvertOptions(
        column_types=types, include_columns=needed,
        strings_can_be_null=False, quoted_strings_can_be_null=False, null_values=[])
    with paths.open_binary(path) as stream:
        try:
            reader = pa_csv.open_csv(stream, read_options=read_options,
                                     parse_options=parse_options,
                                     convert_options=convert_options)
            for batch in reader:
                yield batch
        except pa.ArrowInvalid as e:
            if "straddling" in str(e) or "straddles" in str(e):
                raise _RowTooLong from None
            if typed:
                raise _Declined from None
            if "columns" in str(e):
                raise _column_count_error(path, len(header), e) from None
            raise TableError(f"{path}: {one_line(e)}") from None
        except pa.ArrowKeyError as e:  # the header read first is gone: the file changed
            raise TableError(f"{path}: {one_line(e)}") from None


def _rebatched(batches: Iterator[pa.RecordBatch], size: int) -> Iterator[pa.Table]:
    """Arrow's blocks regrouped into tables of exactly `size` rows (the last may be short)."""
    pending, count = [], 0
    for batch in batches:
        if not batch.num_rows:
            continue
        pending.append(batch)
        count += batch.num_rows
        if count >= size:
            table = pa.Table.from_batches(pending)
            start = 0
            while count - start >= size:
                yield table.slice(start, size)
                start += size
            rest = table.slice(start)
            pending, count = rest.to_batches(), rest.num_rows
    if count:
        yield pa.Table.from_batches(pending)


def _typed(layout: TableLayout, columns) -> dict[str, pa.DataType]:
    """The columns Arrow converts while parsing on the fast way: numeric scalars."""
    typed = {}
    if columns.weight:
        typed[columns.weight] = pa.float64()
    for spec in layout.features:
        if not spec.shape and not spec.is_string and spec.dtype.kind in "iuf":
            typed[spec.name] = decode.arrow_type(spec)
    return typed


# "" and "\n" as Arrow scalars, taken from an array: pa.scalar() imports pandas (half a second).
_EMPTY, _NEWLINE = pa.StringArray.from_buffers(
    2, pa.py_buffer(np.array([0, 0, 1], dtype=np.int32)), pa.py_buffer(b"\n"))


def _vectors(spec: FeatureSpec, column) -> FeatureValues:
    """Fixed-length numeric vectors from cells of space-separated values, by Arrow's parser.

    The cells, each ended by a newline, are one CSV document with ' ' as the
    delimiter: a row per cell, a column per value. Raises _Declined for
    anything but exactly `size` single-space-separated numbers in every cell.
    """
    size = int(np.prod(spec.shape, dtype=np.int64))
    n = len(column)
    if n == 0 or size == 0 or size > _VECTOR_COLUMNS or any(d < 0 for d in spec.shape):
        raise _Declined
    lines = pc.binary_join_element_wise(column, _EMPTY, _NEWLINE)
    lines = lines.combine_chunks() if isinstance(lines, pa.ChunkedArray) else lines
    data = lines.buffers()[2]
    offsets = np.frombuffer(lines.buffers()[1], dtype=np.int32)
    body = data[int(offsets[lines.offset]):int(offsets[lines.offset + n])]
    names = [str(i) for i in range(size)]
    try:
        table = pa_csv.read_csv(
            pa.BufferReader(body),
            read_options=pa_csv.ReadOptions(column_names=names, use_threads=True,
                                            block_size=_VECTOR_BLOCK_BYTES),
            parse_options=pa_csv.ParseOptions(delimiter=" ", quote_char=False,
                                              ignore_empty_lines=False),
            convert_options=pa_csv.ConvertOptions(
                column_types={name: decode.arrow_type(spec) for name in names},
                null_values=[], strings_can_be_null=False))
    except pa.ArrowInvalid:
        raise _Declined from None
    if table.num_rows != n:
        raise _Declined
    columns = [decode.numbers_to_numpy(table.column(i)) for i in range(size)]
    values = np.empty((n, size), dtype=columns[0].dtype)
    for i, column_values in enumerate(columns):
        values[:, i] = column_values
    return values.astype(spec.dtype, copy=False).reshape((n,) + spec.shape)


def _decode(layout: TableLayout, columns, table: pa.Table, locate, file_index: int,
            first_row: int, fast: bool) -> Batch:
    keys = [decode.ids_from_arrow(table.column(name), locate, name) for name in columns.keys]
    weights = (decode.weights_from_arrow(table.column(columns.weight), locate, columns.weight)
               if columns.weight else None)
    features = {}
    for spec in layout.features:
        column = table.column(spec.name)
        if fast and spec.shape and not spec.is_string and spec.dtype.kind in "iuf":
            try:
                features[spec.name] = _vectors(spec, column)
                continue
            except _Declined:
                pass  # this column, this batch, the precise way
        if pa.types.is_string(column.type) or pa.types.is_large_string(column.type):
            features[spec.name] = decode.feature_from_text(spec, column, locate, spec.name)
        else:
            features[spec.name] = decode.cast_values(column, spec, locate, spec.name)
    return make_batch(layout, keys, weights, features, file_index, first_row, locate=locate)


def _skipped(batches: Iterator[pa.RecordBatch], rows: int) -> Iterator[pa.RecordBatch]:
    """`batches` without their first `rows` rows."""
    for batch in batches:
        if rows >= batch.num_rows:
            rows -= batch.num_rows
            continue
        yield batch.slice(rows) if rows else batch
        rows = 0


def read_csv(layout: TableLayout, path: str, file_index: int, batch_rows: int) -> Iterator[Batch]:
    header = read_header(path)
    columns = resolve_columns(layout, header, f"{path}: line 1")
    needed = columns.needed()

    def locator(start: int):
        return lambda i: f"{path}: line {line_of_row(path, start + i)}"

    first_row = 0
    # Arrow parses the next batch in a thread while this one is decoded here.
    tables = read_ahead(_rebatched(_arrow_batches(path, header, needed,
                                                  _typed(layout, columns)), batch_rows))
    try:
        with contextlib.closing(tables):
            for table in tables:
                try:
                    batch = _decode(layout, columns, table, locator(first_row), file_index,
                                    first_row, fast=True)
                except TableError:
                    raise _Declined from None
                yield batch
                first_row += table.num_rows
        return
    except _Declined:
        pass  # the precise way, from the first row not yet delivered
    text = _skipped(_arrow_batches(path, header, needed, {}), first_row)
    for table in _rebatched(text, batch_rows):
        yield _decode(layout, columns, table, locator(first_row), file_index, first_row,
                      fast=False)
        first_row += table.num_rows
