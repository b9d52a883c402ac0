"""The benchmark: process-tree measurement, graph cache, spec rewrite, a tiny end-to-end run."""
import json
import os
import subprocess
import sys
import time
import types

import pytest

from pipelines.bench import benchmark, memory_cap, proc_stats
from pipelines.tools import perf_tables
from sampler import numpy_cpu
from sampler.plan.plan import build_plan
from sampler.plan.spec import load_spec
from unigraph.errors import SpecError
from unigraph.schema import load_schema

MB = 2 ** 20

# A parent that starts a child which touches 200 MB (b"x" * n writes every page) and
# holds it for 0.6 s: twelve 50 ms polls see the tree at its peak.
CHILD = "import time; b = b'x' * (200 << 20); time.sleep(0.6)"
PARENT = f"import subprocess, sys; sys.exit(subprocess.run([sys.executable, '-c', {CHILD!r}]).returncode)"


def test_peak_rss_sums_over_the_process_tree():
    stats = proc_stats.run_measured([sys.executable, "-c", PARENT])
    assert stats.returncode == 0
    assert stats.max_processes >= 2  # the parent and its child were both seen
    # The child alone holds 200 MB; parent + child interpreters add ~20 MB. The upper bound
    # catches double counting.
    assert 200 * MB <= stats.peak_rss_bytes <= 400 * MB, stats.peak_rss_bytes / MB
    assert stats.wall_seconds >= 0.6
    assert stats.polls >= 5
    assert 0.05 < stats.cpu_seconds < stats.wall_seconds + 1  # touching 200 MB costs CPU


# A parent that touches 200 MB, then forks a child that only reads it: the pages stay
# shared (copy-on-write), so the RSS sum counts them twice and the PSS sum once.
FORKED = ("import os, time; b = b'x' * (200 << 20); pid = os.fork(); time.sleep(1.0); "
          "os._exit(0) if pid == 0 else os.waitpid(pid, 0)")


@pytest.fixture
def swap_space(tmp_path):
    """Swap for the test: the machine's own, or a 512 MB swap file made here and removed
    after (root); skips, saying why, where neither can be had."""
    if memory_cap.swap_total_bytes():
        yield
        return
    why = memory_cap.unavailable()
    if why:
        pytest.skip(why)
    path = tmp_path / "swapfile"
    made = subprocess.run(f"fallocate -l 512M {path} && chmod 600 {path} && mkswap {path} "
                          f"&& swapon {path}", shell=True, capture_output=True, text=True)
    if made.returncode != 0:
        pytest.skip(f"no swap here and none can be made: {made.stderr.strip()[-200:]}")
    try:
        yield
    finally:
        subprocess.run(["swapoff", str(path)], check=False)


# Touches 300 MB and holds it: under a 128 MB RAM cap, most of it is swapped out.
HOLDER = "import time; b = b'x' * (300 << 20); time.sleep(1.0)"


def test_rss_plus_swap_is_what_a_job_held_under_a_ram_cap(swap_space):
    with memory_cap.MemoryCap(128 * MB, swap=True) as cap:
        stats = proc_stats.run_measured(cap.wrap([sys.executable, "-c", HOLDER]))
        kills = cap.oom_kills()
    assert stats.returncode == 0 and kills == 0  # swapped, not killed
    assert stats.peak_rss_bytes <= 150 * MB, stats.peak_rss_bytes / MB
    assert 300 * MB <= stats.peak_rss_swap_bytes <= 400 * MB, stats.peak_rss_swap_bytes / MB


def test_rss_plus_swap_is_the_rss_where_nothing_is_swapped():
    stats = proc_stats.run_measured([sys.executable, "-c", PARENT])
    assert stats.peak_rss_swap_bytes >= stats.peak_rss_bytes
    assert stats.peak_rss_swap_bytes <= stats.peak_rss_bytes + 50 * MB


def test_a_capped_engines_run_shows_rss_and_swap_and_prices_nothing():
    run = {"wall_s": 600.0, "cpu_s": 400.0, "seeds_per_s": 300.0, "peak_rss_mb": 14000.0,
           "peak_pss_mb": 14000.0, "peak_rss_swap_mb": 30000.0,
           "shuffled_bytes_per_subgraph": 33000.0}
    data = {"benchmark": "engines", "date": "2026-11-26", "command": "benchmark",
            "config": {"engines": ["beam"], "seeds": 1000, "scale": 0.25, "nodes": {"p": 1},
                       "edges": {"e": 1}, "format": "parquet", "strategy": "RANDOM_UNIFORM",
                       "ram_cap_mb": 14336, "swap_mb": 49152},
            "runs": [dict(run, engine="beam", output_bytes=1)], "medians": {"beam": run}}
    sections = perf_tables.render_sections({"benchmarks/capped.json": data})
    assert "peak RSS + swap MB" in sections["engines"] and "30,000" in sections["engines"]
    assert "RAM capped at 14,336 MB" in sections["engines"]
    assert "cost" not in sections


def test_ram_cap_is_checked_before_anything_runs(capsys):
    assert benchmark.main(["--ram-cap-mb", "10"]) == 2
    assert "--ram-cap-mb must be >= 64" in capsys.readouterr().err


def test_pss_counts_pages_shared_after_fork_once():
    stats = proc_stats.run_measured([sys.executable, "-c", FORKED])
    assert stats.returncode == 0 and stats.max_processes == 2
    assert stats.peak_rss_bytes >= 400 * MB, stats.peak_rss_bytes / MB
    # Each interpreter adds its own ~10-30 MB; a double count would be >= 400 MB.
    assert 200 * MB <= stats.peak_pss_bytes <= 320 * MB, stats.peak_pss_bytes / MB


def _monitor_on_a_fake_clock(monkeypatch, pss_cpu_seconds: float, polls: int):
    """A TreeMonitor of three processes polled `polls` times, 50 ms apart on a fake
    clock, each process's PSS costing the monitor `pss_cpu_seconds` of CPU."""
    clock = {"now": 0.0, "cpu": 0.0}
    monkeypatch.setattr(proc_stats, "time", types.SimpleNamespace(
        monotonic=lambda: clock["now"], thread_time=lambda: clock["cpu"]))

    def pss_bytes(pid):
        clock["cpu"] += pss_cpu_seconds
        return 100 * MB

    monkeypatch.setattr(proc_stats, "pss_bytes", pss_bytes)
    monkeypatch.setattr(proc_stats, "process_tree", lambda root: [1, 2, 3])
    monkeypatch.setattr(proc_stats, "rss_bytes", lambda pid: 200 * MB)
    monkeypatch.setattr(proc_stats, "swap_bytes", lambda pid: 0)
    monitor = proc_stats.TreeMonitor(1, interval=0.05)
    for _ in range(polls):
        monitor.poll()
        clock["now"] += 0.05
    return monitor, clock["cpu"]


def test_pss_is_read_every_few_polls_while_it_is_cheap(monkeypatch):
    monitor, _ = _monitor_on_a_fake_clock(monkeypatch, 0.0, polls=400)
    assert monitor.pss_readings == 400 // proc_stats.PSS_EVERY
    assert monitor.peak_pss == 300 * MB and monitor.peak_rss == 600 * MB


def test_pss_readings_keep_to_their_share_of_a_core_when_the_walk_is_dear(monkeypatch):
    # 30 ms per reading (three processes at 10 ms): every 4th poll would take 15% of a
    # core; within the share, one reading per 1.5 s.
    monitor, spent = _monitor_on_a_fake_clock(monkeypatch, 0.01, polls=2000)  # 100 s
    assert spent <= 100 * proc_stats.PSS_CPU_SHARE + 0.03, spent
    assert monitor.pss_readings >= 0.9 * 100 * proc_stats.PSS_CPU_SHARE / 0.03
    assert monitor.peak_pss == 300 * MB and monitor.polls == 2000


def test_process_tree_and_rss_of_this_process():
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(5)"])
    try:
        tree = proc_stats.process_tree(os.getpid())
        assert tree[0] == os.getpid() and child.pid in tree
        assert proc_stats.rss_bytes(os.getpid()) > 10 * MB
    finally:
        child.kill()
        child.wait()
    assert proc_stats.rss_bytes(child.pid) == 0  # gone: counts nothing


def _alive(pid):
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()[0] != b"Z"  # a zombie is dead
    except OSError:
        return False


def test_timeout_kills_the_tree():
    stats = proc_stats.run_measured(
        [sys.executable, "-c", "import subprocess, sys, time; "
         "p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(30)']); "
         "print(p.pid, flush=True); time.sleep(30)"], timeout=1.0)
    assert stats.returncode != 0 and stats.wall_seconds < 10
    grandchild = int(stats.stdout.split()[0])
    deadline = time.monotonic() + 5  # SIGKILL is delivered asynchronously
    while _alive(grandchild) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(grandchild)


def test_command_output_is_captured():
    stats = proc_stats.run_measured([sys.executable, "-c", "print('out'); "
                                     "import sys; print('err', file=sys.stderr); sys.exit(3)"])
    assert (stats.returncode, stats.stdout, stats.stderr) == (3, "out\n", "err\n")


def test_graph_cache_and_spec_rewrite(tmp_path):
    logged = []
    folder, manifest = benchmark.ensure_graph(str(tmp_path), scale=0.0005, seed=1, fmt="csv",
                                              shards=1, hub_edges=0, log=logged.append)
    assert os.path.basename(folder) == "mag_scale0.0005_seed1_csv_shards1_hub0"
    assert logged[0].startswith("generated")
    again, manifest2 = benchmark.ensure_graph(str(tmp_path), scale=0.0005, seed=1, fmt="csv",
                                              shards=1, hub_edges=0, log=logged.append)
    assert again == folder and manifest2 == manifest and logged[1].startswith("reusing")
    for strategy in benchmark.STRATEGIES:
        path = benchmark.write_spec(folder, strategy)
        if strategy == "LATEST_K":  # needs the edges' timestamps: a --timestamps graph
            with pytest.raises(SpecError, match="LATEST_K needs edge timestamps"):
                build_plan(load_spec(path), load_schema(folder), source=path)
            continue
        plan = build_plan(load_spec(path), load_schema(folder), source=path)
        assert len(plan.ops) == 5 and {op.strategy_name for op in plan.ops} == {strategy}
    timed, _ = benchmark.ensure_graph(str(tmp_path), scale=0.0005, seed=1, fmt="csv",
                                      shards=1, hub_edges=0, timestamps=True,
                                      log=logged.append)
    assert timed == folder + "_timed"
    path = benchmark.write_spec(timed, "LATEST_K")
    plan = build_plan(load_spec(path), load_schema(timed), source=path)
    assert {op.strategy_name for op in plan.ops} == {"LATEST_K"}


def test_incomplete_cache_folder_is_regenerated(tmp_path):
    folder = tmp_path / benchmark.graph_key(0.0005, 2, "parquet", 1, 0)
    folder.mkdir()
    (folder / "junk").write_text("partial")
    logged = []
    benchmark.ensure_graph(str(tmp_path), scale=0.0005, seed=2, fmt="parquet", shards=1,
                           hub_edges=0, log=logged.append)
    assert logged[0].startswith("generated") and not (folder / "junk").exists()


def test_median_and_text_line():
    runs = [{k: v for k in benchmark.METRICS} for v in (3.0, 1.0, 2.0)]
    assert benchmark.median_of(runs) == {k: 2.0 for k in benchmark.METRICS}
    line = benchmark.format_run("median", {"wall_s": 2, "cpu_s": 3.5, "seeds_per_s": 1500,
                                           "edges_per_s": 2e5, "output_mb_per_s": 1.5,
                                           "peak_rss_mb": 400, "peak_pss_mb": 250})
    assert line == ("median: wall 2.00 s (cpu 3.50 s), 1,500.0 seeds/s, 200,000 sampled "
                    "edges/s, 1.50 MB/s out, peak RSS 400 MB (PSS 250 MB)")


def test_tiny_benchmark_end_to_end(tmp_path, capsys):
    """Scale 0.0005 (368 papers), one run of the real `sample` CLI (about 10 s)."""
    code = benchmark.main(["--scale", "0.0005", "--repeat", "1", "--cache-dir", str(tmp_path),
                           "--json"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    result = json.loads(captured.out.strip().splitlines()[-1])
    run = result["runs"][0]
    assert run["seeds"] == run["seeds_read"] == 368 == result["config"]["seeds"]
    assert run["edges_sampled"] > 368 and run["edges_per_s"] > 0 and run["seeds_per_s"] > 0
    assert run["output_bytes"] > 0 and run["output_mb_per_s"] > 0
    # A Python process with numpy, pyarrow and the sampler holds well over 100 MB.
    assert run["peak_rss_mb"] > 100
    assert run["graph_in_memory_mb"] > 0  # the default engine here is memory: it says
    assert result["median"]["wall_s"] == run["wall_s"] > 0
    # Measured outputs are deleted (they are large at real scales) unless kept.
    runs = tmp_path / "runs"
    assert not any(f.is_file() for f in runs.rglob("*")) if runs.exists() else True


def test_api_benchmark_measures_online_sampling_and_latency(tmp_path, capsys):
    """`--api --latency` at scale 0.0005 (368 seeds: one batch, smaller than 512)."""
    code = benchmark.main(["--scale", "0.0005", "--repeat", "1", "--cache-dir", str(tmp_path),
                           "--api", "--latency", "--json"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    result = json.loads(captured.out.strip().splitlines()[-1])
    assert result["benchmark"] == "api" and result["command"].startswith("benchmark")
    offline, online = result["median"]["offline"], result["median"]["online"]
    assert offline["subgraphs"] == 368
    for kind in ("arrays", "graphs", "examples"):
        assert online[kind]["subgraphs"] == 368 and online[kind]["subgraph_edges"] > 368
    # Every pass samples the same subgraphs, so counts agree; only the times differ.
    assert online["arrays"]["subgraph_edges"] == online["examples"]["subgraph_edges"]
    latency = result["latency"]
    assert latency["batches"] == 30 and latency["threads"] == 2
    # Where numpy's AVX-512 sort is slow (sampler/numpy_cpu.py), its arrays beside.
    with_avx512 = numpy_cpu.applies_here()
    assert ("arrays_avx512" in latency) is with_avx512
    for kind in ("arrays", "graphs", "examples", "arrays_threads") + (
            ("arrays_avx512",) if with_avx512 else ()):
        assert 0 < latency[kind]["median_ms"] <= latency[kind]["p95_ms"]
        assert latency[kind]["median_cpu_ms"] > 0
    page = perf_tables.api(result, "benchmarks/api_tiny.json")
    assert "`load_graph(threads=2)`" in page and "api_tiny.json" in page
    assert ("`SAMPLER_NUMPY_AVX512=1`" in page) is with_avx512


def test_tfgnn_needs_tfrecord_tables(capsys):
    assert benchmark.main(["--engine", "memory,tfgnn", "--format", "csv"]) == 2
    assert capsys.readouterr().err == "benchmark: error: --engine tfgnn needs --format tfrecord\n"


def test_timed_link_inputs_give_pairs_and_endpoints_their_edges_time(tmp_path):
    """`--link --timestamps`: each pair's cut-off is its cites edge's time, and both its
    endpoints carry the same as node seeds."""
    import pyarrow.parquet as pq

    folder, _ = benchmark.ensure_graph(str(tmp_path), scale=0.0005, seed=1, fmt="parquet",
                                       shards=1, hub_edges=0, timestamps=True,
                                       log=lambda *a: None)
    spec = benchmark.write_spec(folder, "RANDOM_UNIFORM")
    _, _, pairs, endpoints = benchmark.link_inputs(folder, spec, "RANDOM_UNIFORM", 0.5,
                                                   timed=True)
    pairs, ends = pq.read_table(pairs).to_pydict(), pq.read_table(endpoints).to_pydict()
    cites = pq.read_table(os.path.join(folder, "cites.parquet")).to_pydict()
    time_of = {(s, t): y for s, t, y in zip(cites["#source"], cites["#target"],
                                            cites["timestamp"])}
    assert len(pairs["source"]) > 50
    for s, t, y in zip(pairs["source"], pairs["target"], pairs["timestamp"]):
        assert time_of[(s.decode(), t.decode())] == y
    assert ends["id"][::2] == pairs["source"] and ends["id"][1::2] == pairs["target"]
    assert ends["timestamp"][::2] == ends["timestamp"][1::2] == pairs["timestamp"]
    untimed = benchmark.link_inputs(folder, spec, "RANDOM_UNIFORM", 0.5)[2]
    assert "timestamp" not in pq.read_table(untimed).column_names
