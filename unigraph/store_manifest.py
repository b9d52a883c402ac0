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
import json
import os

from unigraph.storage import paths
from unigraph.errors import SchemaError

MANIFEST_NAME = "store.json"
# Present (with the manifest absent) only while a store is being written; a folder that
# holds it is an interrupted or running build, never a store.
STAGING_MARK = "store-staging.json"
FORMAT = "unigraph-graph-store"
# Bumped whenever the files' layout or meaning changes: a store of another version is
# refused, never reinterpreted.
FORMAT_VERSION = 1


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
    """Whether `folder` is (or was meant to be) a graph store: its manifest or the mark of
    a build in progress is in it."""
    return any(paths.exists(paths.join(folder, name)) for name in (MANIFEST_NAME, STAGING_MARK))


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
        with open(manifest_path, encoding="utf-8") as f:
            manifest = json.load(f)
    except (OSError, UnicodeDecodeError, ValueError) as e:
        raise SchemaError(f"graph store {manifest_path}: unreadable: "
                          f"{str(e).splitlines()[0]}") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise SchemaError(f"graph store {manifest_path}: not a graph store manifest")
    version = manifest.get("format_version")
    if version != FORMAT_VERSION:
        raise SchemaError(f"graph store {folder}: store format version {version}, this sampler "
                          f"reads version {FORMAT_VERSION}; prepare the store again with this "
                          f"version (unigraph-convert --format store)")
    try:
        facts = {key: TableFacts(tuple(f["columns"]), int(f["bytes"]), float(f["rows"]),
                                 float(f["row_bytes"]), str(f["format"]),
                                 tuple(f["locations"]))
                 for key, f in manifest["tables"].items()}
        text = manifest["schema"]
    except (KeyError, TypeError, ValueError) as e:
        raise SchemaError(f"graph store {manifest_path}: malformed manifest ({e!r})") from None
    return text, StoreInfo(folder, manifest, facts)


def facts_dict(facts: TableFacts) -> dict:
    return dataclasses.asdict(facts) | {"columns": list(facts.columns),
                                        "locations": list(facts.locations)}
