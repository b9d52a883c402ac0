"""The same graph as CSV, TFRecord and Parquet reads to identical columns."""
import numpy as np
import pytest

from unigraph.columnar.batches import ROW_FILE_SHIFT
from unigraph.columnar.ragged import Ragged
from unigraph.schema import load_schema
from unigraph.tables import read_set, table_layout
from unigraph.tables.writers import write_table

from tests.unigraph import graphs

SETS = [("nodes", "item"), ("edges", "link"), ("edges", "linked_by"), ("edges", "tagged")]
WRITERS = {"csv": graphs.write_csv_graph, "parquet": graphs.write_parquet_graph,
           "tfrecord": graphs.write_tfrecord_graph}


def read_graph(schema_path, batch_rows=65536):
    loaded = load_schema(schema_path)
    return {name: graphs.merged(read_set(loaded, kind, name, batch_rows=batch_rows))
            for kind, name in SETS}


@pytest.fixture(scope="module")
def all_formats(tmp_path_factory):
    return {fmt: read_graph(write(str(tmp_path_factory.mktemp(fmt))))
            for fmt, write in WRITERS.items()}


def test_csv_columns_are_typed_per_schema(all_formats):
    item = all_formats["csv"]["item"]
    assert item.ids.dtype.kind == "S" and item.ids.tolist() == [b"i1", b"i2", b"i3"]
    assert item.rows.tolist() == [0, 1, 2]
    assert item.features["name"].tolist() == [b"Ada, the first", b"Bob", b"multi\nline"]
    assert item.features["name"].dtype == object
    assert item.features["count"].dtype == np.int64
    assert item.features["count"].tolist() == [3, -4, 0]
    assert item.features["score"].dtype == np.float32
    assert item.features["vec"].shape == (3, 3)
    assert item.features["vec"][1].tolist() == [0.5, -0.25, 1000.0]
    tags = item.features["tags"]
    assert isinstance(tags, Ragged) and tags.to_list() == [[7, 8], [], [9]]
    assert item.features["words"].to_list() == [[b"alpha", b"beta"], [], [b"gamma"]]
    link = all_formats["csv"]["link"]
    assert link.weights.dtype == np.float64 and link.weights.tolist() == [0.5, 2.0, 1.25]
    assert "weight" not in link.features  # not declared as a feature
    assert link.features["pos"].dtype == np.int32 and link.features["pos"].shape == (3, 2)
    assert all_formats["csv"]["tagged"].weights is None


def test_reversed_edge_set_swaps_ends(all_formats):
    link, back = all_formats["csv"]["link"], all_formats["csv"]["linked_by"]
    assert back.sources.tolist() == link.targets.tolist()
    assert back.targets.tolist() == link.sources.tolist()
    assert back.rows.tolist() == link.rows.tolist()
    assert back.features["kind"].tolist() == [b"a", b"b", b"c"]


@pytest.mark.parametrize("fmt", ["parquet", "tfrecord"])
def test_every_format_reads_identical_columns(all_formats, fmt):
    for _, name in SETS:
        graphs.assert_same_batch(all_formats["csv"][name], all_formats[fmt][name])
        assert all_formats[fmt][name].rows.tolist() == [0, 1, 2]


@pytest.mark.parametrize("fmt", ["csv", "parquet", "tfrecord"])
def test_writers_round_trip(all_formats, tmp_path, fmt):
    loaded = load_schema(graphs.MIXED)
    for kind, name in SETS:
        path = str(tmp_path / f"{name}.{fmt}")
        layout = table_layout(loaded, kind, name)
        write_table(path, layout, [all_formats["csv"][name]])
        from unigraph.tables import WorkUnit, read_unit
        back = graphs.merged(read_unit(layout, WorkUnit(path, 0)))
        graphs.assert_same_batch(all_formats["csv"][name], back)


def test_small_batches_and_row_ids(tmp_path):
    schema = graphs.write_parquet_graph(str(tmp_path))  # two row groups: 2 + 1 rows
    loaded = load_schema(schema)
    batches = list(read_set(loaded, "nodes", "item", batch_rows=1))
    assert [len(b) for b in batches] == [1, 1, 1]
    assert [int(b.rows[0]) for b in batches] == [0, 1, 2]
    whole = read_graph(schema, batch_rows=2)["item"]
    assert whole.features["tags"].to_list() == [[7, 8], [], [9]]


def test_row_ids_carry_the_file_index(tmp_path):
    for i in range(2):
        with open(tmp_path / f"t-{i:05d}-of-00002.csv", "w") as f:
            f.write("id\n" + "".join(f"n{i}{j}\n" for j in range(3)))
    with open(tmp_path / "graph_schema.pbtxt", "w") as f:
        f.write('node_sets { key: "n" value { metadata { filename: "t@2.csv" } } }')
    loaded = load_schema(str(tmp_path))
    rows = np.concatenate([b.rows for b in read_set(loaded, "nodes", "n")])
    assert rows.tolist() == [0, 1, 2, 1 << ROW_FILE_SHIFT, (1 << ROW_FILE_SHIFT) + 1,
                             (1 << ROW_FILE_SHIFT) + 2]


def test_tensorflow_written_records_read_the_same(tmp_path, all_formats):
    tf = pytest.importorskip("tensorflow")
    folder = str(tmp_path)
    graphs.write_tfrecord_graph(folder)
    with tf.io.TFRecordWriter(f"{folder}/item.tfrecord") as writer:
        for i, n, c, s, v, t, w in graphs.ITEMS:
            feature = {
                "#id": tf.train.Feature(bytes_list=tf.train.BytesList(value=[i.encode()])),
                "name": tf.train.Feature(bytes_list=tf.train.BytesList(value=[n.encode()])),
                "count": tf.train.Feature(int64_list=tf.train.Int64List(value=[c])),
                "score": tf.train.Feature(float_list=tf.train.FloatList(value=[s])),
                "vec": tf.train.Feature(float_list=tf.train.FloatList(value=v)),
                "tags": tf.train.Feature(int64_list=tf.train.Int64List(value=t)),
                "words": tf.train.Feature(bytes_list=tf.train.BytesList(
                    value=[x.encode() for x in w])),
            }
            writer.write(tf.train.Example(
                features=tf.train.Features(feature=feature)).SerializeToString())
    item = read_graph(f"{folder}/graph_schema.pbtxt")["item"]
    graphs.assert_same_batch(all_formats["csv"]["item"], item)


def test_csv_with_bom_crlf_and_extra_columns(tmp_path):
    (tmp_path / "n.csv").write_bytes(b"\xef\xbb\xbfid,x,ignored\r\na,1,z\r\n\r\nb,2,z\r\n")
    (tmp_path / "graph_schema.pbtxt").write_text(
        'node_sets { key: "n" value { features { key: "x" value { dtype: DT_INT64 } } '
        'metadata { filename: "n.csv" } } }')
    (batch,) = read_set(load_schema(str(tmp_path)), "nodes", "n")
    assert batch.ids.tolist() == [b"a", b"b"] and batch.features["x"].tolist() == [1, 2]
    assert list(batch.features) == ["x"] and batch.rows.tolist() == [0, 1]
