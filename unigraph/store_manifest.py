"""A graph store's manifest: what `sample --graph STORE/` learns before mapping anything.

A graph store (sampler/store, docs/store.md) is a folder of flat arrays that the
in-memory engine maps instead of reading tables. Its `store.json` holds the schema's
text, the store format's version, the options that shaped its layout, the size and
checksum of every array file, and, per set, the facts that planning and sizing would
otherwise read from the tables (their column names, bytes, estimated rows, the file
names a row id refers to). With those, every check a run makes before sampling works
on a store as on the tables, and nothing reads a table again.

This module only parses and checks the manifest's form; sampler/store writes it and
maps the arrays it lists.
"""
from __future__ import annotations

import dataclasses
import os

from unigraph.encoding import json_data
from unigraph.storage import paths
from unigraph.errors import SchemaError, message_line

MANIFEST_NAME = "store.json"
# Present (with the manifest absent) only while a store is being written; a folder that
# holds it is an interrupted or running build, never a store.
STAGING_MARK = "store-staging.json"
FORMAT = "unigraph-graph-store"
# Bumped whenever the files' layout or meaning changes: a store of another version is
# refused, never reinterpreted.
FORMAT_VERSION = 1
MAX_MANIFEST_BYTES = 1 << 30  # a manifest lists files and tables: never near this


@dataclasses.dataclass(frozen=True)
class TableFacts:
    """What a set's table was when the store was prepared."""

    columns: tuple[str, ...]   # its column names
    bytes: int                 # its files' (or BigQuery's) bytes
    rows: float                # sampler.job.sizing's estimate of its rows ...
    row_bytes: float           # ... and of the bytes per row (output shards depend on them)
    format: str                # "csv", "parquet", "tfrecord", "bigquery"
    locations: tuple[str, ...]  # what a RowId's file index refers to (files, or BigQuery's name)


@dataclasses.dataclass(frozen=True)
class StoreInfo:
    folder: str           # the store's folder, absolute
    manifest: dict        # store.json, parsed
    facts: dict           # "nodes/<set>" or "edges/<set>" -> TableFacts

    def table(self, kind: str, name: str) -> TableFacts:
        return self.facts[f"{kind}/{name}"]


def is_store(folder: str) -> bool:
    """Whether `folder` is a graph store, or one being built: its manifest says so (this
    project's format, with a version), or the mark of a build of ours is in it. A file
    named store.json that is not such a manifest makes no folder a store."""
    manifest = _json_object(paths.join(folder, MANIFEST_NAME))
    if manifest is not None:
        return manifest.get("format") == FORMAT and isinstance(
            manifest.get("format_version"), int)
    mark = _json_object(paths.join(folder, STAGING_MARK))
    return mark is not None and "building" in mark


def _json_object(path: str) -> dict | None:
    """A JSON object file's content; None when absent, not a file, too large or not a
    JSON object."""
    try:
        if paths.is_remote(path):
            if not paths.exists(path) or paths.size(path) > MAX_MANIFEST_BYTES:
                return None
        elif not os.path.isfile(path) or os.path.getsize(path) > MAX_MANIFEST_BYTES:
            return None
        with paths.open_binary(path) as f:
            document = json_data.loads(f.read())
    except (OSError, ValueError):
        return None
    return document if isinstance(document, dict) else None


def read_store(folder: str) -> tuple[str, StoreInfo]:
    """(the schema's text, the store) of a store folder; SchemaError, one line, when it is
    remote, incomplete, of another format version or unreadable."""
    if paths.is_remote(folder):
        raise SchemaError(f"graph store {folder}: stores on {folder.split('://')[0]}:// are not "
                          f"read in place (they are memory-mapped); copy the folder to a local "
                          f"disk (e.g. gcloud storage cp -r {folder} .) and pass that copy")
    folder = os.path.abspath(folder)
    manifest_path = os.path.join(folder, MANIFEST_NAME)
    if not os.path.exists(manifest_path):
        raise SchemaError(f"graph store {folder}: incomplete ({STAGING_MARK} but no "
                          f"{MANIFEST_NAME}: a build was interrupted or is still running); "
                          f"prepare it again")
    try:
        if os.path.getsize(manifest_path) > MAX_MANIFEST_BYTES:
            raise ValueError(f"{os.path.getsize(manifest_path)} bytes, more than a manifest "
                             f"may have")
        with open(manifest_path, "rb") as f:
            manifest = json_data.loads(f.read())
    except (OSError, ValueError) as e:
        raise SchemaError(f"graph store {manifest_path}: unreadable: "
                          f"{message_line(str(e).splitlines()[0] if str(e) else e, 200)}"
                          ) from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise SchemaError(f"graph store {manifest_path}: not a graph store manifest")
    version = manifest.get("format_version")
    if version != FORMAT_VERSION:
        raise SchemaError(f"graph store {folder}: store format version "
                          f"{message_line(repr(version), 40)}, this sampler "
                          f"reads version {FORMAT_VERSION}; prepare the store again with this "
                          f"version (unigraph-convert --format store)")
    problem = manifest_problem(manifest)
    if problem is not None:
        raise SchemaError(f"graph store {manifest_path}: malformed manifest: "
                          f"{message_line(problem, 300)}")
    facts = {key: TableFacts(tuple(f["columns"]), int(f["bytes"]), float(f["rows"]),
                             float(f["row_bytes"]), str(f["format"]), tuple(f["locations"]))
             for key, f in manifest["tables"].items()}
    return manifest["schema"], StoreInfo(folder, manifest, facts)


def check_sets(store: StoreInfo, node_sets, edge_sets) -> None:
    """SchemaError unless the manifest describes every node set and edge set of the schema
    it holds (`edge_sets`: those a store keeps, link readouts left out), each edge set
    between node sets it describes."""
    manifest, where = store.manifest, os.path.join(store.folder, MANIFEST_NAME)
    for kind, names in (("nodes", node_sets), ("edges", edge_sets)):
        for name in names:
            if name not in manifest[kind]:
                raise SchemaError(f"graph store {where}: malformed manifest: its schema has "
                                  f"{kind[:-1]} set '{name}', its {kind} do not")
    for name, meta in manifest["edges"].items():
        for end in ("source", "target"):
            if meta[end] not in manifest["nodes"]:
                raise SchemaError(f"graph store {where}: malformed manifest: edge set "
                                  f"'{name}': its {end} '{meta[end]}' is no node set of it")


# ---- the manifest's form ---------------------------------------------------------------------
# Everything the sampler reads from a manifest, checked once when it is read: a manifest is
# data (crafted or damaged, it is refused in one line, never a KeyError later), and every
# file it names is a relative path that stays inside the store's folder.

_TIME_TYPES = ("int64", "float64")


def store_path_problem(relative) -> str | None:
    """Why `relative` is not a path inside a store's folder (None: it is one)."""
    if not isinstance(relative, str) or not relative:
        return f"{relative!r} is not a path"
    parts = relative.split("/")
    if relative.startswith("/") or "\\" in relative or "\x00" in relative or \
            not relative.isprintable() or any(p in ("", ".", "..") for p in parts):
        return f"'{relative}' is not a relative path inside the store's folder"
    return None


def _count(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _features_problem(where: str, features) -> str | None:
    if not isinstance(features, dict):
        return f"{where}.features is not an object"
    for name, d in features.items():
        here = f"{where}.features.{name}"
        if not isinstance(d, dict) or not isinstance(d.get("prefix"), str) or \
                store_path_problem(d["prefix"]) or "/" in d["prefix"]:
            return f"{here}: no file prefix"
        if not _count(d.get("ragged")) or d["ragged"] > 32:
            return f"{here}.ragged is not a small count"
        if "strings" in d and (not isinstance(d["strings"], list)
                               or not all(_count(n) for n in d["strings"])):
            return f"{here}.strings is not a shape"
    return None


def _layout_problem(where: str, layout) -> str | None:
    if not isinstance(layout, dict):
        return f"{where} is not an object"
    for key in ("weights", "times", "long_rows", "target_fingerprints"):
        if not isinstance(layout.get(key), bool):
            return f"{where}.{key} is not true or false"
    return _features_problem(where, layout.get("features"))


def _node_problem(name: str, meta) -> str | None:
    where = f"nodes.{name}"
    if not isinstance(meta, dict):
        return f"{where} is not an object"
    if store_path_problem(meta.get("dir")):
        return f"{where}.dir: {store_path_problem(meta.get('dir'))}"
    if not isinstance(meta.get("table"), bool) or not _count(meta.get("table_rows")):
        return f"{where}: no table or table_rows"
    stamp = meta.get("timestamp")
    if stamp is not None and (not isinstance(stamp, dict) or not isinstance(
            stamp.get("column"), str) or stamp.get("dtype") not in _TIME_TYPES):
        return f"{where}.timestamp is not a column and a time type"
    return _features_problem(where, meta.get("features"))


def _edge_problem(name: str, meta) -> str | None:
    where = f"edges.{name}"
    if not isinstance(meta, dict):
        return f"{where} is not an object"
    if store_path_problem(meta.get("dir")):
        return f"{where}.dir: {store_path_problem(meta.get('dir'))}"
    if not isinstance(meta.get("source"), str) or not isinstance(meta.get("target"), str):
        return f"{where}: no source or target node set"
    timed = meta.get("timed")
    if timed is not None and (not isinstance(timed, dict) or timed.get("dtype") not in
                              _TIME_TYPES or not all(
                                  timed.get(k) is None or isinstance(timed.get(k), str)
                                  for k in ("edge_column", "target_column"))):
        return f"{where}.timed is not timestamp columns and a time type"
    layouts = meta.get("layouts")
    if not isinstance(layouts, dict) or "canonical" not in layouts or \
            set(layouts) - {"canonical", "timed"} or (timed is None) == ("timed" in layouts):
        return f"{where}.layouts is not its canonical layout (and a timed one when timed)"
    for layout, description in layouts.items():
        problem = _layout_problem(f"{where}.layouts.{layout}", description)
        if problem:
            return problem
    return None


def manifest_problem(manifest: dict) -> str | None:
    """Why a manifest (already of this format and version) is not one the sampler can use,
    in a few words naming the field; None when every field it reads has its form."""
    if not isinstance(manifest.get("schema"), str):
        return "no schema text"
    options = manifest.get("options")
    if not isinstance(options, dict) or not _count(options.get("chunk_edges")):
        return "options.chunk_edges is not a count"
    for key in ("tables", "nodes", "edges", "files"):
        if not isinstance(manifest.get(key), dict):
            return f"'{key}' is not an object"
    for key, f in manifest["tables"].items():
        if not isinstance(f, dict) or not (
                isinstance(f.get("columns"), list) and all(isinstance(c, str) for c in f["columns"])
                and _count(f.get("bytes")) and isinstance(f.get("rows"), (int, float))
                and isinstance(f.get("row_bytes"), (int, float))
                and isinstance(f.get("format"), str) and isinstance(f.get("locations"), list)
                and all(isinstance(x, str) for x in f["locations"])):
            return f"tables.{key} is not a table's facts"
    for name, meta in manifest["nodes"].items():
        problem = _node_problem(name, meta)
        if problem:
            return problem
    for name, meta in manifest["edges"].items():
        problem = _edge_problem(name, meta)
        if problem:
            return problem
    for relative, meta in manifest["files"].items():
        problem = store_path_problem(relative)
        if problem:
            return f"files: {problem}"
        if not isinstance(meta, dict) or not _count(meta.get("bytes")) or \
                not _count(meta.get("crc32")) or not isinstance(meta.get("dtype"), str) or \
                not isinstance(meta.get("shape"), list) or \
                not all(_count(n) for n in meta["shape"]):
            return f"files.{relative} is not a file's size, checksum, dtype and shape"
    return None


def facts_dict(facts: TableFacts) -> dict:
    return dataclasses.asdict(facts) | {"columns": list(facts.columns),
                                        "locations": list(facts.locations)}
