"""Where the sampled records go: `--output` parsed into shard files, and one shard written.

`--output out/` writes out/samples-0000i-of-0000N.tfrecord; `--output out/s@8`
(or `out/s.tfrecord@8`) writes exactly 8 shards named like TF-GNN's `@N`
patterns. A shard is written to a temporary name and renamed into place, so a
retried bundle replaces a partial file with an identical complete one.
"""
from __future__ import annotations

import dataclasses
import glob
import os
import re
import uuid
from typing import Iterable

from unigraph import paths, tfrecord
from unigraph.errors import SamplerError

DEFAULT_PREFIX = "samples"
DEFAULT_SUFFIX = ".tfrecord"
SCHEMA_FILE = "graph_schema.pbtxt"
REPORT_FILE = "sample_report.json"


@dataclasses.dataclass(frozen=True)
class OutputSpec:
    folder: str
    prefix: str            # folder + file stem
    suffix: str
    num_shards: int | None  # None: let the pipeline choose

    def shard_path(self, index: int, count: int) -> str:
        return f"{self.prefix}-{index:05d}-of-{count:05d}{self.suffix}"

    def shard_glob(self) -> str:
        return f"{self.prefix}-?????-of-?????{self.suffix}"

    def beside(self, name: str) -> str:
        return paths.join(self.folder, name)


def parse_output(output: str) -> OutputSpec:
    match = re.match(r"^(?P<stem>.+?)(?P<ext>\.tfrecords?)?@(?P<n>\d+)(?P<ext2>\.tfrecords?)?$",
                     output)
    if match:
        stem = match["stem"]
        count = int(match["n"])
        if count <= 0:
            raise SamplerError(f"--output {output}: the shard count after @ must be > 0")
        return OutputSpec(_folder_of(stem), stem, match["ext"] or match["ext2"] or DEFAULT_SUFFIX,
                          count)
    if output.endswith("/") or (not paths.is_remote(output) and os.path.isdir(output)):
        folder = output.rstrip("/") or "/"
        return OutputSpec(folder, paths.join(folder, DEFAULT_PREFIX), DEFAULT_SUFFIX, None)
    stem, ext = (output[:-len(e)], e) if (e := next(
        (e for e in (".tfrecords", ".tfrecord") if output.endswith(e)), "")) else (output, "")
    return OutputSpec(_folder_of(stem), stem, ext or DEFAULT_SUFFIX, None)


def _folder_of(stem: str) -> str:
    return stem.rsplit("/", 1)[0] if "/" in stem else "."


def write_records(path: str, records: Iterable[bytes]) -> int:
    """Writes a TFRecord file atomically; returns the bytes written."""
    temp = f"{path}.tmp-{uuid.uuid4().hex}"
    written = 0
    with paths.open_binary(temp, "wb") as f:
        for record in records:
            framed = tfrecord.encode_record(record)
            f.write(framed)
            written += len(framed)
    _rename(temp, path)
    return written


def write_text(path: str, text: str) -> None:
    temp = f"{path}.tmp-{uuid.uuid4().hex}"
    with paths.open_binary(temp, "wb") as f:
        f.write(text.encode("utf-8"))
    _rename(temp, path)


def _rename(source: str, destination: str) -> None:
    if not paths.is_remote(source):
        os.makedirs(os.path.dirname(os.path.abspath(destination)), exist_ok=True)
        os.replace(source, destination)
        return
    from apache_beam.io.filesystems import FileSystems

    if FileSystems.exists(destination):
        FileSystems.delete([destination])
    FileSystems.rename([source], [destination])


def prepare_folder(spec: OutputSpec) -> list[str]:
    """Creates the output folder; deletes earlier shard files of this prefix (returned)."""
    if paths.is_remote(spec.folder):
        from apache_beam.io.filesystems import FileSystems

        stale = [m.path for m in FileSystems.match([spec.shard_glob()])[0].metadata_list]
        if stale:
            FileSystems.delete(stale)
        return stale
    os.makedirs(spec.folder, exist_ok=True)
    stale = sorted(glob.glob(spec.shard_glob()))
    for path in stale:
        os.remove(path)
    return stale
