"""CSV tables: a header row of column names, one row per node or edge.

Parsing runs in Arrow's C++ CSV reader with every cell read as text, then
decode.py converts whole columns. Quoted cells may hold commas and newlines.
Empty lines are skipped. Line numbers in messages are 1-based physical lines
with the header on line 1; Arrow does not track them, so when something is
wrong the file is scanned again with Python's csv module to find the exact line
(only on the error path).
"""
from __future__ import annotations

import csv
import io
import sys
from typing import Iterator

import pyarrow as pa
import pyarrow.csv as pa_csv

from unigraph import paths
from unigraph.errors import TableError, one_line
from unigraph.tables import decode
from unigraph.tables.build import Batch, make_batch, resolve_columns
from unigraph.tables.layout import TableLayout

_BLOCK_BYTES = 8 << 20  # Arrow parses the file in blocks of this many bytes


def _python_rows(path: str) -> Iterator[tuple[int, list[str]]]:
    """(first physical line, cells) of every non-empty row, header included."""
    csv.field_size_limit(sys.maxsize)
    with paths.open_binary(path) as raw:
        text = io.TextIOWrapper(raw, encoding="utf-8-sig", errors="replace", newline="")
        reader = csv.reader(text)
        line = 1
        for cells in reader:
            if cells:
                yield line, cells
            line = reader.line_num + 1


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


def _arrow_batches(path: str, header: list[str], needed: list[str]) -> Iterator[pa.RecordBatch]:
    read_options = pa_csv.ReadOptions(block_size=_BLOCK_BYTES, use_threads=True)
    parse_options = pa_csv.ParseOptions(newlines_in_values=True)
    convert_options = pa_csv.ConvertOptions(
        column_types={name: pa.string() for name in header}, include_columns=needed,
        strings_can_be_null=False, quoted_strings_can_be_null=False, null_values=[])
    with paths.open_binary(path) as stream:
        try:
            reader = pa_csv.open_csv(stream, read_options=read_options,
                                     parse_options=parse_options,
                                     convert_options=convert_options)
            for batch in reader:
                yield batch
        except pa.ArrowInvalid as e:
            if "columns" in str(e):
                raise _column_count_error(path, len(header), e) from None
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


def read_csv(layout: TableLayout, path: str, file_index: int, batch_rows: int) -> Iterator[Batch]:
    header = read_header(path)
    columns = resolve_columns(layout, header, f"{path}: line 1")
    needed = columns.needed()
    first_row = 0
    for table in _rebatched(_arrow_batches(path, header, needed), batch_rows):
        start = first_row

        def locate(i: int, start=start) -> str:
            return f"{path}: line {line_of_row(path, start + i)}"

        keys = [decode.ids_from_arrow(table.column(name), locate, name) for name in columns.keys]
        weights = (decode.weights_from_arrow(table.column(columns.weight), locate, columns.weight)
                   if columns.weight else None)
        features = {spec.name: decode.feature_from_text(spec, table.column(spec.name), locate,
                                                        spec.name)
                    for spec in layout.features}
        yield make_batch(layout, keys, weights, features, file_index, first_row)
        first_row += table.num_rows
