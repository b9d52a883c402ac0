"""A feature holding one value per item reads the same in every spelling and format:
a scalar column for shape [1] (OGBN-MAG's `labels` in Parquet), a one-value list for a
scalar, and CSV cells and TFRecord lists as before, for every dtype."""
import os

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.unigraph import graphs
from unigraph.errors import TableError
from unigraph.schema import load_schema
from unigraph.tables import read_set

# dtype name -> (values of three rows, arrow type for Parquet)
DTYPES = {
    "DT_FLOAT": ([0.5, -1.25, 3.0], pa.float32()),
    "DT_DOUBLE": ([0.25, 2.5, -7.0], pa.float64()),  # exact in float32 (TFRecord)
    "DT_HALF": ([0.5, 1.5, -2.0], pa.float32()),
    "DT_INT64": ([5, -9, 2**40], pa.int64()),
    "DT_INT32": ([1, -2, 3], pa.int32()),
    "DT_INT16": ([1, -2, 300], pa.int16()),
    "DT_INT8": ([1, -2, 100], pa.int8()),
    "DT_UINT8": ([0, 7, 255], pa.uint8()),
    "DT_UINT16": ([0, 7, 65535], pa.uint16()),
    "DT_UINT32": ([0, 7, 2**32 - 1], pa.uint32()),
    "DT_BOOL": ([True, False, True], pa.bool_()),
    "DT_STRING": (["x", "yy", "zz"], pa.string()),  # CSV vectors split on spaces
}
IDS = ["n1", "n2", "n3"]


def schema_text(ext):
    features = "".join(
        f'features {{ key: "{kind}_{dtype.lower()}" value {{ dtype: {dtype} '
        f'{"shape { dim { size: 1 } }" if kind == "vec" else ""} }} }}\n'
        for dtype in DTYPES for kind in ("vec", "one"))
    return f'node_sets {{ key: "n" value {{ {features} metadata {{ filename: "n{ext}" }} }} }}\n'


def write(folder, fmt):
    os.makedirs(folder)
    with open(os.path.join(folder, "graph_schema.pbtxt"), "w") as f:
        f.write(schema_text("." + fmt))
    path = os.path.join(folder, f"n.{fmt}")
    if fmt == "parquet":
        # Shape [1] as a plain scalar column; a scalar as a list of one value per row.
        columns = {"id": IDS}
        for dtype, (values, arrow_type) in DTYPES.items():
            columns[f"vec_{dtype.lower()}"] = pa.array(values, arrow_type)
            columns[f"one_{dtype.lower()}"] = pa.array([[v] for v in values],
                                                       pa.list_(arrow_type))
        pq.write_table(pa.table(columns), path)
    elif fmt == "csv":
        names = ["id"] + [f"{k}_{d.lower()}" for d in DTYPES for k in ("vec", "one")]
        rows = [[IDS[i]] + [_text(DTYPES[d][0][i]) for d in DTYPES for _ in ("vec", "one")]
                for i in range(3)]
        with open(path, "w") as f:
            f.write(",".join(names) + "\n")
            f.writelines(",".join(f'"{c}"' for c in row) + "\n" for row in rows)
    else:
        graphs.write_records(path, [graphs.example(
            id=[IDS[i]], **{f"{k}_{d.lower()}": [_tf(DTYPES[d][0][i])]
                            for d in DTYPES for k in ("vec", "one")}) for i in range(3)])
    return path


def _text(value):
    return str(int(value)) if isinstance(value, bool) else str(value)


def _tf(value):
    return int(value) if isinstance(value, bool) else value


@pytest.fixture(scope="module")
def tables(tmp_path_factory):
    root = tmp_path_factory.mktemp("one_value")
    result = {}
    for fmt in ("csv", "tfrecord", "parquet"):
        write(str(root / fmt), fmt)
        result[fmt] = graphs.merged(read_set(load_schema(str(root / fmt)), "nodes", "n"))
    return result


@pytest.mark.parametrize("dtype", sorted(DTYPES))
def test_every_spelling_reads_alike(tables, dtype):
    values = DTYPES[dtype][0]
    for fmt, batch in tables.items():
        vec, one = batch.features[f"vec_{dtype.lower()}"], batch.features[f"one_{dtype.lower()}"]
        assert vec.shape == (3, 1) and one.shape == (3,), fmt
        expected = [v.encode() if isinstance(v, str) else v for v in values]
        assert vec[:, 0].tolist() == pytest.approx(expected) if dtype in (
            "DT_FLOAT", "DT_HALF", "DT_DOUBLE") else vec[:, 0].tolist() == expected, fmt
        assert one.tolist() == vec[:, 0].tolist(), fmt
    graphs.assert_same_batch(tables["csv"], tables["parquet"])
    graphs.assert_same_batch(tables["csv"], tables["tfrecord"])


def test_a_list_of_two_for_a_scalar_names_the_row(tmp_path):
    folder = tmp_path / "g"
    folder.mkdir()
    (folder / "graph_schema.pbtxt").write_text(
        'node_sets { key: "n" value { features { key: "x" value { dtype: DT_INT64 } } '
        'metadata { filename: "n.parquet" } } }')
    pq.write_table(pa.table({"id": ["a", "b"], "x": pa.array([[1], [2, 3]], pa.list_(pa.int64()))}),
                   folder / "n.parquet")
    with pytest.raises(TableError, match=r"n.parquet: row 1: column 'x': expected 1 value for a "
                                         r"scalar DT_INT64, found 2"):
        list(read_set(load_schema(str(folder)), "nodes", "n"))


def test_sampled_records_are_identical_in_every_format(tmp_path):
    """The same graph (one-value features in every dtype) sampled from CSV, TFRecord and
    Parquet node tables writes the same bytes."""
    from pipelines import sample
    from tests.pipelines.sampled_output import read_records

    records = {}
    for fmt in ("csv", "tfrecord", "parquet"):
        folder = tmp_path / fmt
        write(str(folder), fmt)
        with open(folder / "graph_schema.pbtxt", "a") as f:
            f.write('edge_sets { key: "e" value { source: "n" target: "n" '
                    'metadata { filename: "e.csv" } } }\n')
        (folder / "e.csv").write_text("source,target\nn1,n2\nn2,n3\nn3,n1\nn1,n3\n")
        (folder / "spec.pbtxt").write_text(
            'seed_op { op_name: "s" node_set_name: "n" }\n'
            'sampling_ops { op_name: "h" input_op_names: "s" edge_set_name: "e" '
            'sample_size: 2 strategy: RANDOM_UNIFORM }\n')
        out = tmp_path / f"out_{fmt}"
        assert sample.main(["--graph", str(folder), "--spec", str(folder / "spec.pbtxt"),
                            "--output", str(out), "--quiet"]) == 0
        records[fmt] = read_records(str(out))
    assert len(records["csv"]) == 3
    assert records["csv"] == records["tfrecord"] == records["parquet"]
