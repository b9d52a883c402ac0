"""What of an output folder a `sample` run may touch, decided before anything is touched.

An output folder may hold anything: a user's files, another tool's, a file crafted to
look like ours. So a run touches only what it can show `sample` wrote, and reads the
state files it finds there as data, never as instructions:

- **The folder.** A run writes into OUT only when OUT is its own: empty (but for the
  state files below), holding a `sample_report.json` that is a report `sample` wrote,
  or in the middle of a commit whose journal checks out; or when the user says so
  (`--overwrite`). This is decided first: a refused folder is left as it was.
- **Staging folders** (`.sample-staging-<run>/`) are created exclusively and hold a
  marker (`.sample-staging.json`) naming their run as the first thing written in them;
  only a real folder (not a link) whose marker names the run its name says is removed
  as a leftover. A folder of that name without the marker is someone else's.
- **Temporary files** in OUT itself are the journal's (`.sample-commit.json.tmp-<run>`),
  removed only with their run's marked staging folder. (Every other temporary file is
  written inside a staging folder and goes with it.)
- **The journal** (`.sample-commit.json`) lists bare file names: the files to move from
  the staging folder of its run into OUT and the previous output's shards to delete.
  Anything else (a path, `..`, a separator, another bucket, a run id that is not one,
  a staging folder without its marker) refuses the folder in one line and nothing is
  touched; names are joined to OUT here, never taken as paths.
- **The previous output** is what its report lists: bare shard file names in OUT
  (a name that is not one refuses the folder the same way), the files of its feature
  spec (`feature_files`: `features/<name>/.../<name>`, each part a bare name, written
  by sampler.features), and the statistics `sample-stats` wrote about it (`stats/`),
  its own files only.
- **features/** is written and replaced through real folders only: a `features` (or
  a folder inside it) that is a link refuses OUT, so no move or delete goes through it.

Works alike for local folders and gs:// prefixes (paths.join, list_folder, exists).
"""
from __future__ import annotations

import dataclasses
import json
import os
import re
import stat
import time
import uuid

from sampler.output.files import REPORT_FILE, SCHEMA_FILE, is_shard_name, write_text
from sampler.output.lock import LOCK_FILE
from unigraph.encoding import json_data
from unigraph.errors import SamplerError, message_line
from unigraph.storage import paths

JOURNAL_FILE = ".sample-commit.json"
STAGING_PREFIX = ".sample-staging-"
STAGING_MARKER = ".sample-staging.json"
JOURNAL_FORMAT, JOURNAL_VERSION = "graph-sampler commit journal", 2
_STAGING_FORMAT = "graph-sampler staging folder"
_RUN_ID = re.compile(r"^\d{8}-\d{6}-[0-9a-f]{8}$")
_JOURNAL_TEMP = re.compile(r"^" + re.escape(JOURNAL_FILE) + r"\.tmp-(?P<run>.+)$")
# What sample-stats writes into OUT/stats (and OUT/stats/vs-<other>/ for a comparison).
STATS_FOLDER, STATS_FILES, STATS_COMPARISON_PREFIX = "stats", ("stats.json", "index.html"), "vs-"
_MAX_NAME = 255
_REPORT_KEYS = ("output_shards", "subgraphs_written")
FEATURES_FOLDER, FEATURE_FILES_KEY = "features", "feature_files"  # sampler.features'
_FEATURE_DEPTH = 6  # features/vocabulary/<kind>/<set>/<feature>.txt and a margin


def new_run_id() -> str:
    return f"{time.strftime('%Y%m%d-%H%M%S')}-{uuid.uuid4().hex[:8]}"


def staging_name(run_id: str) -> str:
    return STAGING_PREFIX + run_id


def journal_temp(folder: str, run_id: str) -> str:
    """The journal's temporary file: named after its run, so that only the run's own
    leftovers are ever removed."""
    return paths.join(folder, f"{JOURNAL_FILE}.tmp-{run_id}")


# ---- names -----------------------------------------------------------------------------

def bare_name_problem(name) -> str | None:
    """Why `name` is not a bare file name inside a folder (None: it is one)."""
    if not isinstance(name, str) or not name:
        return f"{name!r} is not a file name"
    if name in (".", "..") or "/" in name or "\\" in name or "\x00" in name:
        return f"'{name}' is a path, not a file name in the folder"
    if not name.isprintable():
        return f"'{name}' holds control characters"
    if len(name.encode("utf-8", "surrogateescape")) > _MAX_NAME:
        return f"'{name[:40]}...' is longer than a file name may be"
    if name.startswith(STAGING_PREFIX) or name in (LOCK_FILE, JOURNAL_FILE, STAGING_MARKER) \
            or _JOURNAL_TEMP.match(name):
        return f"'{name}' is the name of one of `sample`'s own state files"
    return None


def output_name_problem(name) -> str | None:
    """Why `name` is not a file a run writes into OUT: a bare file name, or a file of
    its features folder, `features/` and bare names (None: it is one)."""
    if isinstance(name, str) and name.startswith(FEATURES_FOLDER + "/"):
        return feature_name_problem(name)
    return bare_name_problem(name)


def feature_name_problem(name) -> str | None:
    """Why `name` is not a file of OUT's features folder (None: it is one)."""
    if not isinstance(name, str) or not name.startswith(FEATURES_FOLDER + "/"):
        return f"{name!r} is not a file of {FEATURES_FOLDER}/"
    parts = name.split("/")
    if len(parts) > _FEATURE_DEPTH:
        return f"'{name[:80]}' lies deeper than {FEATURES_FOLDER}/ is written"
    for part in parts[1:]:
        problem = bare_name_problem(part)
        if problem is not None:
            return problem
    return None


def features_through_links(folder: str) -> str | None:
    """The first folder of OUT/features/ (or itself) that is a link, not a folder: a
    move or delete there would reach outside OUT. None: all real (or none there)."""
    root = paths.join(folder, FEATURES_FOLDER)
    if paths.is_remote(root):
        return None  # prefixes: no links
    pending = [root]
    while pending:
        path = pending.pop()
        try:
            mode = os.lstat(path).st_mode
        except FileNotFoundError:
            continue
        if stat.S_ISLNK(mode):
            return path
        if stat.S_ISDIR(mode):
            pending += [os.path.join(path, name) for name in os.listdir(path)
                        if os.path.isdir(os.path.join(path, name))
                        or os.path.islink(os.path.join(path, name))]
    return None


def remove_empty_feature_folders(folder: str) -> None:
    """OUT/features/ and the folders in it that replacing its files left empty (a
    local disk; prefixes have no folders). Only empty real folders go."""
    root = paths.join(folder, FEATURES_FOLDER)
    if paths.is_remote(root) or not _real_folder(root):
        return
    for path, names, _ in sorted(os.walk(root, topdown=False), key=lambda x: -len(x[0])):
        if _real_folder(path):
            _remove_if_empty(path)


# ---- staging folders -------------------------------------------------------------------

def make_staging(folder: str, run_id: str) -> str:
    """Creates this run's staging folder (exclusively: never one that exists) and marks
    it as this run's. OSError if OUT cannot be written."""
    path = paths.join(folder, staging_name(run_id))
    if not paths.is_remote(path):
        os.mkdir(path, 0o755)  # FileExistsError rather than writing into someone's folder
    elif paths.list_folder(path):
        raise FileExistsError(f"{path}: already exists")
    marker = json.dumps({"format": _STAGING_FORMAT, "run": run_id})
    try:
        if paths.is_remote(path):
            write_text(paths.join(path, STAGING_MARKER), marker)
        else:  # one small write, no temporary file: after a kill -9 the folder is empty
            _write_new_file(paths.join(path, STAGING_MARKER), marker.encode())  # or marked
    except BaseException:  # Ctrl-C or a full disk: no unmarked folder left behind
        delete_quietly(path)
        raise
    return path


def _write_new_file(path: str, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)


def is_unfinished_staging(folder: str, name: str) -> bool:
    """Whether OUT/name is a real local folder that holds nothing, or only an empty
    marker file: the staging folder of a run killed before its marker was written, or
    between creating it and writing its one write. Removing it cannot lose anything."""
    path = paths.join(folder, name)
    if paths.is_remote(path):
        return False
    try:
        if not stat.S_ISDIR(os.lstat(path).st_mode):
            return False
        entries = os.listdir(path)
        if entries and entries != [STAGING_MARKER]:
            return False
        marker = os.lstat(paths.join(path, STAGING_MARKER)) if entries else None
    except OSError:
        return False
    return marker is None or (stat.S_ISREG(marker.st_mode) and marker.st_size == 0)


def remove_unfinished_staging(folder: str, name: str) -> bool:
    """Removes OUT/name if it is still an unfinished staging folder (its empty marker,
    then the folder: rmdir refuses if anything came into it meanwhile); whether it did."""
    if not is_unfinished_staging(folder, name):
        return False
    path = paths.join(folder, name)
    try:
        if os.listdir(path):
            os.unlink(paths.join(path, STAGING_MARKER))
        os.rmdir(path)
    except OSError:
        return False
    return True


def delete_quietly(path: str) -> None:
    """Removes a tree the run made, on the way out of a failed run (never raises)."""
    try:
        paths.delete_tree(path)
    except OSError:
        pass


def marked_staging_run(folder: str, name: str) -> str | None:
    """The run id of `name` in OUT if it is a staging folder `sample` made (a real folder
    whose marker names the run its name says), else None."""
    if not name.startswith(STAGING_PREFIX):
        return None
    run_id = name[len(STAGING_PREFIX):]
    if not _RUN_ID.match(run_id):
        return None
    path = paths.join(folder, name)
    marker = paths.join(path, STAGING_MARKER)
    try:
        if not paths.is_remote(path):
            if not stat.S_ISDIR(os.lstat(path).st_mode) or \
                    not stat.S_ISREG(os.lstat(marker).st_mode):
                return None  # a link, or no marker: not ours
        elif not paths.exists(marker):
            return None
        with paths.open_binary(marker) as f:
            document = json_data.loads(f.read(4096))
    except (OSError, ValueError):
        return None
    if not isinstance(document, dict) or document.get("format") != _STAGING_FORMAT \
            or document.get("run") != run_id:
        return None
    return run_id


# ---- the journal -----------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class Journal:
    run: str
    moves: tuple[str, ...]     # file names (features/...): staging folder -> OUT
    deletes: tuple[str, ...]   # file names in OUT: the previous output's shards, features

    def document(self) -> str:
        return json.dumps({"format": JOURNAL_FORMAT, "version": JOURNAL_VERSION,
                           "run": self.run, "moves": list(self.moves),
                           "deletes": list(self.deletes)}, indent=1)


def read_journal(folder: str) -> Journal | None:
    """OUT's journal, checked: None when there is none; SamplerError (one line, the
    folder refused) when it is not a journal this version of `sample` wrote for this
    folder. Nothing is touched either way."""
    path = paths.join(folder, JOURNAL_FILE)

    def refuse(problem: str) -> SamplerError:
        return SamplerError(
            f"--output {folder}: {JOURNAL_FILE} is not a commit journal `sample` wrote here "
            f"({problem}); nothing in the folder was touched. If no `sample` run was "
            f"committing into it, remove {path}")
    try:
        if not paths.is_remote(path):
            try:
                mode = os.lstat(path).st_mode
            except FileNotFoundError:
                return None
            if not stat.S_ISREG(mode):
                raise refuse("it is not a regular file")
        elif not paths.exists(path):
            return None
        with paths.open_binary(path) as f:
            data = f.read(1 << 24)
        document = json_data.loads(data)
    except (OSError, ValueError) as e:
        raise refuse(f"unreadable: {message_line(e, 200)}") from None
    if not isinstance(document, dict) or document.get("format") != JOURNAL_FORMAT:
        raise refuse("not this project's journal format")
    if document.get("version") != JOURNAL_VERSION:
        raise refuse(f"journal version {document.get('version')!r}, this sampler writes "
                     f"{JOURNAL_VERSION}")
    run = document.get("run")
    if not isinstance(run, str) or not _RUN_ID.match(run):
        raise refuse(f"its run {message_line(repr(run), 80)} is not a run id")
    lists = {}
    for key in ("moves", "deletes"):
        names = document.get(key)
        if not isinstance(names, list):
            raise refuse(f"'{key}' is not a list of file names")
        for name in names:
            problem = output_name_problem(name)
            if problem is None and key == "deletes" and not is_shard_name(name) \
                    and not name.startswith(FEATURES_FOLDER + "/"):
                problem = f"'{name}' is not the name of a shard file"
            if problem is not None:
                raise refuse(f"{key}: {message_line(problem, 200)}")
        lists[key] = tuple(names)
    if marked_staging_run(folder, staging_name(run)) != run:
        raise refuse(f"its staging folder {staging_name(run)} is missing or not marked as "
                     f"that run's")
    return Journal(run, lists["moves"], lists["deletes"])


# ---- the folder and its previous output ----------------------------------------------------

@dataclasses.dataclass(frozen=True)
class FolderState:
    """What is in OUT, sorted into what `sample` can show it wrote and the rest."""

    journal: Journal | None
    staging_runs: tuple[str, ...]   # marked staging folders (leftovers, or the journal's)
    journal_temps: tuple[str, ...]  # names of journal temporary files of those runs
    unmarked: tuple[str, ...]       # named like a staging folder, without its marker
    others: tuple[str, ...]         # everything else but the lock and the journal
    # named like one, empty or with an empty marker: a run killed as it began
    empty_staging: tuple[str, ...] = ()


def survey(folder: str) -> FolderState:
    """Reads OUT's listing and its journal; deletes nothing. SamplerError if the journal
    is not one `sample` wrote."""
    journal = read_journal(folder)
    staging, unmarked, empty, temps, others = [], [], [], [], []
    names = [n for n in paths.list_folder(folder) if n not in (LOCK_FILE, JOURNAL_FILE)]
    for name in names:
        if name.startswith(STAGING_PREFIX):
            run = marked_staging_run(folder, name)
            if run is not None:
                staging.append(run)
            elif _RUN_ID.match(name[len(STAGING_PREFIX):]) and \
                    is_unfinished_staging(folder, name):
                empty.append(name)
            else:
                unmarked.append(name)
    for name in names:
        temp = _JOURNAL_TEMP.match(name)
        if temp and temp["run"] in staging:
            temps.append(name)
        elif not name.startswith(STAGING_PREFIX):
            others.append(name)
    return FolderState(journal, tuple(staging), tuple(temps), tuple(unmarked), tuple(others),
                       tuple(empty))


def check_ours(folder: str, state: FolderState, overwrite: bool) -> None:
    """SamplerError (one line) unless OUT is this tool's to write into: nothing but state
    files in it, a report `sample` wrote, or a commit in progress (its journal checked
    by `survey`); `--overwrite` lets a run write beside other files (it still removes
    only its own)."""
    linked = features_through_links(folder)
    if linked is not None:
        raise SamplerError(f"--output {folder}: {linked} is a link, not a folder `sample` "
                           f"wrote; its features are written only into real folders, so "
                           f"nothing was touched. Remove it, or choose another folder")
    foreign = list(state.others) + list(state.unmarked)
    if state.journal is not None or not foreign or overwrite:
        return
    if REPORT_FILE in state.others:
        problem = report_problem(folder)
        if problem is None:
            return
        raise SamplerError(f"--output {folder}: its {REPORT_FILE} is not a report `sample` "
                           f"wrote ({problem}), so the folder may hold someone else's files; "
                           f"choose another folder or pass --overwrite (only `sample`'s own "
                           f"files are replaced)")
    shown = ", ".join(message_line(n, 80) for n in foreign[:3]) + \
        (", ..." if len(foreign) > 3 else "")
    raise SamplerError(
        f"--output {folder}: the folder is not empty ({shown}) and has no {REPORT_FILE}, so "
        f"`sample` did not write it; choose another folder or pass --overwrite")


def _read_report(folder: str) -> dict:
    with paths.open_binary(paths.join(folder, REPORT_FILE)) as f:
        report = json_data.loads(f.read(1 << 26))
    if not isinstance(report, dict):
        raise ValueError(f"a JSON {type(report).__name__}, not an object")
    return report


def report_problem(folder: str) -> str | None:
    """Why OUT's sample_report.json is not a report `sample` wrote (None: it is one)."""
    try:
        report = _read_report(folder)
    except (OSError, ValueError) as e:
        return f"unreadable: {message_line(e, 120)}"
    missing = [k for k in _REPORT_KEYS if k not in report]
    if missing:
        return f"no '{missing[0]}'"
    shards = report["output_shards"]
    if not isinstance(shards, list):
        return "'output_shards' is not a list"
    for name in shards:
        problem = bare_name_problem(name)
        if problem is None and not is_shard_name(name):
            problem = f"'{name}' is not the name of a shard file"
        if problem is not None:
            return f"output_shards: {message_line(problem, 120)}"
    features = report.get(FEATURE_FILES_KEY, [])
    if not isinstance(features, list):
        return f"'{FEATURE_FILES_KEY}' is not a list"
    for name in features:
        problem = feature_name_problem(name)
        if problem is not None:
            return f"{FEATURE_FILES_KEY}: {message_line(problem, 120)}"
    return None


def previous_files(folder: str, state: FolderState) -> list[str]:
    """The file names the output in OUT consists of, as its report lists them (shards
    may differ in number and naming from the new run's); [] without a report of ours."""
    if REPORT_FILE not in state.others or report_problem(folder) is not None:
        return []
    report = _read_report(folder)
    return (list(report["output_shards"]) + list(report.get(FEATURE_FILES_KEY, []))
            + [SCHEMA_FILE, REPORT_FILE])


def delete_statistics(folder: str) -> None:
    """Removes what `sample-stats` wrote about the previous output (OUT/stats/stats.json,
    index.html, and the same in its vs-<other>/ comparisons: files whose content says
    sample-stats wrote them), then the folders if that left them empty. Nothing else in
    stats/ is touched, nor a stats/ that is a link."""
    root = paths.join(folder, STATS_FOLDER)
    if not _real_folder(root):
        return
    for sub in [""] + [n for n in paths.list_folder(root) if n.startswith(STATS_COMPARISON_PREFIX)]:
        where = paths.join(root, sub) if sub else root
        if sub and not _real_folder(where):
            continue
        for name in STATS_FILES:
            if _written_by_sample_stats(paths.join(where, name), name):
                paths.delete_if_exists(paths.join(where, name))
        if sub and not paths.is_remote(where):
            _remove_if_empty(where)
    if not paths.is_remote(root):
        _remove_if_empty(root)


def _written_by_sample_stats(path: str, name: str) -> bool:
    """stats.json: sample-stats' numbers (a JSON object with its quantile method, or its
    runs compared); index.html: its page (its doctype and title)."""
    try:
        if not paths.exists(path):
            return False
        with paths.open_binary(path) as f:
            data = f.read(1 << 27 if name == "stats.json" else 4096)
        if name == "index.html":
            return data.startswith(b"<!DOCTYPE html>") and b"<title>sample-stats: " in data
        document = json_data.loads(data)
    except (OSError, ValueError):
        return False
    return isinstance(document, dict) and ("quantile_method" in document
                                           or isinstance(document.get("runs"), dict))


def _real_folder(path: str) -> bool:
    if paths.is_remote(path):
        return True  # prefixes: no links, and an absent one lists nothing
    try:
        return stat.S_ISDIR(os.lstat(path).st_mode)
    except OSError:
        return False


def _remove_if_empty(path: str) -> None:
    try:
        os.rmdir(path)
    except OSError:
        pass  # not empty: what is left is not ours
