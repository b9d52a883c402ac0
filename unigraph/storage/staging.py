"""Writing a folder of tables all or nothing: into a staging folder inside it, then moved.

`unigraph-convert` and `unigraph-import` (and `unigraph.import_pyg`) write a graph's
tables, schema and other files into `<output>/<prefix><id>/` and move them onto their
names in the output folder only once every one of them was written, the file that names
the others (the schema) last. On any failure, Ctrl-C included, the staging folder is
deleted, and so is an output folder the run created, so a bad table, a full disk or an
interrupted run leaves no partial graph: the folder holds what it held before.
"""
from __future__ import annotations

import os
import shutil
import uuid
from typing import Callable, TypeVar

from unigraph.storage import paths

Result = TypeVar("Result")


def write_staged(output: str, prefix: str,
                 write: Callable[[str], tuple[list[str], Result]]) -> Result:
    """Runs `write(staging)`, which writes files into the staging folder and returns (their
    names, in the order to move them, the one naming the others last; a result), then
    moves them into `output`; returns the result."""
    created = not paths.is_remote(output) and not os.path.isdir(output)
    staging = paths.join(output, f"{prefix}{uuid.uuid4().hex[:8]}")
    paths.make_folder(staging)
    try:
        names, result = write(staging)
        for name in names:
            paths.rename(paths.join(staging, name), paths.join(output, name))
    except BaseException:
        paths.delete_tree(staging)
        if created:
            shutil.rmtree(output, ignore_errors=True)
        raise
    paths.delete_tree(staging)
    return result
