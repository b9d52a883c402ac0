"""TFRecord tables: the whole-chunk Example parser agrees with the protobuf library.

Every chunk is decoded either by unigraph.tables.examples (vectorized) or, when
that declines, record by record with protobuf (`_decode_exact`). Both must give
the same columns for every input either accepts, and the fast path must be the
one taken for what TensorFlow and our writers produce.
"""
import gzip

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.unigraph import graphs
from unigraph.encoding import tfrecord, wire
from unigraph.protos import example_pb2
from unigraph.columnar.batches import EdgeBatch, NodeBatch, row_ids
from unigraph.errors import TableError
from unigraph.columnar.ragged import Ragged
from unigraph.tables import examples
from unigraph.tables import tfrecord as tables_tfrecord
from unigraph.tables.build import resolve_columns
from unigraph.tables.layout import EDGES, NODES, FeatureSpec, TableLayout
from unigraph.tables.writers import write_table

SPECS = (
    FeatureSpec("f", np.dtype(np.float32), (), "DT_FLOAT"),
    FeatureSpec("v", np.dtype(np.float32), (3,), "DT_FLOAT"),
    FeatureSpec("d", np.dtype(np.float64), (2,), "DT_DOUBLE"),
    FeatureSpec("i", np.dtype(np.int64), (), "DT_INT64"),
    FeatureSpec("j", np.dtype(np.int32), (-1,), "DT_INT32"),
    FeatureSpec("b", np.dtype(np.bool_), (), "DT_BOOL"),
    FeatureSpec("s", np.dtype(object), (-1,), "DT_STRING"),
)
NODE_LAYOUT = TableLayout(NODES, "n", SPECS)
EDGE_LAYOUT = TableLayout(EDGES, "e", SPECS[:2])

ids = st.binary(min_size=1, max_size=12).filter(lambda b: not b.endswith(b"\0"))
int64s = st.integers(-2 ** 63, 2 ** 63 - 1)
int32s = st.integers(-2 ** 31, 2 ** 31 - 1)
floats = st.floats(width=32, allow_nan=False)
node_rows = st.lists(st.tuples(
    ids, floats, st.lists(floats, min_size=3, max_size=3), st.lists(floats, min_size=2, max_size=2),
    int64s, st.lists(int32s, max_size=5), st.booleans(),
    st.lists(st.binary(max_size=6), max_size=3)), min_size=1, max_size=40)


def node_batch(rows) -> NodeBatch:
    n = len(rows)
    features = {
        "f": np.array([r[1] for r in rows], np.float32),
        "v": np.array([r[2] for r in rows], np.float32).reshape(n, 3),
        "d": np.array([r[3] for r in rows], np.float64).reshape(n, 2),
        "i": np.array([r[4] for r in rows], np.int64),
        "j": Ragged(np.array([x for r in rows for x in r[5]], np.int32),
                    np.array([len(r[5]) for r in rows], np.int64)),
        "b": np.array([r[6] for r in rows], bool),
        "s": Ragged(np.array([x for r in rows for x in r[7]] or [], dtype=object),
                    np.array([len(r[7]) for r in rows], np.int64)),
    }
    return NodeBatch("n", np.array([r[0] for r in rows], dtype="S"), row_ids(0, 0, n), features)


def both_ways(layout, path, batch_rows=7):
    """(fast batches, exact batches, how many chunks the fast path declined)."""
    fast, exact, declined = [], [], 0
    stream = tfrecord.open_records(path)
    roles = columns = None
    for chunk in tfrecord.read_chunks(stream, path, records=batch_rows):
        if columns is None:
            names = sorted(tables_tfrecord._parse(chunk.record(0), path, 0).features.feature)
            columns = resolve_columns(layout, names, path)
            roles = tables_tfrecord._roles(layout, columns)
        parsed = examples.parse_chunk(chunk.buffer, chunk.starts, chunk.lengths, roles)
        exact.append(tables_tfrecord._decode_exact(layout, columns, path, chunk, 0))
        if parsed is None:
            declined += 1
        else:
            fast.append(tables_tfrecord._decode_fast(layout, columns, path, chunk, parsed, 0))
    return fast, exact, declined


@settings(max_examples=40, deadline=None)
@given(node_rows)
def test_fast_path_reads_what_our_writer_writes(tmp_path_factory, rows):
    path = str(tmp_path_factory.mktemp("t") / "n.tfrecord")
    batch = node_batch(rows)
    write_table(path, NODE_LAYOUT, [batch])
    fast, exact, declined = both_ways(NODE_LAYOUT, path)
    assert declined == 0
    graphs.assert_same_batch(graphs.merged(fast), graphs.merged(exact))
    graphs.assert_same_batch(batch, graphs.merged(fast))


def proto_record(**features) -> bytes:
    return graphs.example(**features)


def write(path, records):
    graphs.write_records(str(path), records)
    return str(path)


def test_any_map_order_stays_on_the_fast_path(tmp_path):
    records = []
    for k in range(20):
        entries = [("#id", [f"n{k}"]), ("i", [k]), ("v", [1.0 * k, 2.0, 3.0]),
                   ("unused", [b"x"])]
        order = np.random.default_rng(k).permutation(len(entries))
        records.append(proto_record(**dict(entries[o] for o in order)))
    layout = TableLayout(NODES, "n", (SPECS[1], SPECS[3]))
    fast, exact, declined = both_ways(layout, write(tmp_path / "n.tfrecord", records))
    assert declined == 0
    graphs.assert_same_batch(graphs.merged(fast), graphs.merged(exact))
    assert graphs.merged(fast).features["i"].tolist() == list(range(20))


def unpacked_floats(id_: str, values) -> bytes:
    """An Example whose FloatList is not packed (valid protobuf, not what TF writes)."""
    feature = b"".join(b"\x0d" + np.float32(v).tobytes() for v in values)
    v_entry = b"\x0a\x01v\x12" + bytes([len(feature) + 2]) + b"\x12" + bytes([len(feature)]) + feature
    id_feature = b"\x0a" + bytes([len(id_) + 2]) + b"\x0a" + bytes([len(id_)]) + id_.encode()
    id_entry = b"\x0a\x03#id\x12" + bytes([len(id_feature)]) + id_feature
    features = (b"\x0a" + bytes([len(v_entry)]) + v_entry + b"\x0a" + bytes([len(id_entry)])
                + id_entry)
    return b"\x0a" + bytes([len(features)]) + features


@pytest.mark.parametrize("records, expect", [
    # int64 ids, named by their decimal text (fast path)
    ([proto_record(**{"#id": [7], "v": [1.0, 2.0, 3.0]}),
      proto_record(**{"#id": [-8], "v": [4.0, 5.0, 6.0]})], [b"7", b"-8"]),
    # unpacked floats: the exact path
    ([unpacked_floats("a", [1.0, 2.0, 3.0]), unpacked_floats("b", [4.0, 5.0, 6.0])],
     [b"a", b"b"]),
    # a float feature stored as int64_list: the exact path converts it
    ([proto_record(**{"#id": ["a"], "v": [1, 2, 3]}),
      proto_record(**{"#id": ["b"], "v": [4.0, 5.0, 6.0]})], [b"a", b"b"]),
])
def test_unusual_encodings_read_the_same(tmp_path, records, expect):
    layout = TableLayout(NODES, "n", (SPECS[1],))
    path = write(tmp_path / "n.tfrecord", records)
    (batch,) = tables_tfrecord.read_tfrecord(layout, path, 0, 100)
    assert batch.ids.tolist() == expect
    assert batch.features["v"].tolist() == [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]


def test_a_repeated_key_keeps_the_last_value_as_protobuf_does(tmp_path):
    once = proto_record(**{"#id": ["a"], "i": [1]})
    twice = once[:1] + bytes([once[1] + 9]) + once[2:] + b"\x0a\x07\x0a\x01i\x12\x02\x1a\x00"
    layout = TableLayout(NODES, "n", (FeatureSpec("i", np.dtype(np.int64), (-1,), "DT_INT64"),))
    path = write(tmp_path / "n.tfrecord", [twice])
    assert examples.parse_chunk(*_chunk(path), {"#id": examples.KEY, "i": examples.INT64}) is None
    (batch,) = tables_tfrecord.read_tfrecord(layout, path, 0, 100)
    assert batch.features["i"].to_list() == [[]]


def _chunk(path):
    chunk = next(tfrecord.read_chunks(tfrecord.open_records(path), path))
    return chunk.buffer, chunk.starts, chunk.lengths


@pytest.mark.parametrize("name", ["e.tfrecord.gz", "e.tfrecord"])
def test_gzip_tables(tmp_path, name):
    batch = EdgeBatch("e", np.array([b"a", b"b"]), np.array([b"b", b"c"]), row_ids(0, 0, 2),
                      None, {"f": np.array([1.5, 2.5], np.float32),
                             "v": np.arange(6, dtype=np.float32).reshape(2, 3)})
    write_table(str(tmp_path / "plain.tfrecord"), EDGE_LAYOUT, [batch])
    (tmp_path / name).write_bytes(gzip.compress((tmp_path / "plain.tfrecord").read_bytes()))
    (back,) = tables_tfrecord.read_tfrecord(EDGE_LAYOUT, str(tmp_path / name), 0, 100)
    graphs.assert_same_batch(batch, back)


def test_damage_in_a_later_batch_comes_after_the_earlier_batches(tmp_path):
    records = [proto_record(**{"#id": [f"n{k}"], "i": [k]}) for k in range(10)]
    path = tmp_path / "n.tfrecord"
    write(path, records)
    raw = bytearray(path.read_bytes())
    raw[-6] ^= 1  # inside the last record's data
    path.write_bytes(bytes(raw))
    layout = TableLayout(NODES, "n", (SPECS[3],))
    reader = tables_tfrecord.read_tfrecord(layout, str(path), 0, 4)
    assert [len(next(reader)) for _ in range(2)] == [4, 4]
    with pytest.raises(TableError, match=r"n.tfrecord: record 9 at byte \d+: bad data checksum"):
        next(reader)


def test_a_record_that_is_no_example_is_named_before_later_damage(tmp_path):
    good = proto_record(**{"#id": ["a"], "i": [1]})
    path = tmp_path / "n.tfrecord"
    write(path, [good, b"\xff\xff\xff", good, good])
    raw = bytearray(path.read_bytes())
    raw[-6] ^= 1
    path.write_bytes(bytes(raw))
    layout = TableLayout(NODES, "n", (SPECS[3],))
    with pytest.raises(TableError, match="record 1: not a tf.train.Example"):
        list(tables_tfrecord.read_tfrecord(layout, str(path), 0, 100))


def test_tensorflow_reads_our_records_and_we_read_its_gzip(tmp_path):
    tf = pytest.importorskip("tensorflow")
    rows = [(b"n1", 0.5, [1.0, 2.0, 3.0], [0.25, 8.0], 3, [1, 2], True, [b"x"]),
            (b"n2", -1.0, [4.0, 5.0, 6.0], [1.0, 2.0], -4, [], False, [])]
    batch = node_batch(rows)
    ours = str(tmp_path / "ours.tfrecord")
    write_table(ours, NODE_LAYOUT, [batch])
    parsed = [tf.train.Example.FromString(r.numpy()) for r in tf.data.TFRecordDataset(ours)]
    assert parsed[0].features.feature["#id"].bytes_list.value == [b"n1"]
    assert list(parsed[1].features.feature["i"].int64_list.value) == [-4]
    assert list(parsed[0].features.feature["v"].float_list.value) == [1.0, 2.0, 3.0]
    theirs = str(tmp_path / "theirs.tfrecord")  # GZIP without .gz in the name, as TF allows
    with tf.io.TFRecordWriter(theirs, tf.io.TFRecordOptions(compression_type="GZIP")) as out:
        for example in parsed:
            out.write(example.SerializeToString())
    (back,) = tables_tfrecord.read_tfrecord(NODE_LAYOUT, theirs, 0, 100)
    graphs.assert_same_batch(batch, back)


def test_bad_records_get_the_exact_message(tmp_path):
    bad = example_pb2.Example()
    bad.features.feature["#id"].bytes_list.value.extend([b"a", b"b"])
    path = write(tmp_path / "n.tfrecord", [bad.SerializeToString()])
    with pytest.raises(TableError, match="record 0: feature '#id': expected one bytes id, "
                                         "found 2 value"):
        list(tables_tfrecord.read_tfrecord(TableLayout(NODES, "n", ()), path, 0, 100))


def test_long_values_with_multi_byte_lengths(tmp_path):
    """Entries over 127 bytes (two-byte lengths) and ids of every length up to 300 bytes."""
    n = 300
    rng = np.random.default_rng(3)
    layout = TableLayout(NODES, "n", (
        FeatureSpec("wide", np.dtype(np.float32), (128,), "DT_FLOAT"),
        FeatureSpec("many", np.dtype(np.int64), (-1,), "DT_INT64"),
        FeatureSpec("text", np.dtype(object), (), "DT_STRING")))
    counts = rng.integers(0, 60, n)
    batch = NodeBatch("n", np.array([b"i" * (k + 1) for k in range(n)]), row_ids(0, 0, n), {
        "wide": rng.standard_normal((n, 128)).astype(np.float32),
        "many": Ragged(rng.integers(-2 ** 62, 2 ** 62, int(counts.sum())), counts),
        "text": np.array([b"t" * k for k in range(n)], dtype=object)})
    path = str(tmp_path / "n.tfrecord")
    write_table(path, layout, [batch])
    fast, exact, declined = both_ways(layout, path, batch_rows=64)
    assert declined == 0
    graphs.assert_same_batch(batch, graphs.merged(fast))
    graphs.assert_same_batch(batch, graphs.merged(exact))


def _alike(layout, path):
    """examples._parse_alike's answer for the first chunk of a file (None: it declined)."""
    buffer, starts, lengths = _chunk(path)
    names = sorted(tables_tfrecord._parse(buffer[starts[0]:starts[0] + lengths[0]].tobytes(),
                                          path, 0).features.feature)
    roles = tables_tfrecord._roles(layout, resolve_columns(layout, names, path))
    return examples._parse_alike(buffer, wire.windows(buffer), starts, lengths, roles, {})


def test_records_laid_out_alike_take_the_one_pass_path(tmp_path):
    rng = np.random.default_rng(4)
    n = 500
    batch = EdgeBatch("e", np.array([b"s%d" % k for k in rng.integers(0, 10 ** 6, n)]),
                      np.array([b"t%d" % k for k in rng.integers(0, 10 ** 6, n)]),
                      row_ids(0, 0, n), rng.random(n),
                      {"f": rng.random(n).astype(np.float32),
                       "v": rng.random((n, 3)).astype(np.float32)})
    path = str(tmp_path / "e.tfrecord")
    write_table(path, EDGE_LAYOUT, [batch])
    assert _alike(EDGE_LAYOUT, path) is not None
    fast, exact, declined = both_ways(EDGE_LAYOUT, path, batch_rows=1000)
    assert declined == 0
    graphs.assert_same_batch(graphs.merged(fast), graphs.merged(exact))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(
    st.binary(min_size=1, max_size=200).filter(lambda b: not b.endswith(b"\0")),
    int64s, st.one_of(st.none(), st.binary(max_size=300)), st.booleans()),
    min_size=1, max_size=30), st.permutations(range(4)))
def test_records_alike_or_not_read_as_protobuf_does(tmp_path_factory, rows, order):
    """Ids and unused features whose lengths cross 127 bytes (one- and two-byte length
    fields), int64 values of any varint size, entries in any order, a feature only some
    records have: the one-pass path reads only records laid out like the first and the
    general path the rest, both as protobuf does."""
    records = []
    for k, (id_, number, unused, reordered) in enumerate(rows):
        entries = [("#id", [id_]), ("i", [number]), ("v", [1.0 * k, 2.0, 3.0]),
                   ("unused", None if unused is None else [unused])]
        records.append(proto_record(**dict(entries[o] for o in (order[::-1] if reordered
                                                                else order)
                                           if entries[o][1] is not None)))
    layout = TableLayout(NODES, "n", (SPECS[1], SPECS[3]))
    path = write(tmp_path_factory.mktemp("t") / "n.tfrecord", records)
    fast, exact, declined = both_ways(layout, path, batch_rows=64)
    assert declined == 0
    graphs.assert_same_batch(graphs.merged(fast), graphs.merged(exact))
    assert graphs.merged(fast).ids.tolist() == [r[0] for r in rows]


@pytest.mark.parametrize("floats, id_lengths", [(128, (130, 300)), (5000, (1, 9))])
def test_multi_byte_length_fields_take_the_one_pass_path(tmp_path, floats, id_lengths):
    """Two-byte length fields (128 floats, ids over 127 bytes) and three-byte ones
    (5000 floats: 20,000-byte lists) keep one layout for every record."""
    rng = np.random.default_rng(floats)
    n = 40
    layout = TableLayout(NODES, "n", (FeatureSpec("wide", np.dtype(np.float32), (floats,),
                                                  "DT_FLOAT"),))
    batch = NodeBatch("n", np.array([b"i" * int(k) for k in rng.integers(*id_lengths, n)]),
                      row_ids(0, 0, n),
                      {"wide": rng.standard_normal((n, floats)).astype(np.float32)})
    path = str(tmp_path / "n.tfrecord")
    write_table(path, layout, [batch])
    assert _alike(layout, path) is not None
    fast, exact, declined = both_ways(layout, path, batch_rows=64)
    assert declined == 0
    graphs.assert_same_batch(graphs.merged(fast), graphs.merged(exact))
    graphs.assert_same_batch(batch, graphs.merged(fast))
