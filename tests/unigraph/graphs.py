"""Test helpers: the "mixed" fixture graph as Python rows, written in each table format.

The CSV tables are tracked under tests/testdata/unigraph/mixed; the Parquet and
TFRecord copies are made here from the same rows, independently of
unigraph.tables.writers (pyarrow directly, tf.train.Example via our example_pb2), with
different column spellings (`id` vs `#id`, `weight` vs `#weight`) on purpose.
"""
from __future__ import annotations

import os
import shutil

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from unigraph.encoding import tfrecord

from unigraph.protos import example_pb2
from unigraph.columnar.batches import EdgeBatch, NodeBatch
from unigraph.columnar.ragged import concat, values_equal

TESTDATA = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "testdata")
MIXED = os.path.join(TESTDATA, "unigraph", "mixed")

# id, name, count, score, vec[3], tags[-1], words[-1]
ITEMS = [
    ("i1", "Ada, the first", 3, 0.5, [1.0, 2.0, 3.0], [7, 8], ["alpha", "beta"]),
    ("i2", "Bob", -4, 1.25, [0.5, -0.25, 1000.0], [], []),
    ("i3", "multi\nline", 0, -2.5, [0.0, 0.0, 0.0], [9], ["gamma"]),
]
# source, target, weight, kind, pos[2]
LINKS = [("i1", "i2", 0.5, "a", [1, 2]), ("i2", "i3", 2.0, "b", [3, 4]),
         ("i3", "i1", 1.25, "c", [-5, 6])]
TAGGED = [("i1", "t1"), ("i2", "t2"), ("i3", "t1")]


def copy_schema(folder: str, ext: str) -> str:
    """The mixed schema in `folder` with table names ending in `ext`; returns its path."""
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(MIXED, "graph_schema.pbtxt")) as f:
        text = f.read().replace(".csv", ext)
    path = os.path.join(folder, "graph_schema.pbtxt")
    with open(path, "w") as f:
        f.write(text)
    return path


def write_csv_graph(folder: str) -> str:
    for name in os.listdir(MIXED):
        shutil.copy(os.path.join(MIXED, name), folder)
    return os.path.join(folder, "graph_schema.pbtxt")


def write_parquet_graph(folder: str) -> str:
    schema = copy_schema(folder, ".parquet")
    items = pa.table({
        "id": [r[0] for r in ITEMS],
        "name": pa.array([r[1].encode() for r in ITEMS], pa.binary()),
        "count": pa.array([r[2] for r in ITEMS], pa.int64()),
        "score": pa.array([r[3] for r in ITEMS], pa.float64()),  # cast to DT_FLOAT on read
        "vec": pa.array([r[4] for r in ITEMS], pa.list_(pa.float32(), 3)),
        "tags": pa.array([r[5] for r in ITEMS], pa.list_(pa.int64())),
        "words": pa.array([r[6] for r in ITEMS], pa.list_(pa.string())),
    })
    pq.write_table(items, os.path.join(folder, "item.parquet"), row_group_size=2)
    links = pa.table({
        "source": [r[0] for r in LINKS], "target": [r[1] for r in LINKS],
        "#weight": pa.array([r[2] for r in LINKS], pa.float64()),
        "kind": [r[3] for r in LINKS],
        "pos": pa.array([r[4] for r in LINKS], pa.list_(pa.int32())),
        "unused": [1, 2, 3],
    })
    pq.write_table(links, os.path.join(folder, "link.parquet"))
    pq.write_table(pa.table({"#source": [r[0] for r in TAGGED], "#target": [r[1] for r in TAGGED]}),
                   os.path.join(folder, "tagged.parquet"))
    return schema


def example(**features) -> bytes:
    """A tf.train.Example from name -> list of str/bytes/int/float values."""
    ex = example_pb2.Example()
    for name, values in features.items():
        feature = ex.features.feature[name]
        if values and isinstance(values[0], (str, bytes)):
            feature.bytes_list.value.extend(v.encode() if isinstance(v, str) else v for v in values)
        elif values and isinstance(values[0], float):
            feature.float_list.value.extend(values)
        elif values:
            feature.int64_list.value.extend(values)
        else:
            feature.int64_list.SetInParent()  # an empty list of a kind
    return ex.SerializeToString()


def write_records(path: str, records: list[bytes]) -> None:
    with open(path, "wb") as f:
        for record in records:
            f.write(tfrecord.encode_record(record))


def write_tfrecord_graph(folder: str) -> str:
    schema = copy_schema(folder, ".tfrecord")
    write_records(os.path.join(folder, "item.tfrecord"), [
        example(**{"#id": [i], "name": [n], "count": [c], "score": [s], "vec": v, "tags": t,
                   "words": w}) for i, n, c, s, v, t, w in ITEMS])
    write_records(os.path.join(folder, "link.tfrecord"), [
        example(**{"#source": [s], "#target": [t], "weight": [w], "kind": [k], "pos": p})
        for s, t, w, k, p in LINKS])
    write_records(os.path.join(folder, "tagged.tfrecord"), [
        example(**{"#source": [s], "#target": [t]}) for s, t in TAGGED])
    return schema


def merged(batches):
    """One batch holding all rows of `batches`, in RowId order."""
    batches = sorted(batches, key=lambda b: int(b.rows[0]))
    first = batches[0]
    features = {k: concat([b.features[k] for b in batches]) for k in first.features}
    rows = np.concatenate([b.rows for b in batches])
    if isinstance(first, NodeBatch):
        return NodeBatch(first.node_set, np.concatenate([b.ids for b in batches]), rows, features)
    weights = (None if first.weights is None
               else np.concatenate([b.weights for b in batches]))
    return EdgeBatch(first.edge_set, np.concatenate([b.sources for b in batches]),
                     np.concatenate([b.targets for b in batches]), rows, weights, features)


def assert_same_batch(a, b) -> None:
    """Same ids/ends, weights and features (dtype, shape and values)."""
    if isinstance(a, NodeBatch):
        assert a.ids.tolist() == b.ids.tolist()
    else:
        assert a.sources.tolist() == b.sources.tolist()
        assert a.targets.tolist() == b.targets.tolist()
        assert (a.weights is None) == (b.weights is None)
        if a.weights is not None:
            assert a.weights.dtype == b.weights.dtype == np.float64
            assert values_equal(a.weights, b.weights)
    assert sorted(a.features) == sorted(b.features)
    for name in a.features:
        x, y = a.features[name], b.features[name]
        assert type(x) is type(y), name
        assert x.dtype == y.dtype, name
        assert values_equal(x, y), (name, x, y)
