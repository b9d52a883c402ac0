"""run_in_memory (sampler.memory.engine): how shards are spread over worker processes
and samples over chunks changes nothing in the files; progress and errors reach the
caller."""
import os

import pytest

from sampler.memory import engine
from sampler.memory.engine import run_in_memory
from tests.sampler.memory.test_graph import GRAPHS, make_job


def written(folder) -> dict[str, bytes]:
    return {name: open(os.path.join(folder, name), "rb").read()
            for name in sorted(os.listdir(folder))}


def run(name, tmp_path, **kwargs):
    (tmp_path / "out").mkdir(parents=True)  # run_sampling's staging folder, here
    job = make_job(GRAPHS[name], tmp_path)
    calls = {"start": [], "progress": []}
    stats = run_in_memory(job, on_start=lambda n, b: calls["start"].append((n, b)),
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
    [(seeds, graph_bytes)] = calls["start"]
    assert seeds == report["seeds_read"] > 0
    assert graph_bytes > 0
    # Every written subgraph is reported once, a chunk (at most 2 samples) at a time.
    assert sum(calls["progress"]) == report["subgraphs_written"]
    assert max(calls["progress"]) <= 2 and len(calls["progress"]) > 1


def test_a_workers_error_reaches_the_caller(tmp_path, monkeypatch):
    def broken(*args):
        raise ValueError("broken chunk")
    monkeypatch.setattr(engine, "_sample_chunk", broken)
    with pytest.raises(ValueError, match="broken chunk"):
        run("mag_tiny", tmp_path, workers=2)
    assert not engine._SHARED  # the graph is released for the next run
