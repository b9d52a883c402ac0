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


def test_one_graph_under_several_job_caps_is_listed_once_with_each_cap(tmp_path):
    from pipelines.bench import bounded_benchmark
    from pipelines.tools import perf_tables

    with open(os.path.join(os.path.dirname(__file__), "..", "..", "..", "docs", "benchmarks",
                           "store_bounded.json")) as f:
        committed = json.load(f)
    reference = [r for r in committed["runs"] if not r["job"].get("cap_mb")][0]
    capped = [r for r in committed["runs"] if r["job"].get("cap_mb")][0]
    path = str(tmp_path / "store_bounded.json")
    with open(path, "w") as f:
        json.dump(dict(committed, runs=[capped, reference]), f)
    wider = json.loads(json.dumps(capped))
    wider["job"].update(cap_mb=capped["job"]["cap_mb"] * 2, wall_s=capped["job"]["wall_s"] / 2)
    bounded_benchmark.record(wider, path)
    bounded_benchmark.record(json.loads(json.dumps(capped)), path)  # replaced, not added
    with open(path) as f:
        runs = json.load(f)["runs"]
    assert [(r["scale"], r["job"].get("cap_mb")) for r in runs] == [
        (reference["scale"], None), (capped["scale"], capped["job"]["cap_mb"]),
        (capped["scale"], capped["job"]["cap_mb"] * 2)]  # by scale, then cap
    with open(path) as f:
        page = perf_tables.store_bounded(json.load(f), "store_bounded.json")
    scale = str(capped["scale"])
    rows = [line.split(" | ") for line in page.splitlines() if line.startswith(f"| {scale} |")]
    steps = [row[1] for row in rows if len(row) == 8]
    assert steps == ["generate", "build", "sample", "sample"]  # one graph, two jobs
    caps = [row[7] for row in rows if len(row) == 13]
    assert caps == [f"{capped['job']['cap_mb']:,}", f"{capped['job']['cap_mb'] * 2:,}"]
