"""Never lose a user's data: a run writes into a staging folder and commits at the end.

Inside the output folder OUT, while a run is on:

    OUT/.sample-lock               who is writing (pid, host, start time, run id);
                                   held for the run (output/lock.py)
    OUT/.sample-staging-<run>/     this run's shards, schema and report, being written,
                                   marked as the run's (.sample-staging.json)
    OUT/.sample-commit.json        only during the commit: the moves still to do

`begin` takes the lock (one run per folder: a second is refused in one line, a killed
run's lock is taken over; output/lock.py), then decides whether OUT is its own before it
touches anything (output/ownership.py: empty, a report `sample` wrote, or a checked
journal; anything else is refused unless --overwrite), finishes the commit of a run
that was killed in it, removes what killed runs provably left (marked staging folders
and their journal's temporary files, nothing because of its name alone), and proves
the folder is writable before any work starts. The engine writes into the staging
folder. `commit` then moves the staged files onto their final names (the report last)
and deletes the shards of the previous output that the new one does not replace (and
the statistics `sample-stats` wrote about it); `abort` deletes the staging folder
instead. Until the commit, the previous output is untouched; a failed, interrupted or
killed run leaves it byte for byte.

The commit itself is a few renames. A run killed in the middle of them leaves the
journal (bare file names, ownership.Journal); the next run into OUT completes the
commit first (all the new files exist by then), and readers of OUT (output/folder.py)
refuse the folder until it has. On an object store a rename is a copy and a delete, so
a final name appears only once its object is complete.
"""
from __future__ import annotations

import dataclasses
from typing import Callable, Sequence

from sampler.output import lock as output_lock
from sampler.output import ownership
from sampler.output.files import REPORT_FILE, SCHEMA_FILE, OutputSpec, write_text
from sampler.output.ownership import JOURNAL_FILE, Journal
from unigraph.storage import paths
from unigraph.errors import SamplerError, one_line
from unigraph.interrupts import hold_interrupts, let_interrupts_through

LOCK_FILE = output_lock.LOCK_FILE


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
    run_id = ownership.new_run_id()
    # A local lock is taken whole (its file made, flocked and written) and then released by
    # the `try` below, or not taken: a Ctrl-C in between left the file behind. (A remote
    # one is a request that may retry for long: Ctrl-C is not held back for it.)
    held = None if paths.is_remote(folder) else hold_interrupts()
    try:
        paths.make_folder(folder)
        lock = output_lock.acquire(folder, run_id, log)
    except OSError as e:
        let_interrupts_through(held)
        raise SamplerError(f"--output {folder}: cannot write there: {one_line(e)}") from None
    except BaseException:
        let_interrupts_through(held)
        raise
    try:
        let_interrupts_through(held)  # a Ctrl-C that came meanwhile is raised here
        # Whose the folder is, decided before anything in it is deleted, moved or replayed.
        state = ownership.survey(folder)
        ownership.check_ours(folder, state, overwrite)
        if state.journal is not None:
            _finish_interrupted_commit(folder, state.journal, log)
        _remove_leftovers(folder, state, log)
        staging_folder = ownership.make_staging(folder, run_id)
        try:
            probe = paths.join(staging_folder, ".probe")
            write_text(probe, "writable\n")
            paths.delete(probe)
            previous = tuple(ownership.previous_files(folder, ownership.survey(folder)))
        except BaseException:  # Ctrl-C or an unwritable folder: the run leaves nothing
            ownership.delete_quietly(staging_folder)
            raise
        return Staging(run_id, final, final.in_folder(staging_folder), previous, lock)
    except OSError as e:
        output_lock.release(lock)
        raise SamplerError(f"--output {folder}: cannot write there: {one_line(e)}") from None
    except BaseException:
        output_lock.release(lock)
        raise


def commit(staging: Staging, shard_names: list[str], extra_files: Sequence[str] = ()) -> None:
    """Moves the staged shards, `extra_files` (the features/ files, names relative to the
    folder), schema and report onto their final names (the report last: a report in OUT
    means a complete output) and deletes the previous output's files the new one does
    not replace.

    Once the journal is written the commit only rolls forward: if a move fails (a full
    disk, an object store that stays down), the staged files and the journal stay,
    readers refuse the folder, and the next run into it completes the moves first."""
    folder = staging.final.folder
    new = list(shard_names) + list(extra_files) + [SCHEMA_FILE, REPORT_FILE]
    for name in extra_files:
        problem = ownership.output_name_problem(name)
        if problem is not None:
            raise SamplerError(f"--output {folder}: cannot commit {problem}")
    journal = Journal(staging.run_id, tuple(new),
                      tuple(name for name in staging.previous_files if name not in new))
    write_text(paths.join(folder, JOURNAL_FILE), journal.document(),
               temp=ownership.journal_temp(folder, staging.run_id))
    staging.progress["journal"] = True
    try:
        _apply(folder, journal)
        ownership.delete_statistics(folder)
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
            ownership.delete_quietly(staging.folder)
    finally:
        output_lock.release(staging.lock)


def pending_commit(folder: str) -> bool:
    """Whether a run was killed while committing into `folder` (readers must wait)."""
    return paths.exists(paths.join(folder, JOURNAL_FILE))


# ---- inside ------------------------------------------------------------------------

def _apply(folder: str, journal: Journal) -> None:
    """The journal's moves and deletes, its names joined to OUT here (never paths)."""
    staged_in = paths.join(folder, ownership.staging_name(journal.run))
    for name in journal.moves:
        staged = paths.join(staged_in, name)
        if paths.exists(staged):  # a resumed commit skips what was moved already
            paths.rename(staged, paths.join(folder, name))
    for name in journal.deletes:
        paths.delete_if_exists(paths.join(folder, name))
    ownership.remove_empty_feature_folders(folder)


def _finish_interrupted_commit(folder: str, journal: Journal, log) -> None:
    log(f"completing the commit of run {journal.run}, which was interrupted")
    _apply(folder, journal)
    ownership.delete_statistics(folder)
    paths.delete(paths.join(folder, JOURNAL_FILE))
    paths.delete_tree(paths.join(folder, ownership.staging_name(journal.run)))


def _remove_leftovers(folder: str, state: ownership.FolderState, log) -> None:
    """Staging folders of runs that failed or were killed (marked as theirs, or empty:
    killed before the marker was written) and their journals' temporary files; a folder
    named like ours that holds anything but the marker is left."""
    done = state.journal.run if state.journal is not None else None
    for run in state.staging_runs:
        if run != done:
            log(f"removing {ownership.staging_name(run)}, left by a run that did not finish")
            paths.delete_tree(paths.join(folder, ownership.staging_name(run)))
    for name in state.journal_temps:
        paths.delete_if_exists(paths.join(folder, name))
    for name in state.empty_staging:
        if ownership.remove_unfinished_staging(folder, name):
            log(f"removing {name}, an empty staging folder of a run killed as it began")
        else:
            log(f"leaving {name} alone: no longer empty")
    for name in state.unmarked:
        log(f"leaving {name} alone: named like a staging folder, but not marked as one "
            f"`sample` made")
