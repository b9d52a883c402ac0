"""Names of the tables `unigraph-convert` writes: one plain path component each.

Table names come from set and table names of the schema (a BigQuery table's, or a
query's set's), so each is made one plain path component first (`file_stem`): never a
path out of the output folder. Which files a run may replace there is
unigraph.storage.staging's.
"""
from __future__ import annotations

import re

_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]")


def file_stem(name: str, fallback: str = "table") -> str:
    """`name` as one file name component: characters other than letters, digits, `_`,
    `.` and `-` become `_`, and a leading dot too (no hidden files, no `..`)."""
    stem = _UNSAFE.sub("_", name)[:120]
    stem = re.sub(r"^\.", "_", stem)
    return stem or fallback
