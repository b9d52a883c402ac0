"""Every schema check, each triggered by a bad input; the message is asserted."""
import os

import pytest

from tests.conftest import TESTDATA
from unigraph.storage import paths
from unigraph.storage.bigquery import Source, TableRef
from unigraph.errors import SchemaError, TableError
from unigraph.schema import bigquery_source, check_schema, load_schema, set_names, table_files

GOOD = """
node_sets { key: "a" value { features { key: "x" value { dtype: DT_FLOAT shape { dim { size: 2 } } } }
                             metadata { filename: "a.csv" } } }
node_sets { key: "b" value {} }
edge_sets { key: "ab" value { source: "a" target: "b" metadata { filename: "ab.csv" } } }
"""


def write_graph(tmp_path, schema_text=GOOD, files=("a.csv", "ab.csv")):
    for name in files:
        (tmp_path / name).write_text("id\n")
    path = tmp_path / "graph_schema.pbtxt"
    path.write_text(schema_text)
    return str(path)


def check(tmp_path, schema_text, files=("a.csv", "ab.csv")):
    check_schema(load_schema(write_graph(tmp_path, schema_text, files)))


def test_good_schema_passes_from_file_and_from_folder(tmp_path):
    path = write_graph(tmp_path)
    check_schema(load_schema(path))
    loaded = load_schema(str(tmp_path))
    assert loaded.path.endswith("graph_schema.pbtxt")
    assert table_files(loaded, "nodes", "a") == [os.path.join(str(tmp_path), "a.csv")]


@pytest.mark.parametrize("name", ["creditcard", "mag"])
def test_tfgnn_shaped_schemas_pass_without_files(name):
    check_schema(load_schema(os.path.join(TESTDATA, name)), check_files=False)


def test_missing_schema_file(tmp_path):
    with pytest.raises(SchemaError, match=r"graph schema .*nope\.pbtxt: no such file"):
        load_schema(str(tmp_path / "nope.pbtxt"))


def test_text_format_error_names_file_and_line(tmp_path):
    with pytest.raises(SchemaError, match=r"graph_schema\.pbtxt: line 1 column 13: Message type "
                                          r"\"GraphSchema.NodeSetsEntry\" has no field named "
                                          r"\"node_setz\""):
        check(tmp_path, 'node_sets { node_setz: 1 }')


@pytest.mark.parametrize("text, message", [
    ('edge_sets { key: "e" value { source: "a" target: "b" metadata { filename: "ab.csv" } } }',
     "no node sets"),
    (GOOD.replace('target: "b"', 'target: "zz"'),
     "edge set 'ab': target node set 'zz' does not exist (node sets: a, b)"),
    (GOOD.replace('source: "a" ', ''), "edge set 'ab': no source node set"),
    (GOOD.replace("DT_FLOAT", "DT_COMPLEX64"),
     "node set 'a': feature 'x' has dtype DT_COMPLEX64, supported:"),
    (GOOD.replace("size: 2", "size: -3"),
     "node set 'a': feature 'x' dimension 0 has size -3; use a size >= 0, or -1"),
    (GOOD.replace("shape { dim { size: 2 } }", "shape { unknown_rank: true }"),
     "node set 'a': feature 'x' has unknown rank"),
    (GOOD.replace('key: "x"', 'key: "#size"'),
     "node set 'a': feature name '#size' is reserved by the output encoding"),
    (GOOD.replace('key: "x"', 'key: "x.d1"'), "feature name 'x.d1' ends like a ragged row-length"),
    (GOOD.replace('key: "b"', 'key: "_readout"').replace('target: "b"', 'target: "_readout"'),
     "declares node set '_readout' and edge sets '_readout/source' and '_readout/target'"),
    (GOOD.replace('key: "ab"', 'key: "a.b"'), "edge set 'a.b' contains '.'"),
    (GOOD.replace('metadata { filename: "a.csv" }', ''),
     "node set 'a': has features but no table (metadata.filename or metadata.bigquery)"),
    (GOOD.replace('metadata { filename: "ab.csv" }', ''),
     "edge set 'ab': no table (metadata.filename or metadata.bigquery)"),
    (GOOD.replace('metadata { filename: "ab.csv" }', 'metadata { bigquery { } }'),
     "edge set 'ab': metadata.bigquery names neither a table_spec nor sql"),
    (GOOD.replace('metadata { filename: "ab.csv" }',
                  'metadata { bigquery { table_spec { project: "p" table: "t" } } }'),
     "edge set 'ab': metadata.bigquery.table_spec has no dataset"),
    (GOOD.replace('metadata { filename: "ab.csv" }',
                  'metadata { bigquery { table_spec { dataset: "d" } } }'),
     "edge set 'ab': metadata.bigquery.table_spec has no table"),
    (GOOD.replace('metadata { filename: "a.csv" }', 'metadata { bigquery { sql: "  " } }'),
     "node set 'a': metadata.bigquery.sql is empty"),
    (GOOD.replace('metadata { filename: "a.csv" }',
                  'metadata { bigquery { table_spec { dataset: "d" table: "t`; DROP" } } }'),
     "node set 'a': 't`; DROP' is not a BigQuery project, dataset or table name"),
    (GOOD + 'context { features { key: "seed_id" value { dtype: DT_STRING } } }',
     "context: feature name 'seed_id' is reserved"),
    (GOOD.replace('source: "a"', 'source: "a" features { key: "weight" value { dtype: DT_STRING } }'),
     "edge set 'ab': weight feature 'weight' must be a numeric scalar, found DT_STRING"),
    (GOOD.replace('node_sets { key: "b" value {} }',
                  'node_sets { key: "b" value { features { key: "#id" value { dtype: DT_INT64 } } } }'),
     "node set 'b': id feature '#id' must be a DT_STRING scalar"),
])
def test_bad_schema_is_reported(tmp_path, text, message):
    with pytest.raises(SchemaError) as info:
        check(tmp_path, text)
    assert message in str(info.value)
    assert "\n" not in str(info.value)
    assert "graph_schema.pbtxt" in str(info.value)


def test_ragged_dimension_is_allowed(tmp_path):
    check(tmp_path, GOOD.replace("size: 2", "size: -1"))


def test_missing_table_file(tmp_path):
    with pytest.raises(TableError, match=r"edge set 'ab': table file 'ab.csv' does not exist"):
        check(tmp_path, GOOD, files=("a.csv",))


def test_sharded_table_names(tmp_path):
    for i in range(3):
        (tmp_path / f"ab-{i:05d}-of-00003.csv").write_text("source,target\n")
    check(tmp_path, GOOD.replace('"ab.csv"', '"ab@3.csv"'), files=("a.csv",))
    (tmp_path / "ab-00001-of-00003.csv").unlink()
    with pytest.raises(TableError, match=r"'ab@3.csv' names 3 shards but 1 are missing, first: "
                                         r".*ab-00001-of-00003\.csv"):
        check(tmp_path, GOOD.replace('"ab.csv"', '"ab@3.csv"'), files=("a.csv",))


def test_glob_that_matches_nothing(tmp_path):
    with pytest.raises(TableError, match=r"table glob 'ab-\*.csv' matches no file"):
        check(tmp_path, GOOD.replace('"ab.csv"', '"ab-*.csv"'), files=("a.csv",))


def test_glob_expands_in_sorted_order(tmp_path):
    for name in ("ab-2.csv", "ab-0.csv", "ab-1.csv"):
        (tmp_path / name).write_text("source,target\n")
    loaded = load_schema(write_graph(tmp_path, GOOD.replace('"ab.csv"', '"ab-*.csv"'), ("a.csv",)))
    assert [os.path.basename(f) for f in table_files(loaded, "edges", "ab")] == [
        "ab-0.csv", "ab-1.csv", "ab-2.csv"]


def test_unknown_table_format(tmp_path):
    with pytest.raises(TableError, match=r"cannot tell the format from the name"):
        check(tmp_path, GOOD.replace('"ab.csv"', '"ab.json"'), files=("a.csv", "ab.json"))


@pytest.mark.parametrize("pattern, expected", [
    ("edges@2.csv", ["edges-00000-of-00002.csv", "edges-00001-of-00002.csv"]),
    ("edges.csv@2", ["edges-00000-of-00002.csv", "edges-00001-of-00002.csv"]),
    ("edges@1", ["edges-00000-of-00001"]),
    ("edges.csv", None),
])
def test_shard_names(pattern, expected):
    assert paths.shard_names(pattern) == expected


def test_relative_names_resolve_against_remote_folders():
    assert paths.join("gs://bucket/graph", "a.csv") == "gs://bucket/graph/a.csv"
    assert paths.join("gs://bucket/graph", "gs://other/a.csv") == "gs://other/a.csv"
    assert paths.join("/data/graph", "/abs/a.csv") == "/abs/a.csv"


def test_bigquery_tables_pass_without_reaching_bigquery(tmp_path):
    """The form of a BigQuery source is checked offline; the table itself when read."""
    text = (GOOD.replace('metadata { filename: "a.csv" }',
                         'metadata { bigquery { table_spec { project: "p" dataset: "d" '
                         'table: "a" } read_method: DIRECT_READ } }')
            .replace('metadata { filename: "ab.csv" }',
                     'metadata { bigquery { sql: "SELECT source, target FROM d.ab" } }'))
    loaded = load_schema(write_graph(tmp_path, text, files=()))
    check_schema(loaded)
    assert set_names(loaded.schema) == [("nodes", "a"), ("edges", "ab")]
    assert bigquery_source(loaded, "nodes", "a") == Source(
        "node set 'a'", table=TableRef("p", "d", "a"))
    assert bigquery_source(loaded, "edges", "ab").name == "BigQuery sql of edge set 'ab'"
    with pytest.raises(TableError, match="node set 'a' is a BigQuery table"):
        table_files(loaded, "nodes", "a")


def test_a_file_wins_over_bigquery_as_in_tfgnn(tmp_path):
    text = GOOD.replace('metadata { filename: "a.csv" }',
                        'metadata { filename: "a.csv" bigquery { sql: "SELECT 1" } }')
    loaded = load_schema(write_graph(tmp_path, text))
    check_schema(loaded)
    assert bigquery_source(loaded, "nodes", "a") is None
    assert table_files(loaded, "nodes", "a") == [os.path.join(str(tmp_path), "a.csv")]
