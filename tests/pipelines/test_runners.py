"""The Beam pipeline on runners other than the in-process FnApiRunner, byte for byte.

- Beam's released DaskRunner on a dask.distributed cluster the test starts: a
  scheduler and two worker processes on 127.0.0.1 (nothing of Beam patched).
- Beam's PortableRunner with its embedded job service and an external SDK worker
  pool (`python -m apache_beam.runners.worker.worker_pool_main`) the test starts:
  the setup Flink and Spark use (`--environment_type EXTERNAL`), without a JVM.

Each writes the same files as the in-memory engine.
"""
import glob
import os
import shutil
import socket
import subprocess
import sys
import time

import pytest

from pipelines import sample
from tests.conftest import REPO_ROOT
from tests.pipelines.sampled_output import read_records, read_report

DEMO = os.path.join(REPO_ROOT, "examples", "mag_tiny")
SPEC = os.path.join(DEMO, "sampling_spec.pbtxt")


def _sample(out, *flags):
    assert sample.main(["--graph", DEMO, "--spec", SPEC, "--output", f"{out}/", "--quiet",
                        "--seed", "3", *flags]) == 0
    return read_records(str(out))


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    records = _sample(tmp_path_factory.mktemp("memory") / "out", "--engine", "memory")
    assert len(records) == 40
    return records


@pytest.fixture(scope="module")
def dask_cluster():
    distributed = pytest.importorskip("dask.distributed")
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                       host="127.0.0.1", dashboard_address=None,
                                       memory_limit="1GB")
    try:
        yield cluster
    finally:
        cluster.close()


def _executed_per_worker(address) -> list[int]:
    from dask.distributed import Client

    with Client(address) as client:
        counts = client.run(lambda dask_worker: dask_worker.state.executed_count)
    return sorted(counts.values())


def test_the_released_dask_runner_on_two_worker_processes_writes_the_same_files(
        tmp_path, reference, dask_cluster):
    before = _executed_per_worker(dask_cluster.scheduler_address)
    records = _sample(tmp_path / "dask", "--runner", "DaskRunner",
                      "--dask_client_address", dask_cluster.scheduler_address)
    assert records == reference
    report = read_report(str(tmp_path / "dask"))
    assert report["engine"] == "beam" and report["subgraphs_written"] == 40
    # Both worker processes ran part of the job: each file and each shard is its own
    # partition, so the work is spread (sampler/beam/runner.py).
    after = _executed_per_worker(dask_cluster.scheduler_address)
    assert all(a > b for a, b in zip(after, before)), (before, after)
    # The runner's client was closed when the job ended: only the scheduler's own
    # client (fire-and-forget) is left, and ours are gone too.
    deadline = time.time() + 30
    while time.time() < deadline and len(dask_cluster.scheduler.clients) > 1:
        time.sleep(0.2)
    assert list(dask_cluster.scheduler.clients) == ["fire-and-forget"]


def test_long_rows_on_the_dask_cluster_write_what_the_memory_engine_writes(
        tmp_path, dask_cluster):
    # Chunks of 3 edges: most nodes have long rows (kept in their bucket on Dask).
    chunked = ("--chunk-edges", "3")
    memory = _sample(tmp_path / "memory", "--engine", "memory", *chunked)
    dask = _sample(tmp_path / "dask", "--runner", "DaskRunner",
                   "--dask_client_address", dask_cluster.scheduler_address, *chunked)
    assert dask == memory
    assert read_report(str(tmp_path / "dask"))["draws_per_op"] == read_report(
        str(tmp_path / "memory"))["draws_per_op"]


def test_a_bad_input_on_the_dask_cluster_is_one_line(tmp_path, dask_cluster, capsys):
    # A duplicate node id is found inside the pipeline, on a worker: the error crosses
    # the cluster and reaches the user as one line, and nothing is written.
    graph = tmp_path / "graph"
    shutil.copytree(DEMO, graph)
    with open(graph / "author.csv", "a", encoding="utf-8") as f:
        f.write(open(graph / "author.csv", encoding="utf-8").read().splitlines()[1] + "\n")
    rc = sample.main(["--graph", str(graph), "--spec", SPEC, "--output", f"{tmp_path}/out/",
                      "--quiet", "--runner", "DaskRunner",
                      "--dask_client_address", dask_cluster.scheduler_address])
    err = capsys.readouterr().err
    assert rc != 0 and "duplicate node id" in err, err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert not glob.glob(f"{tmp_path}/out/*.tfrecord")


def test_workers_paused_at_their_memory_limit_end_the_job_in_one_line(tmp_path, monkeypatch,
                                                                       capsys):
    # Workers told to pause at 1% of their limit are paused from the start: on the
    # released DaskRunner such a job would wait forever; the watch cancels it.
    distributed = pytest.importorskip("dask.distributed")
    import dask

    monkeypatch.setenv("SAMPLER_DASK_STALL_S", "3")
    with dask.config.set({"distributed.worker.memory.pause": 0.01}):  # the nannies pass it on
        cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                           host="127.0.0.1", dashboard_address=None,
                                           memory_limit="1GB")
    try:
        rc = sample.main(["--graph", DEMO, "--spec", SPEC, "--output", f"{tmp_path}/out/",
                          "--quiet", "--runner", "DaskRunner",
                          "--dask_client_address", cluster.scheduler_address])
    finally:
        cluster.close()
    err = capsys.readouterr().err
    assert rc == 2, err
    assert "paused at its memory limit (953 MiB) for 3 s" in err, err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert not glob.glob(f"{tmp_path}/out/*.tfrecord")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _accepts(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


@pytest.fixture
def worker_pool(tmp_path):
    """An external SDK worker pool on 127.0.0.1; its workers run this interpreter (the
    pool starts them as `python`, found on PATH)."""
    port = _free_port()
    env = dict(os.environ, PATH=os.path.dirname(sys.executable) + os.pathsep
               + os.environ.get("PATH", ""))
    with open(tmp_path / "pool.log", "w", encoding="utf-8") as log:
        pool = subprocess.Popen([sys.executable, "-m",
                                 "apache_beam.runners.worker.worker_pool_main",
                                 f"--service_port={port}"], stdout=log,
                                stderr=subprocess.STDOUT, env=env)
    try:
        deadline = time.time() + 120
        while not _accepts(port) and time.time() < deadline and pool.poll() is None:
            time.sleep(0.2)
        assert _accepts(port), (tmp_path / "pool.log").read_text()
        yield f"127.0.0.1:{port}"
    finally:
        pool.terminate()
        pool.wait(30)


def test_the_portable_runner_with_an_external_worker_pool_writes_the_same_files(
        tmp_path, reference, worker_pool):
    records = _sample(tmp_path / "portable", "--runner", "PortableRunner",
                      "--job_endpoint", "embed", "--environment_type", "EXTERNAL",
                      "--environment_config", worker_pool)
    assert records == reference
