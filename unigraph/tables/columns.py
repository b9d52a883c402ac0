"""The column names and size of a table, read cheaply (a header, a footer, one
record; for BigQuery, the table's metadata or a query's dry run).

Validation uses this before any pipeline runs, e.g. to check that an edge set
sampled by TOP_K or RANDOM_WEIGHTED has a weight column; the job sizes its
joins by the tables' bytes.
"""
from __future__ import annotations

import csv
import io

from unigraph.encoding import tfrecord

from unigraph.protos import example_pb2

from unigraph.storage import bigquery, paths
from unigraph.errors import TableError, one_line
from unigraph.schema import LoadedSchema, bigquery_source, memory_source, table_files


def set_columns(loaded: LoadedSchema, kind: str, name: str) -> list[str]:
    """The column names of a set's table: its first file's, a BigQuery table's, or the
    result's of a BigQuery query; a store's, as its manifest recorded them."""
    if loaded.store is not None:
        return list(loaded.store.table(kind, name).columns)
    held = memory_source(loaded, kind, name)
    if held is not None:
        return held.columns
    source = bigquery_source(loaded, kind, name)
    if source is None:
        return table_columns(table_files(loaded, kind, name)[0])
    if source.sql is not None:
        return list(bigquery.dry_run(source).columns)
    return list(bigquery.table_info(source.table, source.name).columns)


def set_bytes(loaded: LoadedSchema, kind: str, name: str) -> int:
    """The size of a set's table: its files' bytes, a BigQuery table's, or what a BigQuery
    query scans (0 where BigQuery does not tell); a store's, of the tables it was built from."""
    if loaded.store is not None:
        return loaded.store.table(kind, name).bytes
    held = memory_source(loaded, kind, name)
    if held is not None:
        return held.nbytes
    source = bigquery_source(loaded, kind, name)
    if source is None:
        return sum(paths.size(path) for path in table_files(loaded, kind, name))
    if source.sql is not None:
        return bigquery.dry_run(source).bytes_processed or 0
    return bigquery.table_info(source.table, source.name).bytes or 0


def table_columns(path: str) -> list[str]:
    fmt = paths.file_format(path)
    try:
        with paths.open_binary(path) as f:
            if fmt in ("csv", "text"):
                line = io.TextIOWrapper(f, encoding="utf-8", newline="").readline()
                if not line.strip():
                    raise TableError(f"{path}: line 1: empty file, expected a header row")
                return next(csv.reader([line]))
            if fmt == "parquet":
                import pyarrow.parquet as pq

                return list(pq.ParquetFile(f).schema_arrow.names)
            for record in tfrecord.iter_records(f, path):
                example = example_pb2.Example()
                example.ParseFromString(record)
                return sorted(example.features.feature)
            raise TableError(f"{path}: empty TFRecord file")
    except TableError:
        raise
    except Exception as e:  # pyarrow, protobuf and codec errors all mean "unreadable"
        raise TableError(f"{path}: cannot read the column names: {one_line(e)}") from None
