"""A real BigQuery emulator for the tests: bqemulator, in a virtualenv of its own.

bqemulator (REST + the Storage Read API over gRPC, DuckDB behind them) pins
grpcio-tools < 1.81, which the project's own environment cannot take, so it
runs from a virtualenv this module builds once under `.cache/` in the repo
(git-ignored), from PyPI, under a file lock so that parallel test workers build
it once. DuckDB's spatial extension, which the emulator loads at start-up and
would otherwise download, comes from the `duckdb-extension-spatial` package and
is installed into the emulator's own DuckDB home (HOME points there), so the
emulator starts offline.

`emulator` starts a server on free 127.0.0.1 ports, points BIGQUERY_EMULATOR_HOST
and BIGQUERY_STORAGE_EMULATOR_HOST at it for the test process, and stops it at
the end; `load_table` creates a table from an Arrow table through the REST API.
"""
from __future__ import annotations

import base64
import contextlib
import fcntl
import hashlib
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request

import pyarrow as pa

from tests.conftest import REPO_ROOT

# Versions that start offline together (duckdb pinned to the extensions' version).
REQUIREMENTS = ("bqemulator==1.4.0", "duckdb==1.5.5", "duckdb-extension-spatial==1.5.5",
                "duckdb-extension-avro==1.5.5", "numpy>=1.26,<3")
EXTENSIONS = ("spatial", "avro")
CACHE = os.path.join(REPO_ROOT, ".cache")
VENV = os.path.join(CACHE, "bqemulator-" + hashlib.sha256(
    "\n".join(REQUIREMENTS).encode()).hexdigest()[:12])
READY = os.path.join(VENV, ".ready")
DUCKDB_HOME = os.path.join(VENV, "duckdb-home")
PROJECT = "sampler-test"
START_TIMEOUT_S = 90

_INSTALL_EXTENSIONS = """
import importlib, pathlib, sys
import duckdb
connection = duckdb.connect()
version = connection.sql("PRAGMA version").fetchone()[0]
for name in sys.argv[1:]:
    package = pathlib.Path(importlib.import_module(f"duckdb_extension_{name}").__file__).parent
    extension = package / "extensions" / version / f"{name}.duckdb_extension"
    connection.execute(f"INSTALL '{extension}'")
"""


def _run(command: list[str], what: str, **kwargs) -> None:
    result = subprocess.run(command, capture_output=True, text=True, **kwargs)
    if result.returncode:
        raise RuntimeError(f"bqemulator virtualenv: {what} failed (exit {result.returncode}):\n"
                           f"{result.stdout[-3000:]}\n{result.stderr[-3000:]}")


def ensure_venv() -> str:
    """The emulator's virtualenv, built on first use; returns its python."""
    python = os.path.join(VENV, "bin", "python")
    if os.path.exists(READY):
        return python
    os.makedirs(CACHE, exist_ok=True)
    with open(os.path.join(CACHE, "bqemulator.lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another worker may be building it: wait
        try:
            if os.path.exists(READY):
                return python
            shutil.rmtree(VENV, ignore_errors=True)  # a build that died half way
            _run([sys.executable, "-m", "venv", VENV], "creating the virtualenv")
            _run([python, "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                  *REQUIREMENTS], "pip install")
            os.makedirs(DUCKDB_HOME, exist_ok=True)
            _run([python, "-c", _INSTALL_EXTENSIONS, *EXTENSIONS],
                 "installing the DuckDB extensions", env=_server_env())
            with open(READY, "w") as f:
                f.write("\n".join(REQUIREMENTS) + "\n")
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
    return python


def _server_env() -> dict:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("BIGQUERY_", "BQEMU_", "GOOGLE_", "PYTHON"))}
    env["HOME"] = DUCKDB_HOME  # DuckDB finds its extensions under ~/.duckdb
    return env


def _die_with_parent() -> None:
    """In the emulator's process: end it with SIGTERM when the test process dies, even
    if that one is killed before its fixtures tear down (Linux's PR_SET_PDEATHSIG)."""
    import ctypes
    import signal

    ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Emulator:
    """A running bqemulator process; `rest` and `grpc` are host:port."""

    def __init__(self, log_path: str):
        python = ensure_venv()
        self.rest, self.grpc = f"127.0.0.1:{free_port()}", f"127.0.0.1:{free_port()}"
        self._log = open(log_path, "wb")
        self._process = subprocess.Popen(
            [python, "-m", "bqemulator", "start", "--ephemeral", "--project", PROJECT,
             "--rest-host", "127.0.0.1", "--rest-port", self.rest.split(":")[1],
             "--grpc-host", "127.0.0.1", "--grpc-port", self.grpc.split(":")[1],
             "--log-level", "warning"],
            stdout=self._log, stderr=subprocess.STDOUT, env=_server_env(),
            preexec_fn=_die_with_parent)
        self._log_path = log_path
        try:
            self._wait_until_up()
        except BaseException:
            self.stop()
            raise

    def _wait_until_up(self) -> None:
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                break
            with contextlib.suppress(OSError):
                with urllib.request.urlopen(f"http://{self.rest}/healthz", timeout=2):
                    with socket.create_connection(tuple(self._address(self.grpc)), timeout=2):
                        return
            time.sleep(0.1)
        with open(self._log_path, "rb") as f:
            tail = f.read().decode(errors="replace")[-3000:]
        raise RuntimeError(f"bqemulator did not start (exit {self._process.poll()}):\n{tail}")

    @staticmethod
    def _address(host_port: str):
        host, port = host_port.rsplit(":", 1)
        return host, int(port)

    def stop(self) -> None:
        if self._process.poll() is None:
            self._process.terminate()
            try:
                self._process.wait(10)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
        self._log.close()

    @contextlib.contextmanager
    def environment(self):
        """The test process pointed at this emulator (both APIs, a default project)."""
        wanted = {"BIGQUERY_EMULATOR_HOST": self.rest,
                  "BIGQUERY_STORAGE_EMULATOR_HOST": self.grpc,
                  "GOOGLE_CLOUD_PROJECT": PROJECT}
        old = {k: os.environ.get(k) for k in wanted}
        os.environ.update(wanted)
        try:
            yield self
        finally:
            for k, v in old.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v

    def client(self):
        """A REST client (google-cloud-bigquery) for setting tables up."""
        from google.api_core.client_options import ClientOptions
        from google.auth.credentials import AnonymousCredentials
        from google.cloud import bigquery

        return bigquery.Client(project=PROJECT, credentials=AnonymousCredentials(),
                               client_options=ClientOptions(api_endpoint=f"http://{self.rest}"))


# ---- loading tables -------------------------------------------------------------------------

def _bigquery_field(name: str, arrow_type: pa.DataType):
    from google.cloud import bigquery

    mode = "NULLABLE"
    if pa.types.is_list(arrow_type) or pa.types.is_large_list(arrow_type) or \
            pa.types.is_fixed_size_list(arrow_type):
        mode, arrow_type = "REPEATED", arrow_type.value_type
    if pa.types.is_struct(arrow_type):
        return bigquery.SchemaField(name, "RECORD", mode=mode, fields=[
            _bigquery_field(f.name, f.type) for f in arrow_type])
    if pa.types.is_list(arrow_type):
        raise ValueError(f"column {name}: BigQuery has no arrays of arrays; wrap the inner "
                         f"array in a STRUCT")
    for test, bq_type in ((pa.types.is_boolean, "BOOL"), (pa.types.is_integer, "INT64"),
                          (pa.types.is_floating, "FLOAT64"), (pa.types.is_string, "STRING"),
                          (pa.types.is_large_string, "STRING"), (pa.types.is_binary, "BYTES"),
                          (pa.types.is_large_binary, "BYTES")):
        if test(arrow_type):
            return bigquery.SchemaField(name, bq_type, mode=mode)
    raise ValueError(f"column {name}: no BigQuery type for {arrow_type}")


def _json_value(value):
    if isinstance(value, bytes):
        return base64.b64encode(value).decode()
    if isinstance(value, list):
        return [_json_value(v) for v in value]
    if isinstance(value, dict):
        return {k: _json_value(v) for k, v in value.items()}
    return value


def load_table(client, table_id: str, table: pa.Table, chunk_rows: int = 5000) -> None:
    """Creates (or replaces) `table_id` with the rows of `table`, through the REST API."""
    from google.cloud import bigquery

    # Fail within seconds: the client's default retries last ten minutes.
    retry = bigquery.DEFAULT_RETRY.with_deadline(20)
    schema = [_bigquery_field(f.name, f.type) for f in table.schema]
    client.create_dataset(table_id.rsplit(".", 1)[0], exists_ok=True, retry=retry)
    client.delete_table(table_id, not_found_ok=True, retry=retry)
    client.create_table(bigquery.Table(table_id, schema=schema), retry=retry)
    rows = [{k: _json_value(v) for k, v in row.items()} for row in table.to_pylist()]
    for start in range(0, len(rows), chunk_rows):
        chunk = rows[start:start + chunk_rows]
        errors = client.insert_rows_json(table_id, chunk, row_ids=[None] * len(chunk),
                                         retry=retry)
        if errors:
            raise RuntimeError(f"loading {table_id}: {errors[:3]}")


def as_bigquery(table: pa.Table) -> pa.Table:
    """A Parquet-style table as BigQuery can hold it: no '#' in column names (TF-GNN's
    `id`, `source`, `target`, `weight`), fixed-size lists as plain lists."""
    names = [name.lstrip("#") for name in table.column_names]
    columns = []
    for column in table.columns:
        if pa.types.is_fixed_size_list(column.type):
            column = column.cast(pa.list_(column.type.value_type))
        columns.append(column)
    return pa.table(columns, names=names)
