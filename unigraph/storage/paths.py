"""Resolving and expanding table file names: relative names, `name@N` shards, globs.

A schema names its tables relative to the schema's own folder. A name may be
`name@N` (TF-GNN's sharded form: name-00000-of-0000N ... name-0000{N-1}-of-0000N)
or a glob. Local paths are the os module's;
gs:// paths go to `unigraph.storage.gcs` (google-cloud-storage with bounded retries
and one-line errors naming the object); STORAGE_EMULATOR_HOST points it at an emulator.
"""
from __future__ import annotations

import glob as _glob
import os
import re
import shutil

from unigraph.errors import TableError
from unigraph.storage import gcs

_SHARD_SPEC = re.compile(r"^(?P<prefix>.*)@(?P<count>\d+)(?P<suffix>(\.[A-Za-z0-9]+)*)$")
_GLOB_CHARS = re.compile(r"[*?\[]")


def is_remote(path: str) -> bool:
    return "://" in path


def join(base_dir: str, name: str) -> str:
    """`name` resolved against `base_dir` unless it is absolute or has a scheme."""
    if is_remote(name) or os.path.isabs(name):
        return name
    if is_remote(base_dir):
        return base_dir.rstrip("/") + "/" + name
    return os.path.normpath(os.path.join(base_dir, name))


_UNSAFE_IN_NAMES = re.compile(r"[^A-Za-z0-9_.-]")


def file_stem(name: str, fallback: str = "table") -> str:
    """`name` (a set's, a table's, a job's) as one file name component: characters other
    than letters, digits, `_`, `.` and `-` become `_`, and a leading dot too (no hidden
    file, no `..`): never a path, whatever the name holds."""
    stem = re.sub(r"^\.", "_", _UNSAFE_IN_NAMES.sub("_", name)[:120])
    return stem or fallback


def dirname(path: str) -> str:
    if is_remote(path):
        return path.rsplit("/", 1)[0]
    return os.path.dirname(os.path.abspath(path))


def shard_names(pattern: str) -> list[str] | None:
    """`name@N[.ext]` -> the N shard names, or None if `pattern` is not sharded.

    `edges@3.csv` and `edges.csv@3` both mean edges-0000i-of-00003 with the
    extension kept at the end, so the file format stays visible in the name.
    """
    match = _SHARD_SPEC.match(pattern)
    if not match:
        return None
    count = int(match["count"])
    prefix, suffix = match["prefix"], match["suffix"] or ""
    if not suffix:  # `edges.csv@3`: the extension sits before the @
        stem, ext = os.path.splitext(prefix)
        if ext:
            prefix, suffix = stem, ext
    return [f"{prefix}-{i:05d}-of-{count:05d}{suffix}" for i in range(count)]


EMULATOR_ENV = "STORAGE_EMULATOR_HOST"


def exists(path: str) -> bool:
    if not is_remote(path):
        return os.path.exists(path)
    return gcs.exists(path)


def size(path: str) -> int:
    """A file's size in bytes."""
    if not is_remote(path):
        return os.path.getsize(path)
    return gcs.size(path)


def delete(path: str) -> None:
    if not is_remote(path):
        os.remove(path)
    else:
        gcs.delete(path)


def delete_if_exists(path: str) -> None:
    try:
        if exists(path):
            delete(path)
    except OSError:
        pass  # already gone, or cleanup of a file we could not write in the first place


def rename(source: str, destination: str) -> None:
    """Moves a file, replacing `destination`: atomic on a local disk; copy then delete on
    object stores (so `destination` appears whole, but `source` lingers for a moment)."""
    if not is_remote(source):
        os.makedirs(os.path.dirname(os.path.abspath(destination)), exist_ok=True)
        os.replace(source, destination)
        return
    gcs.copy(source, destination)  # replaces destination whole
    gcs.delete(source)


def make_folder(folder: str) -> None:
    """Creates a local folder and its parents (object stores have no folders)."""
    if not is_remote(folder):
        os.makedirs(folder, exist_ok=True)


def is_folder(path: str) -> bool:
    """A local folder, or a prefix with objects under it on an object store."""
    if not is_remote(path):
        return os.path.isdir(path)
    return bool(list_folder(path))


def list_folder(folder: str) -> list[str]:
    """Names of the entries directly in a folder (for object stores: the next path
    component of every object under the prefix), sorted; [] if there is none."""
    if not is_remote(folder):
        return sorted(os.listdir(folder)) if os.path.isdir(folder) else []
    prefix = folder.rstrip("/") + "/"
    return sorted({p[len(prefix):].split("/", 1)[0] for p in gcs.list_names(prefix)})


def delete_tree(folder: str) -> None:
    """Deletes a folder and everything in it, if it exists."""
    if not is_remote(folder):
        if os.path.isdir(folder):
            shutil.rmtree(folder)
        return
    for path in gcs.list_names(folder.rstrip("/") + "/"):
        gcs.delete(path)


def absolute(path: str) -> str:
    """A canonical spelling for comparing locations: resolved local paths; remote paths
    with repeated and trailing slashes removed."""
    if not is_remote(path):
        return os.path.realpath(path)
    scheme, rest = path.split("://", 1)
    return f"{scheme}://" + "/".join(part for part in rest.split("/") if part)


def is_within(path: str, folder: str) -> bool:
    """Whether `path` is `folder` or inside it (both as `absolute` gives them)."""
    path, folder = absolute(path), absolute(folder)
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def _glob_files(pattern: str) -> list[str]:
    if not is_remote(pattern):
        return sorted(p for p in _glob.glob(pattern) if os.path.isfile(p))
    return gcs.match(pattern)


def expand(name: str, base_dir: str, *, what: str) -> list[str]:
    """Every file `name` means, in a fixed order; TableError if there is none.

    `what` says whose table this is (e.g. "node set 'paper'") for the message.
    """
    if not name:
        raise TableError(f"{what}: empty table file name")
    full = join(base_dir, name)
    shards = shard_names(full)
    if shards is not None:
        missing = [s for s in shards if not exists(s)]
        if missing:
            raise TableError(
                f"{what}: table '{name}' names {len(shards)} shards but "
                f"{len(missing)} are missing, first: {missing[0]}")
        return shards
    if _GLOB_CHARS.search(name):
        files = _glob_files(full)
        if not files:
            raise TableError(f"{what}: table glob '{name}' matches no file (looked for {full})")
        return files
    if not exists(full):
        raise TableError(f"{what}: table file '{name}' does not exist (looked for {full})")
    return [full]


def open_binary(path: str, mode: str = "rb"):
    """A file object for a local or remote path."""
    if not is_remote(path):
        return open(path, mode)
    return gcs.open_read(path) if "r" in mode else gcs.open_write(path)


def read_text(path: str) -> str:
    """A local or remote UTF-8 text file whole (a schema, a spec): OSError or
    UnicodeDecodeError as they come, for the caller to name the file."""
    with open_binary(path) as f:
        return f.read().decode("utf-8")


def file_format(path: str) -> str:
    """'csv', 'tfrecord' or 'parquet' from the file name (shard suffixes ignored)."""
    base = path.rsplit("/", 1)[-1].lower()
    base = re.sub(r"-\d{5}-of-\d{5}", "", base)
    for suffix, fmt in ((".csv", "csv"), (".tfrecords", "tfrecord"), (".tfrecord", "tfrecord"),
                        (".parquet", "parquet"), (".txt", "text")):
        if base.endswith(suffix) or f"{suffix}." in base:
            return fmt
    raise TableError(
        f"table '{path}': cannot tell the format from the name; use .csv, .tfrecord, "
        f".tfrecords or .parquet")
