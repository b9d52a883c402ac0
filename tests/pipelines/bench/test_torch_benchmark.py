"""pipelines/bench/torch_benchmark.py: every contender reads every record of the folder, the
JSON says when, where and how (tests/docs checks that docs/torch.md's table is the
committed JSON's). No timing is measured here."""
import json
import os

import pytest

pytest.importorskip("torch_geometric")

from pipelines.bench import torch_benchmark  # noqa: E402
from tests.conftest import REPO_ROOT  # noqa: E402

COMMITTED = os.path.join(REPO_ROOT, "docs", "benchmarks", "torch.json")


def test_runs_every_contender_over_the_folder(sampled_outputs, tmp_path, capsys):
    out = tmp_path / "torch.json"
    assert torch_benchmark.main([sampled_outputs["demo"], "--repeat", "1", "--batch-size",
                                 "4", "--json", str(out)]) == 0
    document = json.loads(out.read_text())
    assert {"date", "machine", "command", "result"} <= set(document)
    result = document["result"]
    seeds = len(open(os.path.join(REPO_ROOT, "examples", "mag_tiny", "seeds.csv")).read()
                .split()) - 1
    assert result["records"] == seeds
    assert set(result["contenders"]) == set(torch_benchmark.CONTENDERS)
    assert result["contenders"]["numpy"]["vs_numpy"] == 1.0


def test_the_committed_measurement_meets_the_bar():
    with open(COMMITTED, encoding="utf-8") as f:
        document = json.load(f)
    # The bar, on the recorded run: HeteroData at >= 50% of the numpy decoder.
    assert document["result"]["contenders"]["hetero"]["vs_numpy"] >= 0.5
