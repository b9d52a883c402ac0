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


class _Gathered:
    """Values of one column over a run of records."""

    def __init__(self):
        self.values: list = []
        self.counts: list[int] = []


def _key_value(feature, record: int, path: str, name: str) -> bytes:
    kind = feature.WhichOneof("kind")
    values = getattr(feature, kind).value if kind else ()
    if len(values) != 1 or kind == "float_list":
        raise TableError(f"{path}: record {record}: feature '{name}': expected one bytes id, "
                         f"found {len(values)} value(s) of {kind or 'no kind'}")
    value = values[0]
    return value if kind == "bytes_list" else str(value).encode()


def _decode_run(layout: TableLayout, columns: ColumnMap, path: str, start: int,
                examples: list, file_index: int) -> Batch:
    def locate(i: int) -> str:
        return f"{path}: record {start + i}"

    keys_raw = [[] for _ in columns.keys]
    gathered = {name: _Gathered() for name in columns.features}
    weight_values: list = []
    specs: dict[str, FeatureSpec] = {spec.name: spec for spec in layout.features}
    allowed = {name: _KIND_FOR_DTYPE[spec.dtype.kind] for name, spec in specs.items()}
    for offset, example in enumerate(examples):
        fmap = example.features.feature
        record = start + offset
        for slot, name in enumerate(columns.keys):
            if name not in fmap:
                raise TableError(f"{path}: record {record}: {layout.what}: missing feature "
                                 f"'{name}'")
            keys_raw[slot].append(_key_value(fmap[name], record, path, name))
        if columns.weight:
            if columns.weight not in fmap:
                raise TableError(f"{path}: record {record}: missing weight feature "
                                 f"'{columns.weight}' (record 0 has one)")
            feature = fmap[columns.weight]
            kind = feature.WhichOneof("kind")
            values = getattr(feature, kind).value if kind in ("float_list", "int64_list") else ()
            if len(values) != 1:
                raise TableError(f"{path}: record {record}: feature '{columns.weight}': "
                                 f"expected one number as weight, found "
                                 f"{len(values)} value(s) of {kind or 'no kind'}")
            weight_values.append(values[0])
        for name, column in gathered.items():
            if name not in fmap:
                raise TableError(f"{path}: record {record}: {layout.what}: missing feature "
                                 f"column '{name}'")
            feature = fmap[name]
            kind = feature.WhichOneof("kind")
            values = getattr(feature, kind).value if kind else ()
            if not values:  # an empty list says nothing about its type
                column.counts.append(0)
                continue
            if kind not in allowed[name]:
                raise TableError(f"{path}: record {record}: feature '{name}' is a {kind}, "
                                 f"expected {' or '.join(allowed[name])} for "
                                 f"{specs[name].dtype_name}")
            column.values.extend(values)
            column.counts.append(len(values))
    keys = [decode.ids_from_arrow(pa.array(raw, pa.binary()), locate, name)
            for raw, name in zip(keys_raw, columns.keys)]
    weights = (decode.weights_from_values(np.array(weight_values, dtype=np.float64), locate,
                                          columns.weight) if columns.weight else None)
    features = {}
    for name, column in gathered.items():
        spec = specs[name]
        if spec.is_string:
            values = pa.array(column.values, pa.binary())
        elif spec.dtype.kind == "f":
            values = pa.array(np.array(column.values, dtype=np.float64 if spec.dtype.itemsize > 4
                                       else np.float32))
        else:
            values = pa.array(np.array(column.values, dtype=np.int64))
        counts = np.array(column.counts, dtype=np.int64)
        features[name] = decode.feature_from_lists(spec, counts, values, locate, name)
    return make_batch(layout, keys, weights, features, file_index, start)


def read_tfrecord(layout: TableLayout, path: str, file_index: int,
                  batch_rows: int) -> Iterator[Batch]:
    columns = None
    run: list = []
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
            if len(run) == batch_rows:
                yield _decode_run(layout, columns, path, start, run, file_index)
                start += len(run)
                run = []
    if columns is None:
        raise TableError(f"{path}: record 0: empty file, no records")
    if run:
        yield _decode_run(layout, columns, path, start, run, file_index)

