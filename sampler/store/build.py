"""Writes a graph store from a graph's tables (files or BigQuery), one table at a time.

    prepare_store(loaded, "mag-store/", chunk_edges=CHUNK_EDGES)

Steps (each array is written as soon as it is built, then dropped):
  1. each node table, alone: its rows sorted by id (core.node_table), dense features
     streamed through a scratch file into id order, timestamps written; its ids kept
     on disk until the names are known;
  2. each edge table, batch by batch: the distinct ids of its two ends;
  3. per node set, its names (sorted distinct ids of its table and of every edge set
     that names it) and their fingerprints; the node tables' ids become codes;
  4. each edge table again, its ids coded batch by batch, written in buckets of source
     codes (sampler.store.edges): its canonical CSR and, when it has timestamps (or its
     target node set has), its timed CSR, byte for byte what core.adjacency builds for
     the whole table (as sampler.memory.graph.load_graph does).
So memory holds one node table's ids and non-dense columns, or one bucket of edges
(about `bucket_edges`, sorted) plus arrays of its two node sets' sizes; never an
edge set whole, nor the graph: the bound docs/store.md states and
pipelines/bench/store_benchmark.py measures. (Edge sets with ragged or string features are
the exception: built whole, `_write_whole_edge_set`.)

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

from sampler.core import rng
from sampler.core.adjacency import build_adjacency, concat_edge_batches
from sampler.core.arrays import unique
from sampler.core.node_table import build_node_table
from sampler.core.temporal import effective_times, lowest_time
from sampler.job.resources import release_free_memory
from sampler.job.sizing import table_rows
from sampler.store.edges import BUCKET_EDGES, write_edge_set
from sampler.store.layout import CANONICAL, TIMED, adjacency_arrays, feature_arrays, set_folder
from sampler.store.target import check_target, commit, make_staging
from unigraph.storage import paths
from unigraph.columnar.batches import EdgeBatch, NodeBatch
from unigraph.tables.columns import set_bytes, set_columns
from unigraph.errors import SamplerError
from unigraph.schema import LoadedSchema, bigquery_source, has_table, is_link_readout, set_names
from unigraph.store_manifest import (FORMAT, FORMAT_VERSION, MANIFEST_NAME, STAGING_MARK,
                                     TableFacts, facts_dict)
from unigraph.tables import read_set, table_locations
from unigraph.tables.layout import TimeColumn
from unigraph.timestamps import find_timestamp_column, time_dtype

PACKAGE_VERSION = "0.1.0"  # setup.py's version
CHECKSUM_BLOCK = 16 << 20


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

    def write_blocks(self, relative: str, dtype, shape: tuple, block, rows: int = 1 << 14
                     ) -> None:
        """An array written block by block (`block(lo, hi)` gives rows lo:hi), never held
        whole: np.save's bytes, appended with plain writes (a mapping's written pages
        would count in the process's resident memory until it is closed)."""
        path = os.path.join(self.folder, relative)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            np.lib.format.write_array_header_1_0(f, {
                "descr": np.lib.format.dtype_to_descr(np.dtype(dtype)),
                "fortran_order": False, "shape": tuple(shape)})
            for lo in range(0, shape[0], rows):
                f.write(np.ascontiguousarray(block(lo, min(lo + rows, shape[0])),
                                             dtype=dtype).tobytes())
        self.register(relative, dtype, shape)

    def register(self, relative: str, dtype, shape: tuple) -> None:
        """A written file listed in the manifest (size, checksum, dtype, shape); also for
        files sampler.store.edges writes."""
        path = os.path.join(self.folder, relative)
        self.files[relative] = {"bytes": os.path.getsize(path), "crc32": file_crc32(path),
                                "dtype": np.dtype(dtype).str, "shape": list(shape)}

    def read(self, relative: str) -> np.ndarray:
        return np.load(os.path.join(self.folder, relative), mmap_mode="r", allow_pickle=False)

    def drop(self, relative: str) -> None:
        os.remove(os.path.join(self.folder, relative))
        del self.files[relative]


def file_crc32(path: str) -> int:
    crc = 0
    with open(path, "rb") as f:
        while block := f.read(CHECKSUM_BLOCK):
            crc = zlib.crc32(block, crc)
    return crc


def prepare_store(loaded: LoadedSchema, output: str, *, chunk_edges: int,
                  log: Callable[[str], None] = lambda line: None,
                  bucket_edges: int = BUCKET_EDGES) -> dict:
    """Builds the store of `loaded`'s graph at `output` (a local folder that is absent,
    empty or an earlier store, which is replaced only once the new one is whole);
    returns its manifest. `bucket_edges` bounds the build's memory (sampler.store.edges)
    and changes no byte of the store."""
    if paths.is_remote(output):
        raise SamplerError(f"--output {output}: a graph store is written to a local folder "
                           f"(it is memory-mapped); copy it where it is needed afterwards")
    if chunk_edges < 1:
        raise SamplerError(f"--chunk-edges must be at least 1, got {chunk_edges}")
    target = os.path.abspath(output).rstrip("/")
    check_target(output, target)  # sampler.store.target: what may be replaced
    staging = make_staging(target)
    try:
        with open(os.path.join(staging, STAGING_MARK), "w") as f:
            json.dump({"building": target, "pid": os.getpid(), "host": socket.gethostname()}, f)
        manifest = _build(loaded, _Writer(staging), chunk_edges, bucket_edges, log)
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


def _build(loaded: LoadedSchema, out: _Writer, chunk_edges: int, bucket_edges: int, log
           ) -> dict:
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

    nodes_meta = {}
    # 1. Node tables, one at a time; their sorted ids wait on disk for the names.
    for name in node_sets:
        meta = {"dir": node_dirs[name], "table": has_table(schema.node_sets[name].metadata),
                "table_rows": 0, "timestamp": None, "features": {}}
        nodes_meta[name] = meta
        if not meta["table"]:
            continue
        column = timestamp_of("nodes", name)
        dtype = time_dtype(loaded, [("nodes", name)]).name if column else None
        _write_node_table(out, meta, name, read_set(
            loaded, "nodes", name, timestamp=TimeColumn(column, dtype) if column else None),
            table_locations(loaded, "nodes", name))
        if column:
            meta["timestamp"] = {"column": column, "dtype": dtype}
        log(f"node set '{name}': {meta['table_rows']} rows")
        release_free_memory()
    # 2. Each edge table's distinct end ids, batch by batch.
    parts = {n: [] for n in node_sets}
    for name in edge_sets:
        edge_set = schema.edge_sets[name]
        ends = {"sources": [], "targets": []}
        for batch in read_set(loaded, "edges", name):
            for end in ends:
                ends[end].append(unique(getattr(batch, end)))
            if sum(len(a) for a in ends["sources"]) > (1 << 22):  # keep the pieces few
                ends = {end: [unique(np.concatenate(a))] for end, a in ends.items()}
        for end, node_set in (("sources", edge_set.source), ("targets", edge_set.target)):
            if ends[end]:
                parts[node_set].append(unique(np.concatenate(ends[end])))
        release_free_memory()
    # 3. Names, fingerprints; node tables' ids as codes.
    for name in node_sets:
        meta = nodes_meta[name]
        pieces = parts.pop(name)
        if meta["table"]:
            pieces.append(out.read(f"{meta['dir']}/table_ids.npy"))
        names = unique(np.concatenate(pieces)) if pieces else np.zeros(0, "S1")
        del pieces
        out.write(f"{meta['dir']}/names.npy", names)
        out.write(f"{meta['dir']}/fingerprints.npy", rng.fingerprint(names))
        meta["names"] = len(names)
        if meta["table"]:
            ids = out.read(f"{meta['dir']}/table_ids.npy")
            out.write(f"{meta['dir']}/table_codes.npy", np.searchsorted(names, ids))
            del ids
            out.drop(f"{meta['dir']}/table_ids.npy")
        del names
        release_free_memory()
    # 4. Each edge set's layouts, one edge set at a time.
    edges_meta = {}
    for name in edge_sets:
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
        source_names = out.read(f"{nodes_meta[edge_set.source]['dir']}/names.npy")
        target_names = out.read(f"{nodes_meta[edge_set.target]['dir']}/names.npy")
        source_fingerprints = out.read(f"{nodes_meta[edge_set.source]['dir']}/fingerprints.npy")
        target_fingerprints = out.read(f"{nodes_meta[edge_set.target]['dir']}/fingerprints.npy")

        def coded_batches():
            # Ids become codes batch by batch: the table's byte-string ids are never all held.
            for b in read_set(loaded, "edges", name,
                              timestamp=TimeColumn(edge_column, dtype) if edge_column else None):
                yield EdgeBatch(name, np.searchsorted(source_names, b.sources),
                                np.searchsorted(target_names, b.targets), b.rows, b.weights,
                                b.features, b.timestamps)

        target_meta = nodes_meta[edge_set.target]
        written = write_edge_set(
            out, meta["dir"], name, coded_batches(), n_sources=len(source_names),
            n_targets=len(target_names), source_fingerprints=source_fingerprints,
            target_fingerprints=target_fingerprints,
            same_set=edge_set.target == edge_set.source,
            target_times=(lambda: _times_by_code(out, target_meta, dtype)) if target_column
            else None,
            effective_times=lambda edge_times, target_times: effective_times(
                edge_times, target_times, dtype),
            chunk_edges=chunk_edges, bucket_edges=bucket_edges, timed=timed)
        if written is not None:
            meta["edges"], meta["layouts"] = written["edges"], written["layouts"]
        else:  # ragged or string edge features, or no edges: the whole table at once
            _write_whole_edge_set(out, meta, name, edge_set, concat_edge_batches(
                name, list(coded_batches())), source_fingerprints, target_fingerprints,
                target_meta if target_column else None, dtype, timed, chunk_edges)
        del source_names, target_names, source_fingerprints, target_fingerprints
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


def _write_whole_edge_set(out: _Writer, meta: dict, name: str, edge_set, batch: EdgeBatch,
                          source_fingerprints, target_fingerprints, target_meta, dtype: str,
                          timed: bool, chunk_edges: int) -> None:
    """An edge set's layouts built from its whole table in memory (core.adjacency on one
    batch, as load_graph): for tables whose edge features are ragged or byte strings,
    which sampler.store.edges cannot spill as fixed-width columns."""
    sources, targets = batch.sources, batch.targets
    edge_times = batch.timestamps
    rows, weights, features = batch.rows, batch.weights, batch.features
    meta["edges"] = len(rows)
    del batch
    layouts = [(CANONICAL, None)]
    if timed:
        target_times = None
        if target_meta is not None:
            target_times = _times_by_code(out, target_meta, dtype)[targets]
        layouts.append((TIMED, effective_times(edge_times, target_times, dtype)))
        del target_times
    del edge_times
    while layouts:
        layout, times = layouts.pop(0)
        coded = EdgeBatch(name, sources, targets, rows, weights, features, times)
        built = build_adjacency(name, [coded], source_fingerprints.__getitem__, chunk_edges,
                                target_fingerprints.__getitem__)
        if edge_set.target == edge_set.source:  # as load_graph: the leakage check's
            built.target_fingerprints = source_fingerprints[built.target_ids]
        del coded, times
        per_row, per_edge, description = adjacency_arrays(built)
        del built
        if layout == CANONICAL:
            for key, array in per_row.items():
                out.write(f"{meta['dir']}/{key}.npy", array)
        for key, array in per_edge.items():
            out.write(f"{meta['dir']}/{layout}/{key}.npy", array)
        meta["layouts"][layout] = description
        del per_row, per_edge
        release_free_memory()


def _write_node_table(out: _Writer, meta: dict, name: str, batches, locations) -> None:
    """A node table sorted by id (core.node_table's order and duplicate check), with its
    dense features streamed: each batch's rows go to a scratch file as they are read and
    are gathered into id order a block at a time, so the table's features (most of a
    graph's node data) are never held in memory. Ragged and string features, which need
    their row lengths, are sorted in memory (core.node_table)."""
    scratch, shapes, kept, keys = {}, {}, [], []
    try:
        for batch in batches:
            dense = {}
            for feature, values in batch.features.items():
                if isinstance(values, np.ndarray) and values.dtype != object:
                    if feature not in scratch:
                        path = os.path.join(out.folder, f"{meta['dir']}.{len(scratch)}.scratch")
                        os.makedirs(os.path.dirname(path), exist_ok=True)
                        scratch[feature] = open(path, "w+b")
                    shapes[feature] = (values.dtype, values.shape[1:])
                    scratch[feature].write(np.ascontiguousarray(values).tobytes())
                else:
                    dense[feature] = values
            kept.append(NodeBatch(name, batch.ids, batch.rows, dense, batch.timestamps))
            keys.append((batch.ids, batch.rows))
        table = build_node_table(name, kept, locations)  # ids sorted; duplicates: TableError
        del kept
        order = (np.lexsort((np.concatenate([r for _, r in keys]),
                             np.concatenate([i for i, _ in keys]))) if keys
                 else np.zeros(0, np.int64))
        del keys
        meta["table_rows"] = len(table.ids)
        out.write(f"{meta['dir']}/table_ids.npy", table.ids)
        if table.timestamps is not None:
            out.write(f"{meta['dir']}/timestamps.npy", table.timestamps)
        features = dict(table.features)
        features.update({f: None for f in scratch})
        for i, feature in enumerate(sorted(features)):
            prefix = f"{meta['dir']}/feature{i}"
            if features[feature] is not None:
                description, arrays = feature_arrays(features[feature])
                for suffix, array in arrays.items():
                    out.write(f"{prefix}.{suffix}.npy", array)
            else:
                dtype, inner = shapes[feature]
                scratch[feature].flush()
                out.write_blocks(f"{prefix}.values.npy", dtype, (len(order),) + inner,
                                 lambda lo, hi, path=scratch[feature].name, dtype=dtype,
                                 shape=(len(order),) + inner:
                                 _gather(path, dtype, shape, order[lo:hi]))
                description = {"ragged": 0}
            meta["features"][feature] = description | {"prefix": f"feature{i}"}
    finally:
        for f in scratch.values():
            f.close()
            os.remove(f.name)


def _gather(path: str, dtype, shape: tuple, positions: np.ndarray) -> np.ndarray:
    """Rows at `positions` of a scratch file of `shape`, through a mapping that lives for
    this block only (the pages it touched leave the process's resident memory with it;
    they stay in the page cache)."""
    mapped = np.memmap(path, dtype, "r", shape=shape)
    try:
        return np.array(mapped[positions])
    finally:
        del mapped


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


def _times_by_code(out: _Writer, meta: dict, dtype: str) -> np.ndarray:
    """Every node's timestamp by code (as load_graph's times_by_code); nodes absent from
    the table add nothing."""
    times = np.full(meta["names"], lowest_time(dtype), dtype=dtype)
    times[out.read(f"{meta['dir']}/table_codes.npy")] = out.read(f"{meta['dir']}/timestamps.npy")
    return times
