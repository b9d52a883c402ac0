"""Where the sampled records go: `--output` parsed into a folder and shard file names.

`--output PATH` means a folder, whatever exists on disk, unless PATH ends in a
file pattern:

    out/  or  out                        out/samples-00000-of-0000N.tfrecord ...
    out/train@8                          out/train-00000-of-00008.tfrecord ...
    out/train@8.tfrecord                 (the same)
    out/train.tfrecords@8                out/train.tfrecords-00000-of-00008 ... (TF-GNN's naming)
    out/train-?????-of-00008[.tfrecord]  those names exactly
    out/train.tfrecord(s)                one unsharded file, exactly that name

The shards' folder also holds `graph_schema.pbtxt` and `sample_report.json`; a
folder holds one run's output. Files are written under a temporary name and
renamed into place, so a reader never sees a half-written file.
"""
from __future__ import annotations

import dataclasses
import re
import uuid
from typing import Iterable

from unigraph.encoding import tfrecord

from unigraph.storage import paths
from unigraph.errors import SamplerError

DEFAULT_STEM = "samples"
DEFAULT_EXT = ".tfrecord"
SCHEMA_FILE = "graph_schema.pbtxt"
REPORT_FILE = "sample_report.json"
TEMP_MARK = ".tmp-"  # in the names of files being written

_EXTS = (".tfrecords", ".tfrecord")
_AT_N = re.compile(r"^(?P<stem>.*?)(?P<ext>\.tfrecords?)?@(?P<n>\d+)(?P<ext2>\.tfrecords?)?$")
_PATTERN = re.compile(r"^(?P<stem>.*?)(?P<ext>\.tfrecords?)?-\?{5}-of-(?P<n>\d{5})"
                      r"(?P<ext2>\.tfrecords?)?$")


@dataclasses.dataclass(frozen=True)
class OutputSpec:
    """The output folder and how its shard files are named."""

    folder: str
    stem: str                # file name before the shard suffix, without folder
    ext: str                 # ".tfrecord" or ".tfrecords"
    ext_first: bool          # TF-GNN's naming: stem.ext-00000-of-00008
    num_shards: int | None   # None: the job chooses
    single_file: bool = False

    def shard_name(self, index: int, count: int) -> str:
        if self.single_file:
            return self.stem + self.ext
        suffix = f"-{index:05d}-of-{count:05d}"
        return f"{self.stem}{self.ext}{suffix}" if self.ext_first else \
            f"{self.stem}{suffix}{self.ext}"

    def shard_names(self, count: int) -> list[str]:
        return [self.shard_name(i, count) for i in range(count)]

    def shard_path(self, index: int, count: int) -> str:
        return paths.join(self.folder, self.shard_name(index, count))

    def beside(self, name: str) -> str:
        return paths.join(self.folder, name)

    def in_folder(self, folder: str) -> "OutputSpec":
        """The same names in another folder (a staging folder, say)."""
        return dataclasses.replace(self, folder=folder)


def parse_output(output: str) -> OutputSpec:
    """`--output` as an OutputSpec; the disk is not consulted."""
    if not output or output.strip() != output:
        raise SamplerError(f"--output {output!r}: give a folder or a file pattern")
    head, _, name = output.rpartition("/")
    if not name:  # a trailing slash: a folder
        return OutputSpec(output.rstrip("/") or "/", DEFAULT_STEM, DEFAULT_EXT, False, None)
    folder = head or ("/" if output.startswith("/") else ".")
    for regex in (_AT_N, _PATTERN):
        match = regex.match(name)
        if match:
            count = int(match["n"])
            if count <= 0:
                raise SamplerError(f"--output {output}: the shard count must be > 0")
            if not match["stem"]:
                raise SamplerError(f"--output {output}: the shard files need a name before "
                                   f"the shard count")
            if match["ext"] and match["ext2"]:
                raise SamplerError(f"--output {output}: give the extension once")
            return OutputSpec(folder, match["stem"], match["ext"] or match["ext2"]
                              or DEFAULT_EXT, ext_first=bool(match["ext"]), num_shards=count)
    if name.endswith(_EXTS):
        ext = next(e for e in _EXTS if name.endswith(e))
        return OutputSpec(folder, name[:-len(ext)], ext, False, 1, single_file=True)
    return OutputSpec(output, DEFAULT_STEM, DEFAULT_EXT, False, None)


def temp_name(path: str) -> str:
    return f"{path}{TEMP_MARK}{uuid.uuid4().hex}"


def write_records(path: str, records: Iterable[bytes]) -> int:
    """Writes a TFRecord file atomically; returns the bytes written."""
    temp = temp_name(path)
    written = 0
    try:
        with paths.open_binary(temp, "wb") as f:
            for record in records:
                framed = tfrecord.encode_record(record)
                f.write(framed)
                written += len(framed)
        paths.rename(temp, path)
    except BaseException:
        paths.delete_if_exists(temp)
        raise
    return written


def write_text(path: str, text: str, temp: str | None = None) -> None:
    """Writes a text file atomically (through `temp`, default a fresh name beside it)."""
    write_bytes(path, text.encode("utf-8"), temp)


def write_bytes(path: str, data: bytes, temp: str | None = None) -> None:
    """Writes a file atomically (through `temp`, default a fresh name beside it; its
    folder made first, on a local disk)."""
    paths.make_folder(paths.dirname(path))
    temp = temp or temp_name(path)
    try:
        with paths.open_binary(temp, "wb") as f:
            f.write(data)
        paths.rename(temp, path)
    except BaseException:
        paths.delete_if_exists(temp)
        raise


def is_output_file(name: str) -> bool:
    """Whether a file name is one `sample` writes (shards of any naming, schema, report)."""
    return name in (SCHEMA_FILE, REPORT_FILE) or is_shard_name(name)


def is_shard_name(name: str) -> bool:
    """Whether a file name is a shard's as `sample` names them (any of the namings)."""
    return bool(re.search(r"-\d{5}-of-\d{5}(\.tfrecords?)?$", name)) or name.endswith(_EXTS)
