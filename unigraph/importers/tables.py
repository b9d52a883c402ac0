"""Plain tables (CSV, Parquet, TFRecord) with no schema as an ImportedGraph.

A folder of tables: one table per file (`users.csv`), per set of shards
(`purchases-00000-of-00004.parquet` ...) or per sub-folder of files of one format
(`events/part-0.parquet` ...). Each table is profiled from a sample of its rows (Arrow
infers CSV types; space-separated numbers in a CSV cell are a vector, as the readers
read them), the id columns of node table candidates are read whole, and
unigraph.importers.infer guesses what is what. The rows are then read by the project's
own readers (unigraph.tables), under the tables' own column names (a layout whose
key columns are `user_id`, not `#id`), so every value is checked as `sample` would
check it, and the writers write them with the canonical columns.
"""
from __future__ import annotations

import dataclasses
import os
import re

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pa_csv
import pyarrow.parquet as pq

from unigraph.columnar.table_source import MEMORY_PREFIX, TableSource
from unigraph.errors import TableError, one_line
from unigraph.encoding import tfrecord
from unigraph.importers.graph import ID, Builder, ImportedGraph, Split, file_stem
from unigraph.importers.infer import (ColumnProfile, Guess, Hints, TableProfile, _id_column,
                                      infer)
from unigraph.protos import example_pb2
from unigraph.protos import graph_schema_pb2 as gs
from unigraph.tables.layout import NODES, FeatureSpec, TableLayout
from unigraph.tables.read import WorkUnit, read_unit
from unigraph.timestamps import TIMESTAMP_COLUMN_KEY, TIMESTAMP_COLUMNS

SAMPLE_ROWS = 65536
SAMPLE_BYTES = 16 << 20
FORMATS = {".csv": "csv", ".parquet": "parquet", ".tfrecord": "tfrecord",
           ".tfrecords": "tfrecord", ".tfrecord.gz": "tfrecord"}
_SHARD = re.compile(r"-\d{5}-of-\d{5}$")
_NUMBER = r"[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?|[-+]?(nan|inf|NaN|Inf|infinity)"
_VECTOR = re.compile(rf"^\s*({_NUMBER})(\s+({_NUMBER}))*\s*$")
_INTEGERS = re.compile(r"^\s*[-+]?\d+(\s+[-+]?\d+)*\s*$")
DISTINCT_VALUES = 20      # a text column with at most this many values lists them (splits)


def _format(name: str) -> tuple[str, str] | None:
    for suffix in sorted(FORMATS, key=len, reverse=True):
        if name.endswith(suffix):
            return name[:-len(suffix)], FORMATS[suffix]
    return None


def list_tables(folder: str) -> dict[str, tuple[str, list[str]]]:
    """stem -> (format, files) of the tables in a folder (module docstring)."""
    if not os.path.isdir(folder):
        raise TableError(f"{folder}: no such folder")
    tables: dict[str, tuple[str, list[str]]] = {}
    for entry in sorted(os.listdir(folder)):
        path = os.path.join(folder, entry)
        if entry.startswith("."):
            continue
        if os.path.isdir(path):
            found = [(_format(n), os.path.join(path, n)) for n in sorted(os.listdir(path))]
            found = [(kind, p) for kind, p in found if kind is not None]
            kinds = {kind[1] for kind, _ in found}
            if len(kinds) == 1:
                tables[entry] = (kinds.pop(), [p for _, p in found])
            continue
        kind = _format(entry)
        if kind is None:
            continue
        stem = _SHARD.sub("", kind[0])
        fmt, files = tables.setdefault(stem, (kind[1], []))
        if fmt != kind[1]:
            raise TableError(f"{path}: table '{stem}' has files of two formats ({fmt} and "
                             f"{kind[1]}); keep one")
        files.append(path)
    if not tables:
        raise TableError(f"{folder}: no tables (.csv, .parquet, .tfrecord files, or folders of "
                         f"them)")
    return tables


# ---- profiles ---------------------------------------------------------------------------

def _as_bytes(column: pa.Array) -> np.ndarray:
    text = pc.cast(column, pa.string()) if not pa.types.is_binary(column.type) else column
    return np.array([v if isinstance(v, bytes) else v.encode() for v in text.to_pylist()],
                    dtype="S") if len(text) else np.zeros(0, "S1")


def _profile_arrow(name: str, column, csv: bool) -> ColumnProfile:
    column = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    kind = column.type
    if column.null_count:
        return ColumnProfile(name, gs.DT_INVALID, (), note="empty values in the sample; the "
                             "readers refuse empty values")
    if pa.types.is_integer(kind) or pa.types.is_string(kind) or pa.types.is_large_string(kind) \
            or pa.types.is_binary(kind) or pa.types.is_large_binary(kind):
        text = not pa.types.is_integer(kind)
        if text and csv and len(column):
            strings = pc.cast(column, pa.string())
            if pc.all(pc.match_substring_regex(strings, _VECTOR.pattern)).as_py():
                return _text_vectors(name, strings)
        sample = _as_bytes(column)
        unique = len(np.unique(sample)) == len(sample)
        values = None
        if text:
            distinct = pc.unique(column)
            if len(distinct) <= DISTINCT_VALUES:
                values = {v.decode() if isinstance(v, bytes) else v for v in distinct.to_pylist()}
        return ColumnProfile(name, gs.DT_STRING if text else gs.DT_INT64, (), unique, sample,
                             values=values)
    if pa.types.is_floating(kind):
        note = "float64 values, read as DT_FLOAT" if kind == pa.float64() else ""
        return ColumnProfile(name, gs.DT_FLOAT, (), note=note)
    if pa.types.is_boolean(kind):
        return ColumnProfile(name, gs.DT_BOOL, ())
    if pa.types.is_timestamp(kind) or pa.types.is_date(kind):
        unit = getattr(kind, "unit", "days")
        return ColumnProfile(name, gs.DT_INT64, (), is_time=True,
                             note=f"{kind}: its integer, in {unit}")
    if pa.types.is_list(kind) or pa.types.is_large_list(kind) or pa.types.is_fixed_size_list(kind):
        if pa.types.is_fixed_size_list(kind):
            shape = (kind.list_size,)
        else:
            lengths = pc.list_value_length(column).to_numpy(zero_copy_only=False)
            shape = (int(lengths[0]),) if len(lengths) and (lengths == lengths[0]).all() \
                else (-1,)
        inner = kind.value_type
        if pa.types.is_floating(inner):
            return ColumnProfile(name, gs.DT_FLOAT, shape)
        if pa.types.is_integer(inner):
            return ColumnProfile(name, gs.DT_INT64, shape)
        if pa.types.is_string(inner) or pa.types.is_binary(inner):
            return ColumnProfile(name, gs.DT_STRING, shape)
    return ColumnProfile(name, gs.DT_INVALID, (), note=f"values of type {kind} are not read")


def _text_vectors(name: str, strings: pa.Array) -> ColumnProfile:
    """A CSV column of space-separated numbers: a vector ([d] when every sampled cell has
    d values, else ragged), integers when every value is whole."""
    parts = pc.split_pattern_regex(pc.utf8_trim_whitespace(strings), r"\s+")
    lengths = pc.list_value_length(parts).to_numpy(zero_copy_only=False)
    shape = (int(lengths[0]),) if len(lengths) and (lengths == lengths[0]).all() else (-1,)
    integers = pc.all(pc.match_substring_regex(strings, _INTEGERS.pattern)).as_py()
    if shape == (1,):
        return ColumnProfile(name, gs.DT_INT64 if integers else gs.DT_FLOAT, ())
    return ColumnProfile(name, gs.DT_INT64 if integers else gs.DT_FLOAT, shape,
                         note=f"vectors of {shape[0]} space-separated numbers" if shape[0] > 0
                         else "lists of space-separated numbers")


def _sample_table(fmt: str, path: str) -> pa.Table:
    try:
        if fmt == "parquet":
            batches = pq.ParquetFile(path).iter_batches(batch_size=SAMPLE_ROWS)
            first = next(batches, None)
            return pa.Table.from_batches([first]) if first is not None else \
                pq.ParquetFile(path).schema_arrow.empty_table()
        reader = pa_csv.open_csv(path, read_options=pa_csv.ReadOptions(block_size=SAMPLE_BYTES))
        batches = []
        rows = 0
        for batch in reader:
            batches.append(batch)
            rows += batch.num_rows
            if rows >= SAMPLE_ROWS:
                break
        table = pa.Table.from_batches(batches, reader.schema)
        return table.slice(0, SAMPLE_ROWS)
    except (pa.ArrowInvalid, OSError) as e:
        raise TableError(f"{path}: {one_line(e)}") from None


def _profile_tfrecord(path: str) -> tuple[int, dict[str, ColumnProfile]]:
    """Columns of the first records of a TFRecord table: the kind and value count of each."""
    kinds: dict[str, str] = {}
    counts: dict[str, list[int]] = {}
    values: dict[str, list] = {}
    rows = 0
    stream = tfrecord.open_records(path)
    try:
        records = tfrecord.iter_records(stream, path)
        for record in records:
            example = example_pb2.Example()
            try:
                example.ParseFromString(record)
            except Exception as e:  # protobuf's DecodeError
                raise TableError(f"{path}: record {rows}: {one_line(e)}") from None
            for key, feature in example.features.feature.items():
                kind = feature.WhichOneof("kind") or "float_list"
                kinds.setdefault(key, kind)
                listed = list(getattr(feature, kind).value)
                counts.setdefault(key, []).append(len(listed))
                if len(listed) == 1:
                    values.setdefault(key, []).append(listed[0])
            rows += 1
            if rows >= SAMPLE_ROWS // 16:
                break
    finally:
        stream.close()
    dtypes = {"bytes_list": gs.DT_STRING, "float_list": gs.DT_FLOAT, "int64_list": gs.DT_INT64}
    profiles = {}
    for key in kinds:
        lengths = np.array(counts[key])
        if len(lengths) != rows:
            profiles[key] = ColumnProfile(key, gs.DT_INVALID, (), note="missing in some records")
            continue
        shape = () if (lengths == 1).all() else (int(lengths[0]),) \
            if (lengths == lengths[0]).all() else (-1,)
        profile = ColumnProfile(key, dtypes[kinds[key]], shape)
        if not shape and kinds[key] != "float_list":
            sample = np.array([v if isinstance(v, bytes) else str(v).encode()
                               for v in values[key]], dtype="S")
            profile.sample, profile.unique = sample, len(np.unique(sample)) == len(sample)
            if kinds[key] == "bytes_list" and len(set(values[key])) <= DISTINCT_VALUES:
                profile.values = {v.decode(errors="replace") for v in values[key]}
        profiles[key] = profile
    return rows, profiles


def profile_tables(folder: str) -> dict[str, TableProfile]:
    """Every table of the folder, profiled from its first file's first rows."""
    profiles = {}
    for stem, (fmt, files) in list_tables(folder).items():
        if fmt == "tfrecord":
            rows, columns = _profile_tfrecord(files[0])
        else:
            table = _sample_table(fmt, files[0])
            rows = table.num_rows
            columns = {name: _profile_arrow(name, table.column(name), fmt == "csv")
                       for name in table.column_names}
        profiles[stem] = TableProfile(stem, files, fmt, rows, columns)
    return profiles


def _key_layout(kind: str, stem: str, keys: tuple[str, ...],
                features: tuple[FeatureSpec, ...] = ()) -> TableLayout:
    return TableLayout(kind, stem, features, key_spellings=tuple((k,) for k in keys))


def _read(files: list[str], layout: TableLayout, batch_rows: int):
    for index, path in enumerate(files):
        yield from read_unit(layout, WorkUnit(path, index), batch_rows)


def read_ids(profile: TableProfile, column: str) -> np.ndarray:
    """Every value of a table's id column, sorted and distinct ('S'), read by the readers."""
    layout = _key_layout(NODES, profile.stem, (column,))
    parts = [batch.ids for batch in _read(profile.files, layout, 1 << 20)]
    return np.unique(np.concatenate(parts)) if parts else np.zeros(0, "S1")


def guess_tables(folder: str, hints: Hints | None = None) -> Guess:
    """Profiles the folder's tables, reads the id columns of node table candidates and
    guesses the schema (unigraph.importers.infer)."""
    hints = hints or Hints()
    profiles = profile_tables(folder)
    for stem, profile in profiles.items():
        if stem in hints.skip:
            continue
        column, _ = _id_column(profile, hints)
        if column is not None:
            profile.ids = read_ids(profile, column)
    return infer(profiles, hints)


# ---- the imported graph -------------------------------------------------------------------

def _source(stem: str, files: list[str], keys: tuple[str, ...], columns: list[str]) -> TableSource:
    """Input files read under their own key column names (TableSource.read)."""
    canonical = [ID] if len(keys) == 1 else ["#source", "#target"]
    schema = pa.schema([(name, pa.null()) for name in canonical + columns])

    def read(layout: TableLayout, batch_rows: int):
        return _read(files, dataclasses.replace(layout, key_spellings=tuple((k,) for k in keys)),
                     batch_rows)

    return TableSource(MEMORY_PREFIX + stem, schema, lambda: (), read=read)


def _declared(columns: dict[str, ColumnProfile]) -> dict[str, gs.Feature]:
    features = {}
    for name, col in columns.items():
        feature = features[name] = gs.Feature(dtype=col.dtype)
        for size in col.shape:
            feature.shape.dim.add(size=size)
    return features


def from_tables(folder: str, guess: Guess, *, reverse_edges: bool = True) -> ImportedGraph:
    """The ImportedGraph the guess describes (its tables read from `folder`'s files);
    `reverse_edges`: a reversed edge set `rev_<name>` for each edge set, as for OGB."""
    builder = Builder(f"tables in {folder}")
    profiles = guess.profiles
    for stem, node in guess.nodes.items():
        features = guess.features.get(stem, {})
        source = _source(node.set_name, profiles[stem].files, (node.id_column,), list(features))
        node_set = builder.node_set(node.set_name, source, features=_declared(features))
        _timestamp(node_set, guess.timestamps.get(stem))
    for node_set in guess.tableless:
        builder.node_set(node_set)
    for edge in guess.edges:
        features = {} if edge.from_node_table else guess.features.get(edge.table, {})
        source = _source(edge.set_name, profiles[edge.table].files,
                         (edge.source.column, edge.target.column), list(features))
        edge_set = builder.edge_set(edge.set_name, edge.source.node_set, edge.target.node_set,
                                    source, features=_declared(features))
        if not edge.from_node_table:
            _timestamp(edge_set, guess.timestamps.get(edge.table))
    if reverse_edges:
        added = builder.reversed_edge_sets()
        if added:
            builder.note(f"reversed edge sets (read backwards, no table of their own): "
                         f"{', '.join(added)}")
    if guess.seed_set is not None:
        seed_table = next(stem for stem, n in guess.nodes.items()
                          if n.set_name == guess.seed_set)
        builder.seeds(guess.seed_set, guess.label[1] if guess.label else None,
                      _splits(profiles[seed_table], guess))
    return builder.graph


def _timestamp(piece, column: str | None) -> None:
    if column and column not in TIMESTAMP_COLUMNS:
        piece.metadata.extra.add(key=TIMESTAMP_COLUMN_KEY, value=column)


def _splits(profile: TableProfile, guess: Guess) -> list[Split]:
    """One seeds table per value of the split column (or per mask column)."""
    id_column = guess.nodes[profile.stem].id_column
    if guess.split is None and not guess.masks:
        return []
    columns = [guess.split[1]] if guess.split else list(guess.masks.values())
    specs = tuple(FeatureSpec(c, np.dtype(object) if guess.split else np.dtype(np.bool_), (),
                              "DT_STRING" if guess.split else "DT_BOOL") for c in columns)
    layout = _key_layout(NODES, profile.stem, (id_column,), specs)
    ids, values = [], {c: [] for c in columns}
    for batch in _read(profile.files, layout, 1 << 20):
        ids.append(batch.ids)
        for c in columns:
            values[c].append(np.asarray(batch.features[c]))
    ids = np.concatenate(ids) if ids else np.zeros(0, "S1")
    chosen: dict[str, np.ndarray] = {}
    if guess.split:
        column = np.concatenate(values[columns[0]]) if ids.size else np.zeros(0, object)
        labels = np.array([v.decode("utf-8", "replace") if isinstance(v, bytes) else str(v)
                           for v in column.tolist()], dtype=object)
        for value in sorted(set(labels.tolist())):
            chosen[value] = ids[labels == value]
    else:
        for split, column in guess.masks.items():
            chosen[split] = ids[np.concatenate(values[column])] if ids.size else ids
    return [Split(file_stem(split), TableSource.of_table(
        f"seeds-{file_stem(split)}", pa.table({ID: pa.array(list(chosen[split]), pa.binary())})))
        for split in chosen]
