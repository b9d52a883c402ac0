"""run_in_memory (sampler.memory.engine): how shards are spread over worker processes
and samples over chunks changes nothing in the files; progress and errors reach the
caller."""
import os
import re
import subprocess
import sys

import numpy as np
import pytest

from sampler.core.assemble import ShardAssembler
from sampler.memory import engine
from sampler.memory.batch import sample_batch
from sampler.memory.engine import run_in_memory
from sampler.memory.graph import load_graph
from sampler.output.encoder import encode_shard
from tests.conftest import REPO_ROOT
from tests.sampler.memory.test_graph import GRAPHS, make_job


def written(folder) -> dict[str, bytes]:
    """Every file below `folder` (features/ included) by relative name."""
    return {os.path.relpath(os.path.join(root, name), folder):
            open(os.path.join(root, name), "rb").read()
            for root, _, names in os.walk(folder) for name in sorted(names)}


def run(name, tmp_path, **kwargs):
    (tmp_path / "out").mkdir(parents=True)  # run_sampling's staging folder, here
    job = make_job(GRAPHS[name], tmp_path)
    calls = {"start": [], "progress": []}
    stats = run_in_memory(job, on_start=lambda *started: calls["start"].append(started),
                          on_progress=calls["progress"].append, **kwargs)
    return written(tmp_path / "out"), stats, calls


@pytest.mark.parametrize("name", sorted(GRAPHS))
def test_workers_and_chunks_do_not_change_the_files(name, tmp_path, monkeypatch):
    one, stats_one, _ = run(name, tmp_path / "one", workers=1)
    two, stats_two, _ = run(name, tmp_path / "two", workers=2)
    monkeypatch.setattr(engine, "CHUNK_SAMPLES", 3)  # forked workers see it too
    small, stats_small, _ = run(name, tmp_path / "small", workers=2)
    assert one and any(one.values())
    assert one == two == small
    assert stats_one.as_dict() == stats_two.as_dict() == stats_small.as_dict()


@pytest.mark.parametrize("workers", [1, 2])
def test_start_and_progress_are_reported(workers, tmp_path, monkeypatch):
    monkeypatch.setattr(engine, "CHUNK_SAMPLES", 2)
    _, stats, calls = run("mag_tiny", tmp_path, workers=workers)
    report = stats.as_dict()
    [(seeds, graph_bytes, processes)] = calls["start"]
    assert processes == (workers if engine.fork_is_safe() else 1)
    assert seeds == report["seeds_read"] > 0
    assert graph_bytes > 0
    # Every written subgraph is reported once, a chunk (at most 2 samples) at a time.
    assert sum(calls["progress"]) == report["subgraphs_written"]
    assert max(calls["progress"]) <= 2 and len(calls["progress"]) > 1


def test_a_workers_error_reaches_the_caller(tmp_path, monkeypatch):
    def broken(*args):
        raise ValueError("broken chunk")
    monkeypatch.setattr(engine, "sample_batch", broken)
    with pytest.raises(ValueError, match="broken chunk"):
        run("mag_tiny", tmp_path, workers=2)
    assert not engine._SHARED  # the graph is released for the next run


def test_no_fork_once_grpc_is_loaded(tmp_path, monkeypatch):
    """Children forked after gRPC's threads started were seen to hang: with its core
    loaded, the shards are written in this process, and the files are the same."""
    monkeypatch.setitem(sys.modules, "grpc._cython.cygrpc", object())

    def no_fork(*args):
        raise AssertionError("forked although gRPC is loaded")
    monkeypatch.setattr(engine.multiprocessing, "get_context", no_fork)
    files, _, calls = run("mag_tiny", tmp_path / "one", workers=2)
    assert calls["start"][0][2] == 1
    monkeypatch.delitem(sys.modules, "grpc._cython.cygrpc")
    monkeypatch.undo()
    assert files == run("mag_tiny", tmp_path / "two", workers=1)[0]


def test_two_workers_fork_in_a_fresh_process(tmp_path):
    """The CLI in a process of its own (no gRPC loaded): 2 forked workers write the
    bytes 1 worker writes. In this test process Beam may have loaded gRPC already, and
    then the engine would not fork at all."""
    outputs = []
    for workers in (1, 2):
        out = tmp_path / f"w{workers}"
        result = subprocess.run(
            [sys.executable, "-m", "pipelines.sample", "--graph", GRAPHS["mag_tiny"],
             "--spec", os.path.join(GRAPHS["mag_tiny"], "sampling_spec.pbtxt"),
             "--engine", "memory", "--workers", str(workers), "--output", f"{out}/"],
            capture_output=True, text=True, cwd=REPO_ROOT, timeout=300)
        assert result.returncode == 0, result.stderr
        assert f"with {workers} worker process(es)" in result.stdout
        outputs.append({k: v for k, v in written(out).items() if k != "sample_report.json"})
    assert outputs[0] == outputs[1] and outputs[0]


KILLS_SHARD_0 = """
import os, signal, sys
from sampler.memory import engine
real = engine._write_one_shard
def dies(shard, on_progress):
    if shard == 0:
        os.kill(os.getpid(), signal.SIGKILL)  # as the out-of-memory killer does
    return real(shard, on_progress)
engine._write_one_shard = dies
from pipelines.sample import main
sys.exit(main())
"""


def test_a_worker_killed_by_a_signal_ends_the_run(tmp_path):
    """A worker ended by SIGKILL (the out-of-memory killer) loses the shards it held: the
    run ends at once with one line naming it, and the previous output is kept. (In a
    process of its own, for the fork: see the test above.)"""
    out = tmp_path / "out"
    args = ["--graph", GRAPHS["mag_tiny"], "--spec",
            os.path.join(GRAPHS["mag_tiny"], "sampling_spec.pbtxt"), "--engine", "memory",
            "--workers", "2", "--output", f"{out}/", "--quiet"]
    first = subprocess.run([sys.executable, "-m", "pipelines.sample", *args],
                           capture_output=True, text=True, cwd=REPO_ROOT, timeout=300)
    assert first.returncode == 0, first.stderr
    before = written(out)
    killed = subprocess.run([sys.executable, "-c", KILLS_SHARD_0, *args, "--overwrite"],
                            capture_output=True, text=True, cwd=REPO_ROOT, timeout=300)
    assert killed.returncode != 0
    last = killed.stderr.strip().splitlines()[-1]
    assert re.fullmatch(r"sample: error: worker process \d+ was killed by SIGKILL \(the "
                        r"system's out-of-memory killer, or a user\); give the job more "
                        r"memory, or fewer --workers", last), killed.stderr
    assert "Traceback" not in killed.stderr
    assert written(out) == before
    assert sorted(os.listdir(tmp_path)) == ["out"]  # no staging folder left beside it


@pytest.mark.parametrize("name", sorted(GRAPHS))
def test_node_rows_gathered_at_once_encode_the_same_bytes(name, tmp_path):
    """A store read at random gathers a chunk's node feature rows before encoding it
    (AssembledShard.with_node_rows_gathered): each distinct row once, the same records."""
    job = make_job(GRAPHS[name], tmp_path)
    graph = load_graph(job)
    samples = engine._samples(graph, job)
    chunk, _ = sample_batch(graph, job.plan, job.loaded.schema, job.seed, samples)
    assembler = ShardAssembler(job.plan, job.loaded.schema, graph.names)
    assembled, _ = assembler.assemble(chunk.seeds, chunk.features, chunk.edges, chunk.pairs)
    gathered = assembled.with_node_rows_gathered()
    assert list(encode_shard(gathered, 3)) == list(encode_shard(assembled, 3))
    with_features = [s for s, layout in assembled.nodes.items() if layout.feature_values]
    assert with_features
    for node_set in with_features:
        before, after = assembled.nodes[node_set], gathered.nodes[node_set]
        rows = np.unique(before.feature_rows)
        for feature, values in after.feature_values.items():
            assert len(values) == len(rows) <= len(before.feature_rows)
