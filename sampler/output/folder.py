"""A `sample` output folder: the schema of its subgraphs and its shard files.

    out/graph_schema.pbtxt
    out/samples-00000-of-00004.tfrecord ... samples-00003-of-00004.tfrecord

Numpy-only (sample-check reads folders without TensorFlow). Shards are found by
their `-NNNNN-of-NNNNN` names; a missing shard is an error rather than a
silently smaller dataset.
"""
from __future__ import annotations

import dataclasses
import re
from typing import Iterator

from unigraph import graph_schema_pb2 as gs
from unigraph import paths, tfrecord
from unigraph.errors import SamplerError, TableError
from unigraph.schema import SCHEMA_FILE_NAME, load_schema

SHARD_GLOBS = ("*-?????-of-?????.tfrecord", "*-?????-of-?????.tfrecords")
_SHARD_NAME = re.compile(
    r"^(?P<prefix>.*)-(?P<index>\d{5})-of-(?P<count>\d{5})(?P<suffix>\.tfrecords?)$")

FilePath = str


class SamplesError(SamplerError):
    """A samples folder is missing, incomplete or does not fit the request."""


@dataclasses.dataclass(frozen=True)
class SampleFolder:
    folder: str
    schema_path: str
    schema: gs.GraphSchema
    files: tuple[FilePath, ...]  # sorted shard files


def open_samples(folder: str) -> SampleFolder:
    """The schema and shard files of an output folder; SamplesError if either is missing."""
    folder = folder.rstrip("/") or "/"
    schema_path = paths.join(folder, SCHEMA_FILE_NAME)
    if not paths.exists(schema_path):
        raise SamplesError(f"samples {folder}: no {SCHEMA_FILE_NAME} (is this a `sample` "
                           f"output folder?)")
    loaded = load_schema(schema_path)
    files = find_shards(folder)
    return SampleFolder(folder, schema_path, loaded.schema, tuple(files))


def find_shards(folder: str) -> list[FilePath]:
    files: list[FilePath] = []
    for pattern in SHARD_GLOBS:
        try:
            files += paths.expand(pattern, folder, what=f"samples {folder}")
        except TableError:
            pass  # no file of this suffix
    if not files:
        raise SamplesError(f"samples {folder}: no shard files "
                           f"(looked for {' and '.join(SHARD_GLOBS)})")
    _check_complete(folder, files)
    return sorted(files)


def _check_complete(folder: str, files: list[FilePath]) -> None:
    """Every prefix-NNNNN-of-MMMMM family must hold all of its M shards."""
    families: dict[tuple[str, int, str], set[int]] = {}
    for path in files:
        match = _SHARD_NAME.match(path)
        if match:
            key = (match["prefix"], int(match["count"]), match["suffix"])
            families.setdefault(key, set()).add(int(match["index"]))
    for (prefix, count, suffix), present in sorted(families.items()):
        missing = sorted(set(range(count)) - present)
        if missing:
            raise SamplesError(f"samples {folder}: {len(missing)} of {count} shards missing, "
                               f"first: {prefix}-{missing[0]:05d}-of-{count:05d}{suffix}")


def iter_records(path: FilePath) -> Iterator[bytes]:
    """The records of one shard; TableError names the file and record on damage."""
    with paths.open_binary(path) as stream:
        yield from tfrecord.iter_records(stream, path)
