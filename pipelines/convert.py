"""`unigraph-convert`: rewrites a unigraph's tables in another format, with its schema.

    unigraph-convert --graph G --output DIR --format parquet|csv|tfrecord [--shards N]
    unigraph-convert --graph G --output STORE --format store [--chunk-edges N]
                     [--timestamp-column C] [--memory-limit SIZE]
    unigraph-convert --verify STORE

`--format store` writes a graph store instead (sampler/store, docs/store.md): the
indexes the in-memory engine samples, as flat files that `sample --graph STORE`
maps in a second instead of reading the tables; built within --memory-limit whatever
the graph's size (sorted runs spilled to disk beside the store, then merged).
`--verify STORE` checks a store whole: its manifest, every array against the layout's
rules, every file's checksum (sampler/store/checks.py).

Reads every table with the unigraph readers (so the input is fully checked on
the way) and writes `<DIR>/<table>.<ext>` (or `<table>@N.<ext>` with --shards N)
plus `<DIR>/graph_schema.pbtxt` pointing at them; metadata such as a reversed
edge set's `edge_type` is kept. Two edge sets that share a table (e.g. "writes"
and its reversed "written") still share one output table. With N shards, batch
k of a table goes to shard k mod N, so row order is kept within each shard.
Tables in BigQuery (`metadata.bigquery`) are exported the same way: a table is
named after its BigQuery table, a query after its set; BigQuery has no row
order, so the rows come in the order its read streams deliver them.
Runs in one process, streaming batch by batch (memory stays bounded).
TFRecord holds floats as float32: DT_DOUBLE features and weights are rounded.
"""
from __future__ import annotations

import argparse
import itertools
import os
import re
import sys

from google.protobuf import text_format

from sampler.core.long_rows import CHUNK_EDGES
from unigraph.storage import bigquery, paths
from unigraph.storage.staging import write_staged
from unigraph.errors import SamplerError, SchemaError, TableError, message_line, one_line
from unigraph.interrupts import interruptible
from unigraph.schema import (SCHEMA_FILE_NAME, bigquery_source, check_schema, load_schema,
                             set_names, table_files)
from unigraph.tables import read_set, table_layout
from unigraph.tables.writers import EXTENSIONS, write_sharded
from unigraph.timestamps import override_timestamp_column


STORE = "store"
STAGING_PREFIX = ".convert-staging-"  # a run's tables until all are written


def make_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="unigraph-convert",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--graph", metavar="SCHEMA",
                        help="graph schema: a .pbtxt file or a folder holding graph_schema.pbtxt")
    parser.add_argument("--output", metavar="DIR",
                        help="output folder (local or gs://); must not be the input's folder")
    parser.add_argument("--format", choices=sorted(EXTENSIONS) + [STORE],
                        help="table format to write, or store: a graph store for `sample` "
                             "(docs/store.md)")
    parser.add_argument("--verify", metavar="STORE",
                        help="instead of converting: check the graph store STORE whole (its "
                             "manifest, every array, every checksum); exit status 2 and one "
                             "line naming the file when it is damaged")
    parser.add_argument("--shards", type=int, default=1, metavar="N",
                        help="files per table (default 1; tables only)")
    parser.add_argument("--chunk-edges", type=int, default=CHUNK_EDGES, metavar="N",
                        help=f"store only: the long-row layout, as `sample --chunk-edges` "
                             f"(default {CHUNK_EDGES}); jobs on the store must use the same")
    parser.add_argument("--timestamp-column", metavar="COLUMN",
                        help="store only: the column holding node and edge timestamps in every "
                             "table, as `sample --timestamp-column`")
    parser.add_argument("--memory-limit", type=memory_size, metavar="SIZE",
                        help="store only: the memory the build may use, e.g. 4G or 512M "
                             "(default: 2G, or half the memory available where that is "
                             "less: the machine's, within its cgroup's limit); a lower limit "
                             "spills more to disk, never changes a byte")
    parser.add_argument("--bigquery-project", metavar="PROJECT",
                        help="the project BigQuery queries and reads are billed to (default: "
                             "GOOGLE_CLOUD_PROJECT, else the credentials' project)")
    return parser


_SIZE_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


def memory_size(text: str) -> int:
    """Bytes of a size given as 4G, 4GB, 4GiB, 512M, 1.5G or a number of bytes (powers of
    1024, as free -h and cgroups count)."""
    match = re.fullmatch(r"\s*([0-9]+(?:\.[0-9]*)?)\s*([KMGT]?)(?:i?B)?\s*", text, re.I)
    if not match:
        raise argparse.ArgumentTypeError(f"not a size: {text!r} (e.g. 4G, 512M)")
    return int(float(match.group(1)) * _SIZE_UNITS[match.group(2).upper()])


def _table_name(filename: str) -> str:
    """A readable output name from an input table name: 'edges-cites.tfrecords-*' -> 'edges-cites'."""
    base = filename.rsplit("/", 1)[-1]
    for mark in ("@", "*", "?", "["):
        base = base.split(mark, 1)[0]
    for ext in (".csv", ".tfrecords", ".tfrecord", ".parquet"):
        base = base.replace(ext, "")
    return base.rstrip("-_.") or "table"


def convert(graph: str, output: str, fmt: str, shards: int = 1) -> list[str]:
    """Converts every table; returns one summary line per written table.

    All or nothing: the tables and schema are written into a staging folder inside the
    output folder and moved onto their names only when every table was read and
    written (the schema last); a failure deletes the staging folder, and an output
    folder this run created, so a bad table or a full disk leaves no partial graph."""
    if shards < 1:
        raise SchemaError(f"--shards must be >= 1, got {shards}")
    loaded = load_schema(graph)
    check_schema(loaded)
    out_folder = output if paths.is_remote(output) else os.path.abspath(output)
    if out_folder.rstrip("/") == loaded.folder.rstrip("/"):
        raise SchemaError(f"--output {output} is the input graph's folder; choose another")

    def write(staging: str):
        schema, names, lines = _write_tables(loaded, staging, fmt, shards)
        with paths.open_binary(paths.join(staging, SCHEMA_FILE_NAME), "wb") as f:
            f.write(text_format.MessageToString(schema).encode("utf-8"))
        return names + [SCHEMA_FILE_NAME], lines  # the schema last: it names the rest

    # The schema is always written: a user's file of that name is refused at once.
    return write_staged(output, STAGING_PREFIX, write, known=[SCHEMA_FILE_NAME])


def _write_tables(loaded, folder: str, fmt: str, shards: int):
    """Writes every table into `folder`: (the new schema, the files written, summary lines)."""
    schema = type(loaded.schema)()
    schema.CopyFrom(loaded.schema)
    written: dict[tuple, str] = {}   # input table -> output filename
    used_names: set[str] = set()
    files: list[str] = []
    lines = []
    for kind, name in set_names(loaded.schema):
        pieces = schema.node_sets if kind == "nodes" else schema.edge_sets
        metadata = pieces[name].metadata
        source = bigquery_source(loaded, kind, name)
        if source is None:
            key, stem = ("file", metadata.filename), _table_name(metadata.filename)
        elif source.table is not None:
            key, stem = ("bigquery", str(source.table)), source.table.table
        else:
            key, stem = ("sql", source.sql), name
        stem = paths.file_stem(stem)  # a set's name may hold '/': one file name only
        if key not in written:
            while stem in used_names:
                stem += "_"
            used_names.add(stem)
            ext = EXTENSIONS[fmt]
            new_name = f"{stem}{ext}" if shards == 1 else f"{stem}@{shards}{ext}"
            targets = paths.shard_names(new_name) if shards > 1 else [new_name]
            layout = table_layout(loaded, kind, name)
            batches = read_set(loaded, kind, name)
            first = next(batches, None)
            if first is None:
                where = source.name if source is not None else ", ".join(
                    table_files(loaded, kind, name)[:2])
                raise TableError(f"{where}: {kind[:-1]} set '{name}' has no rows; an empty "
                                 f"table cannot be converted (its column types are unknown)")
            counts = write_sharded([paths.join(folder, t) for t in targets], layout,
                                   itertools.chain([first], batches))
            written[key] = new_name
            files += targets
            lines.append(f"{kind[:-1]} set '{name}': {sum(counts)} rows -> {new_name}")
        metadata.filename = written[key]
        metadata.ClearField("bigquery")
    return schema, files, lines


def prepare(graph: str, output: str, chunk_edges: int = CHUNK_EDGES,
            timestamp_column: str | None = None, log=print,
            memory_limit: int | None = None) -> dict:
    """Writes the graph store of `graph` at `output` within `memory_limit` bytes (None: the
    default); returns its manifest. For the rest of the process, freed memory goes back
    to the system at once (sampler.job.resources.give_back_freed_memory)."""
    from sampler.job.resources import give_back_freed_memory
    from sampler.store.build import prepare_store  # numpy and the sampler: only for stores

    loaded = load_schema(graph)
    if loaded.store is not None:
        raise SchemaError(f"--graph {graph} is a graph store already; give the tables' schema")
    if timestamp_column:
        override_timestamp_column(loaded, timestamp_column)
    check_schema(loaded)
    out_folder = os.path.abspath(output).rstrip("/")
    if paths.is_within(loaded.folder, out_folder):  # replacing the store would delete it
        raise SchemaError(f"--output {output} is or contains the input graph's folder "
                          f"{loaded.folder}; choose another folder")
    give_back_freed_memory()  # the resident size follows what the build holds
    return prepare_store(loaded, output, chunk_edges=chunk_edges, log=log,
                         memory_limit=memory_limit)


def verify(store: str) -> str:
    """Checks a graph store whole; returns the summary line (SamplerError when damaged)."""
    from sampler.store.mapped import check_whole_store, verify_store

    loaded = load_schema(store)
    if loaded.store is None:
        raise SchemaError(f"--verify {store}: not a graph store (no store.json of this "
                          f"project's format)")
    check_whole_store(loaded)
    verify_store(loaded.store.folder, loaded.store.manifest)
    files = loaded.store.manifest["files"]
    return (f"graph store {loaded.store.folder}: {len(files)} files, "
            f"{sum(f['bytes'] for f in files.values()) / 1e6:,.1f} MB: every array and "
            f"checksum checked, no damage found")


@interruptible("unigraph-convert", "interrupted; nothing written")
def main(argv: list[str] | None = None) -> int:
    parser = make_parser()
    args = parser.parse_args(argv)
    if args.verify is None and not (args.graph and args.output and args.format):
        parser.error("give --graph, --output and --format (or --verify STORE)")
    try:
        with bigquery.billing_project_given(args.bigquery_project):
            return _convert(args)
    except SamplerError as e:
        print(f"unigraph-convert: error: {message_line(e)}", file=sys.stderr)
        return 2
    except OSError as e:  # the environment: a full disk, permissions, a vanished folder
        where = f"--verify {args.verify}" if args.verify else f"--output {args.output}"
        print(f"unigraph-convert: error: {where}: {one_line(e)}", file=sys.stderr)
        return 2


def _convert(args: argparse.Namespace) -> int:
    if args.verify is not None:
        if args.graph or args.output or args.format:
            raise SchemaError("--verify STORE checks a store; give it alone")
        print(verify(args.verify))
        return 0
    if args.format == STORE:
        if args.shards != 1:
            raise SchemaError("--shards is for tables; a store has no shards")
        manifest = prepare(args.graph, args.output, args.chunk_edges,
                           args.timestamp_column, memory_limit=args.memory_limit)
        size = sum(f["bytes"] for f in manifest["files"].values())
        print(f"graph store {args.output}: {len(manifest['files'])} files, "
              f"{size / 1e6:,.1f} MB")
        return 0
    if args.chunk_edges != CHUNK_EDGES or args.timestamp_column or args.memory_limit:
        raise SchemaError("--chunk-edges, --timestamp-column and --memory-limit are for "
                          "--format store")
    for line in convert(args.graph, args.output, args.format, args.shards):
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
