"""Timestamp columns: which column (defaults, metadata extra, the flag's override), the
time type, reading them in every format, and bad values as one line."""
import os

import numpy as np
import pytest

from unigraph.columnar.batches import EdgeBatch, NodeBatch
from unigraph.errors import SchemaError, TableError
from unigraph.schema import check_schema, load_schema
from unigraph.tables import read_seed_set, read_set, table_layout
from unigraph.tables.layout import TimeColumn, seeds_layout
from unigraph.timestamps import (find_timestamp_column, override_timestamp_column,
                                 time_dtype, timestamp_spellings)
from unigraph.tables.writers import write_table

SCHEMA = """
node_sets { key: "u" value { features { key: "when" value { dtype: DT_DOUBLE } }
                             metadata { filename: "u.%(fmt)s"
                                        extra { key: "timestamp_column" value: "when" } } } }
edge_sets { key: "e" value { source: "u" target: "u" metadata { filename: "e.%(fmt)s" } } }
"""


def _graph(tmp_path, fmt):
    folder = tmp_path / fmt
    folder.mkdir()
    (folder / "graph_schema.pbtxt").write_text(SCHEMA % {"fmt": fmt})
    loaded = load_schema(str(folder))
    write_table(str(folder / f"u.{fmt}"), table_layout(loaded, "nodes", "u"),
                [NodeBatch("u", np.array([b"a", b"b"]), np.arange(2),
                           {"when": np.array([1.5, 2.25])})])
    write_table(str(folder / f"e.{fmt}"),
                table_layout(loaded, "edges", "e", TimeColumn("#timestamp", "int64")),
                [EdgeBatch("e", np.array([b"a", b"b"]), np.array([b"b", b"a"]), np.arange(2),
                           None, {"#timestamp": np.array([2**62, -7])})])
    write_table(str(folder / f"seeds.{fmt}"), seeds_layout(TimeColumn("timestamp", "int64")),
                [NodeBatch("seeds", np.array([b"a"]), np.arange(1),
                           {"timestamp": np.array([5])})])
    return loaded, folder


@pytest.mark.parametrize("fmt", ["csv", "parquet", "tfrecord"])
def test_timestamps_read_alike_in_every_format(tmp_path, fmt):
    loaded, folder = _graph(tmp_path, fmt)
    check_schema(loaded)
    assert timestamp_spellings(loaded, "nodes", "u") == ("when",)
    assert timestamp_spellings(loaded, "edges", "e") == ("#timestamp", "timestamp")
    assert find_timestamp_column(loaded, "nodes", "u", []) == "when"  # declared
    assert find_timestamp_column(loaded, "edges", "e", ["source", "#timestamp"]) == "#timestamp"
    assert time_dtype(loaded, [("edges", "e")]) == np.int64
    assert time_dtype(loaded, [("edges", "e"), ("nodes", "u")]) == np.float64
    edges = next(iter(read_set(loaded, "edges", "e", timestamp=TimeColumn("#timestamp",
                                                                          "int64"))))
    assert edges.timestamps.tolist() == [2**62, -7] and edges.features == {}  # hidden
    nodes = next(iter(read_set(loaded, "nodes", "u", timestamp=TimeColumn("when", "float64"))))
    assert nodes.timestamps.tolist() == [1.5, 2.25] and "when" in nodes.features  # declared
    plain = next(iter(read_set(loaded, "edges", "e")))
    assert plain.timestamps is None
    seeds = next(iter(read_seed_set(str(folder / f"seeds.{fmt}"),
                                    timestamp=TimeColumn("timestamp", "int64"))))
    assert seeds.timestamps.tolist() == [5]


def test_the_flag_overrides_every_sets_column():
    from unigraph.schema import LoadedSchema, parse_schema_text

    loaded = LoadedSchema(parse_schema_text(SCHEMA % {"fmt": "csv"}, "s"), "s", ".")
    override_timestamp_column(loaded, "year")
    assert timestamp_spellings(loaded, "nodes", "u") == ("year",)
    assert timestamp_spellings(loaded, "edges", "e") == ("year",)
    extras = [kv.key for kv in loaded.schema.node_sets["u"].metadata.extra]
    assert extras.count("timestamp_column") == 1


def test_bad_timestamps_are_one_line(tmp_path):
    folder = tmp_path / "g"
    folder.mkdir()
    (folder / "graph_schema.pbtxt").write_text(
        'node_sets { key: "u" value { } } edge_sets { key: "e" value { source: "u" '
        'target: "u" metadata { filename: "e.csv" } } }')
    (folder / "e.csv").write_text("source,target,timestamp\na,b,3\nb,a,nan\n")
    loaded = load_schema(str(folder))
    with pytest.raises(TableError, match=r"e.csv: line 3: column 'timestamp': timestamp nan "
                                         r"is not a finite time$"):
        list(read_set(loaded, "edges", "e", timestamp=TimeColumn("timestamp", "float64")))
    with pytest.raises(TableError, match=r"e.csv: line 3: column 'timestamp': 'nan'"):
        list(read_set(loaded, "edges", "e", timestamp=TimeColumn("timestamp", "int64")))
    (folder / "graph_schema.pbtxt").write_text(
        'node_sets { key: "u" value { } } edge_sets { key: "e" value { source: "u" '
        'target: "u" features { key: "timestamp" value { dtype: DT_STRING } } '
        'metadata { filename: "e.csv" } } }')
    with pytest.raises(SchemaError, match="edge set 'e': timestamp feature 'timestamp' must be "
                                          "an int64 or float scalar, found DT_STRING"):
        check_schema(load_schema(str(folder)))
    assert os.path.exists(folder / "e.csv")
