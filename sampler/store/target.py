"""Where `unigraph-convert --format store` may write, and how the store takes its place.

The target folder is the user's to name, and may hold anything; the build touches only
what it can show is a store or its own:

- **The target** must be absent, an empty folder, or a graph store: a folder whose
  `store.json` is this project's manifest (format and version, unigraph.store_manifest)
  and which holds nothing but the files that manifest lists (and their folders). A file
  named store.json elsewhere, or a store a user has put other files into, is refused in
  one line: the store is replaced whole, so it must be nothing but a store.
- **Staging**: the new store is built in a folder created exclusively beside the target
  (`.<name>.staging-<random>`), never one that existed; on failure that folder alone is
  deleted.
- **Commit**: the target is checked again (the build may take hours), an earlier store is
  renamed onto an empty folder created for it, the staged store is renamed onto the
  target, and the earlier one deleted: at every moment the target is absent, the old store
  or the new one, each whole.
"""
from __future__ import annotations

import os
import shutil
import stat
import tempfile

from unigraph.encoding import json_data
from unigraph.errors import SamplerError, message_line
from unigraph.store_manifest import MANIFEST_NAME, is_store, store_path_problem


def check_target(output: str, target: str) -> None:
    """SamplerError (one line) unless the store may be written at `target`."""
    problem = _target_problem(target)
    if problem is not None:
        raise SamplerError(f"--output {output}: {problem}; give a new or empty folder (an "
                           f"earlier graph store there is replaced whole)")


def make_staging(target: str) -> str:
    """A new, empty folder beside `target` for the build (created exclusively)."""
    return tempfile.mkdtemp(prefix=f".{os.path.basename(target)}.staging-",
                            dir=os.path.dirname(target))


def commit(output: str, staging: str, target: str) -> None:
    """The staged store takes the target's name (module docstring)."""
    check_target(output, target)
    old = None
    if os.path.lexists(target):
        old = tempfile.mkdtemp(prefix=f".{os.path.basename(target)}.previous-",
                               dir=os.path.dirname(target))
        os.rename(target, old)  # onto the empty folder just made for it
    os.rename(staging, target)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


def _target_problem(target: str) -> str | None:
    try:
        mode = os.lstat(target).st_mode
    except FileNotFoundError:
        return None
    except OSError as e:
        return f"cannot look at it ({message_line(e, 120)})"
    if stat.S_ISLNK(mode):
        return "is a symbolic link; give the folder it leads to"
    if not stat.S_ISDIR(mode):
        return "exists and is not a folder"
    if not os.listdir(target):
        return None
    if not is_store(target):
        return "exists and is not a graph store (no store.json of this project's format)"
    return _foreign_file(target)


def _foreign_file(target: str) -> str | None:
    """Why the store at `target` is not only a store: the first entry its manifest does
    not list (or a link, or a manifest without a file list)."""
    try:
        with open(os.path.join(target, MANIFEST_NAME), "rb") as f:
            listed = json_data.loads(f.read()).get("files")
    except (OSError, ValueError, AttributeError):
        listed = None
    if not isinstance(listed, dict) or any(store_path_problem(r) for r in listed):
        return "holds a store.json that lists no files of its own, so what else it holds " \
               "cannot be told from the store"
    folders = {"/".join(r.split("/")[:i]) for r in listed for i in range(1, r.count("/") + 1)}
    for root, dirs, files in os.walk(target):
        for name in sorted(dirs) + sorted(files):
            path = os.path.join(root, name)
            relative = os.path.relpath(path, target).replace(os.sep, "/")
            mode = os.lstat(path).st_mode
            ours = (relative in folders and stat.S_ISDIR(mode)) or (
                (relative in listed or relative == MANIFEST_NAME) and stat.S_ISREG(mode))
            if not ours:
                return (f"holds {message_line(relative, 120)}, which is not part of the graph "
                        f"store there (move it out first)")
    return None
