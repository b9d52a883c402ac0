"""pipelines/bench/training_benchmark.py: the planted graph generated, a training run in
a process of its own per mode and seed, the JSON's runs, summary and provenance, and
its table on the pages (tests/docs checks the committed pages are the committed JSON's).
Tiny (scale 0.0005, one seed, one epoch, one mode: a process's torch import is most of
its time); nothing timed is asserted."""
import json
import os

import pytest

pytest.importorskip("torch_geometric")

from pipelines.bench import training_benchmark  # noqa: E402
from pipelines.tools import perf_tables  # noqa: E402
from tests.conftest import REPO_ROOT  # noqa: E402

COMMITTED = os.path.join(REPO_ROOT, "docs", "benchmarks", "training.json")


def test_one_run_on_a_tiny_planted_graph(tmp_path, capsys):
    out = tmp_path / "training.json"
    assert training_benchmark.main(["--seeds", "1", "--epochs", "1", "--scale", "0.0005",
                                    "--modes", "merged", "--json", str(out)]) == 0
    document = json.loads(out.read_text())
    assert json.loads(capsys.readouterr().out) == document  # printed as kept
    assert document["benchmark"] == "training"
    assert {"date", "machine", "load_average", "command"} <= set(document)
    assert document["command"].startswith("python -m pipelines.bench.training_benchmark "
                                          "--seeds 1")
    assert document["graph"]["spec"]["layers"] == 4  # the five-op spec's longest chain
    assert document["graph"]["nodes"]["paper"] > 0
    [run] = document["runs"]
    assert (run["mode"], run["seed"]) == ("merged", 0)
    assert 0 <= run["accuracy"] <= 1 and 0 < run["chance"] < 1
    assert run["held_out_count"] > 0
    assert len(run["epoch_cpu_s"]) == len(run["epoch_wall_s"]) == 1
    assert 0 < run["epoch_cpu_s"][0] <= run["process_cpu_s"]
    summary = document["summary"]["merged"]
    assert summary["runs"] == 1 and summary["accuracy"]["mean"] == round(run["accuracy"], 4)
    assert len(document["load_averages"]) == 2  # before, and after the one run
    page = perf_tables.training(document, "benchmarks/training.json")
    assert "| merged | " in page and "seed 0," in page and "1 epoch of" in page


def test_summary_gives_mean_and_range_per_mode():
    runs = [{"mode": mode, "seed": seed, "accuracy": accuracy, "chance": 0.2,
             "held_out_count": 10, "epoch_cpu_s": cpu, "epoch_wall_s": [2 * c for c in cpu]}
            for mode, seed, accuracy, cpu in [("merged", 0, 0.9, [1.0, 2.0]),
                                              ("disjoint", 0, 0.8, [3.0, 3.0]),
                                              ("merged", 1, 0.7, [2.0, 2.0]),
                                              ("disjoint", 1, 0.6, [5.0, 5.0])]]
    summary = training_benchmark.summarize(runs)
    assert list(summary) == ["merged", "disjoint"]
    assert summary["merged"]["accuracy"] == {"mean": 0.8, "min": 0.7, "max": 0.9}
    assert summary["merged"]["cpu_s_per_epoch"] == {"mean": 1.75, "min": 1.5, "max": 2.0}
    assert summary["disjoint"]["wall_s_per_epoch"] == {"mean": 8.0, "min": 6.0, "max": 10.0}


def test_bad_arguments_are_one_line(capsys):
    with pytest.raises(SystemExit) as exit_:
        training_benchmark.main(["--modes", "merged,layered"])
    assert exit_.value.code == 2 and "--modes: unknown layered" in capsys.readouterr().err


def test_the_committed_measurement_has_both_modes_over_six_seeds():
    """What docs/minibatches.md's Training table is made of."""
    with open(COMMITTED) as f:
        document = json.load(f)
    assert document["seeds"] == list(range(6)) and document["epochs"] == 8
    assert set(document["summary"]) == {"merged", "disjoint"}
    assert len(document["runs"]) == 12
    page = perf_tables.training(document, "benchmarks/training.json")
    assert "| merged | " in page and "| disjoint | " in page
