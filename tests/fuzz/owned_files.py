"""Fuzzing the files a run finds rather than reads as input (issue 36, item 7).

Two more kinds of base for tests/fuzz/harness.py:

- **store**: the CSV base's graph prepared as a graph store; a case mutates one of its
  files (every array file and `store.json` can be drawn) and runs `sample` on it, with
  or without `--verify-store`, or `unigraph-convert --verify`. Beyond the harness's
  property: with the checksums checked, a changed array file never samples (status 2):
  never a silently different output.
- **state**: an output folder in the middle of things: the previous output, a commit a
  killed run left half-way (its marked staging folder and journal), a stale lock, a
  sample-stats report, and a user's files among them (some named like our leftovers).
  A case mutates one of the state files (journal, lock, report, staging marker, a staged
  file, the statistics) and runs `sample` into the folder. Beyond the harness's
  property: nothing outside the output folder changes (the inputs included); a run that
  fails changes nothing in it; a run that succeeds leaves no journal, lock or marked
  staging folder, and the user's files as they were.
"""
from __future__ import annotations

import json
import os
import shutil
import socket

STATE_RUN = "20240101-000000-0123abcd"
USER_FILES = {"notes.txt": b"mine", "thesis.tmp-v2.docx": b"draft",
              ".sample-staging-whatever/keep.txt": b"keep"}


def relative_files(folder: str) -> tuple[str, ...]:
    found = []
    for root, _, files in os.walk(folder):
        found += [os.path.relpath(os.path.join(root, n), folder) for n in files]
    return tuple(sorted(found))


def build_store_base(root: str, csv_base) -> str:
    """The CSV base's graph as a store at root/store."""
    from pipelines import convert

    store = os.path.join(root, "store")
    convert.prepare(os.path.join(csv_base.folder, csv_base.schema), store,
                    log=lambda line: None)
    return store


def build_state_base(root: str, previous: str) -> str:
    """root/state: `previous` (a `sample` output) with a killed run's half-done commit,
    a stale lock, statistics and a user's files."""
    from sampler.output import ownership

    folder = os.path.join(root, "state")
    shutil.copytree(previous, folder)
    staging = ownership.make_staging(folder, STATE_RUN)
    moved = sorted(n for n in relative_files(previous) if not n.startswith("."))
    for name in moved:  # the new output (features/ included): here the same bytes
        os.makedirs(os.path.dirname(os.path.join(staging, name)), exist_ok=True)
        shutil.copy(os.path.join(previous, name), os.path.join(staging, name))
    old = "old-00000-of-00001.tfrecord"  # the output before, which the commit deletes
    with open(os.path.join(folder, old), "wb") as f:
        f.write(b"")
    journal = ownership.Journal(STATE_RUN, tuple(moved), (old,))
    with open(os.path.join(folder, ownership.JOURNAL_FILE), "w") as f:
        f.write(journal.document())
    with open(os.path.join(folder, ".sample-lock"), "w") as f:
        json.dump({"pid": 2 ** 22 + 7, "host": socket.gethostname(), "started": "then",
                   "run": STATE_RUN}, f)
    os.makedirs(os.path.join(folder, "stats", "vs-other"))
    for where in ("stats", "stats/vs-other"):
        for name, text in (("stats.json", '{"records": 0, "quantile_method": "exact"}'),
                           ("index.html", "<!DOCTYPE html>\n<html><head><title>sample-stats: "
                                          "out</title></head></html>")):
            with open(os.path.join(folder, where, name), "w") as f:
                f.write(text)
    for name, data in USER_FILES.items():
        os.makedirs(os.path.dirname(os.path.join(folder, name)), exist_ok=True)
        with open(os.path.join(folder, name), "wb") as f:
            f.write(data)
    return folder


def state_files(folder: str) -> tuple[str, ...]:
    """The state files a case may mutate (not the user's, not the previous shards)."""
    return tuple(f for f in relative_files(folder)
                 if (f.startswith((".sample", "stats/")) or f == "sample_report.json")
                 and f not in USER_FILES)


def mutate_array(data: bytes, draw) -> tuple[bytes, list[str]]:
    """Bytes of an .npy file's data (never its header) changed in place: the size and
    header stay valid, so the values meet the checks (codes out of range, splits that
    decrease, weights that are NaN)."""
    from tests.fuzz.harness import mutate_in_place

    header = data.find(b"\n") + 1  # np.save ends its header with a newline
    if header <= 0 or header >= len(data):
        return data, ["array: no data"]
    return mutate_in_place(data, header, len(data) - 1, draw, draw.integer(1, 3),
                           "array byte")


def store_argv(case, folder: str, out: str, csv_base) -> tuple[str, list[str]]:
    """(command, argv) of a store case: `sample` (variant 1: --verify-store) or
    `unigraph-convert --verify`."""
    if case.command == "unigraph-convert":
        return "unigraph-convert", ["--verify", folder]
    argv = ["--graph", folder, "--spec", os.path.join(csv_base.folder, csv_base.spec),
            "--seeds", os.path.join(csv_base.folder, csv_base.seeds), "--output", out + "/",
            "--workers", "1", "--quiet"]
    return "sample", argv + (["--verify-store"] if case.variant % 2 else [])


def store_violations(case, outcome, original: bytes, mutated: bytes) -> list[str]:
    """With every checksum checked, a changed array file is always refused."""
    verified = case.command == "unigraph-convert" or case.variant % 2
    if verified and case.file.endswith(".npy") and mutated != original and outcome.code != 2:
        return [f"a changed store file passed verification (status {outcome.code})"]
    return []


def _stale_lock(data: bytes) -> bool:
    """Whether a lock file's bytes are a lock record (or empty): what a run takes over."""
    from unigraph.encoding import json_data

    if not data.strip():
        return True
    try:
        owner = json_data.loads(data)
    except ValueError:
        return False
    return isinstance(owner, dict) and isinstance(owner.get("pid"), int) and \
        isinstance(owner.get("host"), str)


def state_violations(outcome, out: str, before_out: dict, inputs: str,
                     before_inputs: dict, digest, lock_before: bytes | None) -> list[str]:
    from sampler.output import ownership

    found = []
    if digest(inputs) != before_inputs:
        found.append("files outside the output folder changed")
    after = digest(out)
    if lock_before is not None and _stale_lock(lock_before):
        # A lock of a dead run is ours to take over, whatever the run then decides.
        before_out = {k: v for k, v in before_out.items() if k != ".sample-lock"}
        after = {k: v for k, v in after.items() if k != ".sample-lock"}
    if outcome.code != 0 and after != before_out:
        found.append("a failed run changed the output folder")
    if outcome.code == 0:
        left = [n for n in os.listdir(out) if n in (ownership.JOURNAL_FILE, ".sample-lock")
                or ownership.marked_staging_run(out, n) is not None]
        if left:
            found.append(f"state left after a run that succeeded: {left[:3]}")
        for name, data in USER_FILES.items():
            path = os.path.join(out, name)
            if not os.path.exists(path) or open(path, "rb").read() != data:
                found.append(f"a user's file changed: {name}")
    return found
