"""Parquet tables: native columns, read one row group at a time.

Scalars are plain columns; vectors are list, large_list or fixed_size_list
columns, nested once per dimension (a multi-dimensional feature may also be one
flat list per row); strings are string or binary columns; ids may be text or
integers. Row groups are the unit of parallel work, so a big file spreads over
many workers. Messages name the 0-based row within the file.
"""
from __future__ import annotations

from typing import Iterator

import numpy as np
import pyarrow.parquet as pq

from unigraph.storage import paths
from unigraph.errors import TableError, one_line
from unigraph.tables.build import Batch, decode_slices, resolve_columns
from unigraph.tables.layout import TableLayout


def _open(path: str, stream) -> pq.ParquetFile:
    try:
        return pq.ParquetFile(stream)
    except Exception as e:  # pyarrow raises ArrowInvalid/OSError for non-Parquet bytes
        if stream.seek(0, 2) == 0:
            raise TableError(f"{path}: row 0: empty file (0 bytes)") from None
        raise TableError(f"{path}: not a Parquet file: {one_line(e)}") from None


def row_groups(path: str) -> list[int]:
    """The row counts of a file's row groups (the footer only)."""
    with paths.open_binary(path) as stream:
        meta = _open(path, stream).metadata
        return [meta.row_group(i).num_rows for i in range(meta.num_row_groups)]


def read_parquet(layout: TableLayout, path: str, file_index: int, batch_rows: int,
                 row_group: int | None = None) -> Iterator[Batch]:
    """Batches of one row group, or of every row group when `row_group` is None."""
    with paths.open_binary(path) as stream:
        parquet = _open(path, stream)
        columns = resolve_columns(layout, parquet.schema_arrow.names, f"{path}: file schema")
        meta = parquet.metadata
        sizes = [meta.row_group(i).num_rows for i in range(meta.num_row_groups)]
        starts = np.concatenate([[0], np.cumsum(sizes, dtype=np.int64)])
        groups = range(len(sizes)) if row_group is None else [row_group]
        for group in groups:
            try:
                table = parquet.read_row_group(group, columns=columns.needed())
            except Exception as e:
                raise TableError(f"{path}: row group {group}: cannot read: {one_line(e)}") \
                    from None
            yield from decode_slices(layout, columns, table, path, file_index,
                                     int(starts[group]), batch_rows)
