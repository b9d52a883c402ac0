"""train --online: the planted task trained on subgraphs sampled while training (a new
epoch of draws every epoch) reaches the held-out accuracy of training on `sample`'s
files with the same epochs (tests/pipelines/test_train.py shows the seed-only MLP
near chance on this task)."""
import os

import pytest

pytest.importorskip("tensorflow")

from pipelines import sample, synthetic  # noqa: E402
from pipelines import train as train_cli  # noqa: E402
from sampler import api  # noqa: E402
from sampler.output.folder import open_samples  # noqa: E402
from sampler.training.sources import FileSource, OnlineSource  # noqa: E402
from sampler.training.trainer import TrainOptions, train  # noqa: E402
from tests.conftest import REPO_ROOT  # noqa: E402

DEMO = os.path.join(REPO_ROOT, "examples", "mag_tiny")

OPTIONS = dict(label="labels", epochs=3, batch_size=32, validation_fraction=0.25,
               hidden_dim=32, learning_rate=0.01, seed=1, progress="none")


@pytest.fixture(scope="module")
def planted(tmp_path_factory):
    folder = tmp_path_factory.mktemp("planted_online") / "graph"
    assert synthetic.main(["--scale", "0.002", "--planted", "--output", str(folder)]) == 0
    return str(folder)


@pytest.fixture(scope="module")
def trained(planted, tmp_path_factory):
    out = tmp_path_factory.mktemp("planted_files") / "out"
    spec = os.path.join(planted, "sampling_spec.pbtxt")
    assert sample.main(["--graph", planted, "--spec", spec, "--output", f"{out}/",
                        "--quiet"]) == 0
    graph = api.load_graph(planted, spec)
    online = OnlineSource(graph, api.SeedRows(ids=graph.node_ids()))
    results = {"files": train(FileSource(open_samples(str(out))), TrainOptions(**OPTIONS),
                              log=lambda _: None),
               "online": train(online, TrainOptions(**OPTIONS), log=lambda _: None)}
    return results, online


def test_online_training_reaches_the_files_held_out_accuracy(trained):
    results, online = trained
    files, live = results["files"].held_out["accuracy"], results["online"].held_out["accuracy"]
    # Both see the same held-out subgraphs (epoch 0, the files' own); the planted rule is
    # learnt to >= 0.95 (measured 0.99 for both at 4 epochs on a larger graph).
    assert results["online"].held_out_count == results["files"].held_out_count
    assert live >= 0.95 and live >= files - 0.01, (live, files)
    assert online._epoch == OPTIONS["epochs"]  # one new epoch of draws per training epoch


def test_train_cli_samples_online(capsys):
    code = train_cli.main(["--online", DEMO, "--spec", os.path.join(DEMO, "sampling_spec.pbtxt"),
                           "--seeds", os.path.join(DEMO, "seeds.csv"), "--label", "labels",
                           "--epochs", "1", "--progress", "none", "--validation-fraction", "0.3"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "sampling online: Graph(seeds of 'paper'" in out
    assert "held-out (gnn): accuracy " in out


@pytest.mark.parametrize("args, message", [
    (["--online", "G"], "--online needs --spec"),
    (["--samples", "S", "--spec", "x.pbtxt"], "--spec and --seeds are for --online"),
])
def test_cli_options_are_checked_in_one_line(args, message, capsys):
    assert train_cli.main(args + ["--label", "labels"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0]
