"""The `sample` command line: dry runs, one-line errors, exit codes."""
import os
import subprocess
import sys

from pipelines import sample
from tests.conftest import REPO_ROOT, TESTDATA

DEMO = os.path.join(REPO_ROOT, "examples", "mag_tiny")


def test_dry_run_prints_the_plan(capsys):
    code = sample.main(["--graph", DEMO, "--spec", os.path.join(DEMO, "sampling_spec.pbtxt"),
                        "--dry-run"])
    out = capsys.readouterr().out
    assert code == 0
    assert "seed op 'seed': node set 'paper'" in out
    assert ("2. paper->author: from seed, seed->paper [paper] via edge set 'written' "
            "(reversed table) -> [author], TOP_K 4") in out
    assert "edge set 'written': 1 file(s), first " in out and "writes.csv" in out


def test_dry_run_on_tfgnn_creditcard_example(capsys):
    folder = os.path.join(TESTDATA, "creditcard")
    code = sample.main(["--graph", os.path.join(folder, "graph_schema.pbtxt"),
                        "--spec", os.path.join(folder, "sampling_spec.pbtxt"), "--dry-run"])
    assert code == 0
    assert "seed->creditcard: from seed [customer] via edge set 'owns_card'" in \
        capsys.readouterr().out


def test_bad_input_prints_one_line_and_exits_2(tmp_path):
    spec = tmp_path / "spec.pbtxt"
    spec.write_text('seed_op { op_name: "seed" node_set_name: "nope" }')
    result = subprocess.run(
        [sys.executable, "-m", "pipelines.sample", "--graph", DEMO, "--spec", str(spec),
         "--dry-run"], capture_output=True, text=True, cwd=REPO_ROOT)
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1
    assert result.stderr.startswith(f"sample: error: sampling spec {spec}: seed op 'seed': node "
                                    "set 'nope' does not exist")
    assert "Traceback" not in result.stderr


def test_help_documents_every_flag_with_an_example():
    help_text = sample.make_parser().format_help()
    for flag in ("--graph", "--spec", "--seeds", "--output", "--dry-run"):
        assert flag in help_text
    assert "examples:" in help_text and "DataflowRunner" in help_text
