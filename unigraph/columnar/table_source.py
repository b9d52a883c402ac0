"""Tables that are not the graph's files: Arrow record batches held in memory or made as
they are read, or files read under other column names.

`sampler.api.load_graph` samples a graph handed over in Python (a PyG or DGL graph,
through unigraph.importers) without writing it, and `unigraph-import` streams a
dataset's tables into files. Both hand each table to the readers as an `TableSource`:
the columns a table file of the graph would have (`#id`, `#source`, `#target`, one per
feature), which the readers decode exactly as they decode a Parquet file
(`unigraph.tables.read.read_set`), rows numbered as in a single file. So a graph
sampled from memory gives the records of the same tables written and read back.

Plain tables that `unigraph-import` reads (unigraph.importers.tables) are files whose key
columns have other names (`user_id`, not `#id`): their TableSource reads them with the
readers of their format (`read`), under those names.

A schema names a TableSource by its `metadata.filename`, as it names a file; the
source's `name` (`memory:<filename>`) is how messages name the table.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Callable, Iterable, Iterator, Union

import pyarrow as pa

MEMORY_PREFIX = "memory:"

Part = Union[pa.RecordBatch, pa.Table]


def is_memory_name(location: str) -> bool:
    """Whether a table location names an TableSource rather than a file."""
    return location.startswith(MEMORY_PREFIX)


@dataclasses.dataclass(eq=False)
class TableSource:
    """One table as Arrow record batches, produced anew by every `batches()` call (or
    read by `read` of its own)."""

    name: str                                 # for messages: "memory:paper"
    schema: pa.Schema                         # its columns, known before reading
    produce: Callable[[], Iterable[Part]]     # the rows in order, as batches or tables
    nbytes: int = 0                           # bytes held in memory (0: made on the fly)
    # Reads the table itself: (TableLayout, batch rows) -> the readers' batches; for
    # files under other column names. None: the batches above, decoded by the readers.
    read: Callable[[Any, int], Iterator[Any]] | None = None

    @classmethod
    def of_table(cls, filename: str, table: pa.Table) -> "TableSource":
        """A table held in memory."""
        return cls(MEMORY_PREFIX + filename, table.schema, lambda: [table], table.nbytes)

    @classmethod
    def streamed(cls, filename: str, schema: pa.Schema,
                 produce: Callable[[], Iterable[Part]]) -> "TableSource":
        """A table made batch by batch as it is read (e.g. from a dataset's files)."""
        return cls(MEMORY_PREFIX + filename, schema, produce)

    @property
    def columns(self) -> list[str]:
        return list(self.schema.names)

    def batches(self) -> Iterator[pa.RecordBatch]:
        """Every record batch in row order (a table's chunks as they are)."""
        for part in self.produce():
            if isinstance(part, pa.Table):
                yield from part.to_batches()
            else:
                yield part
