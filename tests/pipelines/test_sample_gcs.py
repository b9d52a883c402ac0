"""Issue 11's rules with the graph and the output on gs:// (a real GCS emulator).

On an object store a commit is copy-then-delete per file: a final name appears only
once its object is complete, and a failed run leaves no final name behind."""
import os

from pipelines import sample
from tests.conftest import TESTDATA
from tests.gcs_emulator import BUCKET, gcs, upload_folder  # noqa: F401  (a fixture)

TOPK = os.path.join(TESTDATA, "topk")
TOPK_SPEC = os.path.join(TOPK, "sampling_spec.pbtxt")


def names(bucket, prefix):
    return sorted(b.name[len(prefix) + 1:] for b in bucket.list_blobs(prefix=prefix + "/"))


def contents(bucket, prefix):
    return {b.name: b.download_as_bytes() for b in bucket.list_blobs(prefix=prefix + "/")
            if not b.name.endswith("sample_report.json")}


def run(capsys, *args):
    code = sample.main([str(a) for a in args])
    return code, capsys.readouterr().err


def test_commit_rerun_and_failure_on_gcs(gcs, capsys):
    graph = upload_folder(gcs, TOPK, "topk")
    out = f"gs://{BUCKET}/runs/topk"
    args = ["--graph", graph, "--spec", TOPK_SPEC, "--quiet"]
    code, err = run(capsys, *args, "--output", f"{out}/p@3")
    assert code == 0, err
    assert names(gcs, "runs/topk") == ["graph_schema.pbtxt"] + [
        f"p-0000{i}-of-00003.tfrecord" for i in range(3)] + ["sample_report.json"]
    # A rerun with fewer shards replaces the whole output.
    code, err = run(capsys, *args, "--output", f"{out}/p@2", "--seed", "7")
    assert code == 0, err
    assert names(gcs, "runs/topk") == ["graph_schema.pbtxt", "p-00000-of-00002.tfrecord",
                                       "p-00001-of-00002.tfrecord", "sample_report.json"]
    before = contents(gcs, "runs/topk")
    # A run that fails in the pipeline (a duplicate node id) leaves it byte for byte.
    users = gcs.blob("topk/user.csv").download_as_text()
    gcs.blob("topk/user.csv").upload_from_string(users + "u1,99\n")
    code, err = run(capsys, *args, "--output", f"{out}/p@2")
    assert code == 2 and "duplicate node id 'u1'" in err and len(err.strip().splitlines()) == 1
    assert contents(gcs, "runs/topk") == before
    assert names(gcs, "runs/topk") == sorted(before_name.split("/", 2)[2] for before_name in
                                             before) + ["sample_report.json"]


def test_output_inside_the_graph_folder_is_refused_on_gcs(gcs, capsys):
    graph = upload_folder(gcs, TOPK, "topk2")
    code, err = run(capsys, "--graph", graph, "--spec", TOPK_SPEC, "--quiet",
                    "--output", f"gs://{BUCKET}/topk2/out/")
    assert code == 2 and "lies inside the graph's folder gs://graphs/topk2" in err
    assert not [b for b in gcs.list_blobs(prefix="topk2/out")]


def test_foreign_prefix_needs_overwrite_on_gcs(gcs, capsys):
    graph = upload_folder(gcs, TOPK, "topk3")
    gcs.blob("other/notes.txt").upload_from_string("mine")
    code, err = run(capsys, "--graph", graph, "--spec", TOPK_SPEC, "--quiet",
                    "--output", f"gs://{BUCKET}/other")
    assert code == 2 and "not empty (notes.txt)" in err
    code, err = run(capsys, "--graph", graph, "--spec", TOPK_SPEC, "--quiet",
                    "--output", f"gs://{BUCKET}/other", "--overwrite")
    assert code == 0, err
    assert "notes.txt" in names(gcs, "other") and "sample_report.json" in names(gcs, "other")
