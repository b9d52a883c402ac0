"""Table writers: NodeBatch/EdgeBatch (numpy columns) -> CSV, TFRecord or Parquet files.

The inverse of unigraph.tables: what a writer writes, the readers read back to
identical columns. Used by the converter (pipelines/convert.py) and by tools
that generate graphs. Column names are the canonical `#id`, `#source`,
`#target`, `#weight`; a batch of a reversed edge set is written the way its
table is stored (ends swapped back). Each format is written by whole columns:
CSV and Parquet through Arrow; TFRecord one tf.train.Example per row (the
format has nothing columnar), from pre-sliced Python lists.

  CSV      vectors and ragged lists as space-separated values in one cell;
           strings must be UTF-8 and, inside vectors, free of whitespace.
  Parquet  scalars native; fixed dims as fixed_size_list, ragged dims as list;
           ids as string, string features as binary; one row group per batch.
  TFRecord ids/ends as one-value bytes features; values flattened per record.
"""
from __future__ import annotations

import dataclasses
from typing import Iterable, Iterator, Union

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pa_csv
import pyarrow.parquet as pq

from unigraph import example_pb2, paths, tfrecord
from unigraph.batches import EdgeBatch, FeatureValues, NodeBatch
from unigraph.errors import TableError
from unigraph.ragged import Ragged, take
from unigraph.schema import WEIGHT_COLUMNS
from unigraph.tables.layout import EDGES, FeatureSpec, TableLayout

Batch = Union[NodeBatch, EdgeBatch]
WEIGHT_COLUMN = WEIGHT_COLUMNS[0]
EXTENSIONS = {"csv": ".csv", "tfrecord": ".tfrecord", "parquet": ".parquet"}


@dataclasses.dataclass
class _Column:
    name: str
    values: FeatureValues
    spec: FeatureSpec | None  # None: an id column (bytes 'S') or the weight (float64)


def table_columns(layout: TableLayout, batch: Batch, with_weights: bool) -> list[_Column]:
    """The columns of `batch` in table order, ends as the table stores them."""
    if layout.kind == EDGES:
        sources, targets = batch.sources, batch.targets
        if layout.reversed:
            sources, targets = targets, sources
        columns = [_Column("#source", sources, None), _Column("#target", targets, None)]
        declared = {spec.name for spec in layout.features}
        if with_weights and not declared & set(WEIGHT_COLUMNS):
            if batch.weights is None:
                raise TableError(f"{layout.what}: a batch has no weights, earlier ones had")
            columns.append(_Column(WEIGHT_COLUMN, np.asarray(batch.weights, np.float64), None))
    else:
        columns = [_Column("#id", batch.ids, None)]
    for spec in layout.features:
        if spec.name not in batch.features:
            raise TableError(f"{layout.what}: batch lacks feature '{spec.name}'")
        columns.append(_Column(spec.name, batch.features[spec.name], spec))
    return columns


# ---- shared conversions -------------------------------------------------------------

def _ids_to_arrow(ids: np.ndarray, name: str) -> pa.Array:
    array = pa.array(np.asarray(ids, dtype="S"), pa.binary())
    try:
        return pc.cast(array, pa.string())
    except pa.ArrowInvalid:
        raise TableError(f"column '{name}': an id is not valid UTF-8") from None


def _flat_to_arrow(values: np.ndarray, spec: FeatureSpec) -> pa.Array:
    if spec.is_string:
        return pa.array(values, pa.binary())
    return pa.array(np.ascontiguousarray(values))


def _flat_rows(values: FeatureValues, n: int) -> tuple[np.ndarray, np.ndarray]:
    """(row splits into the flat values, flat values) of any feature column."""
    if isinstance(values, Ragged):
        splits = values.row_splits
        inner = values.values
        while isinstance(inner, Ragged):
            splits = inner.row_splits[splits]
            inner = inner.values
        width = int(np.prod(inner.shape[1:], dtype=np.int64))
        return splits * width, inner.reshape(-1)
    width = int(np.prod(values.shape[1:], dtype=np.int64))
    return np.arange(n + 1, dtype=np.int64) * width, values.reshape(-1)


def _nested_to_arrow(values: FeatureValues, shape: tuple[int, ...], spec: FeatureSpec) -> pa.Array:
    """Nested Arrow lists, one level per dimension: list for Ragged, fixed_size_list else."""
    if isinstance(values, Ragged):
        inner = _nested_to_arrow(values.values, shape[1:], spec)
        splits = values.row_splits
        if splits[-1] >= 2 ** 31:
            return pa.LargeListArray.from_arrays(pa.array(splits), inner)
        return pa.ListArray.from_arrays(pa.array(splits.astype(np.int32)), inner)
    array = _flat_to_arrow(values.reshape(-1), spec)
    for size in reversed(shape):
        array = pa.FixedSizeListArray.from_arrays(array, size)
    return array


def _column_to_arrow(column: _Column) -> pa.Array:
    if column.spec is None:
        if column.values.dtype.kind == "S":
            return _ids_to_arrow(column.values, column.name)
        return pa.array(column.values)
    return _nested_to_arrow(column.values, column.spec.shape, column.spec)


def _column_to_text(column: _Column, n: int) -> pa.Array:
    """A column as CSV cell text."""
    spec = column.spec
    if spec is None:
        if column.values.dtype.kind == "S":
            return _ids_to_arrow(column.values, column.name)
        return pc.cast(pa.array(column.values), pa.string())
    if not spec.shape:
        array = _flat_to_arrow(column.values, spec)
        return _to_utf8(array, column.name) if spec.is_string else pc.cast(array, pa.string())
    splits, flat = _flat_rows(column.values, n)
    text = _flat_to_arrow(flat, spec)
    if spec.is_string:
        text = _to_utf8(text, column.name)
        if len(text) and pc.any(pc.match_substring_regex(text, r"\s|^$")).as_py():
            raise TableError(f"column '{column.name}': a string in a vector is empty or holds "
                             f"whitespace, which a CSV cell of space-separated values cannot "
                             f"hold; write Parquet or TFRecord")
    else:
        text = pc.cast(text, pa.string())
    lists = pa.ListArray.from_arrays(pa.array(splits.astype(np.int32)), text)
    return pc.binary_join(lists, " ")


def _to_utf8(array: pa.Array, name: str) -> pa.Array:
    try:
        return pc.cast(array, pa.string())
    except pa.ArrowInvalid:
        raise TableError(f"column '{name}': a string is not valid UTF-8, which CSV cannot "
                         f"hold; write Parquet or TFRecord") from None


# ---- writers ------------------------------------------------------------------------

class TableWriter:
    """Writes batches of one set into one file; use as a context manager."""

    def __init__(self, path: str, layout: TableLayout, with_weights: bool):
        self.path, self.layout, self.with_weights = path, layout, with_weights
        self.rows = 0
        self._stream = paths.open_binary(path, "wb")

    def write(self, batch: Batch) -> None:
        """Appends the batch's rows; an empty batch only fixes the columns (e.g. a header)."""
        self._write(table_columns(self.layout, batch, self.with_weights), len(batch))
        self.rows += len(batch)

    def _write(self, columns: list[_Column], n: int) -> None:
        raise NotImplementedError

    def close(self) -> None:
        self._stream.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class CsvWriter(TableWriter):
    def __init__(self, path, layout, with_weights):
        super().__init__(path, layout, with_weights)
        self._writer = None

    def _write(self, columns, n):
        table = pa.table({c.name: _column_to_text(c, n) for c in columns})
        if self._writer is None:
            self._writer = pa_csv.CSVWriter(self._stream, table.schema)
        self._writer.write_table(table)

    def close(self):
        if self._writer is None:  # no rows: still a valid table, with its header
            names = [c.name for c in _header_columns(self.layout, self.with_weights)]
            self._stream.write((",".join(f'"{n}"' for n in names) + "\n").encode())
        else:
            self._writer.close()
        super().close()


class ParquetWriter(TableWriter):
    def __init__(self, path, layout, with_weights):
        super().__init__(path, layout, with_weights)
        self._writer = None

    def _write(self, columns, n):
        table = pa.table({c.name: _column_to_arrow(c) for c in columns})
        if self._writer is None:
            self._writer = pq.ParquetWriter(self._stream, table.schema)
        elif table.schema != self._writer.schema:
            table = table.cast(self._writer.schema)
        if n:
            self._writer.write_table(table, row_group_size=n)

    def close(self):
        if self._writer is not None:
            self._writer.close()
        super().close()


class TfRecordWriter(TableWriter):
    def close(self):
        if not self.rows:  # TFRecord has no header: an empty file would read as "empty file"
            super().close()
            raise TableError(f"{self.path}: no rows to write; a TFRecord table cannot be empty "
                             f"(use fewer shards, or CSV/Parquet)")
        super().close()

    def _write(self, columns, n):
        # Slice every column into per-row Python lists once; the loop then only
        # fills protobuf messages.
        per_row = []
        for column in columns:
            if column.spec is None:
                if column.values.dtype.kind == "S":
                    per_row.append((column.name, "bytes_list", True,
                                    np.asarray(column.values).tolist()))
                else:
                    per_row.append((column.name, "float_list", True, column.values.tolist()))
                continue
            splits, flat = _flat_rows(column.values, n)
            kind = ("bytes_list" if column.spec.is_string else
                    "float_list" if column.spec.dtype.kind == "f" else "int64_list")
            flat_list = flat.tolist()
            starts, ends = splits[:-1].tolist(), splits[1:].tolist()
            per_row.append((column.name, kind, False,
                            [flat_list[s:e] for s, e in zip(starts, ends)]))
        write = self._stream.write
        for i in range(n):
            example = example_pb2.Example()
            features = example.features.feature
            for name, kind, single, values in per_row:
                target = getattr(features[name], kind).value
                if single:
                    target.append(values[i])
                else:
                    target.extend(values[i])
            write(tfrecord.encode_record(example.SerializeToString()))


_WRITERS = {"csv": CsvWriter, "parquet": ParquetWriter, "tfrecord": TfRecordWriter}


def _header_columns(layout: TableLayout, with_weights: bool) -> list[_Column]:
    names = ["#source", "#target"] if layout.kind == EDGES else ["#id"]
    declared = [spec.name for spec in layout.features]
    if layout.kind == EDGES and with_weights and not set(declared) & set(WEIGHT_COLUMNS):
        names.append(WEIGHT_COLUMN)
    return [_Column(n, None, None) for n in names + declared]


def open_writer(path: str, layout: TableLayout, *, with_weights: bool = False) -> TableWriter:
    """A writer for `path`, its format from the file name (.csv, .tfrecord, .parquet)."""
    fmt = paths.file_format(path)
    if fmt not in _WRITERS:
        raise TableError(f"{path}: cannot write tables of format '{fmt}'")
    return _WRITERS[fmt](path, layout, with_weights)


def _peek(batches: Iterable[Batch]) -> tuple[Batch | None, Iterator[Batch]]:
    iterator = iter(batches)
    first = next(iterator, None)
    if first is None:
        return None, iter(())

    def chained():
        yield first
        yield from iterator

    return first, chained()


def write_table(path: str, layout: TableLayout, batches: Iterable[Batch]) -> int:
    """Writes every batch to one file; returns the row count. Weights if the first batch has them."""
    return write_sharded([path], layout, batches)[0]


def slice_batch(batch: Batch, start: int, end: int) -> Batch:
    """Rows [start, end) of a batch, features (Ragged too) included."""
    index = np.arange(start, end, dtype=np.int64)
    features = {name: take(values, index) for name, values in batch.features.items()}
    if isinstance(batch, EdgeBatch):
        return EdgeBatch(batch.edge_set, batch.sources[start:end], batch.targets[start:end],
                         batch.rows[start:end],
                         None if batch.weights is None else batch.weights[start:end], features)
    return NodeBatch(batch.node_set, batch.ids[start:end], batch.rows[start:end], features)


def write_sharded(paths_out: list[str], layout: TableLayout, batches: Iterable[Batch]) -> list[int]:
    """Writes batches over the files `paths_out`; returns rows per file.

    Every batch is cut into len(paths_out) near-equal contiguous slices, slice j
    going to file j, so every file gets rows once a batch has as many rows as
    there are files, and row order is kept within each file.
    """
    first, batches = _peek(batches)
    if first is None:
        raise TableError(f"{layout.what}: no batches to write to {paths_out[0]}")
    with_weights = getattr(first, "weights", None) is not None
    writers = [open_writer(p, layout, with_weights=with_weights) for p in paths_out]
    try:
        empty = slice_batch(first, 0, 0)
        for writer in writers:  # fixes every file's columns, even one that gets no rows
            writer.write(empty)
        for batch in batches:
            bounds = np.linspace(0, len(batch), len(writers) + 1).round().astype(np.int64)
            for writer, start, end in zip(writers, bounds[:-1], bounds[1:]):
                if end > start:
                    writer.write(slice_batch(batch, int(start), int(end)))
    finally:
        errors = []
        for writer in writers:
            try:
                writer.close()
            except TableError as e:
                errors.append(e)
        if errors:
            raise errors[0]
    return [w.rows for w in writers]
