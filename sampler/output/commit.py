"""Never lose a user's data: a run writes into a staging folder and commits at the end.

Inside the output folder OUT, while a run is on:

    OUT/.sample-lock               who is writing (pid, host, start time, run id);
                                   held for the run (output/lock.py)
    OUT/.sample-staging-<run>/     this run's shards, schema and report, being written
    OUT/.sample-commit.json        only during the commit: the moves still to do

`begin` takes the lock (one run per folder: a second is refused in one line, a killed
run's lock is taken over; output/lock.py), finishes or cleans up after a run that was killed, refuses
a folder `sample` did not write (unless --overwrite), and proves the folder is
writable before any work starts. The engine writes into the staging folder.
`commit` then moves the staged files onto their final names (the report last) and
deletes the files of the previous output that the new one does not replace (and
the statistics `sample-stats` wrote about it);
`abort` deletes the staging folder instead. Until the commit, the previous output
is untouched; a failed, interrupted or killed run leaves it byte for byte.

The commit itself is a few renames. A run killed in the middle of them leaves the
journal; the next run into OUT completes the commit first (all the new files exist
by then), and readers of OUT (output/folder.py) refuse the folder until it has.
On an object store a rename is a copy and a delete, so a final name appears only
once its object is complete.
"""
from __future__ import annotations

import dataclasses
import json
import time
import uuid
from typing import Callable

from sampler.output import lock as output_lock
from sampler.output.files import REPORT_FILE, SCHEMA_FILE, TEMP_MARK, OutputSpec, write_text
from unigraph.storage import paths
from unigraph.errors import SamplerError, one_line

# What `sample-stats` wrote about the previous output describes it, not the new one.
DERIVED_FOLDERS = ("stats",)
LOCK_FILE = output_lock.LOCK_FILE
JOURNAL_FILE = ".sample-commit.json"
STAGING_PREFIX = ".sample-staging-"
_OWN = (LOCK_FILE, JOURNAL_FILE)


@dataclasses.dataclass(frozen=True)
class Staging:
    run_id: str
    final: OutputSpec       # the names users see
    staged: OutputSpec      # the same names inside the staging folder
    previous_files: tuple[str, ...]  # names the previous output in OUT consists of
    lock: output_lock.Lock
    progress: dict = dataclasses.field(default_factory=dict)  # "journal": commit begun

    @property
    def folder(self) -> str:
        return self.staged.folder


def begin(final: OutputSpec, *, overwrite: bool = False,
          log: Callable[[str], None] = lambda message: None) -> Staging:
    """Prepares OUT for a run; SamplerError (one line) if the run must not start."""
    folder = final.folder
    run_id = f"{time.strftime('%Y%m%d-%H%M%S')}-{uuid.uuid4().hex[:8]}"
    try:
        paths.make_folder(folder)
        lock = output_lock.acquire(folder, run_id, log)
    except OSError as e:
        raise SamplerError(f"--output {folder}: cannot write there: {one_line(e)}") from None
    try:
        _finish_interrupted_commit(folder, log)
        _remove_leftovers(folder, log)
        entries = [e for e in paths.list_folder(folder) if e not in _OWN]
        if REPORT_FILE not in entries and entries and not overwrite:
            shown = ", ".join(entries[:3]) + (", ..." if len(entries) > 3 else "")
            raise SamplerError(
                f"--output {folder}: the folder is not empty ({shown}) and has no "
                f"{REPORT_FILE}, so `sample` did not write it; choose another folder or "
                f"pass --overwrite")
        staging_folder = paths.join(folder, STAGING_PREFIX + run_id)
        paths.make_folder(staging_folder)
        probe = paths.join(staging_folder, ".probe")
        write_text(probe, "writable\n")
        paths.delete(probe)
        return Staging(run_id, final, final.in_folder(staging_folder),
                       tuple(_previous_files(folder)), lock)
    except OSError as e:
        output_lock.release(lock)
        raise SamplerError(f"--output {folder}: cannot write there: {one_line(e)}") from None
    except BaseException:
        output_lock.release(lock)
        raise


def commit(staging: Staging, shard_names: list[str]) -> None:
    """Moves the staged shards, schema and report onto their final names (the report
    last: a report in OUT means a complete output) and deletes the previous output's
    files the new one does not replace.

    Once the journal is written the commit only rolls forward: if a move fails (a full
    disk, an object store that stays down), the staged files and the journal stay,
    readers refuse the folder, and the next run into it completes the moves first."""
    folder = staging.final.folder
    new = list(shard_names) + [SCHEMA_FILE, REPORT_FILE]
    moves = [(paths.join(staging.folder, name), paths.join(folder, name)) for name in new]
    deletes = [paths.join(folder, name) for name in staging.previous_files if name not in new]
    write_text(paths.join(folder, JOURNAL_FILE), json.dumps(
        {"run": staging.run_id, "moves": moves, "deletes": deletes}, indent=1))
    staging.progress["journal"] = True
    try:
        _apply(moves, deletes)
        _delete_derived(folder)
        paths.delete(paths.join(folder, JOURNAL_FILE))
    except OSError as e:
        raise SamplerError(f"--output {folder}: the commit was interrupted ({one_line(e)}); "
                           f"the folder is refused until `sample` runs into it again, which "
                           f"completes the commit first") from None
    staging.progress["committed"] = True
    try:
        paths.delete_tree(staging.folder)
    except OSError:
        pass  # an empty staging folder's leftovers: the next run removes them
    output_lock.release(staging.lock)


def abort(staging: Staging) -> None:
    """Drops everything the run staged; the previous output stays as it was. A commit
    that had begun (its journal written) is left for the next run to complete, never
    undone half-way. Never raises for the store: the error that made the run stop is
    the one to report, and the next run removes what is left."""
    try:
        if not staging.progress.get("journal"):
            paths.delete_tree(staging.folder)
    except OSError:
        pass
    finally:
        output_lock.release(staging.lock)


def pending_commit(folder: str) -> bool:
    """Whether a run was killed while committing into `folder` (readers must wait)."""
    return paths.exists(paths.join(folder, JOURNAL_FILE))


# ---- inside ------------------------------------------------------------------------

def _apply(moves: list[tuple[str, str]], deletes: list[str]) -> None:
    for staged, final in moves:
        if paths.exists(staged):  # a resumed commit skips what was moved already
            paths.rename(staged, final)
    for path in deletes:
        paths.delete_if_exists(path)


def _delete_derived(folder: str) -> None:
    for derived in DERIVED_FOLDERS:
        paths.delete_tree(paths.join(folder, derived))


def _finish_interrupted_commit(folder: str, log) -> None:
    journal_path = paths.join(folder, JOURNAL_FILE)
    if not paths.exists(journal_path):
        return
    with paths.open_binary(journal_path) as f:
        journal = json.loads(f.read().decode("utf-8"))
    log(f"completing the commit of run {journal['run']}, which was interrupted")
    _apply([tuple(move) for move in journal["moves"]], journal["deletes"])
    _delete_derived(folder)
    paths.delete(journal_path)
    paths.delete_tree(paths.join(folder, STAGING_PREFIX + journal["run"]))


def _remove_leftovers(folder: str, log) -> None:
    """Staging folders of runs that failed or were killed, and temporary files."""
    for name in paths.list_folder(folder):
        if name.startswith(STAGING_PREFIX):
            log(f"removing {name}, left by a run that did not finish")
            paths.delete_tree(paths.join(folder, name))
        elif TEMP_MARK in name:
            paths.delete_if_exists(paths.join(folder, name))


def _previous_files(folder: str) -> list[str]:
    """The files of the output in OUT, as its report lists them (shards may differ in
    number and naming from the new run's)."""
    report_path = paths.join(folder, REPORT_FILE)
    if not paths.exists(report_path):
        return []
    try:
        with paths.open_binary(report_path) as f:
            report = json.loads(f.read().decode("utf-8"))
    except (OSError, ValueError):
        return [REPORT_FILE]  # unreadable: it will be replaced, its shards stay
    names = [name.rsplit("/", 1)[-1] for name in report.get("output_shards", [])]
    return [n for n in names if n] + [SCHEMA_FILE, REPORT_FILE]
