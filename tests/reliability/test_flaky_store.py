"""A flaky object store: the GCS emulator behind tests/reliability/fault_proxy.py.

Per fault kind (connection reset before or after the store acted, 503, a slow answer,
a truncated body), once on the reads of the graph's tables and once on the output's
writes and commit: `sample` retries within its bounds (unigraph/storage/gcs.py) and
writes the very bytes of a run without faults. A store that stays down fails in one
line naming the object, within SAMPLER_GCS_RETRY_S, the previous output intact.
About 40 s (each retry waits about a second, as the client library's backoff does).
"""
import json
import os
import time

import pytest

from pipelines import sample
from tests.gcs_emulator import free_port
from tests.reliability.fault_proxy import FAULTS, Proxy, always, every
from tests.unigraph import graphs

BUCKET = "flaky"
SPEC = """
seed_op { op_name: "seed" node_set_name: "item" }
sampling_ops { op_name: "links" input_op_names: "seed" edge_set_name: "link"
               sample_size: 2 strategy: RANDOM_UNIFORM }
"""
READS = ("GET",)
WRITES = ("POST", "PUT", "DELETE", "PATCH")


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    """The emulator (direct client for setup and checks) and the graph uploaded to it."""
    from gcp_storage_emulator import server as emulator
    from google.cloud import storage

    port = free_port()
    server = emulator.create_server("127.0.0.1", port, in_memory=True, default_bucket=BUCKET)
    server.start()
    old = os.environ.get("STORAGE_EMULATOR_HOST")
    os.environ["STORAGE_EMULATOR_HOST"] = f"http://127.0.0.1:{port}"
    bucket = storage.Client(project="test").bucket(BUCKET)  # bound to the emulator itself
    local = tmp_path_factory.mktemp("graph")
    graphs.write_parquet_graph(str(local))
    (local / "spec.pbtxt").write_text(SPEC)
    for name in os.listdir(local):
        bucket.blob(f"graph/{name}").upload_from_filename(str(local / name))
    try:
        yield {"port": port, "bucket": bucket, "local": local}
    finally:
        server.stop()
        if old is None:
            os.environ.pop("STORAGE_EMULATOR_HOST", None)
        else:
            os.environ["STORAGE_EMULATOR_HOST"] = old


def _objects(bucket, prefix) -> dict:
    """name -> bytes under a prefix (the run report without its wall time)."""
    found = {}
    for blob in bucket.client.list_blobs(BUCKET, prefix=prefix + "/"):
        data = blob.download_as_bytes()
        name = blob.name[len(prefix) + 1:]
        found[name] = _comparable(name, data)
    return found


def _local(folder) -> dict:
    """relative name ('/'-separated, as object names are) -> bytes, every file below."""
    found = {}
    for root, _, files in os.walk(folder):
        for file in files:
            path = os.path.join(root, file)
            name = os.path.relpath(path, folder).replace(os.sep, "/")
            with open(path, "rb") as f:
                found[name] = _comparable(name, f.read())
    return found


def _comparable(name: str, data: bytes) -> bytes:
    """A file's bytes as two runs of one job share them: the report without its time."""
    if name != "sample_report.json":
        return data
    report = json.loads(data)
    report.pop("wall_time_s")
    return json.dumps(report, sort_keys=True).encode()


@pytest.fixture(scope="module")
def reference(store, tmp_path_factory):
    """The output of the job with no fault, written locally from the local tables."""
    out = tmp_path_factory.mktemp("reference")
    code = sample.main(["--graph", str(store["local"]), "--spec",
                        str(store["local"] / "spec.pbtxt"), "--output", str(out),
                        "--workers", "1", "--quiet", "--seed", "1"])
    assert code == 0
    return _local(out)


def _through(store, monkeypatch, plan, **env):
    proxy = Proxy(store["port"], plan)
    monkeypatch.setenv("STORAGE_EMULATOR_HOST", proxy.url)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    return proxy


def _graph_url():
    return f"gs://{BUCKET}/graph/graph_schema.pbtxt"


def _sample(graph, spec, output, capsys, seed=1):
    code = sample.main(["--graph", graph, "--spec", spec, "--output", output,
                        "--workers", "1", "--quiet", "--seed", str(seed)])
    return code, capsys.readouterr().err


# A read timeout shorter than the slow answer makes `slow` a stalled read to retry.
ENV = {"slow": {"SAMPLER_GCS_TIMEOUT_S": "1"}}


@pytest.mark.parametrize("fault", FAULTS)
def test_table_reads_retry_through(store, reference, tmp_path, monkeypatch, capsys, fault):
    with _through(store, monkeypatch, every(fault, 3, 1, methods=READS),
                  **ENV.get(fault, {})) as proxy:
        code, err = _sample(_graph_url(), f"gs://{BUCKET}/graph/spec.pbtxt",
                            str(tmp_path / "out"), capsys)
    assert proxy.faults[fault] == 1, proxy.faults   # the fault did happen
    assert code == 0, err
    assert _local(tmp_path / "out") == reference


@pytest.mark.parametrize("fault", FAULTS)
def test_output_commit_retries_through(store, reference, tmp_path, monkeypatch, capsys,
                                       fault):
    output = f"gs://{BUCKET}/out-{fault}"
    local = store["local"]
    code, err = _sample(str(local), str(local / "spec.pbtxt"), output, capsys, seed=2)
    assert code == 0, err  # a previous output, replaced below
    plan = every(fault, 2, 1, methods=WRITES) if fault != "slow" else every(fault, 2, 1)
    with _through(store, monkeypatch, plan, **ENV.get(fault, {})) as proxy:
        code, err = _sample(str(local), str(local / "spec.pbtxt"), output, capsys)
    assert proxy.faults[fault] == 1, proxy.faults
    assert code == 0, err
    assert _objects(store["bucket"], f"out-{fault}") == reference  # nothing else left


def test_a_store_that_stays_down_fails_in_one_line(store, tmp_path, monkeypatch, capsys):
    """Reads that keep failing: one line naming the object, within the retry bound."""
    local = store["local"]
    output = f"gs://{BUCKET}/down-reads"
    code, err = _sample(str(local), str(local / "spec.pbtxt"), output, capsys)
    assert code == 0, err
    previous = _objects(store["bucket"], "down-reads")
    started = time.monotonic()
    with _through(store, monkeypatch, always("503"), SAMPLER_GCS_RETRY_S="3"):
        code, err = _sample(_graph_url(), f"gs://{BUCKET}/graph/spec.pbtxt", output, capsys,
                            seed=3)
    assert time.monotonic() - started < 30
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert (f"gs://{BUCKET}/graph/graph_schema.pbtxt: object store still failing after 3 s "
            f"of retries (SAMPLER_GCS_RETRY_S): 503") in lines[0], err
    monkeypatch.setenv("STORAGE_EMULATOR_HOST", f"http://127.0.0.1:{store['port']}")
    assert _objects(store["bucket"], "down-reads") == previous


def test_a_commit_cut_short_rolls_forward(store, tmp_path, monkeypatch, capsys):
    """The store goes down in the middle of the commit's moves: one line, the folder
    refused by readers (never a mix of two outputs passed off as one), and the next run
    completes the moves before it does its own work."""
    from pipelines import sample_check

    local = store["local"]
    output = f"gs://{BUCKET}/down-commit"
    code, err = _sample(str(local), str(local / "spec.pbtxt"), output, capsys, seed=2)
    assert code == 0, err
    # Staging goes through; of the commit's moves (copy + delete on an object store)
    # into the folder, every copy after the first fails.
    copies = {"n": 0}

    def plan(method, path, index):
        destination = path.split("rewriteTo", 1)[1] if "rewriteTo" in path else ""
        if destination and "staging" not in destination and ".tmp-" not in destination:
            copies["n"] += 1
            return "reset_before" if copies["n"] > 1 else None
        return None
    with _through(store, monkeypatch, plan, SAMPLER_GCS_RETRY_S="2"):
        code, err = _sample(str(local), str(local / "spec.pbtxt"), output, capsys)
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "the commit was interrupted" in lines[0], err
    assert f"--output {output}" in lines[0]
    monkeypatch.setenv("STORAGE_EMULATOR_HOST", f"http://127.0.0.1:{store['port']}")
    assert sample_check.main([output]) == 2
    assert "was stopped while moving its output into place" in capsys.readouterr().err
    code, err = _sample(str(local), str(local / "spec.pbtxt"), output, capsys, seed=1)
    assert code == 0, err
    reference = tmp_path / "reference"
    assert _sample(str(local), str(local / "spec.pbtxt"), str(reference), capsys)[0] == 0
    assert _objects(store["bucket"], "down-commit") == _local(reference)
