"""A graph larger than the memory cap samples from a store (issue 24, item 3).

A MAG-shaped graph at scale 0.05 (about 60 MB of loaded arrays) is sampled from its
tables with no cap (the reference output, and the graph's in-memory size from the
report), then from its store by a `sample` process in a cgroup whose limit is the
interpreter's own footprint (`sample` on a tiny graph, measured the same way) plus
half the graph: the whole graph can never be resident in it. The output must be
the same bytes, and the kernel must have killed nothing. Skipped, saying why, where
no memory-limited cgroup can be made (not root, no memory controller).
"""
import os
import subprocess
import sys

import pytest

from pipelines import convert
from pipelines.bench.benchmark import ensure_graph, seed_subset
from pipelines.bench.memory_cap import MemoryCap, unavailable
from pipelines.bench.proc_stats import run_measured
from tests.pipelines.sampled_output import read_records, read_report

REASON = unavailable()
EXAMPLE = os.path.join(os.path.dirname(__file__), "..", "..", "..", "examples", "mag_tiny")


def sample_command(graph, spec, seeds, output):
    return [sys.executable, "-m", "pipelines.sample", "--graph", graph, "--spec", spec,
            "--seeds", seeds, "--output", output, "--engine", "memory", "--workers", "1",
            "--quiet"]


@pytest.mark.skipif(REASON is not None, reason=REASON or "")
def test_a_store_samples_under_half_the_graphs_memory(tmp_path):
    env = dict(os.environ, PYTHONPATH=os.getcwd())
    folder, manifest = ensure_graph(str(tmp_path / "cache"), scale=0.05, seed=0, fmt="parquet",
                                    shards=1, hub_edges=0, log=lambda *a: None)
    spec = os.path.join(folder, "sampling_spec.pbtxt")
    # A tenth of the papers: the output (written through the group's page cache) small.
    seeds = seed_subset(folder, manifest, 0.1)
    reference = str(tmp_path / "tables")
    assert subprocess.run(sample_command(folder, spec, seeds, reference),
                          env=env).returncode == 0
    graph_bytes = read_report(reference)["graph_in_memory_mb"] * 2**20
    store = str(tmp_path / "store")
    convert.prepare(folder, store, log=lambda line: None)
    # The interpreter with numpy, pyarrow and the sampler, sampling a graph of 300 edges.
    tiny = run_measured(sample_command(EXAMPLE, os.path.join(EXAMPLE, "sampling_spec.pbtxt"),
                                       os.path.join(EXAMPLE, "seeds.csv"),
                                       str(tmp_path / "tiny")), env=env)
    assert tiny.returncode == 0
    cap = int(tiny.peak_rss_bytes + graph_bytes / 2)
    capped = str(tmp_path / "capped")
    with MemoryCap(cap) as group:
        run = subprocess.run(group.wrap(sample_command(store, spec, seeds, capped)), env=env,
                             capture_output=True, text=True)
        kills = group.oom_kills()
    assert run.returncode == 0, run.stderr[-2000:]
    assert kills == 0
    assert read_records(capped) == read_records(reference)
    # The bound is meaningful: the graph alone would not fit beside the interpreter.
    assert graph_bytes > cap - tiny.peak_rss_bytes
