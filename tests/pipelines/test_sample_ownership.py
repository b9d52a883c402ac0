"""A run touches only what it wrote; the state files of an output folder are data (issue 36).

Each crafted case of the issue, run as a user would run `sample` (its `main`), asserts
the exit status, the one line printed and every file under the test's folder afterwards,
the files outside the output folder included. The gs:// cases run on a real GCS emulator.
"""
import json
import os
import shutil
import stat

import pytest

from pipelines import sample
from sampler.output import commit, ownership
from sampler.output.folder import SamplesError, open_samples
from tests.gcs_emulator import BUCKET, gcs, upload_folder  # noqa: F401  (a fixture)
from tests.pipelines.test_sample_safety import TOPK, TOPK_SPEC, one_error_line, run, topk
from tests.pipelines.test_sample_safety import tree as file_tree

RUN = "20240101-000000-0123abcd"  # a run id as `sample` makes them


def tree(folder) -> dict:
    """Every entry under `folder`: files by content (as test_sample_safety.tree), links by
    where they point, folders and other kinds by kind; nothing is opened but files."""
    found = file_tree(folder) if not any(True for _ in _special(folder)) else {}
    for root, dirs, files in os.walk(folder):
        for name in dirs + files:
            path = os.path.join(root, name)
            mode = os.lstat(path).st_mode
            key = os.path.relpath(path, folder)
            if stat.S_ISLNK(mode):
                found[key] = "link to " + os.readlink(path)
            elif stat.S_ISDIR(mode):
                found[key] = "folder"
            elif not stat.S_ISREG(mode):
                found[key] = f"mode {stat.S_IFMT(mode)}"
            elif key not in found:
                with open(path, "rb") as f:
                    found[key] = f.read()
    return found


def _special(folder):
    for root, dirs, files in os.walk(folder):
        for name in dirs + files:
            mode = os.lstat(os.path.join(root, name)).st_mode
            if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
                yield name


def journal(run=RUN, moves=(), deletes=(), **extra) -> str:
    return json.dumps({"format": ownership.JOURNAL_FORMAT, "version": ownership.JOURNAL_VERSION,
                       "run": run, "moves": list(moves), "deletes": list(deletes)} | extra)


def marked_staging(out, run=RUN):
    """A staging folder as `sample` marks it (what a killed run leaves)."""
    staging = out / ownership.staging_name(run)
    staging.mkdir()
    (staging / ownership.STAGING_MARKER).write_text(json.dumps(
        {"format": "graph-sampler staging folder", "run": run}))
    return staging


@pytest.fixture
def own_output(tmp_path, capsys):
    """tmp_path/out: a `sample` output; tmp_path/outside: a user's files beside it."""
    assert topk(capsys, tmp_path / "out")[0] == 0
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "thesis.docx").write_text("years of work")
    (tmp_path / "outside" / "data").mkdir()
    (tmp_path / "outside" / "data" / "table.csv").write_text("a,b\n")
    return tmp_path / "out"


# ---- ownership first -----------------------------------------------------------------------

def test_a_refused_folder_loses_nothing_named_like_our_leftovers(tmp_path, capsys):
    """Issue 36: the cleanup ran before the ownership check and deleted a user's
    `thesis.tmp-v2.docx` and `.sample-staging-whatever/`."""
    out = tmp_path / "mine"
    out.mkdir()
    (out / "thesis.tmp-v2.docx").write_text("draft")
    (out / ".sample-staging-whatever").mkdir()
    (out / ".sample-staging-whatever" / "notes.txt").write_text("notes")
    before = tree(tmp_path)
    code, _, err = topk(capsys, out)
    assert code == 2 and "the folder is not empty" in one_error_line(err)
    assert tree(tmp_path) == before
    assert sorted(os.listdir(out)) == [".sample-staging-whatever", "thesis.tmp-v2.docx"]


def test_overwrite_removes_only_what_sample_marked(tmp_path, capsys):
    """With --overwrite the run writes beside the user's files; names that look like our
    leftovers (a run-id-like staging folder without the marker, temporary names) stay."""
    out = tmp_path / "mine"
    out.mkdir()
    (out / "thesis.tmp-v2.docx").write_text("draft")
    (out / ownership.staging_name(RUN)).mkdir()  # named exactly like ours, unmarked
    (out / ownership.staging_name(RUN) / "keep.txt").write_text("keep")
    (out / f"{ownership.JOURNAL_FILE}.tmp-{RUN}").write_text("not ours: no marked staging")
    before = tree(out)
    code, text, err = run(capsys, "--graph", TOPK, "--spec", TOPK_SPEC, "--output", out,
                          "--overwrite")
    assert code == 0, err
    assert "leaving .sample-staging-20240101-000000-0123abcd alone" in text
    after = tree(out)
    assert {k: v for k, v in after.items() if k in before} == before
    assert "sample_report.json" in after


def test_a_killed_runs_marked_leftovers_are_removed(tmp_path, capsys):
    out = tmp_path / "out"
    assert topk(capsys, out)[0] == 0
    expected = tree(out)
    staging = marked_staging(out)
    (staging / "samples-00000-of-00004.tfrecord").write_text("half")
    (out / f"{ownership.JOURNAL_FILE}.tmp-{RUN}").write_text("{")
    assert topk(capsys, out)[0] == 0
    assert tree(out) == expected


# ---- the journal is data -------------------------------------------------------------------

def _refused(tmp_path, capsys, out, expect):
    before = tree(tmp_path)
    code, _, err = topk(capsys, out)
    line = one_error_line(err)
    assert code == 2 and ".sample-commit.json is not a commit journal `sample` wrote" in line
    assert expect in line and "nothing in the folder was touched" in line
    assert tree(tmp_path) == before
    return line


def test_a_crafted_journal_moves_and_deletes_nothing(tmp_path, capsys, own_output):
    """Issue 36: a crafted journal moved a file from outside into the folder and deleted a
    folder outside it (its `run` field named it)."""
    outside = tmp_path / "outside"
    (own_output / ".sample-commit.json").write_text(json.dumps({
        "run": "../outside/data",
        "moves": [[str(outside / "thesis.docx"), str(own_output / "stolen.docx")]],
        "deletes": [str(outside / "data" / "table.csv")]}))
    _refused(tmp_path, capsys, own_output, "not this project's journal format")


@pytest.mark.parametrize("moves, deletes, expect", [
    ([str("/abs/thesis.docx")], [], "is a path, not a file name"),
    (["../outside/thesis.docx"], [], "is a path, not a file name"),
    ([".."], [], "is a path, not a file name"),
    (["gs://other-bucket/x.tfrecord"], [], "is a path, not a file name"),
    (["a\\b"], [], "is a path, not a file name"),
    ([], ["../outside/data"], "is a path, not a file name"),
    ([], ["thesis.docx"], "is not the name of a shard file"),
    ([".sample-lock"], [], "one of `sample`'s own state files"),
    (["x\n.tfrecord"], [], "control characters"),
])
def test_journal_entries_are_bare_file_names(tmp_path, capsys, own_output, moves, deletes,
                                             expect):
    marked_staging(own_output)
    (own_output / ".sample-commit.json").write_text(journal(moves=moves, deletes=deletes))
    _refused(tmp_path, capsys, own_output, expect)


@pytest.mark.parametrize("marker", [None, b""])
def test_an_empty_staging_folder_of_a_run_killed_as_it_began_is_removed(tmp_path, capsys,
                                                                         marker):
    """kill -9 between the staging folder's mkdir and its marker leaves it empty, and
    between creating the marker and its one write leaves the marker empty: the next run
    removes it (nothing can be lost) and it does not make the folder someone else's;
    the marker is one write, so no temporary marker file can be left in it."""
    out = tmp_path / "out"
    out.mkdir()
    (out / ownership.staging_name(RUN)).mkdir()
    if marker is not None:
        (out / ownership.staging_name(RUN) / ownership.STAGING_MARKER).write_bytes(marker)
    code, text, err = run(capsys, "--graph", TOPK, "--spec", TOPK_SPEC, "--output", out)
    assert code == 0, err
    assert not any(n.startswith(ownership.STAGING_PREFIX) for n in os.listdir(out))
    made = ownership.make_staging(str(tmp_path), ownership.new_run_id())
    assert os.listdir(made) == [ownership.STAGING_MARKER]


@pytest.mark.parametrize("content", [b"x", b"{}"])
def test_a_staging_folder_with_a_marker_of_another_content_is_left_alone(tmp_path, capsys,
                                                                         content):
    """Only an empty marker is a run killed while writing it: any other content is not
    this tool's marker, and the folder stays (and makes the output someone else's)."""
    out = tmp_path / "out"
    out.mkdir()
    (out / ownership.staging_name(RUN)).mkdir()
    (out / ownership.staging_name(RUN) / ownership.STAGING_MARKER).write_bytes(content)
    assert not ownership.is_unfinished_staging(str(out), ownership.staging_name(RUN))
    assert ownership.survey(str(out)).unmarked == (ownership.staging_name(RUN),)


@pytest.mark.parametrize("run_id", ["../outside", "/tmp", "", 7, "20240101-000000-0123abcd/.."])
def test_the_journals_run_is_a_run_id(tmp_path, capsys, own_output, run_id):
    (own_output / ".sample-commit.json").write_text(journal(run=run_id))
    _refused(tmp_path, capsys, own_output, "is not a run id")


def test_a_journal_without_its_marked_staging_folder_is_refused(tmp_path, capsys, own_output):
    (own_output / ownership.staging_name(RUN)).mkdir()  # a folder of that name, unmarked
    (own_output / ".sample-commit.json").write_text(
        journal(moves=["samples-00000-of-00004.tfrecord"]))
    _refused(tmp_path, capsys, own_output, "missing or not marked as that run's")


def test_a_stale_journal_of_the_old_format_from_another_directory(tmp_path, capsys,
                                                                  monkeypatch):
    """Issue 36: journals held paths as typed (relative to where the run started), so a
    stale one replayed from another working directory deleted a shard of another folder."""
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    monkeypatch.chdir(tmp_path / "a")
    assert topk(capsys, "out")[0] == 0       # a/out
    monkeypatch.chdir(tmp_path / "b")
    assert topk(capsys, "out")[0] == 0       # b/out
    (tmp_path / "b" / "out" / ".sample-commit.json").write_text(json.dumps({
        "run": "20240101-000000-0123abcd", "moves": [],
        "deletes": ["out/samples-00001-of-00004.tfrecord"]}))  # as the old format held them
    monkeypatch.chdir(tmp_path / "a")
    shutil.move(tmp_path / "b" / "out" / ".sample-commit.json",
                tmp_path / "a" / "out" / ".sample-commit.json")
    _refused(tmp_path, capsys, "out", "not this project's journal format")
    assert (tmp_path / "a" / "out" / "samples-00001-of-00004.tfrecord").exists()
    with pytest.raises(SamplesError, match="stopped while moving"):
        open_samples("out")  # readers refuse it too, until someone looks


def test_a_journal_that_is_a_link_is_refused(tmp_path, capsys, own_output):
    marked_staging(own_output)
    (tmp_path / "outside" / "j.json").write_text(journal())
    (own_output / ".sample-commit.json").symlink_to(tmp_path / "outside" / "j.json")
    _refused(tmp_path, capsys, own_output, "it is not a regular file")


def test_a_checked_journal_is_still_completed(tmp_path, capsys):
    """The rules refuse crafted journals, not real ones: a commit killed after its first
    move is completed by the next run (its journal lists bare names)."""
    out = tmp_path / "out"
    assert topk(capsys, out, "--seed", "1")[0] == 0
    expected = tree(out)
    staging = marked_staging(out)
    for name in os.listdir(out):
        if name.endswith((".tfrecord", ".pbtxt", ".json")) and not name.startswith("."):
            shutil.copy(out / name, staging / name)
    (out / "old-00000-of-00001.tfrecord").write_text("previous run's shard")
    (out / ".sample-commit.json").write_text(journal(
        moves=sorted(n for n in os.listdir(staging) if not n.startswith(".")),
        deletes=["old-00000-of-00001.tfrecord"]))
    code, text, err = run(capsys, "--graph", TOPK, "--spec", TOPK_SPEC, "--output", out,
                          "--seed", "1")
    assert code == 0 and f"completing the commit of run {RUN}" in text, err
    assert tree(out) == expected


# ---- the lock is never followed --------------------------------------------------------------

@pytest.mark.parametrize("kind", ["symlink", "hardlink", "dangling", "folder", "fifo",
                                  "garbage"])
def test_a_planted_lock_is_never_written_through(tmp_path, capsys, own_output, kind):
    """Issue 36: `.sample-lock` was opened following symlinks, and a run overwrote the
    file it pointed to."""
    victim = tmp_path / "outside" / "thesis.docx"
    lock = own_output / ".sample-lock"
    if kind == "symlink":
        lock.symlink_to(victim)
    elif kind == "hardlink":
        os.link(victim, lock)
    elif kind == "dangling":
        lock.symlink_to(tmp_path / "outside" / "created-by-sample")
    elif kind == "folder":
        lock.mkdir()
    elif kind == "garbage":  # a file of that name that no run wrote: never taken over
        lock.write_text("my own notes")
    else:
        os.mkfifo(lock)
    before = tree(tmp_path)
    code, _, err = topk(capsys, own_output)
    line = one_error_line(err)
    assert code == 2 and "not a lock `sample` wrote" in line, line
    assert tree(tmp_path) == before
    assert victim.read_text() == "years of work"
    assert not (tmp_path / "outside" / "created-by-sample").exists()


# ---- the previous output is what its report lists ---------------------------------------------

@pytest.mark.parametrize("listed, expect", [
    (["../outside/thesis.docx"], "is a path, not a file name"),
    (["thesis.docx"], "is not the name of a shard file"),
    ("samples-00000-of-00004.tfrecord", "'output_shards' is not a list"),
])
def test_a_crafted_report_deletes_nothing(tmp_path, capsys, own_output, listed, expect):
    report = json.loads((own_output / "sample_report.json").read_text())
    report["output_shards"] = listed
    (own_output / "sample_report.json").write_text(json.dumps(report))
    (own_output / "thesis.docx").write_text("mine")
    before = tree(tmp_path)
    code, _, err = topk(capsys, own_output)
    line = one_error_line(err)
    assert code == 2 and "is not a report `sample` wrote" in line and expect in line
    assert tree(tmp_path) == before
    # --overwrite: written into, and what the report lists is never deleted.
    assert topk(capsys, own_output, "--overwrite")[0] == 0
    assert (own_output / "thesis.docx").read_text() == "mine"
    assert (tmp_path / "outside" / "thesis.docx").exists()


def test_a_report_naming_a_path_is_refused_by_readers(tmp_path, capsys, own_output):
    report = json.loads((own_output / "sample_report.json").read_text())
    report["output_shards"] = [".."]
    (own_output / "sample_report.json").write_text(json.dumps(report))
    with pytest.raises(SamplesError, match=r"output_shards: '\.\.' is a path"):
        open_samples(str(own_output))


def test_statistics_are_replaced_but_a_users_files_beside_them_stay(tmp_path, capsys,
                                                                    own_output):
    from pipelines import sample_stats

    assert sample_stats.main([str(own_output), "--workers", "1", "--quiet"]) == 0
    capsys.readouterr()
    stats = own_output / "stats"
    assert sorted(os.listdir(stats)) == ["index.html", "stats.json"]
    (stats / "my-notes.txt").write_text("mine")
    (stats / "vs-other").mkdir()
    shutil.copy(stats / "stats.json", stats / "vs-other" / "stats.json")
    (stats / "vs-other" / "index.html").write_text("<html>my own page</html>")
    assert topk(capsys, own_output, "--seed", "3")[0] == 0
    # sample-stats' files are gone; a user's, named like them or not, stay
    assert sorted(os.listdir(stats)) == ["my-notes.txt", "vs-other"]
    assert os.listdir(stats / "vs-other") == ["index.html"]


def test_statistics_folder_that_is_a_link_is_not_followed(tmp_path, capsys, own_output):
    (tmp_path / "outside" / "stats.json").write_text("the user's own")
    (own_output / "stats").symlink_to(tmp_path / "outside")
    assert topk(capsys, own_output, "--seed", "3")[0] == 0
    assert (tmp_path / "outside" / "stats.json").read_text() == "the user's own"


# ---- gs:// ---------------------------------------------------------------------------------

def _objects(bucket, prefix=""):
    return {b.name: b.download_as_bytes() for b in bucket.list_blobs(prefix=prefix)}


def test_gcs_journal_naming_another_bucket_or_path_touches_nothing(gcs, capsys):
    graph = upload_folder(gcs, TOPK, "own")
    out = f"gs://{BUCKET}/own-out"
    assert run(capsys, "--graph", graph, "--spec", TOPK_SPEC, "--output", out,
               "--quiet")[0] == 0
    gcs.blob("elsewhere/keep.tfrecord").upload_from_string("keep")
    gcs.blob(f"own-out/{ownership.staging_name(RUN)}/{ownership.STAGING_MARKER}"
             ).upload_from_string(json.dumps({"format": "graph-sampler staging folder",
                                              "run": RUN}))
    for moves, deletes in ((["gs://other-bucket/x.tfrecord"], []),
                           ([], ["../elsewhere/keep.tfrecord"])):
        gcs.blob("own-out/.sample-commit.json").upload_from_string(
            journal(moves=moves, deletes=deletes))
        before = _objects(gcs)
        code, _, err = run(capsys, "--graph", graph, "--spec", TOPK_SPEC, "--output", out,
                           "--quiet")
        line = one_error_line(err)
        assert code == 2 and "is a path, not a file name" in line
        assert _objects(gcs) == before


def test_gcs_unmarked_leftovers_stay_marked_ones_go(gcs, capsys):
    graph = upload_folder(gcs, TOPK, "own2")
    out = f"gs://{BUCKET}/own2-out"
    gcs.blob("own2-out/.sample-staging-whatever/notes.txt").upload_from_string("mine")
    gcs.blob("own2-out/thesis.tmp-v2.docx").upload_from_string("draft")
    before = _objects(gcs, "own2-out/")
    code, _, err = run(capsys, "--graph", graph, "--spec", TOPK_SPEC, "--output", out,
                       "--quiet")
    assert code == 2 and "not empty" in err and _objects(gcs, "own2-out/") == before
    assert run(capsys, "--graph", graph, "--spec", TOPK_SPEC, "--output", out, "--quiet",
               "--overwrite")[0] == 0
    marker = f"own2-out/{ownership.staging_name(RUN)}/{ownership.STAGING_MARKER}"
    gcs.blob(marker).upload_from_string(json.dumps(
        {"format": "graph-sampler staging folder", "run": RUN}))
    gcs.blob(f"own2-out/{ownership.staging_name(RUN)}/samples-00000-of-00004.tfrecord"
             ).upload_from_string("half")
    assert run(capsys, "--graph", graph, "--spec", TOPK_SPEC, "--output", out,
               "--quiet")[0] == 0
    after = _objects(gcs, "own2-out/")
    assert {k: v for k, v in after.items() if k in before} == before
    assert not [k for k in after if ownership.staging_name(RUN) in k]
    assert commit.LOCK_FILE not in " ".join(after)
