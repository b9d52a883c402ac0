"""pipelines/bench/features_benchmark.py: both paths convert the same batches with and
without the spec, the JSON says when, where and how, and the performance page renders
it (tests/docs checks the committed page is the committed JSON's). No timing is
asserted here but the committed measurement's share."""
import json
import os

import pytest

pytest.importorskip("torch_geometric")

from pipelines.bench import features_benchmark  # noqa: E402
from pipelines.tools import perf_tables  # noqa: E402
from tests.conftest import REPO_ROOT  # noqa: E402

COMMITTED = os.path.join(REPO_ROOT, "docs", "benchmarks", "features.json")


def test_runs_both_paths_on_a_graph_with_every_kind(tmp_path, capsys):
    out = tmp_path / "features.json"
    assert features_benchmark.main(["--scale", "0.0005", "--batches", "2", "--batch-size",
                                    "8", "--repeat", "1", "--cache-dir",
                                    str(tmp_path / "cache"), "--json", str(out)]) == 0
    document = json.loads(out.read_text())
    assert {"date", "machine", "command", "load_average", "result"} <= set(document)
    result = document["result"]
    assert result["batches"] == 2 and result["subgraphs"] == 16
    assert set(result["paths"]) == set(features_benchmark.PATHS)
    for row in result["paths"].values():
        assert 0 < row["spec_s_per_batch"] <= row["with_s_per_batch"]
        assert len(row["seconds"]["with"]) == 1
    # Every extra kind reached the encoder: the vocabularies, the hashed tokens.
    assert set(result["vocabularies"]) == {"nodes/paper.venue", "nodes/paper.tags",
                                           "edges/cites.intent"}
    assert "nodes/paper.tokens (categorical)" in result["per_feature_ms"]
    assert set(result["per_feature_records_ms"]) == set(result["per_feature_ms"])
    assert result["values_per_batch"]["tokens"] > result["values_per_batch"]["venue"] > 0
    page = perf_tables.features(document, "benchmarks/features.json")
    assert "spec's share" in page and "`nodes/paper.tags` (categorical)" in page
    assert "decoded batch (ms)" in page
    assert result["paths"]["records"]["decode_s_per_batch"] > 0 and "Decoding a batch" in page


def test_the_committed_measurement_meets_the_bar():
    with open(COMMITTED, encoding="utf-8") as f:
        document = json.load(f)
    # Issue 41's bar on the recorded run: applying the spec is at most 20% of a batch's
    # conversion, for the API's batches and for a batch the decoder already decoded
    # (and so also of SampleDataset's work on a batch: decoding and converting).
    paths = document["result"]["paths"]
    assert paths["api"]["spec_share"] <= 0.2, paths["api"]
    assert paths["records"]["spec_share"] <= 0.2, paths["records"]
    assert paths["records"]["spec_share_of_decode_and_convert"] <= 0.2, paths["records"]
