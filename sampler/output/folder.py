"""A `sample` output folder: the schema of its subgraphs and its shard files.

    out/graph_schema.pbtxt
    out/samples-00000-of-00004.tfrecord ... samples-00003-of-00004.tfrecord

Numpy-only (sample-check reads folders without TensorFlow). The shards are the
files sample_report.json lists (or, without a report, the files named
`-NNNNN-of-NNNNN`); a missing shard is an error rather than a silently smaller
dataset, and so is a folder a run was stopped in the middle of committing to.
"""
from __future__ import annotations

import dataclasses
import re
from typing import Iterator

from sampler.output.commit import pending_commit
from sampler.output.files import REPORT_FILE
from sampler.output.ownership import bare_name_problem
from unigraph.protos import graph_schema_pb2 as gs
from unigraph.encoding import json_data, tfrecord
from unigraph.storage import paths
from unigraph.errors import SamplerError, TableError, one_line
from unigraph.schema import SCHEMA_FILE_NAME, load_schema

# Shards named as `sample` writes them without a report to list them: ours
# (name-00000-of-00004.tfrecord) and TF-GNN's (name.tfrecords-00000-of-00004).
SHARD_GLOBS = ("*-?????-of-?????.tfrecord", "*-?????-of-?????.tfrecords",
               "*.tfrecord-?????-of-?????", "*.tfrecords-?????-of-?????")
_SHARD_NAME = re.compile(r"^(?P<prefix>.*?)(?P<ext1>\.tfrecords?)?-(?P<index>\d{5})-of-"
                         r"(?P<count>\d{5})(?P<ext2>\.tfrecords?)?$")

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
    """The schema and shard files of an output folder; SamplesError if either is missing,
    or if a run is half-way through committing into it."""
    folder = folder.rstrip("/") or "/"
    if pending_commit(folder):
        raise SamplesError(f"samples {folder}: a `sample` run was stopped while moving its "
                           f"output into place; run `sample` into this folder again to "
                           f"complete it")
    schema_path = paths.join(folder, SCHEMA_FILE_NAME)
    if not paths.exists(schema_path):
        raise SamplesError(f"samples {folder}: no {SCHEMA_FILE_NAME} (is this a `sample` "
                           f"output folder?)")
    loaded = load_schema(schema_path)
    files = find_shards(folder)
    return SampleFolder(folder, schema_path, loaded.schema, tuple(files))


def find_shards(folder: str) -> list[FilePath]:
    """The shard files of an output folder: those its report lists, or, without a report,
    every complete family of `-NNNNN-of-NNNNN` files."""
    listed = _listed_in_report(folder)
    if listed is not None:
        missing = [path for path in listed if not paths.exists(path)]
        if missing:
            raise SamplesError(f"samples {folder}: {len(missing)} of {len(listed)} shards the "
                               f"report lists are missing, first: {missing[0]}")
        return listed
    files: list[FilePath] = []
    for pattern in SHARD_GLOBS:
        try:
            files += paths.expand(pattern, folder, what=f"samples {folder}")
        except TableError:
            pass  # no file named this way
    if not files:
        raise SamplesError(f"samples {folder}: no shard files "
                           f"(looked for {' and '.join(SHARD_GLOBS)})")
    _check_complete(folder, files)
    return sorted(files)


def read_run_report(folder: str) -> dict | None:
    """sample_report.json of the folder, or None when there is none."""
    path = paths.join(folder, REPORT_FILE)
    if not paths.exists(path):
        return None
    try:
        with paths.open_binary(path) as f:
            report = json_data.loads(f.read())
    except (OSError, ValueError) as e:  # UnicodeDecodeError is a ValueError
        raise SamplesError(f"{path}: not a JSON run report: {one_line(e)}") from None
    if not isinstance(report, dict):
        raise SamplesError(f"{path}: not a JSON run report: a {type(report).__name__}, "
                           f"expected an object")
    return report


def _listed_in_report(folder: str) -> list[FilePath] | None:
    report = read_run_report(folder)
    if report is None:
        return None
    names = report.get("output_shards")
    if not isinstance(names, list) or not names:
        return None
    # Reports list names relative to the folder (older ones: full paths); a name is read
    # in this folder only, whatever the report says.
    found = []
    for name in names:
        base = name.rsplit("/", 1)[-1] if isinstance(name, str) else name
        problem = bare_name_problem(base)
        if problem is not None:
            raise SamplesError(f"{paths.join(folder, REPORT_FILE)}: output_shards: "
                               f"{problem}")
        found.append(paths.join(folder, base))
    return found


def _check_complete(folder: str, files: list[FilePath]) -> None:
    """Every prefix-NNNNN-of-MMMMM family must hold all of its M shards."""
    families: dict[tuple[str, str, int, str], set[int]] = {}
    for path in files:
        match = _SHARD_NAME.match(path)
        if match:
            key = (match["prefix"], match["ext1"] or "", int(match["count"]), match["ext2"] or "")
            families.setdefault(key, set()).add(int(match["index"]))
    for (prefix, ext1, count, ext2), present in sorted(families.items()):
        missing = sorted(set(range(count)) - present)
        if missing:
            raise SamplesError(f"samples {folder}: {len(missing)} of {count} shards missing, "
                               f"first: {prefix}{ext1}-{missing[0]:05d}-of-{count:05d}{ext2}")


def iter_records(path: FilePath) -> Iterator[bytes]:
    """The records of one shard; TableError names the file and record on damage."""
    with paths.open_binary(path) as stream:
        yield from tfrecord.iter_records(stream, path)
