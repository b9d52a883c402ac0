"""TFRecord tables: one tf.train.Example per row, as TF-GNN's unigraph writes them.

A node record holds its id as a one-value bytes feature (`#id` or `id`), an edge
record its ends (`#source`/`source`, `#target`/`target`), plus one feature per
schema feature: bytes_list for strings, int64_list for integers and booleans,
float_list (or int64_list) for floats, the item's values flattened. The column
names are taken from the first record; every record must have them. Messages
name the 0-based record index. Decoding is batched: each record's values are
appended to per-column lists and decode.py converts whole columns.
"""
from __future__ import annotations

from typing import Iterator

import numpy as np
import pyarrow as pa

from unigraph import example_pb2, paths, tfrecord
from unigraph.errors import TableError
from unigraph.tables import decode
from unigraph.tables.build import Batch, ColumnMap, make_batch, resolve_columns
from unigraph.tables.layout import FeatureSpec, TableLayout

_KIND_FOR_DTYPE = {"b": ("int64_list",), "i": ("int64_list",), "u": ("int64_list",),
                   "f": ("float_list", "int64_list"), "O": ("bytes_list",)}


_PRIMARY_KIND = {"b": "int64_list", "i": "int64_list", "u": "int64_list", "f": "float_list",
                 "O": "bytes_list"}


def _slow_values(data: bytes, record: int, path: str, layout: TableLayout, name: str,
                 role: str, spec: FeatureSpec | None) -> list:
    """One column's values of one record, checked precisely; TableError names the record.

    The fast loop in _decode_run comes here only when a value list is not what
    it expects (missing, empty, of another kind), so the message is exact. It
    re-parses the record because indexing a protobuf map inserts missing keys.
    """
    example = example_pb2.Example()
    example.ParseFromString(data)
    fmap = example.features.feature
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


def _decode_run(layout: TableLayout, columns: ColumnMap, path: str, start: int,
                examples: list, raw: list, file_index: int) -> Batch:
    def locate(i: int) -> str:
        return f"{path}: record {start + i}"

    specs: dict[str, FeatureSpec] = {spec.name: spec for spec in layout.features}
    keys_raw = [[] for _ in columns.keys]
    weight_values: list = []
    feature_values = {name: [] for name in columns.features}
    feature_counts = {name: [] for name in columns.features}
    key_plan = list(zip(columns.keys, keys_raw))
    feature_plan = [(name, _PRIMARY_KIND[specs[name].dtype.kind], feature_values[name],
                     feature_counts[name]) for name in columns.features]
    weight = columns.weight
    # The hot loop: one attribute chain per column per record, no checks beyond
    # the length of each value list; anything unusual goes to _slow_values.
    for offset, example in enumerate(examples):
        fmap = example.features.feature
        for name, out in key_plan:
            values = fmap[name].bytes_list.value
            if len(values) == 1:
                out.append(values[0])
            else:
                out.extend(_slow_values(raw[offset], start + offset, path, layout, name,
                                        "key", None))
        if weight:
            values = fmap[weight].float_list.value
            if len(values) == 1:
                weight_values.append(values[0])
            else:
                weight_values.extend(_slow_values(raw[offset], start + offset, path, layout,
                                                  weight, "weight", None))
        for name, kind, out, counts in feature_plan:
            values = getattr(fmap[name], kind).value
            if not values:
                values = _slow_values(raw[offset], start + offset, path, layout, name,
                                      "feature", specs[name])
            out.extend(values)
            counts.append(len(values))
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
    return make_batch(layout, keys, weights, features, file_index, start)


def read_tfrecord(layout: TableLayout, path: str, file_index: int,
                  batch_rows: int) -> Iterator[Batch]:
    columns = None
    run: list = []
    raw: list = []  # the records' bytes, for exact messages on the slow path
    start = 0
    with paths.open_binary(path) as stream:
        for index, data in enumerate(tfrecord.iter_records(stream, path)):
            example = example_pb2.Example()
            try:
                example.ParseFromString(data)
            except Exception:  # protobuf's DecodeError and friends
                raise TableError(f"{path}: record {index}: not a tf.train.Example") from None
            if columns is None:
                names = sorted(example.features.feature)
                columns = resolve_columns(layout, names, f"{path}: record 0")
            run.append(example)
            raw.append(data)
            if len(run) == batch_rows:
                yield _decode_run(layout, columns, path, start, run, raw, file_index)
                start += len(run)
                run, raw = [], []
    if columns is None:
        raise TableError(f"{path}: record 0: empty file, no records")
    if run:
        yield _decode_run(layout, columns, path, start, run, raw, file_index)

