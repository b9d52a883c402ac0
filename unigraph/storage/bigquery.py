"""BigQuery as a table store: where a table is, the clients, queries and read sessions.

A node set, edge set or seeds table may live in BigQuery instead of files, named
as TF-GNN names it (GraphSchema `metadata.bigquery`): a `table_spec`
(project, dataset, table) or a `sql` query. Seeds name a table as
`bq://project.dataset.table`. This module is the only one that talks to
BigQuery; unigraph/tables/bigquery.py turns what it reads into batches.

Reading goes through the BigQuery Storage Read API (never an export to files):
one read session per table, selecting only the columns the schema asks for,
with Arrow record batches on as many streams as BigQuery offers, each stream a
unit of parallel work. A `sql` source first runs as a query into a temporary
table (`CREATE OR REPLACE TABLE ... AS <sql>`), because the Storage API reads
tables; the table sits in the dataset `graph_sampler_tmp_<location>` of the
billing project (created on first use, tables in it expire after a day) and is
dropped as soon as every stream has been read. TF-GNN's `read_method` and
`reshuffle` are accepted and have no effect: the read is always direct, and
the read streams are always spread over the workers.

Clients. By default the clients use application-default credentials (`gcloud
auth application-default login`, GOOGLE_APPLICATION_CREDENTIALS, or a
worker's service account); without any, a one-line BigQueryAccessError says so
at once (nothing here ever prompts). For a local emulator:
  BIGQUERY_EMULATOR_HOST=host:port           REST (tables, queries), anonymous
  BIGQUERY_STORAGE_EMULATOR_HOST=host:port   Storage Read API over gRPC, anonymous
The billing project (read sessions, queries, the temporary dataset) is the one the
command line gives (`--bigquery-project`, else Beam's `--project`, as Beam's own
BigQuery IO bills), else GOOGLE_CLOUD_PROJECT, else the credentials' project, else
the table's own.

The google-cloud libraries are imported on first use: they are heavy, and most
runs read no BigQuery table.
"""
from __future__ import annotations

import contextlib
import dataclasses
import os
import re
import threading
import uuid
from typing import Iterator

import pyarrow as pa

from unigraph.protos import graph_schema_pb2 as gs
from unigraph.errors import SchemaError, TableError, one_line

EMULATOR_ENV = "BIGQUERY_EMULATOR_HOST"
STORAGE_EMULATOR_ENV = "BIGQUERY_STORAGE_EMULATOR_HOST"
PROJECT_ENV = "GOOGLE_CLOUD_PROJECT"
URI_PREFIX = "bq://"
SOURCE_NAME_PREFIX = "BigQuery "  # every Source.name starts so (messages, row_location)

_SCOPES = ("https://www.googleapis.com/auth/bigquery",
           "https://www.googleapis.com/auth/cloud-platform")
TEMP_DATASET_PREFIX = "graph_sampler_tmp"
TEMP_TABLE_EXPIRATION_MS = 24 * 3600 * 1000  # a table left behind by a failed run
# BigQuery's own ceiling; it offers fewer streams for a table too small to need them.
MAX_READ_STREAMS = 1000
# Metadata calls retry transient errors for at most this long, not the libraries'
# default of ten minutes: a mistyped emulator address should fail within a minute.
METADATA_DEADLINE_S = 60.0
_NAME_PART = re.compile(r"^[A-Za-z0-9_\-:.$]+$")


class BigQueryAccessError(TableError):
    """BigQuery cannot be used at all: no credentials, no permission, or unreachable."""


# ---- where a table is ---------------------------------------------------------------

@dataclasses.dataclass(frozen=True, order=True)
class TableRef:
    project: str  # "" until resolved against the default project
    dataset: str
    table: str

    def __str__(self) -> str:
        return ".".join(p for p in (self.project, self.dataset, self.table) if p)

    @property
    def storage_path(self) -> str:
        """The Storage API's name of the table."""
        return f"projects/{self.project}/datasets/{self.dataset}/tables/{self.table}"


@dataclasses.dataclass(frozen=True)
class Source:
    """A BigQuery table to read: a table, or the result of a query."""

    owner: str                    # whose table: "node set 'paper'", "edge set 'cites'", "seeds"
    table: TableRef | None = None
    sql: str | None = None

    @property
    def name(self) -> str:
        """How messages name it: "BigQuery table p.d.t" / "BigQuery sql of node set 'x'"."""
        if self.table is not None:
            return f"{SOURCE_NAME_PREFIX}table {self.table}"
        return f"{SOURCE_NAME_PREFIX}sql of {self.owner}"


def is_source_name(text: str) -> bool:
    return text.startswith(SOURCE_NAME_PREFIX)


def source_from_metadata(bq: gs.BigQuery, owner: str, where: str) -> Source:
    """The Source a GraphSchema's `metadata.bigquery` names; SchemaError if it names none."""
    if bq.HasField("table_spec"):
        spec = bq.table_spec
        for field in ("dataset", "table"):
            if not getattr(spec, field):
                raise SchemaError(f"{where}: metadata.bigquery.table_spec has no {field}")
        ref = TableRef(spec.project, spec.dataset, spec.table)
        _check_name_parts(ref, where)
        return Source(owner, table=ref)
    if bq.HasField("sql"):
        if not bq.sql.strip():
            raise SchemaError(f"{where}: metadata.bigquery.sql is empty")
        return Source(owner, sql=bq.sql)
    raise SchemaError(f"{where}: metadata.bigquery names neither a table_spec nor sql")


def is_uri(text: str) -> bool:
    return text.startswith(URI_PREFIX)


def source_from_uri(uri: str, owner: str) -> Source:
    """`bq://project.dataset.table` (or `bq://dataset.table`, in the default project)."""
    parts = uri[len(URI_PREFIX):].rsplit(".", 2)
    if len(parts) == 2:
        parts = [""] + parts
    if len(parts) != 3 or not all(parts[1:]) or any(not p.strip() for p in parts[1:]):
        raise TableError(f"{owner} {uri}: expected bq://project.dataset.table")
    ref = TableRef(*parts)
    _check_name_parts(ref, f"{owner} {uri}")
    return Source(owner, table=ref)


def _check_name_parts(ref: TableRef, where: str) -> None:
    for part in (ref.project, ref.dataset, ref.table):
        if part and not _NAME_PART.match(part):
            raise SchemaError(f"{where}: {part!r} is not a BigQuery project, dataset or "
                              f"table name")


# ---- errors -------------------------------------------------------------------------

@contextlib.contextmanager
def _translated(where: str):
    """Library exceptions -> one-line TableError/BigQueryAccessError prefixed by `where`."""
    from google.api_core import exceptions as api
    from google.auth import exceptions as auth

    try:
        yield
    except (SchemaError, TableError):
        raise
    except api.NotFound as e:
        detail = _message(e)
        if not detail.lower().startswith("not found"):
            detail = f"not found: {detail}"
        raise TableError(f"{where}: {detail}") from None
    except (api.Forbidden, api.Unauthorized, api.PermissionDenied,
            api.Unauthenticated) as e:
        raise BigQueryAccessError(f"{where}: permission denied: {_message(e)}") from None
    except (api.ServiceUnavailable, api.RetryError, api.DeadlineExceeded,
            auth.TransportError, ConnectionError) as e:
        raise BigQueryAccessError(f"{where}: cannot reach BigQuery{_endpoints()}: "
                                  f"{_message(e)}") from None
    except auth.GoogleAuthError as e:
        raise BigQueryAccessError(f"{where}: credentials rejected: {_message(e)}") from None
    except api.GoogleAPICallError as e:
        raise TableError(f"{where}: {_message(e)}") from None


_REQUEST_PREFIX = re.compile(r"^(GET|POST|PUT|PATCH|DELETE) \S+: ")


def _message(error: Exception) -> str:
    text = _REQUEST_PREFIX.sub("", getattr(error, "message", None) or str(error))
    cause = getattr(error, "cause", None)  # RetryError: the last error behind it
    if cause is not None:
        text = f"{text} ({cause})"
    return one_line(text)[:500]


def _endpoints() -> str:
    hosts = [f"{name}={os.environ[name]}" for name in (EMULATOR_ENV, STORAGE_EMULATOR_ENV)
             if os.environ.get(name)]
    return f" ({', '.join(hosts)})" if hosts else ""


# ---- clients --------------------------------------------------------------------------

_lock = threading.Lock()
_cache: dict = {}


def _emulator_url(variable: str) -> str | None:
    host = os.environ.get(variable, "").strip()
    if not host:
        return None
    return host if "://" in host else f"http://{host}"


def _adc():
    """Application-default credentials and their project, or a one-line error (never a prompt)."""
    key = ("adc",)
    with _lock:
        if key not in _cache:
            import google.auth
            from google.auth.exceptions import DefaultCredentialsError

            try:
                _cache[key] = google.auth.default(scopes=list(_SCOPES))
            except DefaultCredentialsError:
                raise BigQueryAccessError(
                    "BigQuery: no Google credentials found: run `gcloud auth "
                    "application-default login`, or set GOOGLE_APPLICATION_CREDENTIALS to a "
                    "service account key file (for an emulator, set BIGQUERY_EMULATOR_HOST and "
                    "BIGQUERY_STORAGE_EMULATOR_HOST)") from None
        return _cache[key]


# The project the command line names (`billing_project_given`); None: not named.
_given_project: str | None = None


@contextlib.contextmanager
def billing_project_given(project: str | None) -> Iterator[None]:
    """Within the block, BigQuery jobs and read sessions are billed to `project` (when not
    None) before GOOGLE_CLOUD_PROJECT and the credentials' project. The launching process
    opens every session and runs every query, so the workers need not know it."""
    global _given_project
    previous, _given_project = _given_project, project or _given_project
    try:
        yield
    finally:
        _given_project = previous


def default_project() -> str | None:
    """The project given on the command line, else GOOGLE_CLOUD_PROJECT, else the
    credentials' project (no credentials needed for an emulator)."""
    if _given_project:
        return _given_project
    if os.environ.get(PROJECT_ENV):
        return os.environ[PROJECT_ENV]
    if _emulator_url(EMULATOR_ENV):
        return None
    return _adc()[1]


def resolve(ref: TableRef, where: str) -> TableRef:
    """`ref` with its project filled in from the default project."""
    if ref.project:
        return ref
    project = default_project()
    if not project:
        raise TableError(f"{where}: the table names no project and there is no default "
                         f"project; give table_spec.project or --bigquery-project, or set "
                         f"{PROJECT_ENV}")
    return dataclasses.replace(ref, project=project)


def _rest(project: str):
    """The REST client (tables, datasets, query jobs) billed to `project`."""
    url = _emulator_url(EMULATOR_ENV)
    key = ("rest", url, project)
    with _lock:
        client = _cache.get(key)
    if client is not None:
        return client
    from google.api_core.client_options import ClientOptions
    from google.cloud import bigquery

    if url:
        from google.auth.credentials import AnonymousCredentials

        client = bigquery.Client(project=project, credentials=AnonymousCredentials(),
                                 client_options=ClientOptions(api_endpoint=url))
    else:
        credentials, _ = _adc()
        client = bigquery.Client(project=project, credentials=credentials)
    with _lock:
        return _cache.setdefault(key, client)


def _storage():
    """The Storage Read API client (gRPC)."""
    host = os.environ.get(STORAGE_EMULATOR_ENV, "").strip()
    key = ("storage", host)
    with _lock:
        client = _cache.get(key)
    if client is not None:
        return client
    from google.cloud.bigquery_storage_v1 import BigQueryReadClient

    if host:
        import grpc
        from google.cloud.bigquery_storage_v1.services.big_query_read.transports import (
            BigQueryReadGrpcTransport)

        channel = grpc.insecure_channel(host.split("://", 1)[-1])
        client = BigQueryReadClient(transport=BigQueryReadGrpcTransport(channel=channel))
    else:
        credentials, _ = _adc()
        client = BigQueryReadClient(credentials=credentials)
    with _lock:
        return _cache.setdefault(key, client)


def _retry():
    from google.cloud.bigquery import DEFAULT_RETRY

    return DEFAULT_RETRY.with_deadline(METADATA_DEADLINE_S)


def _grpc_retry():
    from google.api_core import exceptions as api
    from google.api_core.retry import Retry, if_exception_type

    return Retry(predicate=if_exception_type(api.ServiceUnavailable, api.DeadlineExceeded),
                 initial=0.1, maximum=5.0, timeout=METADATA_DEADLINE_S)


def billing_project(table: TableRef | None = None) -> str:
    project = default_project() or (table.project if table else None)
    if not project:
        raise TableError(f"BigQuery: no project to run jobs in; give --bigquery-project "
                         f"(or Beam's --project) or set {PROJECT_ENV}")
    return project


# ---- metadata -------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class TableInfo:
    ref: TableRef
    columns: tuple[str, ...]   # top-level column names, in table order
    rows: int | None
    bytes: int | None
    kind: str                  # TABLE, VIEW, MATERIALIZED_VIEW, EXTERNAL, SNAPSHOT, ...


def table_info(ref: TableRef, where: str) -> TableInfo:
    """A table's columns, size and kind (REST tables.get)."""
    ref = resolve(ref, where)
    with _translated(where):
        table = _rest(billing_project(ref)).get_table(str(ref), retry=_retry())
        return TableInfo(ref, tuple(f.name for f in table.schema), table.num_rows,
                         table.num_bytes, table.table_type or "TABLE")


@dataclasses.dataclass(frozen=True)
class QueryInfo:
    columns: tuple[str, ...]
    bytes_processed: int | None
    location: str | None


def dry_run(source: Source) -> QueryInfo:
    """What a `sql` source would produce, checked by BigQuery without running it."""
    from google.cloud import bigquery

    with _translated(source.name):
        job = _rest(billing_project()).query(
            _statement(source), job_config=bigquery.QueryJobConfig(dry_run=True,
                                                                    use_query_cache=False),
            retry=_retry(), job_retry=None)  # a dry run has no job to run again
        return QueryInfo(tuple(f.name for f in job.schema or ()), job.total_bytes_processed,
                         job.location)


def _statement(source: Source) -> str:
    return source.sql.strip().rstrip(";").rstrip()


# ---- queries into temporary tables ------------------------------------------------------

def run_into_temporary_table(source: Source) -> TableRef:
    """Runs a `sql` source into a fresh temporary table; returns the table."""
    from google.cloud import bigquery

    location = dry_run(source).location or "US"
    project = billing_project()
    dataset_id = f"{TEMP_DATASET_PREFIX}_{re.sub(r'[^a-z0-9]', '_', location.lower())}"
    ref = TableRef(project, dataset_id, f"sampler_{uuid.uuid4().hex}")
    client = _rest(project)
    with _translated(f"{source.name}: temporary dataset {project}.{dataset_id}"):
        dataset = bigquery.Dataset(f"{project}.{dataset_id}")
        dataset.location = location
        dataset.default_table_expiration_ms = TEMP_TABLE_EXPIRATION_MS
        dataset.description = ("Query results the graph sampler reads; each table is dropped "
                               "after its run and expires after a day if a run fails.")
        client.create_dataset(dataset, exists_ok=True, retry=_retry())
    with _translated(source.name):
        job = client.query(f"CREATE OR REPLACE TABLE `{ref}` AS\n{_statement(source)}",
                           location=location, retry=_retry())
        job.result()
    return ref


def drop_table(ref: TableRef) -> None:
    """Drops a temporary table (absent is fine: it may have expired or been dropped)."""
    with _translated(f"temporary table {ref}"):
        # The table lives in the billing project that made it; a worker that drops it
        # need not be told that project.
        _rest(ref.project or billing_project(ref)).delete_table(str(ref), not_found_ok=True, retry=_retry())


# ---- read sessions -------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class Session:
    schema: bytes               # the Arrow schema, IPC-serialized
    streams: tuple[str, ...]    # read stream names; empty for an empty table


def open_session(ref: TableRef, columns: list[str], where: str) -> Session:
    """A read session on `columns` of `ref` (Arrow, LZ4-compressed where supported)."""
    from google.cloud.bigquery_storage_v1 import types

    options = types.ReadSession.TableReadOptions(
        selected_fields=list(columns),
        arrow_serialization_options=types.ArrowSerializationOptions(
            buffer_compression=types.ArrowSerializationOptions.CompressionCodec.LZ4_FRAME))
    request = types.ReadSession(table=ref.storage_path, data_format=types.DataFormat.ARROW,
                                read_options=options)
    with _translated(where):
        session = _storage().create_read_session(
            parent=f"projects/{billing_project(ref)}", read_session=request,
            max_stream_count=MAX_READ_STREAMS, retry=_grpc_retry(),
            timeout=METADATA_DEADLINE_S)
    return Session(bytes(session.arrow_schema.serialized_schema),
                   tuple(stream.name for stream in session.streams))


def read_stream(stream: str, schema: pa.Schema, where: str) -> Iterator[pa.RecordBatch]:
    """The record batches of one read stream (the client resumes it after transient errors)."""
    with _translated(where):
        for response in _storage().read_rows(stream):
            if response.row_count:
                yield pa.ipc.read_record_batch(
                    pa.py_buffer(response.arrow_record_batch.serialized_record_batch), schema)
