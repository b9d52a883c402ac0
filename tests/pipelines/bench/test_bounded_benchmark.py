"""`benchmark --bounded` (pipelines/bench/bounded_benchmark.py) end to end on a tiny graph:
generated, built and sampled in parts under memory cgroups, recorded, and a stopped run
taken up again at the job."""
import json
import os

import pytest

from pipelines.bench import benchmark
from pipelines.bench.memory_cap import swap_total_bytes, unavailable

REASON = unavailable() or ("swap is on" if swap_total_bytes() else None)


@pytest.mark.skipif(REASON is not None, reason=REASON or "")
def test_capped_generate_build_and_parts_recorded_then_resumed(tmp_path, capsys):
    record = str(tmp_path / "store_bounded.json")
    args = ["--bounded", "--scale", "0.002", "--seed-fraction", "0.5", "--build-cap-mb", "512",
            "--cap-mb", "512", "--seed-parts", "2", "--job-workers", "1", "--drop-tables",
            "--cache-dir", str(tmp_path / "cache"), "--record", record, "--json"]
    assert benchmark.main(args) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["generate"]["cap_mb"] == 512 and result["build"]["memory_limit_mb"] == 512
    for step in (result["generate"], result["build"]):
        assert step["oom_kills"] == 0 and 0 < step["group_peak_mb"] <= 512 and step["peak_rss_mb"]
    job = result["job"]
    assert job["parts"] == 2 and job["oom_kills"] == 0 and job["workers"] == 1
    assert job["subgraphs"] == sum(r["seeds"] for r in job["runs"]) > 0
    assert 0 < result["store_mb"] and 0 < result["tables_mb"]
    with open(record) as f:
        assert [r["scale"] for r in json.load(f)["runs"]] == [0.002]
    folder = os.path.join(str(tmp_path / "cache"), benchmark.graph_key(0.002, 0, "parquet", 1, 0))
    assert not any(name.endswith(".parquet") and not name.startswith("seeds")
                   for name in os.listdir(folder))  # the tables dropped
    # Stopped after its first part: the same command measures only the second again,
    # on the store it built (its tables are gone).
    parts = os.path.join(str(tmp_path / "cache"), "runs", os.path.basename(folder), "parts")
    os.remove(os.path.join(parts, sorted(os.listdir(parts))[1]))
    assert benchmark.main(args + ["--parts-limit", "1"]) == 0  # the measured part only
    partial = json.loads(capsys.readouterr().out)
    assert (partial["job"]["parts"], partial["job"]["parts_of"]) == (1, 2)
    assert partial["job"]["runs"] == job["runs"][:1]
    assert benchmark.main(args) == 0
    again = json.loads(capsys.readouterr().out)
    assert again["job"]["runs"][0] == job["runs"][0]
    assert again["build"] == result["build"] and again["tables_mb"] == result["tables_mb"]
    assert again["job"]["subgraphs"] == job["subgraphs"]
