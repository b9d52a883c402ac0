"""Writes a graph store from a graph's tables (files or BigQuery), in bounded memory.

    prepare_store(loaded, "mag-store/", chunk_edges=CHUNK_EDGES, memory_limit=4 << 30)

Steps (each array is written as it is built, in pieces):
  1. each node table, alone: its rows sorted by id with an external sort (sorted runs
     spilled to disk, then merged: sampler.store.external_sort), its features and
     timestamps written in id order as the merge gives them (sampler.store.nodes); its
     sorted ids kept as a run for the names;
  2. each edge table, batch by batch: the distinct ids of its two ends, into sorted runs
     per node set;
  3. per node set, the runs merged into its names (sorted distinct ids), their
     fingerprints, and the table's rows as codes;
  4. each edge table again, sorted by target then by source with external sorts, laid
     out in buckets of whole rows (sampler.store.edges): its canonical CSR and, when it
     has timestamps (or its target node set has), its timed CSR, byte for byte what
     core.adjacency builds for the whole table (as sampler.memory.graph.load_graph does).
Memory holds a sort's buffer, a merge's pages, one bucket of edges and the readers'
batch: `memory_limit` less what the interpreter and the readers take (RESERVED_BYTES)
is shared among them (external_sort.Budget), whatever the graph's size. The scratch
files (runs) live in the staging folder and are deleted as each step ends.

The store is written into a staging folder beside the target, marked as a build in
progress, and takes the target's name only once its manifest (written last) is
complete: a store that exists is whole (docs/store.md, "Commit"); which targets may be
replaced, and how, is sampler.store.target's.
"""
from __future__ import annotations

import datetime
import json
import os
import shutil
import socket
import zlib
from typing import Callable

import numpy as np
from google.protobuf import text_format

from sampler.core.temporal import effective_times
from sampler.job.resources import available_memory, release_free_memory
from sampler.job.sizing import table_rows
from sampler.store.edges import NodeFiles, write_edge_set
from sampler.store.external_sort import Budget
from sampler.store.layout import set_folder
from sampler.store.nodes import Names, write_names, write_node_table
from sampler.store.target import check_target, commit, make_staging
from unigraph.storage import paths
from unigraph.tables.columns import set_bytes, set_columns
from unigraph.errors import SamplerError
from unigraph.schema import LoadedSchema, bigquery_source, has_table, is_link_readout, set_names
from unigraph.store_manifest import (FORMAT, FORMAT_VERSION, MANIFEST_NAME, STAGING_MARK,
                                     TableFacts, facts_dict)
from unigraph.tables import read_set, table_locations
from unigraph.tables.layout import TimeColumn
from unigraph.timestamps import find_timestamp_column, time_dtype

PACKAGE_VERSION = "0.1.0"  # setup.py's version
CHECKSUM_BLOCK = 1 << 20
SCRATCH = ".scratch"  # the sorts' runs, inside the staging folder


class _Writer:
    """Array files under a folder, each listed with its size and CRC-32."""

    def __init__(self, folder: str):
        self.folder = folder
        self.files: dict[str, dict] = {}

    def write(self, relative: str, array: np.ndarray) -> None:
        path = os.path.join(self.folder, relative)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        array = np.ascontiguousarray(array)
        with open(path, "wb") as f:
            np.save(f, array, allow_pickle=False)
        self.register(relative, array.dtype, array.shape)

    def register(self, relative: str, dtype, shape: tuple) -> None:
        """A written file listed in the manifest (size, checksum, dtype, shape); also for
        files sampler.store.nodes and .edges write."""
        path = os.path.join(self.folder, relative)
        self.files[relative] = {"bytes": os.path.getsize(path), "crc32": file_crc32(path),
                                "dtype": np.dtype(dtype).str, "shape": list(shape)}


def file_crc32(path: str) -> int:
    crc = 0
    with open(path, "rb") as f:
        while block := f.read(CHECKSUM_BLOCK):
            crc = zlib.crc32(block, crc)
    return crc


# What the interpreter, numpy, pyarrow, the sampler and a reader's batch take beside
# the build's own arrays (measured: about 170 MB at scales 0.01 to 10; docs/store.md).
RESERVED_BYTES = 256 << 20
MIN_MEMORY_LIMIT = 384 << 20
DEFAULT_MEMORY_LIMIT = 2 << 30


def default_memory_limit() -> int:
    """2 GiB, or half the memory available (sampler.job.resources: the machine's, within
    a memory cgroup's limit) where that is less."""
    available = available_memory()
    if available is None:
        return DEFAULT_MEMORY_LIMIT
    return max(MIN_MEMORY_LIMIT, min(DEFAULT_MEMORY_LIMIT, available // 2))


def budget_of(memory_limit: int) -> Budget:
    """The working memory a build within `memory_limit` bytes may hold."""
    if memory_limit < MIN_MEMORY_LIMIT:
        raise SamplerError(f"--memory-limit {memory_limit >> 20} MB is too small: the "
                           f"interpreter and the readers alone take about "
                           f"{RESERVED_BYTES >> 20} MB; give at least "
                           f"{MIN_MEMORY_LIMIT >> 20} MB")
    return Budget(memory_limit - RESERVED_BYTES)


def prepare_store(loaded: LoadedSchema, output: str, *, chunk_edges: int,
                  log: Callable[[str], None] = lambda line: None,
                  memory_limit: int | None = None, budget: Budget | None = None) -> dict:
    """Builds the store of `loaded`'s graph at `output` (a local folder that is absent,
    empty or an earlier store, which is replaced only once the new one is whole);
    returns its manifest. `memory_limit` (bytes; default_memory_limit() when None) bounds
    the build's memory, or `budget` its working memory directly (tests); neither changes
    a byte of the store."""
    if paths.is_remote(output):
        raise SamplerError(f"--output {output}: a graph store is written to a local folder "
                           f"(it is memory-mapped); copy it where it is needed afterwards")
    if chunk_edges < 1:
        raise SamplerError(f"--chunk-edges must be at least 1, got {chunk_edges}")
    if budget is None:
        budget = budget_of(memory_limit if memory_limit is not None
                           else default_memory_limit())
    target = os.path.abspath(output).rstrip("/")
    check_target(output, target)  # sampler.store.target: what may be replaced
    staging = make_staging(target)
    try:
        with open(os.path.join(staging, STAGING_MARK), "w") as f:
            json.dump({"building": target, "pid": os.getpid(), "host": socket.gethostname()}, f)
        scratch = os.path.join(staging, SCRATCH)
        manifest = _build(loaded, _Writer(staging), chunk_edges, budget, scratch, log)
        shutil.rmtree(scratch, ignore_errors=True)
        with open(os.path.join(staging, MANIFEST_NAME + ".tmp"), "w", encoding="utf-8") as f:
            json.dump(manifest, f, indent=1, sort_keys=True)
            f.flush()
            os.fsync(f.fileno())
        os.replace(os.path.join(staging, MANIFEST_NAME + ".tmp"),
                   os.path.join(staging, MANIFEST_NAME))
        os.remove(os.path.join(staging, STAGING_MARK))
        commit(output, staging, target)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return manifest


def _build(loaded: LoadedSchema, out: _Writer, chunk_edges: int, budget: Budget,
           scratch: str, log) -> dict:
    schema = loaded.schema
    node_sets = sorted(schema.node_sets)
    edge_sets = sorted(n for n in schema.edge_sets if not is_link_readout("edge set", n))
    node_dirs = {n: set_folder("nodes", i, n) for i, n in enumerate(node_sets)}
    edge_dirs = {n: set_folder("edges", i, n) for i, n in enumerate(edge_sets)}
    tables = {}
    for kind, name in set_names(schema):
        tables[f"{kind}/{name}"] = _facts(loaded, kind, name)
    columns = {key: list(f.columns) for key, f in tables.items()}

    def timestamp_of(kind, name):
        if kind == "nodes" and not has_table(schema.node_sets[name].metadata):
            return None
        return find_timestamp_column(loaded, kind, name, columns[f"{kind}/{name}"])

    # Two sorters fill at once at most (an edge table's two ends).
    names = {n: Names(os.path.join(scratch, f"names-{i}"), budget.part(2))
             for i, n in enumerate(node_sets)}
    nodes_meta = {}
    # 1. Node tables, one at a time, sorted by id; their ids go to the names as a run.
    for name in node_sets:
        meta = {"dir": node_dirs[name], "table": has_table(schema.node_sets[name].metadata),
                "table_rows": 0, "timestamp": None, "features": {}}
        nodes_meta[name] = meta
        if not meta["table"]:
            continue
        column = timestamp_of("nodes", name)
        dtype = time_dtype(loaded, [("nodes", name)]).name if column else None
        write_node_table(out, meta, name, read_set(
            loaded, "nodes", name, timestamp=TimeColumn(column, dtype) if column else None),
            table_locations(loaded, "nodes", name), budget, os.path.join(scratch, "table"),
            names[name])
        if column:
            meta["timestamp"] = {"column": column, "dtype": dtype}
        log(f"node set '{name}': {meta['table_rows']} rows")
        release_free_memory()
    # 2. Each edge table's ends, batch by batch, into their node sets' names.
    for name in edge_sets:
        edge_set = schema.edge_sets[name]
        for batch in read_set(loaded, "edges", name):
            names[edge_set.source].add(batch.sources)
            names[edge_set.target].add(batch.targets)
        names[edge_set.source].flush()
        names[edge_set.target].flush()
        release_free_memory()
    # 3. Per node set, its names and fingerprints; its table's rows as codes.
    for name in node_sets:
        write_names(out, nodes_meta[name], names.pop(name))
        release_free_memory()

    def files(node_set: str, times: bool) -> NodeFiles:
        where = os.path.join(out.folder, nodes_meta[node_set]["dir"])
        return NodeFiles(os.path.join(where, "names.npy"),
                         os.path.join(where, "fingerprints.npy"),
                         os.path.join(where, "table_codes.npy") if times else None,
                         os.path.join(where, "timestamps.npy") if times else None)

    # 4. Each edge set's layouts, one edge set at a time: the largest tables first, whose
    # scratch runs are then on disk beside the smallest part of the store.
    edges_meta = {}
    for name in sorted(edge_sets, key=lambda n: -tables[f"edges/{n}"].bytes):
        edge_set = schema.edge_sets[name]
        edge_column = timestamp_of("edges", name)
        target_column = (nodes_meta[edge_set.target]["timestamp"] or {}).get("column")
        timed = edge_column is not None or target_column is not None
        dtype = time_dtype(loaded, [("edges", name)] * bool(edge_column)
                           + [("nodes", edge_set.target)] * bool(target_column)).name
        meta = {"dir": edge_dirs[name], "source": edge_set.source, "target": edge_set.target,
                "timed": {"edge_column": edge_column, "target_column": target_column,
                          "dtype": dtype} if timed else None, "layouts": {}}
        edges_meta[name] = meta
        written = write_edge_set(
            out, meta["dir"], name, read_set(
                loaded, "edges", name,
                timestamp=TimeColumn(edge_column, dtype) if edge_column else None),
            sources=files(edge_set.source, False),
            targets=files(edge_set.target, target_column is not None),
            same_set=edge_set.target == edge_set.source, timed=timed,
            effective_times=lambda edge_times, target_times: effective_times(
                edge_times, target_times, dtype),
            time_dtype=dtype, chunk_edges=chunk_edges, budget=budget,
            scratch=os.path.join(scratch, "edges"))
        meta["edges"], meta["layouts"] = written["edges"], written["layouts"]
        release_free_memory()
        log(f"edge set '{name}': {meta['edges']} edges"
            f"{' (canonical and timed)' if timed else ''}")
    return {
        "format": FORMAT, "format_version": FORMAT_VERSION, "package_version": PACKAGE_VERSION,
        "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "schema": text_format.MessageToString(_store_schema(loaded)),
        "prepared_from": loaded.path,
        "options": {"chunk_edges": chunk_edges},
        "tables": {key: facts_dict(f) for key, f in tables.items()},
        "nodes": nodes_meta, "edges": edges_meta, "files": out.files,
    }


def _facts(loaded: LoadedSchema, kind: str, name: str) -> TableFacts:
    rows, row_bytes = table_rows(loaded, kind, name)
    source = bigquery_source(loaded, kind, name)
    fmt = "bigquery" if source is not None else paths.file_format(
        table_locations(loaded, kind, name)[0])
    return TableFacts(tuple(set_columns(loaded, kind, name)), int(set_bytes(loaded, kind, name)),
                      float(rows), float(row_bytes), fmt,
                      tuple(table_locations(loaded, kind, name)))


def _store_schema(loaded: LoadedSchema):
    """The schema as the store serves it: each table named by where it came from (a
    BigQuery table by its name), so `has_table` and the messages read as before, while
    nothing reads those names again."""
    schema = type(loaded.schema)()
    schema.CopyFrom(loaded.schema)
    for kind, name in set_names(schema):
        pieces = schema.node_sets if kind == "nodes" else schema.edge_sets
        metadata = pieces[name].metadata
        source = bigquery_source(loaded, kind, name)
        if source is not None:
            metadata.filename = source.name
            metadata.ClearField("bigquery")
    return schema
