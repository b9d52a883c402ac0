"""Checks that span files: duplicate node ids and dangling edges.

A single file's problems are caught while reading it (unigraph.tables). Two
more need the whole graph: a node id that appears twice in a node set's table
(in one file or across files), and an edge whose source or target id is not in
its node set's table (only for node sets that have a table; a node set without
one is made of the ids its edges name). Policy: CheckUnigraph fails the
pipeline with a one-line TableError naming the set, the id and where it is
(`<file> line N` for CSV, `record N` for TFRecord, `row N` for Parquet); the
problem it names is the smallest by (set, id, row), so the message does not
depend on worker scheduling, and it says how many more were found.

Both checks partition ids into buckets by a hash that is stable across
processes (not Python's salted hash()), so each bucket's ids meet in one
place and are compared as whole numpy arrays. This module holds the pure
helpers; unigraph.beam_io.CheckUnigraph is the Beam wiring around them.

Data shapes:
  Problem = (set name, id bytes, RowId, kind, detail): sortable tuples;
            kind 'duplicate' (detail: up to two more RowIds of the id) or
            'dangling' (detail: (end, node set)). Rendered to text only when
            reported (describe_problem), since finding a CSV line rescans a file.
  Summary = (the smallest MAX_REPORTED problems, total count)
"""
from __future__ import annotations

from typing import Iterable, Iterator

import numpy as np

from unigraph import paths
from unigraph.batches import describe_row
from unigraph.errors import TableError
from unigraph.tables.decode import show

DEFAULT_BUCKETS = 256
_PRIME = np.uint64(1099511628211)  # FNV-1a's 64-bit prime: spreads bytes well


# ---- pure helpers -------------------------------------------------------------------

def id_buckets(ids: np.ndarray, buckets: int) -> np.ndarray:
    """A bucket in [0, buckets) per id, the same in every process and for any 'S' width.

    hash = sum(byte[j] * PRIME**(j+1)) mod 2**64; padding NULs add nothing, so
    b"ab" hashes alike in an 'S2' and an 'S9' array.
    """
    ids = np.asarray(ids)
    if not len(ids):
        return np.zeros(0, dtype=np.int64)
    width = ids.dtype.itemsize
    matrix = ids.view(np.uint8).reshape(len(ids), width).astype(np.uint64)
    with np.errstate(over="ignore"):
        powers = np.cumprod(np.full(width, _PRIME, dtype=np.uint64), dtype=np.uint64)
        hashes = (matrix * powers).sum(axis=1, dtype=np.uint64)
        hashes ^= hashes >> np.uint64(29)
    return (hashes % np.uint64(buckets)).astype(np.int64)


def split_by_bucket(ids: np.ndarray, rows: np.ndarray,
                    buckets: int) -> Iterator[tuple[int, tuple[np.ndarray, np.ndarray]]]:
    """(bucket, (ids, rows)) for every non-empty bucket of a batch."""
    keys = id_buckets(ids, buckets)
    order = np.argsort(keys, kind="stable")
    keys, ids, rows = keys[order], ids[order], rows[order]
    starts = np.flatnonzero(np.concatenate([[True], keys[1:] != keys[:-1]])) if len(keys) else []
    ends = list(starts[1:]) + [len(keys)]
    for start, end in zip(starts, ends):
        yield int(keys[start]), (ids[start:end], rows[start:end])


def concat_parts(parts: Iterable[tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
    parts = list(parts)
    if not parts:
        return np.zeros(0, dtype="S1"), np.zeros(0, dtype=np.int64)
    return (np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts]))


def find_duplicates(ids: np.ndarray, rows: np.ndarray) -> list[tuple[bytes, np.ndarray]]:
    """(id, its rows in order) for every id that occurs more than once, by id."""
    order = np.lexsort((rows, ids))
    ids, rows = ids[order], rows[order]
    if len(ids) < 2:
        return []
    starts = np.flatnonzero(np.concatenate([[True], ids[1:] != ids[:-1]]))
    counts = np.diff(np.concatenate([starts, [len(ids)]]))
    return [(bytes(ids[start]), rows[start:start + count])
            for start, count in zip(starts[counts > 1], counts[counts > 1])]


def find_dangling(ids: np.ndarray, rows: np.ndarray,
                  known: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The (ids, rows) whose id is not among `known`."""
    missing = ~np.isin(ids, known)
    return ids[missing], rows[missing]


def row_location(files: list[str], row_id: int) -> str:
    """'<file> line N' (CSV, header = line 1) / 'record N' (TFRecord) / 'row N' (Parquet)."""
    file_index, row = describe_row(row_id)
    path = files[file_index]
    fmt = paths.file_format(path)
    if fmt == "csv":
        from unigraph.tables.csv import line_of_row  # only on the error path

        return f"{path} line {line_of_row(path, row)}"
    if fmt == "tfrecord":
        return f"{path} record {row}"
    if fmt == "text":
        return f"{path} line {row + 1}"
    return f"{path} row {row}"


MAX_REPORTED = 20  # problems kept per bucket and in the final summary


def duplicate_problems(set_name: str, ids: np.ndarray, rows: np.ndarray) -> list[tuple]:
    """Problems (set, id, first row, 'duplicate', other rows) of one bucket's node ids."""
    return [(set_name, node_id, int(where[0]), "duplicate", tuple(int(r) for r in where[1:3]))
            for node_id, where in find_duplicates(ids, rows)]


def dangling_problems(edge_set: str, end: str, node_set: str, ids: np.ndarray, rows: np.ndarray,
                      known: np.ndarray) -> list[tuple]:
    """Problems (set, id, row, 'dangling', (end, node set)) of one bucket's edge ends."""
    bad_ids, bad_rows = find_dangling(ids, rows, known)
    return [(edge_set, bytes(i), int(r), "dangling", (end, node_set))
            for i, r in zip(bad_ids, bad_rows)]


def summarise(problems: list[tuple]) -> tuple[list[tuple], int]:
    """(the MAX_REPORTED smallest problems, how many there are)."""
    return sorted(problems)[:MAX_REPORTED], len(problems)


def merge_summaries(summaries: Iterable[tuple[list[tuple], int]]) -> tuple[list[tuple], int]:
    smallest, total = [], 0
    for part, count in summaries:
        smallest, total = sorted(smallest + list(part))[:MAX_REPORTED], total + count
    return smallest, total


def describe_problem(problem: tuple, files: dict[str, list[str]]) -> str:
    """One line for a problem; `files` maps a set name to its table's files."""
    set_name, node_id, row, kind, detail = problem
    if kind == "duplicate":
        places = " and ".join(row_location(files[set_name], r) for r in (row,) + detail[:1])
        more = f" (and {len(detail) - 1} more rows)" if len(detail) > 1 else ""
        return f"node set '{set_name}': duplicate id {show(node_id)} in {places}{more}"
    end, node_set = detail
    return (f"edge set '{set_name}': {end} id {show(node_id)} at "
            f"{row_location(files[set_name], row)} is not in node set '{node_set}'")


def failure(summary: tuple[list[tuple], int], files: dict[str, list[str]]) -> TableError | None:
    """The TableError a summary calls for, or None when there is no problem."""
    smallest, total = summary
    if not total:
        return None
    more = f" (and {total - 1} more problems)" if total > 1 else ""
    return TableError(describe_problem(smallest[0], files) + more)
