"""A graph larger than the memory cap: built, and sampled from its store (issues 24, 40).

A MAG-shaped graph at scale 0.05 (about 60 MB of loaded arrays, a store of 56 MB):
  * the build: `unigraph-convert --format store --memory-limit 384M` in a cgroup of
    384 MB writes the store an uncapped build writes (every checksum);
  * the job: `sample` over a tenth of the papers from the store in a cgroup whose limit
    is the interpreter's own footprint (`sample` on a tiny graph, measured the same way)
    plus half the store: the same bytes as from the tables;
  * the Python API and its loaders: a training loop (tests/sampler/store/api_job.py:
    `graph.batches` with two threads and prefetch, every batch encoded and turned into
    PyG HeteroData; then the merged mini-batch NeighborLoader with two forked workers)
    in a cgroup of its own footprint on a tiny store plus half the store: the same
    subgraphs and batches as uncapped.
The store's pages are dropped from the page cache before each capped run (so they are
read, and charged, inside the group), and the kernel must have killed nothing.
Skipped, saying why, where no memory-limited cgroup can be made (not root, no memory
controller).
"""
import json
import os
import subprocess
import sys

import pytest

from pipelines import convert
from pipelines.bench.benchmark import ensure_graph, seed_subset
from pipelines.bench.memory_cap import MemoryCap, unavailable
from pipelines.bench.memory_cap import drop_cached as evict
from pipelines.bench.proc_stats import run_measured
from tests.pipelines.sampled_output import read_records

REASON = unavailable()
EXAMPLE = os.path.join(os.path.dirname(__file__), "..", "..", "..", "examples", "mag_tiny")
pytestmark = pytest.mark.skipif(REASON is not None, reason=REASON or "")


def sample_command(graph, spec, seeds, output):
    return [sys.executable, "-m", "pipelines.sample", "--graph", graph, "--spec", spec,
            "--seeds", seeds, "--output", output, "--engine", "memory", "--workers", "1",
            "--quiet"]


def store_bytes(store):
    with open(os.path.join(store, "store.json")) as f:
        return sum(entry["bytes"] for entry in json.load(f)["files"].values())


@pytest.fixture(scope="module")
def graph(tmp_path_factory):
    root = tmp_path_factory.mktemp("capped")
    folder, manifest = ensure_graph(str(root / "cache"), scale=0.05, seed=0, fmt="parquet",
                                    shards=1, hub_edges=0, log=lambda *a: None)
    store = str(root / "store")
    convert.prepare(folder, store, log=lambda line: None)
    # A tenth of the papers: the output (written through the group's page cache) small.
    return root, folder, store, seed_subset(folder, manifest, 0.1)


def _env():
    return dict(os.environ, PYTHONPATH=os.getcwd())


def test_the_build_stays_within_its_limit(graph, tmp_path):
    _, folder, store, _ = graph
    capped = str(tmp_path / "store")
    evict(folder)
    with MemoryCap(384 << 20) as group:
        run = subprocess.run(group.wrap([sys.executable, "-m", "pipelines.convert", "--graph",
                                         folder, "--output", capped, "--format", "store",
                                         "--memory-limit", "384M"]),
                             env=_env(), capture_output=True, text=True)
        kills = group.oom_kills()
    assert run.returncode == 0, run.stderr[-2000:]
    assert kills == 0
    with open(os.path.join(store, "store.json")) as f, \
            open(os.path.join(capped, "store.json")) as g:
        assert json.load(f)["files"] == json.load(g)["files"]


def test_a_store_samples_under_half_its_size(graph, tmp_path):
    root, folder, store, seeds = graph
    spec = os.path.join(folder, "sampling_spec.pbtxt")
    reference = str(tmp_path / "tables")
    assert subprocess.run(sample_command(folder, spec, seeds, reference),
                          env=_env()).returncode == 0
    # The interpreter with numpy, pyarrow and the sampler, sampling a graph of 300 edges.
    tiny = run_measured(sample_command(EXAMPLE, os.path.join(EXAMPLE, "sampling_spec.pbtxt"),
                                       os.path.join(EXAMPLE, "seeds.csv"),
                                       str(tmp_path / "tiny")), env=_env())
    assert tiny.returncode == 0
    size = store_bytes(store)
    cap = int(tiny.peak_rss_bytes + size / 2)
    capped = str(tmp_path / "capped")
    evict(store)
    with MemoryCap(cap) as group:
        run = subprocess.run(group.wrap(sample_command(store, spec, seeds, capped)),
                             env=_env(), capture_output=True, text=True)
        kills = group.oom_kills()
    assert run.returncode == 0, run.stderr[-2000:]
    assert kills == 0
    assert read_records(capped) == read_records(reference)
    # The bound is meaningful: the store alone would not fit beside the interpreter.
    assert size > cap - tiny.peak_rss_bytes


def test_the_api_and_its_loaders_sample_a_store_under_half_its_size(graph, tmp_path):
    pytest.importorskip("torch_geometric")
    root, folder, store, seeds = graph
    spec = os.path.join(folder, "sampling_spec.pbtxt")

    def job(graph_path, spec_path, seeds_path, out):
        return [sys.executable, "-m", "tests.sampler.store.api_job", graph_path, spec_path,
                seeds_path, out, "--torch"]

    reference = str(tmp_path / "reference.json")
    done = subprocess.run(job(folder, spec, seeds, reference), env=_env(),
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    tiny_store = str(tmp_path / "tiny_store")
    convert.prepare(EXAMPLE, tiny_store, log=lambda line: None)
    import pyarrow as pa
    import pyarrow.parquet as pq

    tiny_seeds = str(tmp_path / "tiny_seeds.parquet")
    pq.write_table(pa.table({"id": [b"p01", b"p02", b"p03"]}), tiny_seeds)
    tiny = run_measured(job(tiny_store, os.path.join(EXAMPLE, "sampling_spec.pbtxt"),
                            tiny_seeds, str(tmp_path / "tiny.json")), env=_env())
    assert tiny.returncode == 0, tiny.stderr[-2000:]
    size = store_bytes(store)
    cap = int(tiny.peak_rss_bytes + size / 2)
    capped = str(tmp_path / "capped.json")
    evict(store)
    with MemoryCap(cap) as group:
        run = subprocess.run(group.wrap(job(store, spec, seeds, capped)), env=_env(),
                             capture_output=True, text=True)
        kills = group.oom_kills()
    assert run.returncode == 0, run.stderr[-2000:]
    assert kills == 0
    with open(reference) as f, open(capped) as g:
        expected, got = json.load(f), json.load(g)
    assert got == expected and expected["subgraphs"] > 300
    assert size > cap - tiny.peak_rss_bytes
