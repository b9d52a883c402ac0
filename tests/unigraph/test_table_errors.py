"""Bad input fails with one line naming the file, the place in it and the value found."""
import os
import sys

import pyarrow as pa
import pyarrow.parquet as pq

import pytest

from tests.unigraph import graphs
from unigraph.columnar.batches import ROW_FILE_SHIFT
from unigraph.errors import TableError
from unigraph.schema import load_schema, table_files
from unigraph.tables import read_seeds, read_set, row_location

SCHEMA = """
node_sets { key: "n" value {
  features { key: "x" value { dtype: DT_INT64 } }
  features { key: "v" value { dtype: DT_FLOAT shape { dim { size: 2 } } } }
  metadata { filename: "%s" } } }
edge_sets { key: "e" value { source: "n" target: "n" metadata { filename: "%s" } } }
"""


def graph(tmp_path, nodes="n.csv", edges="e.csv"):
    with open(tmp_path / "graph_schema.pbtxt", "w") as f:
        f.write(SCHEMA % (nodes, edges))
    return load_schema(str(tmp_path))


def read_all(loaded, kind, name):
    return list(read_set(loaded, kind, name))


def fails(tmp_path, kind, text, match, name=None):
    """Writes `text` as the node (kind 'nodes') or edge table and expects TableError."""
    filename = "n.csv" if kind == "nodes" else "e.csv"
    with open(tmp_path / filename, "w") as f:
        f.write(text)
    loaded = graph(tmp_path)
    with pytest.raises(TableError) as error:
        read_all(loaded, kind, name or ("n" if kind == "nodes" else "e"))
    message = str(error.value)
    assert "\n" not in message
    assert message.startswith(str(tmp_path / filename)), message
    assert match in message, message
    return message


GOOD_NODES = "id,x,v\na,1,0.5 1\n"


def test_csv_wrong_column_count(tmp_path):
    fails(tmp_path, "nodes", GOOD_NODES + "b,2\n",
          "line 3: expected 3 columns, found 2: 'b,2'")


def test_csv_line_numbers_count_quoted_newlines(tmp_path):
    fails(tmp_path, "nodes", 'id,x,v\n"a\nb",1,0.5 1\nc,zz,1 2\n',
          "line 4: column 'x': 'zz' is not a valid DT_INT64")


def test_csv_value_not_of_dtype(tmp_path):
    fails(tmp_path, "nodes", GOOD_NODES + "b,1.5,0 0\n",
          "line 3: column 'x': '1.5' is not a valid DT_INT64")


def test_csv_empty_cell_for_a_number(tmp_path):
    fails(tmp_path, "nodes", GOOD_NODES + "b,,0 0\n", "line 3: column 'x': '' is not a valid")


def test_csv_vector_value_not_a_float(tmp_path):
    fails(tmp_path, "nodes", GOOD_NODES + "b,2,0 x\n",
          "line 3: column 'v': 'x' is not a valid DT_FLOAT")


def test_csv_vector_of_wrong_length(tmp_path):
    fails(tmp_path, "nodes", GOOD_NODES + "b,2,1 2 3\n",
          "line 3: column 'v': expected 2 values for shape [2], found 3")


def test_missing_id_column(tmp_path):
    fails(tmp_path, "nodes", "name,x,v\na,1,1 2\n",
          "line 1: node set 'n': missing id column ('#id' or 'id'); columns: 'name', 'x', 'v'")


def test_missing_source_column(tmp_path):
    fails(tmp_path, "edges", "src,target\na,b\n",
          "line 1: edge set 'e': missing source column ('#source' or 'source')")


def test_missing_feature_column(tmp_path):
    fails(tmp_path, "nodes", "id,x\na,1\n", "line 1: node set 'n': missing feature column 'v'")


def test_empty_csv_file(tmp_path):
    fails(tmp_path, "nodes", "", "line 1: empty file, expected a header row")


def test_header_only_is_an_empty_table(tmp_path):
    with open(tmp_path / "n.csv", "w") as f:
        f.write("id,x,v\n")
    assert read_all(graph(tmp_path), "nodes", "n") == []


def test_empty_id(tmp_path):
    fails(tmp_path, "nodes", GOOD_NODES + ",2,1 2\n", "line 3: column 'id': empty id")


def test_id_ending_in_nul(tmp_path):
    # Python 3.10's csv module refuses any line holding a NUL byte: still one line.
    match = ("line 3: column 'id': id 'b\\x00'" if sys.version_info >= (3, 11)
             else "line 3: line contains NUL")
    fails(tmp_path, "nodes", GOOD_NODES + "b\0,2,1 2\n", match)


@pytest.mark.parametrize("value", ["nan", "inf", "-inf"])
def test_non_finite_weight(tmp_path, value):
    fails(tmp_path, "edges", f"source,target,weight\na,b,1\na,c,{value}\n",
          f"line 3: column 'weight': weight '{value}' is not a finite number")


def test_weight_not_a_number(tmp_path):
    fails(tmp_path, "edges", "source,target,#weight\na,b,heavy\n",
          "line 2: column '#weight': weight 'heavy' is not a number")


def test_glob_matching_nothing(tmp_path):
    loaded = graph(tmp_path, nodes="nodes-*.csv")
    with pytest.raises(TableError, match=r"table glob 'nodes-\*.csv' matches no file"):
        table_files(loaded, "nodes", "n")


def test_missing_shards(tmp_path):
    loaded = graph(tmp_path, nodes="n@2.csv")
    with pytest.raises(TableError, match="names 2 shards but 2 are missing"):
        table_files(loaded, "nodes", "n")


# ---- TFRecord: record indices ----------------------------------------------------------

def tfrecord_fails(tmp_path, records, match, kind="nodes"):
    name = "n.tfrecord" if kind == "nodes" else "e.tfrecord"
    graphs.write_records(str(tmp_path / name), records)
    loaded = graph(tmp_path, nodes="n.tfrecord", edges="e.tfrecord")
    with pytest.raises(TableError) as error:
        read_all(loaded, kind, "n" if kind == "nodes" else "e")
    message = str(error.value)
    assert message.startswith(str(tmp_path / name)) and match in message, message


def node(id_, x=1, v=(0.5, 1.0)):
    return graphs.example(**{"#id": [id_], "x": [x], "v": list(v)})


def test_tfrecord_vector_of_wrong_length(tmp_path):
    tfrecord_fails(tmp_path, [node("a"), node("b", v=(1.0,))],
                   "record 1: column 'v': expected 2 values for shape [2], found 1")


def test_tfrecord_wrong_kind(tmp_path):
    bad = graphs.example(**{"#id": ["b"], "x": [1.5], "v": [1.0, 2.0]})
    tfrecord_fails(tmp_path, [node("a"), bad],
                   "record 1: feature 'x' is a float_list, expected int64_list for DT_INT64")


def test_tfrecord_missing_feature(tmp_path):
    bad = graphs.example(**{"#id": ["b"], "v": [1.0, 2.0]})
    tfrecord_fails(tmp_path, [node("a"), bad], "record 1: node set 'n': missing feature column 'x'")


def test_tfrecord_missing_id(tmp_path):
    bad = graphs.example(**{"x": [1], "v": [1.0, 2.0]})
    tfrecord_fails(tmp_path, [bad], "record 0: node set 'n': missing id column")


def test_tfrecord_empty_file(tmp_path):
    tfrecord_fails(tmp_path, [], "record 0: empty file, no records")


def test_tfrecord_nan_weight(tmp_path):
    edge = graphs.example(**{"#source": ["a"], "#target": ["b"], "#weight": [float("nan")]})
    ok = graphs.example(**{"#source": ["a"], "#target": ["b"], "#weight": [1.0]})
    tfrecord_fails(tmp_path, [ok, edge], "record 1: column '#weight': weight 'nan' is not a finite",
                   kind="edges")


def test_tfrecord_corrupt(tmp_path):
    path = tmp_path / "n.tfrecord"
    graphs.write_records(str(path), [node("a")])
    data = path.read_bytes()
    path.write_bytes(data[:-3])
    with pytest.raises(TableError, match="record 0 at byte 0: truncated data"):
        read_all(graph(tmp_path, nodes="n.tfrecord"), "nodes", "n")


# ---- Parquet: row indices --------------------------------------------------------------

def parquet_fails(tmp_path, table, match, row_group_size=None):
    path = tmp_path / "n.parquet"
    pq.write_table(table, str(path), row_group_size=row_group_size)
    with pytest.raises(TableError) as error:
        read_all(graph(tmp_path, nodes="n.parquet"), "nodes", "n")
    message = str(error.value)
    assert message.startswith(str(path)) and match in message, message


def test_parquet_float_in_int_column(tmp_path):
    parquet_fails(tmp_path, pa.table({"id": ["a", "b", "c"], "x": [1.0, 2.0, 2.5],
                                      "v": [[1.0, 2.0]] * 3}),
                  "row 2: column 'x': '2.5' is not a valid DT_INT64", row_group_size=2)


def test_parquet_vector_of_wrong_length(tmp_path):
    parquet_fails(tmp_path, pa.table({"id": ["a", "b"], "x": [1, 2], "v": [[1.0, 2.0], [1.0]]}),
                  "row 1: column 'v': expected 2 values in dimension 0 of shape [2], found 1")


def test_parquet_null_value(tmp_path):
    parquet_fails(tmp_path, pa.table({"id": ["a", "b"], "x": [1, None], "v": [[1.0, 2.0]] * 2}),
                  "row 1: column 'x': empty (null) value")


def test_parquet_missing_feature_column(tmp_path):
    parquet_fails(tmp_path, pa.table({"#id": ["a"], "x": [1]}),
                  "file schema: node set 'n': missing feature column 'v'; columns: '#id', 'x'")


def test_parquet_text_in_number_column(tmp_path):
    # Text columns of numbers are parsed like CSV cells; text that is no number fails.
    parquet_fails(tmp_path, pa.table({"id": ["a", "b"], "x": ["1", "one"], "v": [[1.0, 2.0]] * 2}),
                  "row 1: column 'x': 'one' is not a valid DT_INT64")


def test_parquet_struct_column(tmp_path):
    parquet_fails(tmp_path, pa.table({"id": ["a"], "x": [{"a": 1}], "v": [[1.0, 2.0]]}),
                  "row 0: column 'x' has type struct<a: int64>, expected numbers for DT_INT64")


def test_parquet_empty_file(tmp_path):
    (tmp_path / "n.parquet").write_bytes(b"")
    with pytest.raises(TableError, match=r"n.parquet: row 0: empty file \(0 bytes\)"):
        read_all(graph(tmp_path, nodes="n.parquet"), "nodes", "n")


# ---- seeds ------------------------------------------------------------------------------

def test_text_seeds(tmp_path):
    path = tmp_path / "seeds.txt"
    path.write_bytes(b"p1\r\np2\np3")
    (batch,) = read_seeds(str(path))
    assert batch.ids.tolist() == [b"p1", b"p2", b"p3"] and batch.rows.tolist() == [0, 1, 2]


def test_text_seeds_empty_line(tmp_path):
    path = tmp_path / "seeds.txt"
    path.write_text("p1\n\np3\n")
    with pytest.raises(TableError, match=r"seeds.txt: line 2: column 'id': empty id"):
        list(read_seeds(str(path)))


def test_text_seeds_empty_file(tmp_path):
    path = tmp_path / "seeds.txt"
    path.write_text("")
    with pytest.raises(TableError, match="seeds.txt: line 1: empty file"):
        list(read_seeds(str(path)))


def test_seed_table_needs_an_id_column(tmp_path):
    path = tmp_path / "seeds.csv"
    path.write_text("paper\np1\n")
    with pytest.raises(TableError, match="seeds.csv: line 1: seeds: missing id column"):
        list(read_seeds(str(path)))


def test_unknown_format(tmp_path):
    with open(tmp_path / "graph_schema.pbtxt", "w") as f:
        f.write('node_sets { key: "n" value { metadata { filename: "n.json" } } }')
    (tmp_path / "n.json").write_text("{}")
    with pytest.raises(TableError, match="cannot tell the format"):
        read_all(load_schema(str(tmp_path)), "nodes", "n")
    assert os.path.exists(tmp_path / "n.json")


def test_row_location_names_line_record_or_row(tmp_path):
    csv_path = tmp_path / "n.csv"
    csv_path.write_text('id\na\n"multi\nline"\na\n')
    files = [str(tmp_path / "other.parquet"), str(csv_path), str(tmp_path / "t.tfrecord")]
    assert row_location(files, 3) == f"{tmp_path / 'other.parquet'} row 3"
    # The header is line 1; a quoted newline makes row 1 two lines long.
    assert row_location(files, (1 << ROW_FILE_SHIFT) + 2) == f"{csv_path} line 5"
    assert row_location(files, (2 << ROW_FILE_SHIFT) + 7) == f"{tmp_path / 't.tfrecord'} record 7"
