"""The column names of a table file, read cheaply (a header, a footer, one record).

Validation uses this before any pipeline runs, e.g. to check that an edge set
sampled by TOP_K or RANDOM_WEIGHTED has a weight column.
"""
from __future__ import annotations

import csv
import io

from unigraph import example_pb2, paths, tfrecord
from unigraph.errors import TableError, one_line


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
