"""The node and edge tables of an OGB dataset as Arrow sources that stream its files.

A table is made of columns from several files that list the same rows in the same
order (`node-feat.csv.gz` and `node-label.csv.gz` and `node_year.csv.gz`; `edge.csv.gz`
and `edge-feat.csv.gz`): one file drives the rows (`Streamed`, read block by block),
the others follow it in lockstep (`Streamed` too, served exactly as many rows as the
driving block has) or are held whole (`Held`: small files, one value or a few per row,
checked to have one row per node or edge before any table is made). The rows are
checked as they stream: an edge naming a node the set does not have, or a file ending
before (or after) the count the dataset declares, is one line naming the file and line.

Node ids are the nodes' numbers (0 .. count-1), as OGB numbers them; `sampler.torch`
gives them back as `n_id`. With `undirected` (OGB's `add_inverse_edge`), every edge is
followed by its reverse, and its features are repeated, as `ogb` loads such a dataset.
"""
from __future__ import annotations

import dataclasses
from typing import Callable, Iterator

import numpy as np
import pyarrow as pa

from unigraph.columnar.table_source import TableSource
from unigraph.errors import TableError
from unigraph.importers.arrays import arrow_column
from unigraph.importers.graph import ID, SOURCE, TARGET

HELD_CHUNK = 1 << 20  # rows per batch of a table made of held columns only


@dataclasses.dataclass
class Streamed:
    """A column read block by block: `blocks()` yields [n, ...] arrays, anew each call."""

    name: str
    path: str
    blocks: Callable[[], Iterator[np.ndarray]]
    arrow_type: pa.DataType


@dataclasses.dataclass
class Held:
    """A column held whole: one row per node or edge, checked when it is declared."""

    name: str
    path: str
    values: np.ndarray

    @property
    def arrow_type(self) -> pa.DataType:
        return arrow_column(self.values[:0], self.path).type


class _Cursor:
    """Rows of a Streamed column served in exact counts, in lockstep with another."""

    def __init__(self, column: Streamed, rows_of: str):
        self.column, self.rows_of = column, rows_of  # rows_of: whose rows, for messages
        self._blocks = column.blocks()
        self._pending: list[np.ndarray] = []
        self._ready = 0
        self.served = 0

    def take(self, n: int) -> np.ndarray:
        while self._ready < n:
            block = next(self._blocks, None)
            if block is None:
                raise TableError(f"{self.column.path}: {self.served + self._ready:,} rows, fewer "
                                 f"than {self.rows_of} (one a line)")
            self._pending.append(block)
            self._ready += len(block)
        joined = np.concatenate(self._pending) if len(self._pending) > 1 else self._pending[0]
        out, rest = joined[:n], joined[n:]
        self._pending, self._ready = ([rest] if len(rest) else []), len(rest)
        self.served += n
        return out

    def finish(self) -> None:
        if self._ready or next(self._blocks, None) is not None:
            raise TableError(f"{self.column.path}: more rows than {self.rows_of} (one a "
                             f"line)")


def check_held(column: Held, rows: int, what: str) -> None:
    if len(column.values) != rows:
        raise TableError(f"{column.path}: {len(column.values):,} rows, but {what} has "
                         f"{rows:,} (one a line)")


def _schema(keys: list[tuple[str, pa.DataType]], columns) -> pa.Schema:
    return pa.schema(keys + [(c.name, c.arrow_type) for c in columns])


def _feature_columns(followers: list[_Cursor], held: list[Held], start: int, n: int,
                     repeat: int = 1) -> dict[str, pa.Array]:
    out = {}
    for cursor in followers:
        values = cursor.take(n)
        out[cursor.column.name] = arrow_column(np.repeat(values, repeat, axis=0) if repeat > 1
                                               else values, cursor.column.path)
    for column in held:
        values = column.values[start:start + n]
        out[column.name] = arrow_column(np.repeat(values, repeat, axis=0) if repeat > 1
                                        else values, column.path)
    return out


def node_source(stem: str, count: int, what: str, streamed: list[Streamed],
                held: list[Held]) -> TableSource:
    """A node set's table: `#id` (0 .. count-1), then each column. The first Streamed
    column (if any) drives the rows; every other column must have `count` rows too."""
    for column in held:
        check_held(column, count, what)
    schema = _schema([(ID, pa.int64())], streamed + held)

    def produce():
        if not streamed:
            for start in range(0, count, HELD_CHUNK):
                n = min(HELD_CHUNK, count - start)
                yield pa.record_batch({ID: pa.array(np.arange(start, start + n, dtype=np.int64)),
                                       **_feature_columns([], held, start, n)}, schema=schema)
            return
        driver = streamed[0]
        followers = [_Cursor(c, f"the {count:,} nodes {what} has") for c in streamed[1:]]
        start = 0
        for block in driver.blocks():
            n = len(block)
            if start + n > count:
                raise TableError(f"{driver.path}: more rows than the {count:,} nodes {what} has")
            columns = {ID: pa.array(np.arange(start, start + n, dtype=np.int64)),
                       driver.name: arrow_column(block, driver.path)}
            columns.update(_feature_columns(followers, held, start, n))
            yield pa.record_batch(columns, schema=schema)
            start += n
        if start != count:
            raise TableError(f"{driver.path}: {start:,} rows, but {what} has {count:,} nodes "
                             f"(one a line)")
        for cursor in followers:
            cursor.finish()

    return TableSource.streamed(stem, schema, produce)


def check_ends(path: str, ends: np.ndarray, start: int, counts: tuple[int, int],
               names: tuple[str, str]) -> None:
    """Every edge's source < counts[0] and target < counts[1], both >= 0; else one line
    naming the file and the edge's line (its row + 1: these files have no header)."""
    for side in (0, 1):
        values = ends[:, side]
        if not len(values):
            continue
        bad = (values < 0) | (values >= counts[side])
        if bad.any():
            row = int(np.argmax(bad))
            raise TableError(f"{path}: line {start + row + 1}: "
                             f"{'source' if side == 0 else 'target'} {int(values[row])} is not "
                             f"a node of '{names[side]}', which has {counts[side]:,} nodes")


def edge_source(stem: str, ends_path: str, ends: Callable[[], Iterator[np.ndarray]],
                counts: tuple[int, int], names: tuple[str, str], edges: int | None,
                streamed: list[Streamed], held: list[Held], undirected: bool = False
                ) -> TableSource:
    """An edge set's table: `#source`, `#target` from `ends` ([n, 2] int blocks), then each
    column, one row per edge of the ends file (`edges`: the count the dataset declares,
    if it does). `undirected`: each edge, then its reverse."""
    schema = _schema([(SOURCE, pa.int64()), (TARGET, pa.int64())], streamed + held)
    if edges is not None:
        for column in held:
            check_held(column, edges, f"{ends_path} (num-edge-list)")

    def produce():
        followers = [_Cursor(c, f"the edges of {ends_path}") for c in streamed]
        start = 0
        for block in ends():
            n = len(block)
            if edges is not None and start + n > edges:
                raise TableError(f"{ends_path}: more than the {edges:,} edges the dataset "
                                 f"declares (num-edge-list)")
            for column in held:
                if start + n > len(column.values):
                    raise TableError(f"{column.path}: {len(column.values):,} rows, fewer than "
                                     f"the edges of {ends_path} (one a line)")
            check_ends(ends_path, block, start, counts, names)
            sources, targets = block[:, 0].astype(np.int64), block[:, 1].astype(np.int64)
            if undirected:
                pairs = np.empty((2 * n, 2), np.int64)
                pairs[0::2, 0], pairs[0::2, 1] = sources, targets
                pairs[1::2, 0], pairs[1::2, 1] = targets, sources
                sources, targets = pairs[:, 0], pairs[:, 1]
            columns = {SOURCE: pa.array(sources), TARGET: pa.array(targets)}
            columns.update(_feature_columns(followers, held, start, n, 2 if undirected else 1))
            yield pa.record_batch(columns, schema=schema)
            start += n
        if edges is not None and start != edges:
            raise TableError(f"{ends_path}: {start:,} edges, but the dataset declares {edges:,} "
                             f"(num-edge-list)")
        for column in held:
            check_held(column, start, f"{ends_path} ({names[0]} -> {names[1]})")
        for cursor in followers:
            cursor.finish()

    return TableSource.streamed(stem, schema, produce)
