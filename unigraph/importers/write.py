"""Writing an imported graph as a unigraph folder, all or nothing.

    <output>/<table>.<ext>          one table per node set with a table and per edge set
                                    (a reversed edge set reads its forward set's table)
    <output>/seeds-<split>.<ext>    one per split: `#id` (link seeds: pairs-<split>.<ext>,
                                    `source`, `target` and the pairs' features)
    <output>/sampling_spec.pbtxt    the starting spec (unigraph.importers.spec)
    <output>/graph_schema.pbtxt     written last: it names the rest

Every table is read from its TableSource by the readers (unigraph.tables.read_memory,
so every value is checked as a table file's would be) and written by the writers
`unigraph-convert` uses (unigraph.tables.writers), into a staging folder inside the
output folder; the files are moved onto their names only when all were written
(unigraph.storage.staging), so a bad value anywhere leaves the output folder as it was.
"""
from __future__ import annotations

from typing import Callable

from google.protobuf import text_format

from unigraph.importers.graph import ImportedGraph
from unigraph.importers.spec import DEFAULT_FANOUTS, SPEC_FILE_NAME, starting_spec
from unigraph.schema import SCHEMA_FILE_NAME, check_schema, has_table, is_link_readout
from unigraph.storage import paths
from unigraph.storage.staging import write_staged
from unigraph.tables.layout import is_reversed, pairs_layout, seeds_layout, table_layout
from unigraph.tables.read import read_memory
from unigraph.tables.writers import EXTENSIONS, write_sharded

STAGING_PREFIX = ".import-staging-"


def _readers_of(graph: ImportedGraph) -> dict[str, tuple[str, str]]:
    """Table stem -> the (kind, set) whose layout writes it: a node set, or the edge set
    reading it forwards (else the first that reads it)."""
    readers: dict[str, tuple[str, str]] = {}
    for name, node_set in sorted(graph.schema.node_sets.items()):
        if has_table(node_set.metadata):
            readers.setdefault(node_set.metadata.filename, ("nodes", name))
    for name, edge_set in sorted(graph.schema.edge_sets.items(),
                                 key=lambda item: (is_reversed(item[1]), item[0])):
        if not is_link_readout("edge set", name):
            readers.setdefault(edge_set.metadata.filename, ("edges", name))
    return readers


def write_graph(graph: ImportedGraph, output: str, fmt: str = "csv",
                fanouts=DEFAULT_FANOUTS, log: Callable[[str], None] | None = None) -> list[str]:
    """Writes the graph into `output` (module docstring); returns one line per file."""
    if fmt not in EXTENSIONS:
        raise ValueError(f"format {fmt!r}: give one of {', '.join(sorted(EXTENSIONS))}")
    loaded = graph.loaded()
    check_schema(loaded)
    spec = starting_spec(graph.schema, graph.seed_set, graph.link, fanouts, graph.origin) \
        if graph.seed_set else None
    ext = EXTENSIONS[fmt]

    def write(staging: str):
        schema = type(graph.schema)()
        schema.CopyFrom(graph.schema)
        names, lines, rows_of = [], [], {}
        for stem, (kind, set_name) in _readers_of(graph).items():
            layout = table_layout(loaded, kind, set_name)
            name = stem + ext
            rows_of[stem] = write_sharded([paths.join(staging, name)], layout,
                                          read_memory(layout, graph.tables[stem]))[0]
            names.append(name)
            lines.append(f"{layout.what}: {rows_of[stem]:,} rows -> {name}")
            if log:
                log(lines[-1])
        for sets in (schema.node_sets, schema.edge_sets):
            for piece in sets.values():
                stem = piece.metadata.filename
                if stem in rows_of:
                    piece.metadata.filename = stem + ext
                    piece.metadata.cardinality = rows_of[stem]
        for split in graph.splits:
            layout = pairs_layout(schema) if graph.link else seeds_layout()
            name = graph.split_file_stem(split) + ext
            rows = write_sharded([paths.join(staging, name)], layout,
                                 read_memory(layout, split.source))[0]
            names.append(name)
            lines.append(f"split '{split.name}': {rows:,} {'pairs' if graph.link else 'seeds'}"
                         f" -> {name}")
            if log:
                log(lines[-1])
        if spec is not None:
            _write_text(paths.join(staging, SPEC_FILE_NAME), spec)
            names.append(SPEC_FILE_NAME)
            lines.append(f"starting spec -> {SPEC_FILE_NAME}")
        _write_text(paths.join(staging, SCHEMA_FILE_NAME), text_format.MessageToString(schema))
        names.append(SCHEMA_FILE_NAME)  # last: it names the rest
        lines.append(f"schema -> {SCHEMA_FILE_NAME}")
        return names, lines

    return write_staged(output, STAGING_PREFIX, write)


def _write_text(path: str, text: str) -> None:
    with paths.open_binary(path, "wb") as f:
        f.write(text.encode("utf-8"))
