"""`sample --runner DataflowRunner --dry_run=True`, offline, with the graph on a GCS
emulator: the complete job is built, its description written where one line says,
nothing submitted and nothing written to the output.

Each run is a subprocess, so the test also sees which modules the launcher imported
(TensorFlow must not be one). Beam's option validation needs a well-formed project
id, so the project is `test-project` rather than `p`.
"""
import base64
import json
import os
import re
import subprocess
import sys

from apache_beam.coders.coders import deserialize_coder

from tests.conftest import REPO_ROOT
from tests.gcs_emulator import BUCKET, gcs  # noqa: F401  (a fixture)

DEMO = os.path.join(REPO_ROOT, "examples", "mag_tiny")
SPEC = os.path.join(DEMO, "sampling_spec.pbtxt")
OPS = ["seed->paper", "paper->author", "author->paper", "author->institution",
       "paper->field_of_study"]

_LAUNCH = """
import json, sys
from pipelines import sample
code = sample.main(sys.argv[1:])
print(json.dumps({"code": code, "tensorflow": "tensorflow" in sys.modules}))
"""


def _upload(bucket, prefix, split_papers=False):
    for name in os.listdir(DEMO):
        path = os.path.join(DEMO, name)
        if name == "graph_schema.pbtxt" and split_papers:
            text = open(path, encoding="utf-8").read().replace('"paper.csv"', '"paper_*.csv"')
            bucket.blob(f"{prefix}/{name}").upload_from_string(text)
        elif name == "paper.csv" and split_papers:  # the same rows in two files
            header, *rows = open(path, encoding="utf-8").read().splitlines()
            half = len(rows) // 2
            for part, chunk in (("a", rows[:half]), ("b", rows[half:])):
                bucket.blob(f"{prefix}/paper_{part}.csv").upload_from_string(
                    "\n".join([header, *chunk]) + "\n")
        elif name.endswith((".csv", ".pbtxt")):
            bucket.blob(f"{prefix}/{name}").upload_from_filename(path)
    return f"gs://{BUCKET}/{prefix}/graph_schema.pbtxt"


def _dry_run(tmp_path, graph, seeds, *extra):
    out = f"gs://{BUCKET}/runs/out/"
    args = ["--graph", graph, "--spec", SPEC, "--seeds", seeds, "--output", out,
            "--runner", "DataflowRunner", "--dry_run=True", "--no_auth",
            "--project", "test-project", "--region", "us-central1",
            "--temp_location", "gs://bkt/tmp", *extra]
    run = subprocess.run([sys.executable, "-c", _LAUNCH, *args], capture_output=True,
                         text=True, cwd=str(tmp_path), env=dict(os.environ), timeout=600)
    result = json.loads(run.stdout.strip().splitlines()[-1])
    assert result["code"] == 0, run.stderr[-3000:]
    assert "Traceback" not in run.stderr, run.stderr[-3000:]
    lines = [line for line in run.stdout.splitlines() if line.startswith("dry run:")]
    assert len(lines) == 1, run.stdout
    where = re.search(r"written to (\S+);", lines[0])[1]
    with open(where, encoding="utf-8") as f:
        return json.load(f), result, run.stdout


def _coder_name(coders, coder_id):
    spec = coders[coder_id]["spec"]
    if spec["urn"] == "beam:coder:pickled_python:v1":
        return type(deserialize_coder(base64.b64decode(spec["payload"]))).__name__
    inner = ",".join(_coder_name(coders, c) for c in coders[coder_id].get("componentCoderIds",
                                                                         []))
    return f"{spec['urn']}({inner})"


def test_a_dataflow_dry_run_builds_the_whole_job_offline(gcs, tmp_path):
    graph = _upload(gcs, "mag")
    # Chunks of 2 edges: most nodes are hubs, so the hub stages are built and coded too.
    job, result, stdout = _dry_run(tmp_path, graph, f"gs://{BUCKET}/mag/seeds.csv",
                                   "--dataflow_job_file", str(tmp_path / "job.json"),
                                   "--chunk-edges", "2")
    assert os.path.exists(tmp_path / "job.json")
    assert not result["tensorflow"]
    # Nothing was written to the output: no lock, no staging folder, no report.
    assert not list(gcs.list_blobs(prefix="runs/"))
    components = job["pipeline"]["components"]
    names = {t["uniqueName"] for t in components["transforms"].values()}
    for op in OPS:
        assert {f"Sample/Hop/{op}/Join", f"Sample/Hop/{op}/Sample",
                f"Sample/Hop/{op}/Edges", f"Sample/Hop/{op}/Hubs/Chunks/Sample",
                f"Sample/Hop/{op}/Hubs/Merge"} <= names, op
    assert {"Sample/Seeds/Check", "Sample/Nodes/paper/Lookup", "Sample/Assemble/Write",
            "Sample/Report/Merge"} <= names
    # Every PCollection's coder is the project's element coder (or Beam's own for
    # bytes and keys): nothing falls back to FastPrimitivesCoder's pickling.
    coders = components["coders"]
    used = {_coder_name(coders, p["coderId"]) for p in components["pcollections"].values()}
    assert not [c for c in used if "FastPrimitives" in c or "Pickle" in c], used
    assert any("ElementCoder" in c for c in used)
    # The project's code is staged: setup.py was added as --setup_file, built into the
    # workflow tarball the workers install.
    assert job["options"]["setup_file"] == os.path.join(REPO_ROOT, "setup.py")
    staged = [base64.b64decode(d.get("rolePayload", "")) for env in
              components["environments"].values() for d in env.get("dependencies", [])]
    assert any(b"workflow.tar.gz" in s for s in staged), staged
    # The workers install the base requirements only: no TensorFlow, no plotting.
    requirements = job["worker_requirements"]
    assert any(r.startswith("apache-beam") for r in requirements), requirements
    assert not [r for r in requirements
                if r.split("[")[0].split("=")[0].split(">")[0].split("<")[0].strip() in
                {"tensorflow", "tensorflow-gnn", "tf-keras", "matplotlib", "pandas",
                 "torch", "torch-geometric", "torch_geometric"}], requirements
    assert "the workers install the staged package" in stdout


def test_the_step_count_does_not_grow_with_seeds_or_files(gcs, tmp_path):
    one_file = _upload(gcs, "one")
    two_files = _upload(gcs, "two", split_papers=True)
    gcs.blob("two/seeds-a.csv").upload_from_string("id\np00\np01\n")
    gcs.blob("two/seeds-b.csv").upload_from_string("id\np02\n")
    small, _, _ = _dry_run(tmp_path, one_file, f"gs://{BUCKET}/one/seeds.csv")
    large, _, _ = _dry_run(tmp_path, two_files, f"gs://{BUCKET}/two/seeds-*.csv")
    assert small["leaf_steps"] == large["leaf_steps"] > 50


def test_an_image_or_setup_file_of_the_users_is_left_alone(gcs, tmp_path):
    graph = _upload(gcs, "img")
    job, _, _ = _dry_run(tmp_path, graph, f"gs://{BUCKET}/img/seeds.csv",
                         "--sdk_container_image", "example.com/sampler:1")
    assert "setup_file" not in job["options"]


def test_the_job_description_goes_to_a_file_of_its_own(gcs, tmp_path, monkeypatch):
    """Issue 36: without --dataflow_job_file the description went to
    /tmp/<job name>.dataflow-job.json: a name anyone could plant a link at, and a job
    name holding '/' a path anywhere. It is a new file now (mkstemp), the name a label."""
    graph = _upload(gcs, "own")
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    monkeypatch.setenv("TMPDIR", str(temporary))
    victim = tmp_path / "victim.txt"
    victim.write_text("the user's")
    (temporary / "myjob.dataflow-job.json").symlink_to(victim)  # the old, predictable name
    job, _, stdout = _dry_run(tmp_path, graph, f"gs://{BUCKET}/own/seeds.csv",
                              "--job_name", "myjob")
    assert victim.read_text() == "the user's"
    where = re.search(r"written to (\S+);", stdout)[1]
    assert os.path.dirname(where) == str(temporary) and where.endswith(".dataflow-job.json")
    assert os.path.basename(where).startswith("myjob.") and not os.path.islink(where)
    assert os.stat(where).st_mode & 0o777 == 0o600 and job["leaf_steps"] > 0
