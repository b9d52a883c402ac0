"""`sample` never loses a user's data (issue 11), run as a user would run it.

Each case asserts the exit status, the one line printed, and the files afterwards.
Killing and interrupting run the CLI in a child process; the rest call `main`.
"""
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time

import pytest

from pipelines import sample
from sampler.output import commit, ownership
from sampler.output.files import parse_output
from sampler.output.folder import SamplesError, open_samples
from tests.conftest import REPO_ROOT, TESTDATA, default_sigint

TOPK = os.path.join(TESTDATA, "topk")
TOPK_SPEC = os.path.join(TOPK, "sampling_spec.pbtxt")
DEMO = os.path.join(REPO_ROOT, "examples", "mag_tiny")
DEMO_SPEC = os.path.join(DEMO, "sampling_spec.pbtxt")


def run(capsys, *args):
    """(exit status, stdout, stderr) of `sample ARGS` run in this process."""
    code = sample.main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


def topk(capsys, output, *extra):
    return run(capsys, "--graph", TOPK, "--spec", TOPK_SPEC, "--output", output, "--quiet",
               *extra)


def tree(folder) -> dict:
    """Every file under `folder` (relative path -> md5); a run report without its wall
    time, the one thing two runs of the same job write differently."""
    found = {}
    for root, _, files in os.walk(folder):
        for name in files:
            path = os.path.join(root, name)
            with open(path, "rb") as f:
                data = f.read()
            if name == "sample_report.json":
                report = json.loads(data)
                report.pop("wall_time_s", None)
                data = json.dumps(report, sort_keys=True).encode()
            found[os.path.relpath(path, folder)] = hashlib.md5(data).hexdigest()
    return found


def one_error_line(err: str, starting: str = "sample: error: ") -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(starting), err
    return lines[0]


# ---- what --output means ----------------------------------------------------------------

@pytest.mark.parametrize("spelling", ["out", "out/"])
def test_output_is_a_folder_whether_or_not_it_exists(tmp_path, capsys, monkeypatch, spelling):
    monkeypatch.chdir(tmp_path)
    assert topk(capsys, spelling)[0] == 0
    first = sorted(os.listdir("out"))
    assert first == ["graph_schema.pbtxt", "sample_report.json"] + [
        f"samples-0000{i}-of-00004.tfrecord" for i in range(4)]
    assert sorted(os.listdir(".")) == ["out"]  # nothing beside it
    assert topk(capsys, spelling)[0] == 0  # now it exists: the same meaning
    assert sorted(os.listdir("out")) == first and sorted(os.listdir(".")) == ["out"]


@pytest.mark.parametrize("output, names", [
    ("o/part@3", [f"part-0000{i}-of-00003.tfrecord" for i in range(3)]),
    ("o/part@2.tfrecords", [f"part-0000{i}-of-00002.tfrecords" for i in range(2)]),
    ("o/part.tfrecords@2", [f"part.tfrecords-0000{i}-of-00002" for i in range(2)]),
    ("o/part.tfrecords-?????-of-00002", [f"part.tfrecords-0000{i}-of-00002" for i in range(2)]),
    ("o/part-?????-of-00002.tfrecord", [f"part-0000{i}-of-00002.tfrecord" for i in range(2)]),
    ("o/part@1", ["part-00000-of-00001.tfrecord"]),
    ("o/all.tfrecord", ["all.tfrecord"]),
])
def test_file_patterns(tmp_path, capsys, output, names):
    code, _, err = topk(capsys, tmp_path / output)
    assert code == 0, err
    assert sorted(os.listdir(tmp_path / "o")) == sorted(
        names + ["graph_schema.pbtxt", "sample_report.json"])
    samples = open_samples(str(tmp_path / "o"))  # readers find every naming
    assert [os.path.basename(f) for f in samples.files] == names


def test_parse_output_ignores_the_disk(tmp_path):
    (tmp_path / "x.tfrecord").mkdir()  # a folder with a file's name
    assert parse_output(str(tmp_path / "x.tfrecord")).single_file
    assert parse_output(str(tmp_path / "x")).folder == str(tmp_path / "x")


@pytest.mark.parametrize("output, message", [
    ("o/p@0", "the shard count must be > 0"),
    ("o/@3", "need a name before the shard count"),
])
def test_bad_patterns(tmp_path, capsys, output, message):
    code, _, err = topk(capsys, tmp_path / output)
    assert code == 2 and message in one_error_line(err)
    assert not (tmp_path / "o").exists()


# ---- the output may not touch the inputs --------------------------------------------------

@pytest.fixture
def graph(tmp_path):
    """A copy of the TOP_K graph, with an outside table and seeds file."""
    shutil.copytree(TOPK, tmp_path / "g")
    return tmp_path / "g"


@pytest.mark.parametrize("where, relation", [
    ("g", "is the graph's folder"),
    ("g/out", "lies inside the graph's folder"),
    (".", "contains the graph's folder"),
])
def test_output_around_the_graph_is_refused(tmp_path, capsys, graph, where, relation):
    before = tree(tmp_path)
    code, out, err = run(capsys, "--graph", graph, "--spec", graph / "sampling_spec.pbtxt",
                         "--output", f"{tmp_path / where}/", "--quiet")
    line = one_error_line(err)
    assert code == 2 and relation in line and str(graph) in line
    assert tree(tmp_path) == before  # nothing written, nothing created


def test_output_holding_an_input_file_is_refused(tmp_path, capsys, graph):
    (tmp_path / "in").mkdir()
    shutil.copy(graph / "seeds.csv", tmp_path / "in" / "seeds.csv")
    code, _, err = run(capsys, "--graph", graph, "--spec", graph / "sampling_spec.pbtxt",
                       "--seeds", tmp_path / "in" / "seeds.csv", "--output", tmp_path / "in",
                       "--quiet")
    assert code == 2 and "holds an input file, the seeds" in one_error_line(err)
    assert os.listdir(tmp_path / "in") == ["seeds.csv"]


def test_foreign_folder_needs_overwrite_and_keeps_foreign_files(tmp_path, capsys):
    out = tmp_path / "out"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    code, _, err = topk(capsys, out)
    assert code == 2 and "not empty (notes.txt) and has no sample_report.json" in \
        one_error_line(err)
    assert os.listdir(out) == ["notes.txt"]
    assert topk(capsys, out, "--overwrite")[0] == 0
    assert (out / "notes.txt").read_text() == "mine" and (out / "sample_report.json").exists()
    assert topk(capsys, out)[0] == 0  # its own output now: a rerun needs no flag


# ---- commits: a rerun replaces, a failure keeps -------------------------------------------

def test_rerun_replaces_the_previous_output_whole(tmp_path, capsys):
    assert topk(capsys, tmp_path / "o" / "p@4")[0] == 0
    assert topk(capsys, tmp_path / "o" / "p@2")[0] == 0
    assert sorted(os.listdir(tmp_path / "o")) == [
        "graph_schema.pbtxt", "p-00000-of-00002.tfrecord", "p-00001-of-00002.tfrecord",
        "sample_report.json"]
    report = json.loads((tmp_path / "o" / "sample_report.json").read_text())
    assert report["output_shards"] == ["p-00000-of-00002.tfrecord", "p-00001-of-00002.tfrecord"]


def test_a_failed_run_keeps_the_previous_output_byte_for_byte(tmp_path, capsys, graph):
    out = tmp_path / "out"
    args = ["--graph", graph, "--spec", graph / "sampling_spec.pbtxt", "--output", out,
            "--quiet"]
    assert run(capsys, *args)[0] == 0
    before = tree(out)
    with open(graph / "user.csv", "a") as f:
        f.write("u1,77\n")  # a duplicate id: found only while the pipeline runs
    code, _, err = run(capsys, *args)
    assert code == 2 and "duplicate node id 'u1'" in one_error_line(err)
    assert tree(out) == before  # no staging folder, lock or temporary file left either


def test_worker_errors_are_one_line_in_multi_process_mode(tmp_path, capsys, graph):
    with open(graph / "user.csv", "a") as f:
        f.write("u1,77\n")
    code, _, err = run(capsys, "--graph", graph, "--spec", graph / "sampling_spec.pbtxt",
                       "--output", tmp_path / "out", "--quiet",
                       "--direct_running_mode=multi_processing", "--direct_num_workers=2")
    assert code == 2 and "duplicate node id 'u1'" in one_error_line(err)
    assert "while running" not in err


def test_an_interrupted_commit_is_completed_by_the_next_run(tmp_path, capsys, monkeypatch):
    out = tmp_path / "out"
    assert topk(capsys, out, "--seed", "1")[0] == 0
    expected = tree(out)
    assert topk(capsys, out, "--seed", "2")[0] == 0
    real_rename, moved = commit.paths.rename, []

    def crash_after_two(source, destination):
        committing = ownership.STAGING_PREFIX in source and ownership.STAGING_PREFIX not in destination
        if committing and len(moved) == 2:
            raise KeyboardInterrupt  # as if killed between two renames of the commit
        moved.extend([destination] if committing else [])
        real_rename(source, destination)

    monkeypatch.setattr(commit.paths, "rename", crash_after_two)
    assert topk(capsys, out, "--seed", "1")[0] == 130
    monkeypatch.setattr(commit.paths, "rename", real_rename)
    assert (out / ownership.JOURNAL_FILE).exists()
    with pytest.raises(SamplesError, match="stopped while moving its output into place"):
        open_samples(str(out))
    # The next run completes that commit first, then writes its own.
    code, out_text, _ = run(capsys, "--graph", TOPK, "--spec", TOPK_SPEC, "--output", out,
                            "--seed", "1")
    assert code == 0 and "completing the commit of run" in out_text
    assert tree(out) == expected


# ---- killed and interrupted runs ---------------------------------------------------------

def _spawn(*args):
    return subprocess.Popen([sys.executable, "-m", "pipelines.sample", *map(str, args)],
                            cwd=REPO_ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True, preexec_fn=default_sigint)


def _wait_for(predicate, process, timeout=60.0):
    deadline = time.monotonic() + timeout
    while not predicate():
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.005)


def _staged_shards(out):
    return [f for d in os.listdir(out) if d.startswith(ownership.STAGING_PREFIX)
            for f in os.listdir(out / d) if ".tfrecord" in f and ".tmp-" not in f]


@pytest.fixture(scope="module")
def demo_runs(tmp_path_factory):
    """The demo graph's output folder for two seeds, each from an uninterrupted run."""
    root = tmp_path_factory.mktemp("demo")
    for seed in (1, 2):
        assert sample.main(["--graph", DEMO, "--spec", DEMO_SPEC, "--output",
                            str(root / f"seed{seed}"), "--seed", str(seed), "--quiet"]) == 0
    return {seed: root / f"seed{seed}" for seed in (1, 2)}


@pytest.mark.parametrize("moment", ["locked", "first shard staged"])
def test_kill_9_keeps_the_previous_output_and_a_rerun_gives_the_same_bytes(
        tmp_path, demo_runs, moment):
    out = tmp_path / "out"
    shutil.copytree(demo_runs[1], out)  # the previous output
    previous = tree(out)
    args = ["--graph", DEMO, "--spec", DEMO_SPEC, "--output", out, "--quiet"]
    process = _spawn(*args, "--seed", 2)
    if moment == "locked":
        _wait_for(lambda: (out / commit.LOCK_FILE).exists(), process)
    else:
        _wait_for(lambda: _staged_shards(out), process)
    os.killpg(process.pid, signal.SIGKILL)
    process.wait()
    assert commit.LOCK_FILE in os.listdir(out)  # killed: nothing could clean up
    assert {k: v for k, v in tree(out).items() if k in previous} == previous
    assert open_samples(str(out)).files  # still a readable output
    rerun = _spawn(*args, "--seed", 2)
    assert rerun.wait(120) == 0, rerun.communicate()
    assert tree(out) == tree(demo_runs[2])  # the bytes of an uninterrupted run, no leftovers


def test_ctrl_c_prints_one_line_exits_130_and_keeps_the_output(tmp_path, demo_runs):
    out = tmp_path / "out"
    shutil.copytree(demo_runs[1], out)
    args = ["--graph", DEMO, "--spec", DEMO_SPEC, "--output", out, "--quiet"]
    process = _spawn(*args, "--seed", 2)
    _wait_for(lambda: (out / commit.LOCK_FILE).exists(), process)
    os.killpg(process.pid, signal.SIGINT)
    _, err = process.communicate(timeout=60)
    assert process.returncode == 130, err
    assert err.strip().splitlines()[-1] == "sample: interrupted; previous output kept"
    assert "Traceback" not in err
    assert tree(out) == tree(demo_runs[1])  # staging dropped, lock released


# ---- environment problems -------------------------------------------------------------------

@pytest.mark.parametrize("where", ["afile/out", "/proc/no-such-place/out"])
def test_unwritable_output_is_found_before_the_pipeline(tmp_path, capsys, where):
    (tmp_path / "afile").write_text("")
    code, _, err = topk(capsys, tmp_path / where)
    assert code == 2 and "cannot write there" in one_error_line(err)


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders")
def test_read_only_output_folder(tmp_path, capsys):
    out = tmp_path / "out"
    out.mkdir()
    out.chmod(0o555)
    code, _, err = topk(capsys, out)
    assert code == 2 and "cannot write there" in one_error_line(err)


# ---- flags ---------------------------------------------------------------------------------

def test_unknown_flag_is_an_error_with_the_closest_known(tmp_path, capsys):
    code, _, err = topk(capsys, tmp_path / "out", "--seed-file", "x.csv")
    line = one_error_line(err)
    assert code == 2 and "unknown flag --seed-file" in line and "did you mean --seed" in line
    assert not (tmp_path / "out").exists()


def test_beam_pipeline_options_pass(capsys):
    code, out, err = run(capsys, "--graph", TOPK, "--spec", TOPK_SPEC, "--dry-run",
                         "--project", "p", "--temp_location", "gs://b/tmp", "--region", "r",
                         "--direct_num_workers", "2", "--no_pipeline_type_check")
    assert code == 0, err


def test_tfgnn_flag_names_and_data_path(tmp_path, capsys):
    # The schema alone in one folder, its tables in another (TF-GNN's --data_path).
    (tmp_path / "schema").mkdir()
    shutil.copy(os.path.join(TOPK, "graph_schema.pbtxt"), tmp_path / "schema")
    shutil.copytree(TOPK, tmp_path / "tables")
    os.remove(tmp_path / "tables" / "graph_schema.pbtxt")
    code, _, err = run(capsys, "--graph_schema", tmp_path / "schema" / "graph_schema.pbtxt",
                       "--sampling_spec", TOPK_SPEC, "--data_path", tmp_path / "tables",
                       "--input_seeds", os.path.join(TOPK, "seeds.csv"),
                       "--output_samples", tmp_path / "out" / "s.tfrecords@2", "--quiet")
    assert code == 0, err
    reference = tmp_path / "reference"
    assert topk(capsys, reference / "s.tfrecords@2", "--seeds",
                os.path.join(TOPK, "seeds.csv"))[0] == 0
    assert tree(tmp_path / "out") == tree(reference)


def test_missing_strategy_warns_in_dry_run_and_run(tmp_path, capsys):
    spec = tmp_path / "spec.pbtxt"
    spec.write_text(open(TOPK_SPEC).read().replace("strategy: TOP_K", "", 1))
    code, _, err = run(capsys, "--graph", TOPK, "--spec", spec, "--dry-run")
    assert code == 0 and "sample: warning:" in err and "op 'bought' names no strategy" in err
    code, _, err = run(capsys, "--graph", TOPK, "--spec", spec, "--output", tmp_path / "o",
                       "--quiet")
    assert code == 0 and "op 'bought' names no strategy" in err


# ---- seeds ---------------------------------------------------------------------------------

def test_seeds_as_shards_and_globs(tmp_path, capsys):
    for i, ids in enumerate((["u1", "u2"], ["u3"])):
        (tmp_path / f"s-0000{i}-of-00002.csv").write_text("id\n" + "\n".join(ids) + "\n")
    results = []
    for pattern in ("s@2.csv", "s-*.csv"):
        out = tmp_path / f"out{len(results)}"
        code, _, err = topk(capsys, out, "--seeds", tmp_path / pattern)
        assert code == 0, err
        results.append(json.loads((out / "sample_report.json").read_text())["seeds_read"])
    assert results == [3, 3]


@pytest.mark.parametrize("content, message", [
    ("", "line 1: empty file, expected a header row"),
    ("id\n", "no seed rows"),
])
def test_seeds_without_rows_are_an_error_before_anything_runs(tmp_path, capsys, content,
                                                              message):
    seeds = tmp_path / "seeds.csv"
    seeds.write_text(content)
    code, _, err = topk(capsys, tmp_path / "out", "--seeds", seeds)
    assert code == 2 and message in one_error_line(err)
    assert not (tmp_path / "out").exists()


def test_all_seeds_unknown_writes_nothing_and_exits_1(tmp_path, capsys):
    out = tmp_path / "out"
    assert topk(capsys, out)[0] == 0
    before = tree(out)
    seeds = tmp_path / "seeds.txt"
    seeds.write_text("nobody\nnot_me\n")
    code, text, err = run(capsys, "--graph", TOPK, "--spec", TOPK_SPEC, "--seeds", seeds,
                          "--output", out)
    assert code == 1
    assert "seeds missing from the graph: 2" in text  # the report, printed
    last = err.strip().splitlines()[-1]  # after the progress lines
    assert last.startswith("sample: none of the 2 seeds is a node of node set 'user'")
    assert "Traceback" not in err
    assert tree(out) == before


def test_some_seeds_unknown_are_listed_and_the_run_succeeds(tmp_path, capsys):
    seeds = tmp_path / "seeds.txt"
    seeds.write_text("u1\nnobody\n")
    assert topk(capsys, tmp_path / "out", "--seeds", seeds)[0] == 0
    report = json.loads((tmp_path / "out" / "sample_report.json").read_text())
    assert report["missing_seed_ids"] == ["nobody"] and report["subgraphs_written"] == 1


# ---- the report names what it counts -----------------------------------------------------

def test_report_lists_dropped_edges_and_keeps_op_order(tmp_path, capsys, graph):
    with open(graph / "bought.csv", "a") as f:
        f.write("u1,i99,9.0,1\n")  # the heaviest edge of u1, to an item that is not there
    code, _, err = run(capsys, "--graph", graph, "--spec", graph / "sampling_spec.pbtxt",
                       "--seeds", graph / "seeds.csv", "--output", tmp_path / "out", "--quiet")
    assert code == 0, err
    report = json.loads((tmp_path / "out" / "sample_report.json").read_text())
    assert report["dangling_edges_dropped"] == {"bought": 2}  # u1 is a seed twice
    rows = sum(1 for _ in open(graph / "bought.csv")) - 2  # header, 0-based
    assert report["dangling_edge_examples"] == [
        {"edge_set": "bought", "source": "u1", "target": "i99",
         "file": str(graph / "bought.csv"), "row": rows}]
    assert list(report["edges_sampled_per_op"]) == ["bought", "similar", "tagged"]
    assert list(report["draws_per_op"]) == ["bought", "similar", "tagged"]


# ---- inputs never cause writes -------------------------------------------------------------

def test_nothing_is_written_outside_the_output_folder(tmp_path, capsys):
    """Tables named with `..` and an absolute path are read (as TF-GNN does); the only
    change to the whole tree is the output folder."""
    (tmp_path / "graph").mkdir()
    (tmp_path / "shared").mkdir()
    for name in ("user", "item", "shop", "bought", "similar", "sells", "tagged"):
        shutil.copy(os.path.join(TOPK, f"{name}.csv"), tmp_path / "shared")
    schema = open(os.path.join(TOPK, "graph_schema.pbtxt")).read()
    schema = schema.replace('"user.csv"', '"../shared/user.csv"').replace(
        '"item.csv"', f'"{tmp_path / "shared" / "item.csv"}"')
    for name in ("shop", "bought", "similar", "sells", "tagged"):
        schema = schema.replace(f'"{name}.csv"', f'"../shared/{name}.csv"')
    (tmp_path / "graph" / "graph_schema.pbtxt").write_text(schema)
    shutil.copy(TOPK_SPEC, tmp_path / "graph")
    before = tree(tmp_path)
    code, _, err = run(capsys, "--graph", tmp_path / "graph",
                       "--spec", tmp_path / "graph" / "sampling_spec.pbtxt",
                       "--output", tmp_path / "out", "--quiet")
    assert code == 0, err
    after = tree(tmp_path)
    assert {k: v for k, v in after.items() if not k.startswith("out/")} == before
    assert sorted(k for k in after if k.startswith("out/")) == sorted(
        f"out/{n}" for n in os.listdir(tmp_path / "out"))


def test_a_table_less_seed_set_no_edge_names_has_no_seeds(tmp_path, capsys):
    graph = tmp_path / "g"
    graph.mkdir()
    (graph / "graph_schema.pbtxt").write_text(
        'node_sets { key: "u" value { metadata { filename: "u.csv" } } }\n'
        'node_sets { key: "lonely" value { } }\n'
        'edge_sets { key: "f" value { source: "u" target: "u" '
        'metadata { filename: "f.csv" } } }\n')
    (graph / "u.csv").write_text("id\nx\n")
    (graph / "f.csv").write_text("source,target\nx,x\n")
    (graph / "spec.pbtxt").write_text('seed_op { op_name: "s" node_set_name: "lonely" }\n')
    for engine in ("memory", "beam"):
        code, _, err = run(capsys, "--graph", graph, "--spec", graph / "spec.pbtxt",
                           "--output", tmp_path / "out", "--engine", engine, "--quiet")
        assert code == 2 and "no edge set names it" in one_error_line(err)
