"""Table writers: NodeBatch/EdgeBatch (numpy columns) -> CSV, TFRecord or Parquet files.

The inverse of unigraph.tables: what a writer writes, the readers read back to
identical columns. Used by the converter (pipelines/convert.py) and by tools
that generate graphs. Column names are the canonical `#id`, `#source`,
`#target`, `#weight`; a batch of a reversed edge set is written the way its
table is stored (ends swapped back). Each format is written by whole columns:
CSV and Parquet through Arrow; TFRecord as one tf.train.Example per row, the
bytes of all rows built column by column (`encode_examples`).

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

from unigraph.encoding import tfrecord, wire

from unigraph.storage import paths
from unigraph.columnar.batches import EdgeBatch, FeatureValues, NodeBatch, PairBatch, SeedBatch
from unigraph.errors import TableError
from unigraph.columnar.ragged import Ragged, take
from unigraph.schema import WEIGHT_COLUMNS
from unigraph.tables.layout import EDGES, PAIRS, FeatureSpec, TableLayout

Batch = Union[NodeBatch, EdgeBatch, PairBatch, SeedBatch]  # a seeds table: ids only
WEIGHT_COLUMN = WEIGHT_COLUMNS[0]
EXTENSIONS = {"csv": ".csv", "tfrecord": ".tfrecord", "parquet": ".parquet"}


@dataclasses.dataclass
class _Column:
    name: str
    values: FeatureValues
    spec: FeatureSpec | None  # None: an id column (bytes 'S') or the weight (float64)


def written_features(layout: TableLayout) -> list:
    """The layout's features in the order a table holds them: by name. (A schema's
    features are a protobuf map, whose order differs from process to process: in that
    order, the same graph would be written as different bytes each time.)"""
    return sorted(layout.features, key=lambda spec: spec.name)


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
    elif layout.kind == PAIRS:  # pairs tables name their ends as TF-GNN's link sampler does
        columns = [_Column("source", batch.sources, None), _Column("target", batch.targets, None)]
    else:
        columns = [_Column("#id", batch.ids, None)]
    for spec in written_features(layout):
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
        if n:
            self._stream.write(memoryview(tfrecord.frame_records(encode_examples(columns, n))))


# ---- tf.train.Example, many rows at once ----------------------------------------------

def encode_examples(columns: list[_Column], n: int) -> wire.RowPieces:
    """One serialized tf.train.Example per row (row i of the result), built column-wise.

    Example { features: Features { feature: map<key, Feature> } }, one map entry
    per column in column order: ids/ends as one-value bytes lists, the weight as
    a one-value float list, features as packed float/int64 lists or bytes lists
    of their flattened values. Whole columns at a time; only string features
    (Python bytes objects) are joined per row.
    """
    entries = wire.RowPieces(n)
    for column in columns:
        kind, lists = _list_messages(column, n)
        tag = {"bytes_list": wire.TAG_BYTES_LIST, "float_list": wire.TAG_FLOAT_LIST,
               "int64_list": wire.TAG_INT64_LIST}[kind]
        list_lengths = lists.lengths()
        feature_lengths = 1 + wire.varint_sizes(list_lengths) + list_lengths
        key = column.name.encode("utf-8")
        key_field = (bytes([wire.TAG_FIELD_1]) + wire.varint(len(key)) + key
                     + bytes([wire.TAG_FIELD_2]))
        entry_lengths = len(key_field) + wire.varint_sizes(feature_lengths) + feature_lengths
        entries.fixed(np.array([wire.TAG_FIELD_1], dtype=np.uint8))
        entries.varint(entry_lengths)
        entries.fixed(np.frombuffer(key_field, dtype=np.uint8))
        entries.varint(feature_lengths)
        entries.fixed(np.array([tag], dtype=np.uint8))
        entries.varint(list_lengths)
        entries.varying(*_joined(lists))
    bodies = wire.RowPieces(n)
    bodies.fixed(np.array([wire.TAG_FIELD_1], dtype=np.uint8))
    bodies.varint(entries.lengths())
    bodies.nested(entries)
    return bodies


def _joined(pieces: wire.RowPieces) -> tuple[np.ndarray, np.ndarray]:
    data, offsets = pieces.join()
    return data, np.diff(offsets)


def _packed(pieces: wire.RowPieces, payload: np.ndarray, payload_lengths: np.ndarray) -> None:
    """A packed run: tag, length, payload; nothing at all for an empty row."""
    if len(payload_lengths) and (payload_lengths > 0).all():
        pieces.fixed(np.array([wire.TAG_FIELD_1], dtype=np.uint8))
        pieces.varint(payload_lengths)
    else:
        headers = wire.RowPieces(len(payload_lengths))
        headers.fixed(np.array([wire.TAG_FIELD_1], dtype=np.uint8))
        headers.varint(payload_lengths)
        data, offsets = headers.join()
        keep = np.repeat(payload_lengths > 0, np.diff(offsets))
        pieces.varying(data[keep], np.where(payload_lengths > 0, np.diff(offsets), 0))
    pieces.varying(payload, payload_lengths)


def _list_messages(column: _Column, n: int) -> tuple[str, wire.RowPieces]:
    """(kind, each row's BytesList/FloatList/Int64List message) of one column."""
    pieces = wire.RowPieces(n)
    values = column.values
    if column.spec is None and values.dtype.kind == "S":  # ids: one bytes value per row
        width = values.dtype.itemsize
        matrix = np.ascontiguousarray(values).view(np.uint8).reshape(n, width)
        # (np.char on numpy 1.26, which setup.py allows; np.strings on numpy 2.)
        lengths = getattr(np, "strings", np.char).str_len(values).astype(np.int64)  # NULs: padding
        pieces.fixed(np.array([wire.TAG_FIELD_1], dtype=np.uint8))
        pieces.varint(lengths)
        pieces.varying(matrix[np.arange(width)[None, :] < lengths[:, None]], lengths)
        return "bytes_list", pieces
    if column.spec is None:  # the weight: one float per row
        data = np.asarray(values, dtype="<f4").view(np.uint8).reshape(n, 4)
        pieces.fixed(np.array([wire.TAG_FIELD_1, 4], dtype=np.uint8))
        pieces.fixed(data)
        return "float_list", pieces
    splits, flat = _flat_rows(values, n)
    counts = np.diff(splits)
    if column.spec.is_string:
        rows = [b"".join([b"\x0a" + wire.varint(len(v)) + v for v in flat[s:e]])
                for s, e in zip(splits[:-1].tolist(), splits[1:].tolist())]
        lengths = np.array([len(r) for r in rows], dtype=np.int64)
        pieces.varying(np.frombuffer(b"".join(rows), dtype=np.uint8), lengths)
        return "bytes_list", pieces
    if column.spec.dtype.kind == "f":
        with np.errstate(over="ignore"):  # float64 beyond float32 range becomes inf, as in TF
            data = np.ascontiguousarray(flat, dtype="<f4").view(np.uint8)
        _packed(pieces, data, counts * 4)
        return "float_list", pieces
    ints = np.ascontiguousarray(flat, dtype=np.int64)
    sizes = wire.varint_sizes(ints)
    ends = np.zeros(len(ints) + 1, dtype=np.int64)
    np.cumsum(sizes, out=ends[1:])
    _packed(pieces, wire.encode_varints_array(ints, sizes), ends[splits[1:]] - ends[splits[:-1]])
    return "int64_list", pieces


_WRITERS = {"csv": CsvWriter, "parquet": ParquetWriter, "tfrecord": TfRecordWriter}


def _header_columns(layout: TableLayout, with_weights: bool) -> list[_Column]:
    names = (["#source", "#target"] if layout.kind == EDGES else ["source", "target"]
             if layout.kind == PAIRS else ["#id"])
    declared = [spec.name for spec in written_features(layout)]
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
    if isinstance(batch, SeedBatch):
        return batch.take(np.arange(start, end, dtype=np.int64))
    index = np.arange(start, end, dtype=np.int64)
    features = {name: take(values, index) for name, values in batch.features.items()}
    if isinstance(batch, PairBatch):
        return PairBatch(batch.sources[start:end], batch.targets[start:end],
                         batch.rows[start:end], features)
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
