"""Plain-text seed files: one id per line, no header.

A final newline is optional; "\\r\\n" line ends are accepted. Every other line
must hold an id: an empty line is an error (naming its 1-based line), not
something skipped silently.
"""
from __future__ import annotations

from typing import Iterator

import pyarrow as pa

from unigraph.storage import paths
from unigraph.columnar.batches import SeedBatch, row_ids
from unigraph.errors import TableError
from unigraph.tables import decode


def read_text_ids(path: str, file_index: int, batch_rows: int) -> Iterator[SeedBatch]:
    with paths.open_binary(path) as stream:
        data = stream.read()
    if not data:
        raise TableError(f"{path}: line 1: empty file, expected one id per line")
    lines = data.split(b"\n")
    if lines[-1] == b"":
        lines.pop()
    lines = [line[:-1] if line.endswith(b"\r") else line for line in lines]
    for start in range(0, len(lines), batch_rows):
        part = lines[start:start + batch_rows]

        def locate(i: int, start=start) -> str:
            return f"{path}: line {start + i + 1}"

        ids = decode.ids_from_arrow(pa.array(part, pa.binary()), locate, "id")
        yield SeedBatch(ids, row_ids(file_index, start, len(part)))
