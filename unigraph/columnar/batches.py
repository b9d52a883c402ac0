"""The columnar batches that table readers produce and the pipeline consumes.

A reader turns one table file (or one Parquet row group, or a run of CSV rows)
into one batch of numpy columns, never one Python object per cell or row.

Data shapes:
  NodeId     = bytes: ids are numpy fixed-width bytes arrays (dtype 'S'), so
               sorting, np.unique and searchsorted run in C.
  RowId      = int64 canonical position of a row in its (possibly sharded)
               table: (file index << ROW_FILE_SHIFT) | row within the file, where
               files are in their expanded, sorted order. Adjacency order and
               tie-breaks use it, so it never depends on worker scheduling.
  FeatureValues = np.ndarray with the item dimension first (shape [n, *dims]),
               or a unigraph.columnar.ragged.Ragged when a dimension is ragged. Strings
               are object arrays of bytes.
"""
from __future__ import annotations

import dataclasses
from typing import Union

import numpy as np

from unigraph.columnar.ragged import Ragged, take

ROW_FILE_SHIFT = 40  # up to 2**40 rows per file, 2**23 files per table

FeatureValues = Union[np.ndarray, Ragged]


def row_ids(file_index: int, first_row: int, count: int) -> np.ndarray:
    return (np.int64(file_index) << ROW_FILE_SHIFT) + np.arange(
        first_row, first_row + count, dtype=np.int64)


def describe_row(row_id: int) -> tuple[int, int]:
    """(file index, row within file) of a RowId, for messages."""
    return int(row_id) >> ROW_FILE_SHIFT, int(row_id) & ((1 << ROW_FILE_SHIFT) - 1)


@dataclasses.dataclass(eq=False)
class NodeBatch:
    """Rows of a node set's table."""

    node_set: str
    ids: np.ndarray                     # 'S' bytes, one per row
    rows: np.ndarray                    # int64 RowId, one per row
    features: dict[str, FeatureValues]  # schema features, decoded
    # int64 or float64 per row when the job reads the set's timestamp column
    # (unigraph.timestamps), else None.
    timestamps: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.ids)

    def take(self, positions: np.ndarray) -> "NodeBatch":
        """The rows at `positions`."""
        return NodeBatch(self.node_set, self.ids[positions], self.rows[positions],
                         {k: take(v, positions) for k, v in self.features.items()},
                         None if self.timestamps is None else self.timestamps[positions])


@dataclasses.dataclass(eq=False)
class EdgeBatch:
    """Rows of an edge set's table, already oriented (a reversed edge set swaps ends)."""

    edge_set: str
    sources: np.ndarray                 # 'S' bytes
    targets: np.ndarray                 # 'S' bytes
    rows: np.ndarray                    # int64 RowId
    weights: np.ndarray | None          # float64, or None when the table has no weight column
    features: dict[str, FeatureValues]  # schema features (not the weight unless declared)
    timestamps: np.ndarray | None = None  # as NodeBatch.timestamps

    def __len__(self) -> int:
        return len(self.sources)

    def take(self, positions: np.ndarray) -> "EdgeBatch":
        """The rows at `positions`."""
        return EdgeBatch(self.edge_set, self.sources[positions], self.targets[positions],
                         self.rows[positions],
                         None if self.weights is None else self.weights[positions],
                         {k: take(v, positions) for k, v in self.features.items()},
                         None if self.timestamps is None else self.timestamps[positions])


@dataclasses.dataclass(eq=False)
class SeedBatch:
    """Seed ids in the order of the seeds table; `rows` are the sample ids."""

    ids: np.ndarray   # 'S' bytes
    rows: np.ndarray  # int64 RowId of each seed row (where it is, for messages)
    # The seed's time cut-off (the seeds table's `timestamp` column), if it has one.
    timestamps: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.ids)

    def take(self, positions: np.ndarray) -> "SeedBatch":
        return SeedBatch(self.ids[positions], self.rows[positions],
                         None if self.timestamps is None else self.timestamps[positions])


@dataclasses.dataclass(eq=False)
class PairBatch:
    """Rows of a pairs table (link seeds): a source and a target id per row, and the
    features the schema's `_readout` node set declares (the label, say)."""

    sources: np.ndarray                 # 'S' bytes
    targets: np.ndarray                 # 'S' bytes
    rows: np.ndarray                    # int64 RowId (where the row is, for messages)
    features: dict[str, FeatureValues]  # dense, item dimension first
    # The pair's time cut-off (the pairs table's `timestamp` column), if it has one.
    timestamps: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.sources)

    def take(self, positions: np.ndarray) -> "PairBatch":
        return PairBatch(self.sources[positions], self.targets[positions], self.rows[positions],
                         {k: take(v, positions) for k, v in self.features.items()},
                         None if self.timestamps is None else self.timestamps[positions])
