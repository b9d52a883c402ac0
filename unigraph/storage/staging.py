"""Writing a folder of tables all or nothing: into a staging folder inside it, then moved.

`unigraph-convert` and `unigraph-import` (and `unigraph.import_pyg`) write a graph's
tables, schema and other files into `<output>/<prefix><id>/` and move them onto their
names in the output folder only once every one of them was written, the file that names
the others (the schema) last. On any failure, Ctrl-C included, the staging folder is
deleted, and so is an output folder the run created, so a bad table, a full disk or an
interrupted run leaves no partial graph: the folder holds what it held before.

The output folder may hold a user's files (docs/security.md), so a run touches only
what it wrote: the staging folder is created exclusively (never one that was there);
every name to move is one plain file name (never a path out of the folder); and a file
already at one of those names is replaced only when an earlier run of these commands
wrote it, which they list in `.unigraph-written.json` (written after the files are in
place). Otherwise the run is refused in one line before anything in the folder is
replaced: at once for the names known before writing (the schema's), and for every
other once the files are written.
"""
from __future__ import annotations

import json
import os
import shutil
import uuid
from typing import Callable, Sequence, TypeVar

from unigraph.errors import SamplerError, message_line
from unigraph.storage import paths

Result = TypeVar("Result")
MARKER = ".unigraph-written.json"
_FORMAT = "unigraph written files"


def write_staged(output: str, prefix: str,
                 write: Callable[[str], tuple[list[str], Result]],
                 known: Sequence[str] = ()) -> Result:
    """Runs `write(staging)`, which writes files into the staging folder and returns (their
    names, in the order to move them, the one naming the others last; a result), then
    moves them into `output`; returns the result. `known`: names the run will write,
    checked before anything is written."""
    created = not paths.is_remote(output) and not os.path.isdir(output)
    check_replaceable(output, known)
    staging = paths.join(output, f"{prefix}{uuid.uuid4().hex[:8]}")
    paths.make_folder(output)
    if not paths.is_remote(staging):
        os.mkdir(staging)  # exclusively: never into a folder that was there
    try:
        names, result = write(staging)
        check_replaceable(output, names)
        for name in names:
            paths.rename(paths.join(staging, name), paths.join(output, name))
        write_marker(output, names)
    except BaseException:
        paths.delete_tree(staging)
        if created:
            shutil.rmtree(output, ignore_errors=True)
        raise
    paths.delete_tree(staging)
    return result


def written_before(folder: str) -> set[str]:
    """The file names an earlier run wrote into `folder` (none without a marker)."""
    path = paths.join(folder, MARKER)
    try:
        if not paths.exists(path):
            return set()
        with paths.open_binary(path) as f:
            document = json.loads(f.read(1 << 24).decode("utf-8"))
    except (OSError, ValueError, RecursionError):
        return set()
    if not isinstance(document, dict) or document.get("format") != _FORMAT or \
            not isinstance(document.get("files"), list):
        return set()
    return {n for n in document["files"] if isinstance(n, str) and "/" not in n}


def check_replaceable(output: str, names: Sequence[str]) -> None:
    """SamplerError (one line) when a name is not a plain file name, or when a file the run
    would write exists in `output` and no earlier run wrote it."""
    for name in names:
        if not name or name in (".", "..") or "/" in name or "\\" in name:
            raise SamplerError(f"--output {output}: would write {message_line(name, 120)}, "
                               f"which is not a file name in the folder")
    if not paths.is_remote(output) and not os.path.isdir(output):
        return
    present = set(paths.list_folder(output))
    ours = written_before(output)
    for name in names:
        if name in present and name not in ours:
            raise SamplerError(
                f"--output {output}: holds {message_line(name, 120)}, which this run would "
                f"replace and which no earlier unigraph-convert or unigraph-import wrote "
                f"there; choose an empty folder")


def write_marker(folder: str, names: Sequence[str]) -> None:
    """Lists the files this run wrote (with those of earlier runs still there)."""
    present = set(paths.list_folder(folder))
    files = sorted(set(names) | (written_before(folder) & present))
    with paths.open_binary(paths.join(folder, MARKER), "wb") as f:
        f.write(json.dumps({"format": _FORMAT, "files": files}, indent=1).encode("utf-8"))
