"""BigQuery tables through a real emulator (bqemulator, see tests/bigquery_emulator.py).

The "mixed" graph loaded into BigQuery reads to the same columns as from Parquet,
with RowIds that hash each row's content; a larger table spreads over several read
streams; a `sql` source reads through a temporary table that is dropped; seeds come
from `bq://` tables; the Beam transforms read what the in-process reader reads; every
error is one line naming the table and the column.
"""
import os
import subprocess
import sys

import apache_beam as beam
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from apache_beam.testing.util import assert_that, equal_to

from tests.bigquery_emulator import PROJECT, as_bigquery, load_table
from tests.conftest import REPO_ROOT
from tests.unigraph import graphs
from tests.unigraph.test_beam_io import pipeline as beam_pipeline
from tests.unigraph.test_beam_io import summary
from tests.unigraph.test_formats import SETS
from unigraph.storage import bigquery as bigquery_api
from unigraph.columnar.batches import NodeBatch
from unigraph.beam.read import ReadEdgeSet, ReadNodeSet, ReadSeeds
from unigraph.errors import TableError
from unigraph.columnar.ragged import Ragged
from unigraph.encoding.row_hash import row_hashes
from unigraph.schema import bigquery_source, check_schema, load_schema
from unigraph.tables import (close_bigquery, open_bigquery, read_seed_set, read_set,
                             read_unit, row_location, table_layout)

DATASET = "unigraph_tests"
TEMP_DATASET = f"{PROJECT}.{bigquery_api.TEMP_DATASET_PREFIX}_us"


def by_key(batch):
    """The batch's rows ordered by id, or by (source, target): BigQuery has no row order."""
    keys = (batch.ids,) if isinstance(batch, NodeBatch) else (batch.targets, batch.sources)
    return batch.take(np.lexsort(keys))


def read_all(loaded, kind, name, **kwargs):
    return by_key(graphs.merged(read_set(loaded, kind, name, **kwargs)))


def temporary_tables(client):
    try:
        return [t.table_id for t in client.list_tables(TEMP_DATASET)]
    except Exception:  # the dataset does not exist yet
        return []


@pytest.fixture(scope="module")
def mixed(bigquery_server, tmp_path_factory):
    """(Parquet schema, BigQuery schema) of the mixed graph: item and link as table_specs
    (link with an explicit project), tagged as a `sql` source; plus a seeds table."""
    folder = tmp_path_factory.mktemp("mixed")
    parquet_schema = graphs.write_parquet_graph(str(folder))
    client = bigquery_server.client()
    client.create_dataset(DATASET, exists_ok=True)
    for name in ("item", "link", "tagged"):
        load_table(client, f"{PROJECT}.{DATASET}.{name}",
                   as_bigquery(pq.read_table(folder / f"{name}.parquet")))
    load_table(client, f"{PROJECT}.{DATASET}.seeds", pa.table({"id": ["i3", "i1", "i3"]}))
    with open(parquet_schema) as f:
        text = f.read()
    text = (text.replace('filename: "item.parquet"',
                         f'bigquery {{ table_spec {{ dataset: "{DATASET}" table: "item" }} }}')
            .replace('filename: "link.parquet"',
                     f'bigquery {{ table_spec {{ project: "{PROJECT}" dataset: "{DATASET}" '
                     f'table: "link" }} read_method: DIRECT_READ }}')
            .replace('filename: "tagged.parquet"',
                     f'bigquery {{ sql: "SELECT target, source FROM {DATASET}.tagged '
                     f'WHERE source != \'\';" }}'))
    os.makedirs(folder / "bq")
    with open(folder / "bq" / "graph_schema.pbtxt", "w") as f:
        f.write(text)
    return load_schema(parquet_schema), load_schema(str(folder / "bq"))


def test_every_set_reads_like_parquet(bigquery, mixed):
    parquet, bq = mixed
    check_schema(bq)
    for kind, name in SETS:
        graphs.assert_same_batch(read_all(parquet, kind, name), read_all(bq, kind, name))


def test_row_ids_hash_the_content_whatever_the_batches(bigquery, mixed):
    parquet, bq = mixed
    item = read_all(parquet, "nodes", "item")
    layout = table_layout(bq, "nodes", "item")
    expected = row_hashes([item.ids] + [item.features[s.name] for s in layout.features])
    assert read_all(bq, "nodes", "item").rows.tolist() == expected.tolist()
    assert read_all(bq, "nodes", "item", batch_rows=1).rows.tolist() == expected.tolist()
    link = read_all(parquet, "edges", "link")
    features = [link.features[s.name] for s in table_layout(bq, "edges", "link").features]
    expected = row_hashes([link.sources, link.targets, link.weights] + features)
    assert read_all(bq, "edges", "link").rows.tolist() == expected.tolist()
    # The reversed edge set reads the same rows, hashed as stored (before the swap).
    back = read_all(bq, "edges", "linked_by")
    assert sorted(back.rows.tolist()) == sorted(row_hashes(
        [link.sources, link.targets, link.weights, link.features["kind"]]).tolist())


def bigquery_source_of(loaded, kind="nodes", name="n"):
    return bigquery_source(loaded, kind, name)


def test_a_larger_table_spreads_over_read_streams(bigquery, tmp_path):
    """Over 1 MB, the emulator (like BigQuery) offers several streams; each is a work
    unit, and together they hold every row once, with content RowIds."""
    n = 4000
    rng = np.random.default_rng(5)
    ids = np.array([f"n{i:05d}".encode() for i in range(n)])
    vectors = rng.normal(size=(n, 40))
    load_table(bigquery.client(), f"{PROJECT}.{DATASET}.wide",
               pa.table({"id": ids.astype(str), "v": list(vectors)}))
    (tmp_path / "graph_schema.pbtxt").write_text(
        'node_sets { key: "n" value { features { key: "v" value { dtype: DT_DOUBLE '
        'shape { dim { size: 40 } } } } metadata { bigquery { table_spec { '
        f'dataset: "{DATASET}" table: "wide" }} }} }} }} }}')
    loaded = load_schema(str(tmp_path))
    layout = table_layout(loaded, "nodes", "n")
    opened, units = open_bigquery(layout, bigquery_source_of(loaded))
    assert len(units) > 1 and opened.rows == n and not opened.temporary
    per_unit = [graphs.merged(read_unit(layout, unit, 1000)) for unit in units]
    assert sum(len(b) for b in per_unit) == n
    merged = by_key(graphs.merged(per_unit))
    assert merged.ids.tolist() == ids.tolist()
    assert np.array_equal(merged.features["v"], vectors)
    assert merged.rows.tolist() == row_hashes([ids, vectors]).tolist()


def test_sql_source_reads_through_a_temporary_table_it_drops(bigquery, mixed):
    _, bq = mixed
    client = bigquery.client()
    before = temporary_tables(client)
    opened, units = open_bigquery(table_layout(bq, "edges", "tagged"),
                                  bigquery_source_of(bq, "edges", "tagged"))
    assert opened.temporary and opened.table.table in temporary_tables(client)
    assert opened.table.dataset == f"{bigquery_api.TEMP_DATASET_PREFIX}_us"
    assert client.get_table(str(opened.table)).num_rows == 3
    close_bigquery(opened)
    assert temporary_tables(client) == before
    list(read_set(bq, "edges", "tagged"))
    assert temporary_tables(client) == before


def test_seeds_from_a_bigquery_table(bigquery, mixed):
    batches = list(read_seed_set(f"bq://{PROJECT}.{DATASET}.seeds"))
    ids = sorted(i for b in batches for i in b.ids.tolist())
    assert ids == [b"i1", b"i3", b"i3"]
    rows = np.concatenate([b.rows for b in batches])
    # Identical rows, identical RowIds; the dataset-only form uses the default project.
    assert len(set(rows.tolist())) == 2
    again = np.concatenate([b.rows for b in read_seed_set(f"bq://{DATASET}.seeds")])
    assert sorted(again.tolist()) == sorted(rows.tolist())


@pytest.mark.parametrize("multi_process", [False, True])
def test_beam_reads_what_the_in_process_reader_reads(bigquery, mixed, multi_process):
    """Also with worker processes, which pickle the read streams as Dataflow does."""
    _, bq = mixed
    client = bigquery.client()
    before = temporary_tables(client)
    with beam_pipeline(multi_process) as p:
        items = p | "Items" >> ReadNodeSet(bq, "item")
        tagged = p | "Tagged" >> ReadEdgeSet(bq, "tagged")
        seeds = p | "Seeds" >> ReadSeeds(f"bq://{PROJECT}.{DATASET}.seeds")
        for label, pcoll, expected in (
                ("Items", items, list(read_set(bq, "nodes", "item"))),
                ("Tagged", tagged, list(read_set(bq, "edges", "tagged"))),
                ("SeedRows", seeds, list(read_seed_set(f"bq://{PROJECT}.{DATASET}.seeds")))):
            assert_that(pcoll | f"{label}/Summary" >> beam.FlatMap(summary),
                        equal_to([r for b in expected for r in summary(b)]),
                        label=f"{label}/Check")
    assert temporary_tables(client) == before  # the pipeline dropped the query's table


def test_ragged_inner_dimension_from_repeated_records(bigquery, tmp_path):
    """BigQuery has no arrays of arrays: ARRAY<STRUCT<v ARRAY<INT64>>> reads as [-1, -1]."""
    rows = [[[1, 2], [3]], [], [[], [4, 5, 6]]]
    load_table(bigquery.client(), f"{PROJECT}.{DATASET}.nested", pa.table({
        "id": ["a", "b", "c"],
        "m": pa.array([[{"v": r} for r in row] for row in rows],
                      pa.list_(pa.struct([("v", pa.list_(pa.int64()))])))}))
    (tmp_path / "graph_schema.pbtxt").write_text(
        'node_sets { key: "n" value { features { key: "m" value { dtype: DT_INT32 '
        'shape { dim { size: -1 } dim { size: -1 } } } } metadata { bigquery { table_spec { '
        f'dataset: "{DATASET}" table: "nested" }} }} }} }} }}')
    batch = by_key(graphs.merged(read_set(load_schema(str(tmp_path)), "nodes", "n")))
    m = batch.features["m"]
    assert isinstance(m, Ragged) and isinstance(m.values, Ragged) and m.dtype == np.int32
    assert [[list(x) for x in r] for r in m.to_list()] == rows


# ---- errors -------------------------------------------------------------------------------

def schema_with(tmp_path, metadata, features=""):
    (tmp_path / "graph_schema.pbtxt").write_text(
        f'node_sets {{ key: "n" value {{ {features} metadata {{ {metadata} }} }} }}')
    return load_schema(str(tmp_path))


def one_line_error(loaded, match, kind="nodes", name="n"):
    with pytest.raises(TableError) as info:
        list(read_set(loaded, kind, name))
    message = str(info.value)
    assert "\n" not in message, message
    assert match in message, message
    return message


def test_missing_table(bigquery, tmp_path):
    loaded = schema_with(tmp_path, f'bigquery {{ table_spec {{ dataset: "{DATASET}" '
                                   f'table: "nope" }} }}')
    one_line_error(loaded, f"BigQuery table {DATASET}.nope: Not found: table:"
                           f"{PROJECT}.{DATASET}.nope")


def test_missing_column(bigquery, mixed, tmp_path):
    loaded = schema_with(tmp_path, f'bigquery {{ table_spec {{ dataset: "{DATASET}" '
                                   f'table: "item" }} }}',
                         'features { key: "colour" value { dtype: DT_STRING } }')
    message = one_line_error(loaded, f"BigQuery table {DATASET}.item: table schema: "
                                     f"node set 'n': missing feature column 'colour'")
    assert "'count'" in message  # the columns that are there


def test_wrong_column_type(bigquery, mixed, tmp_path):
    loaded = schema_with(tmp_path, f'bigquery {{ table_spec {{ dataset: "{DATASET}" '
                                   f'table: "item" }} }}',
                         'features { key: "count" value { dtype: DT_STRING } }')
    one_line_error(loaded, f"BigQuery table {DATASET}.item: column 'count' has type int64, "
                           f"expected text for DT_STRING")


def test_bad_value_names_the_table_stream_row_and_column(bigquery, mixed, tmp_path):
    loaded = schema_with(tmp_path, f'bigquery {{ table_spec {{ dataset: "{DATASET}" '
                                   f'table: "item" }} }}',
                         'features { key: "name" value { dtype: DT_FLOAT } }')
    one_line_error(loaded, f"BigQuery table {DATASET}.item, read stream 1 of 1: row ")
    one_line_error(loaded, "column 'name': ")


def test_bad_value_names_the_stream_and_row(bigquery, tmp_path):
    load_table(bigquery.client(), f"{PROJECT}.{DATASET}.nan_weights", pa.table({
        "source": ["a", "b"], "target": ["b", "a"], "weight": [1.0, float("nan")]}))
    (tmp_path / "graph_schema.pbtxt").write_text(
        'node_sets { key: "n" value {} } edge_sets { key: "e" value { source: "n" target: "n" '
        f'metadata {{ bigquery {{ table_spec {{ dataset: "{DATASET}" table: "nan_weights" }} }} '
        '} } }')
    one_line_error(load_schema(str(tmp_path)),
                   f"BigQuery table {DATASET}.nan_weights, read stream 1 of 1: row 1: "
                   f"column 'weight': weight 'nan' is not a finite number", "edges", "e")


def test_bad_sql(bigquery, tmp_path):
    loaded = schema_with(tmp_path, 'bigquery { sql: "SELECT id FROM nowhere.nothing" }')
    one_line_error(loaded, "BigQuery sql of node set 'n': ")


def test_bad_seeds_uri():
    with pytest.raises(TableError, match=r"seeds bq://just_a_table: expected "
                                         r"bq://project.dataset.table"):
        list(read_seed_set("bq://just_a_table"))


def test_row_location_of_a_bigquery_row_is_its_content_hash():
    location = row_location(["BigQuery table p.d.t"], -1)
    assert location == "BigQuery table p.d.t (the row whose content hashes to ffffffffffffffff)"


def test_no_credentials_fails_at_once_in_one_line(tmp_path):
    """Without an emulator and without credentials: one line, exit status 2, no prompt.

    The metadata server probe goes to a closed port on 127.0.0.1, never the network."""
    graph = tmp_path / "graph"
    graph.mkdir()
    (graph / "graph_schema.pbtxt").write_text(
        'node_sets { key: "n" value { metadata { bigquery { table_spec { project: "p" '
        'dataset: "d" table: "t" } } } } }')
    (graph / "spec.pbtxt").write_text('seed_op { op_name: "s" node_set_name: "n" }')
    closed = f"127.0.0.1:{_closed_port()}"
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("BIGQUERY_", "GOOGLE_", "CLOUDSDK_", "GCE_"))}
    env.update(HOME=str(tmp_path), CLOUDSDK_CONFIG=str(tmp_path / "gcloud"),
               GCE_METADATA_HOST=closed, GCE_METADATA_IP=closed)
    result = subprocess.run(
        [sys.executable, "-m", "pipelines.sample", "--graph", str(graph), "--spec",
         str(graph / "spec.pbtxt"), "--output", str(tmp_path / "out/")],
        capture_output=True, text=True, env=env, cwd=REPO_ROOT, stdin=subprocess.DEVNULL,
        timeout=120)
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert lines == [lines[-1]] and lines[0].startswith("sample: error: BigQuery: no Google "
                                                        "credentials found"), result.stderr
    assert "Traceback" not in result.stderr


def _closed_port() -> int:
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_an_empty_table_reads_to_no_batches(bigquery, tmp_path):
    load_table(bigquery.client(), f"{PROJECT}.{DATASET}.empty",
               pa.table({"id": pa.array([], pa.string()), "x": pa.array([], pa.float64())}))
    loaded = schema_with(tmp_path, f'bigquery {{ table_spec {{ dataset: "{DATASET}" '
                                   f'table: "empty" }} }}',
                         'features { key: "x" value { dtype: DT_FLOAT } }')
    assert list(read_set(loaded, "nodes", "n")) == []
