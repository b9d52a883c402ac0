"""`sample-stats` as users run it: one folder, two folders, bad folders, gs://."""
import json
import os
import shutil

import pytest

from pipelines import sample_stats
from sampler.output.stats import sample_stats as numbers_of
from tests.gcs_emulator import BUCKET, gcs, upload_folder  # noqa: F401 (gcs: a fixture)


def test_one_folder_writes_json_and_html_into_out_stats(sampled_outputs, tmp_path, capsys):
    folder = tmp_path / "out"
    shutil.copytree(sampled_outputs["demo"], folder)
    assert sample_stats.main([str(folder), "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "10 records in 4 files" in out and "nodes per subgraph" in out
    assert "draws that hit sample_size: seed->paper" in out
    with open(folder / "stats" / "stats.json") as f:
        written = json.load(f)
    assert written == json.loads(json.dumps(numbers_of(str(folder))))
    page = (folder / "stats" / "index.html").read_text()
    assert page.startswith("<!DOCTYPE html>") and "data:image/png;base64," in page
    # The stats folder does not disturb a later read of the output folder.
    assert sample_stats.main([str(folder), "--quiet"]) == 0


def test_two_folders_are_compared(sampled_outputs, tmp_path, capsys):
    a, b = sampled_outputs["demo"], sampled_outputs["demo_seed7"]
    target = tmp_path / "cmp"
    assert sample_stats.main([a, b, "--output", str(target), "--quiet"]) == 0
    out = capsys.readouterr().out
    assert f"A: {a}" in out and f"B: {b}" in out and "(A | B)" in out
    with open(target / "stats.json") as f:
        written = json.load(f)
    assert set(written["runs"]) == {"A", "B"}
    assert written["runs"]["B"]["folder"] == b
    assert written["runs"]["A"]["node_sets"]["paper"] != written["runs"]["B"]["node_sets"]["paper"]


def test_default_output_of_a_comparison_is_inside_the_first_folder():
    assert sample_stats.default_output(["x/run1/", "y/run2"]) == os.path.join("x", "run1",
                                                                               "stats", "vs-run2")
    assert sample_stats.default_output(["x/run1"]) == os.path.join("x", "run1", "stats")


def test_errors_are_one_line(tmp_path, capsys):
    assert sample_stats.main([str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("sample-stats: error:") and "no graph_schema.pbtxt" in err
    assert "\n" not in err
    with pytest.raises(SystemExit):
        sample_stats.main([str(tmp_path)] * 3)


def test_unwritable_output_is_one_line(sampled_outputs, tmp_path, capsys):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    assert sample_stats.main([sampled_outputs["demo"], "--output", str(blocker / "x"),
                              "--quiet"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("sample-stats: error:") and "\n" not in err


def test_a_folder_on_gcs(sampled_outputs, gcs):
    upload_folder(gcs, sampled_outputs["topk"], "runs/topk")
    folder = f"gs://{BUCKET}/runs/topk"
    assert sample_stats.main([folder, "--quiet"]) == 0
    written = json.loads(gcs.blob("runs/topk/stats/stats.json").download_as_bytes())
    assert written["records"] == 4 and written["subgraphs"]["seed_only_seed_ids"] == ["u3"]
    assert gcs.blob("runs/topk/stats/index.html").exists()
