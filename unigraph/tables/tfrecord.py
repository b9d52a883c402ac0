"""TFRecord tables: one tf.train.Example per row, as TF-GNN's unigraph writes them.

A node record holds its id as a one-value bytes feature (`#id` or `id`), an edge
record its ends (`#source`/`source`, `#target`/`target`), plus one feature per
schema feature: bytes_list for strings, int64_list for integers and booleans,
float_list (or int64_list) for floats, the item's values flattened. The column
names are taken from the first record; every record must have them. Messages
name the 0-based record index. Files may be GZIP- or ZLIB-compressed
(unigraph.encoding.tfrecord.open_records tells by the bytes).

A batch is one chunk of records (unigraph.encoding.tfrecord.read_chunks: framed and
checksummed together). examples.py parses all its Examples at once and
decode.py converts whole columns. When that fast path declines a chunk
(an encoding it does not cover, or a record that is wrong), the chunk is
decoded record by record with the protobuf library (`_decode_exact`), which
accepts every valid encoding and names the first bad record precisely.
"""
from __future__ import annotations

from typing import Iterator

import numpy as np
import pyarrow as pa

from unigraph.encoding import tfrecord, wire

from unigraph.protos import example_pb2
from unigraph.errors import TableError
from unigraph.tables import decode, examples
from unigraph.tables.build import Batch, ColumnMap, make_batch, resolve_columns
from unigraph.tables.layout import FeatureSpec, TableLayout

_KIND_FOR_DTYPE = {"b": ("int64_list",), "i": ("int64_list",), "u": ("int64_list",),
                   "f": ("float_list", "int64_list"), "O": ("bytes_list",)}


_PRIMARY_KIND = {"b": "int64_list", "i": "int64_list", "u": "int64_list", "f": "float_list",
                 "O": "bytes_list"}


def _exact_values(fmap, record: int, path: str, layout: TableLayout, name: str,
                  role: str, spec: FeatureSpec | None) -> list:
    """One column's values of one record, checked precisely; TableError names the record."""
    if name not in fmap:
        what = {"key": "missing feature", "weight": "missing weight feature",
                "feature": "missing feature column"}[role]
        raise TableError(f"{path}: record {record}: {layout.what}: {what} '{name}'")
    feature = fmap[name]
    kind = feature.WhichOneof("kind")
    values = list(getattr(feature, kind).value) if kind else []
    if role == "key":
        if len(values) != 1 or kind == "float_list":
            raise TableError(f"{path}: record {record}: feature '{name}': expected one bytes "
                             f"id, found {len(values)} value(s) of {kind or 'no kind'}")
        return [values[0] if kind == "bytes_list" else str(values[0]).encode()]
    if role == "weight":
        if len(values) != 1 or kind == "bytes_list":
            raise TableError(f"{path}: record {record}: feature '{name}': expected one number "
                             f"as weight, found {len(values)} value(s) of {kind or 'no kind'}")
        return values
    if not values:  # an empty list says nothing about its type
        return []
    allowed = _KIND_FOR_DTYPE[spec.dtype.kind]
    if kind not in allowed:
        raise TableError(f"{path}: record {record}: feature '{name}' is a {kind}, expected "
                         f"{' or '.join(allowed)} for {spec.dtype_name}")
    return values


def _roles(layout: TableLayout, columns: ColumnMap) -> dict[str, str]:
    """What examples.parse_chunk reads from each column."""
    roles = {name: examples.KEY for name in columns.keys}
    if columns.weight:
        roles[columns.weight] = examples.WEIGHT
    for spec in layout.features:
        roles.setdefault(spec.name, _PRIMARY_KIND[spec.dtype.kind])
    return roles


def _arrow_numbers(numbers: np.ndarray) -> pa.Array:
    """A numpy array of numbers as an Arrow array, sharing its memory.

    (pa.array would do, but its first call imports pandas: half a second.)
    """
    numbers = np.ascontiguousarray(numbers)
    return pa.Array.from_buffers(pa.from_numpy_dtype(numbers.dtype), len(numbers),
                                 [None, pa.py_buffer(numbers)])


def _decode_fast(layout: TableLayout, columns: ColumnMap, path: str,
                 chunk: tfrecord.RecordChunk, parsed: dict, file_index: int) -> Batch:
    start = chunk.first_index

    def locate(i: int) -> str:
        return f"{path}: record {start + i}"

    buffer = chunk.buffer
    keys = []
    for name in columns.keys:
        values = parsed[name]
        if values.numbers is not None:  # int64 ids, named by their decimal text
            keys.append(decode.ids_from_arrow(_arrow_numbers(values.numbers), locate, name))
        else:
            keys.append(decode.ids_from_spans(buffer, values.starts, values.lengths, locate,
                                              name))
    weights = (decode.weights_from_values(parsed[columns.weight].numbers, locate,
                                          columns.weight) if columns.weight else None)
    features = {}
    for spec in layout.features:
        values = parsed[spec.name]
        if values.numbers is not None:
            flat = _arrow_numbers(values.numbers)
        else:
            data, offsets = wire.gather_spans(buffer, values.starts, values.lengths)
            flat = pa.LargeBinaryArray.from_buffers(
                pa.large_binary(), len(values.starts),
                [None, pa.py_buffer(offsets), pa.py_buffer(data)])
        features[spec.name] = decode.feature_from_lists(spec, values.counts, flat, locate,
                                                        spec.name)
    return make_batch(layout, keys, weights, features, file_index, start, locate=locate)


def _decode_exact(layout: TableLayout, columns: ColumnMap, path: str,
                  chunk: tfrecord.RecordChunk, file_index: int) -> Batch:
    """The chunk decoded record by record with the protobuf library (any valid encoding)."""
    start = chunk.first_index
    raw = [chunk.record(i) for i in range(len(chunk))]
    parsed = [_parse(data, path, start + i) for i, data in enumerate(raw)]

    def locate(i: int) -> str:
        return f"{path}: record {start + i}"

    specs: dict[str, FeatureSpec] = {spec.name: spec for spec in layout.features}
    keys_raw = [[] for _ in columns.keys]
    weight_values: list = []
    feature_values = {name: [] for name in columns.features}
    feature_counts = {name: [] for name in columns.features}
    weight = columns.weight
    for offset, example in enumerate(parsed):
        fmap = example.features.feature
        record = start + offset
        for name, out in zip(columns.keys, keys_raw):
            out.extend(_exact_values(fmap, record, path, layout, name, "key", None))
        if weight:
            weight_values.extend(_exact_values(fmap, record, path, layout, weight, "weight",
                                               None))
        for name in columns.features:
            values = _exact_values(fmap, record, path, layout, name, "feature", specs[name])
            feature_values[name].extend(values)
            feature_counts[name].append(len(values))
    keys = [decode.ids_from_arrow(pa.array(raw_ids, pa.binary()), locate, name)
            for raw_ids, name in zip(keys_raw, columns.keys)]
    weights = (decode.weights_from_values(np.array(weight_values, dtype=np.float64), locate,
                                          weight) if weight else None)
    features = {}
    for name in columns.features:
        spec = specs[name]
        collected = feature_values[name]
        if spec.is_string:
            values = pa.array(collected, pa.binary())
        elif spec.dtype.kind == "f":
            values = pa.array(np.array(collected, dtype=np.float64 if spec.dtype.itemsize > 4
                                       else np.float32))
        else:
            values = pa.array(np.array(collected, dtype=np.int64))
        counts = np.array(feature_counts[name], dtype=np.int64)
        features[name] = decode.feature_from_lists(spec, counts, values, locate, name)
    return make_batch(layout, keys, weights, features, file_index, start, locate=locate)


def _parse(data: bytes, path: str, record: int) -> example_pb2.Example:
    example = example_pb2.Example()
    try:
        example.ParseFromString(data)
    except Exception:  # protobuf's DecodeError and friends
        raise TableError(f"{path}: record {record}: not a tf.train.Example") from None
    return example


def _finish(chunks: Iterator[tfrecord.RecordChunk], last: tfrecord.RecordChunk,
            path: str) -> None:
    """Reads past the last chunk, so damage after it is reported before it is decoded.

    A record-by-record reader meets damage before it decodes the batch it is
    filling, but after parsing every record before the damage: a record that
    is no tf.train.Example is named first.
    """
    try:
        for _ in chunks:
            pass
    except TableError:
        for i in range(len(last)):
            _parse(last.record(i), path, last.first_index + i)
        raise


def read_tfrecord(layout: TableLayout, path: str, file_index: int, batch_rows: int, *,
                  check_crc: bool = True) -> Iterator[Batch]:
    """Batches of one TFRecord file (plain or compressed), `batch_rows` records each.

    `check_crc=False` skips the data checksums (the length checksums that frame
    the records are always checked).
    """
    stream = tfrecord.open_records(path)
    try:
        chunks = tfrecord.read_chunks(stream, path, check_crc=check_crc, records=batch_rows)
        columns = roles = None
        layouts: dict = {}  # the records' layout, kept from chunk to chunk
        for chunk in chunks:
            if columns is None:
                names = sorted(_parse(chunk.record(0), path, 0).features.feature)
                columns = resolve_columns(layout, names, f"{path}: record 0")
                roles = _roles(layout, columns)
            if len(chunk) < batch_rows:
                _finish(chunks, chunk, path)
            parsed = examples.parse_chunk(chunk.buffer, chunk.starts, chunk.lengths, roles,
                                          layouts)
            if parsed is None:
                yield _decode_exact(layout, columns, path, chunk, file_index)
            else:
                yield _decode_fast(layout, columns, path, chunk, parsed, file_index)
        if columns is None:
            raise TableError(f"{path}: record 0: empty file, no records")
    finally:
        stream.close()
