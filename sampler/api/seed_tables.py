"""Seed and pairs rows for the API: tables read as `sample --seeds` reads them, and rows
given in Python decoded as a table of them would be (the same types and one-line errors)."""
from __future__ import annotations

import dataclasses
from typing import Any, Optional

import numpy as np

from sampler.plan.plan import Plan, pairs_table_layout
from unigraph.errors import SamplerError, one_line
from unigraph.protos import graph_schema_pb2 as gs
from unigraph.tables import build
from unigraph.tables.layout import TableLayout, TimeColumn


@dataclasses.dataclass
class SeedRows:
    """The rows of a seeds table (`ids`) or, for link specs, a pairs table (`sources`,
    `targets`, the `_readout` `features` it carries), with each row's time cut-off when
    the table has one: what `Graph.read_seeds` reads, in the table's order."""

    ids: Optional[np.ndarray] = None
    sources: Optional[np.ndarray] = None
    targets: Optional[np.ndarray] = None
    features: dict = dataclasses.field(default_factory=dict)
    cutoffs: Optional[np.ndarray] = None

    def __len__(self) -> int:
        return len(self.ids if self.ids is not None else self.sources)

    def take(self, rows: np.ndarray) -> "SeedRows":
        """The rows at these positions."""
        def cut(value):
            return None if value is None else value[rows]

        return SeedRows(cut(self.ids), cut(self.sources), cut(self.targets),
                        {k: v[rows] for k, v in self.features.items()}, cut(self.cutoffs))



def read_seed_rows(plan: Plan, schema: gs.GraphSchema, table: str,
                   timestamp: TimeColumn | None) -> SeedRows:
    """A seeds table, or for a link plan a pairs table, whole and in its order; the
    `timestamp` column, when given, as the rows' cut-offs."""
    from unigraph.tables import read_pair_set, read_seed_set

    if not plan.link:
        rows = list(read_seed_set(table, timestamp=timestamp))
        return SeedRows(ids=concat([r.ids for r in rows], "S1"),
                        cutoffs=None if timestamp is None else
                        concat([r.timestamps for r in rows], timestamp.dtype))
    layout = pairs_table_layout(plan, schema, timestamp)
    rows = list(read_pair_set(layout, table))
    column = None if timestamp is None else timestamp.name
    features = {f.name: np.concatenate([r.features[f.name] for r in rows])
                for f in layout.features if f.name != column} if rows else {}
    return SeedRows(sources=concat([r.sources for r in rows], "S1"),
                    targets=concat([r.targets for r in rows], "S1"), features=features,
                    cutoffs=None if timestamp is None else
                    concat([r.timestamps for r in rows], timestamp.dtype))


def concat(parts: list[np.ndarray], dtype) -> np.ndarray:
    return np.concatenate(parts) if parts else np.zeros(0, dtype)


def ends_only(layout: TableLayout) -> TableLayout:
    """A pairs layout that reads the ends only (known positives carry no features)."""
    return dataclasses.replace(layout, features=(), timestamp=None)


def decode_rows(layout: TableLayout, columns: dict[str, Any], what: str):
    """Rows given in Python as the batch a table of them would read to: the same
    decoding (ids from text, bytes or integers; cut-offs and features by the schema's
    types) and the same one-line errors, rows named `<what> row <i>`."""
    import pyarrow as pa

    given = {name: value for name, value in columns.items() if value is not None}
    lengths = {name: len(value) for name, value in given.items()}
    if len(set(lengths.values())) > 1:
        raise SamplerError(f"{what}: columns of different lengths: "
                           + ", ".join(f"{k} {v}" for k, v in lengths.items()))
    try:
        table = pa.table({name: arrow_column(value, name in _ID_COLUMNS)
                          for name, value in given.items()})
    except (pa.ArrowInvalid, pa.ArrowTypeError, ValueError, TypeError) as e:
        raise SamplerError(f"{what}: {one_line(e)}") from None
    where = f"{what} (Python)"
    mapping = build.resolve_columns(layout, table.column_names, where)

    def locate(i: int) -> str:
        return f"{what} row {i}"

    keys, weights, features = build.decode_arrow(layout, mapping, table, locate)
    return build.make_batch(layout, keys, weights, features, locate=locate)


_ID_COLUMNS = ("id", "source", "target")


def arrow_column(value, ids: bool):
    """A column of ids, times or dense features as Arrow: numbers and strings as they
    are, arrays of shape [n, d1, ...] as fixed-size lists; no ids at all as text."""
    import pyarrow as pa

    array = np.asarray(value) if not isinstance(value, np.ndarray) else value
    if ids and not len(array):
        return pa.array([], pa.binary())
    if array.dtype.kind in "SUO" or array.ndim == 1:
        return pa.array(array.tolist() if array.dtype.kind in "SUO" else array)
    column = pa.array(array.reshape(-1))
    for size in reversed(array.shape[1:]):
        column = pa.FixedSizeListArray.from_arrays(column, size)
    return column
