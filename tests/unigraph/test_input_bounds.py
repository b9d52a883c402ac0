"""Sizes read from input are bounded before anything is allocated for them (issue 36, item 4).

Each crafted case of the issue runs as a user would (`sample`'s main) or through the
reader it reaches, and asserts one line naming the file and the value; allocations are
watched with tracemalloc (which sees numpy's buffers). A legitimate long CSV row reads.
"""
import io
import os
import shutil
import struct
import tracemalloc

import numpy as np
import pytest

from pipelines import sample
from tests.unigraph import graphs
from tests.unigraph.test_csv import LAYOUT, read
from unigraph.encoding import tfrecord
from unigraph.errors import SchemaError, TableError
from unigraph.tables import csv as csv_tables
from unigraph.tables import decode

SPEC = ('seed_op { op_name: "s" node_set_name: "u" }\n'
        'sampling_ops { op_name: "h" input_op_names: "s" edge_set_name: "f" sample_size: 2 '
        'strategy: RANDOM_UNIFORM }\n')


def csv_graph(folder, feature='features { key: "v" value { dtype: DT_FLOAT } }',
              rows=("u1,1", "u2,2")):
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "graph_schema.pbtxt"), "w") as f:
        f.write(f'node_sets {{ key: "u" value {{ {feature} metadata {{ filename: "u.csv" }} }} }}\n'
                f'edge_sets {{ key: "f" value {{ source: "u" target: "u" '
                f'metadata {{ filename: "f.csv" }} }} }}\n')
    with open(os.path.join(folder, "u.csv"), "w") as f:
        f.write("id,v\n" + "".join(r + "\n" for r in rows))
    with open(os.path.join(folder, "f.csv"), "w") as f:
        f.write("source,target\nu1,u2\n")
    with open(os.path.join(folder, "spec.pbtxt"), "w") as f:
        f.write(SPEC)
    return folder


class Peak:
    """The largest memory traced (numpy's buffers included) while the block ran."""

    def __enter__(self):
        tracemalloc.start()
        return self

    def __exit__(self, *exc):
        self.bytes = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()


def run_sample(capsys, folder, out, *extra):
    code = sample.main(["--graph", str(folder), "--spec", os.path.join(folder, "spec.pbtxt"),
                        "--output", str(out), "--quiet", *extra])
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return code, err.strip().splitlines()[-1] if err.strip() else ""


def test_a_huge_declared_shape_is_refused_before_reading(tmp_path, capsys):
    """Issue 36: shape [1000000000] in a CSV graph built 10**9 Python strings
    (MemoryError traceback)."""
    folder = csv_graph(str(tmp_path / "g"), 'features { key: "v" value { dtype: DT_FLOAT '
                                            'shape { dim { size: 1000000000 } } } }')
    with Peak() as peak:
        code, line = run_sample(capsys, folder, tmp_path / "out")
    assert code == 2 and "feature 'v' has shape [1000000000]: more than 16777216 values" in line
    assert "graph_schema.pbtxt" in line
    assert peak.bytes < 64 << 20


@pytest.mark.parametrize("dims, expect", [
    ("dim { size: 4096 } dim { size: 4097 }", "more than 16777216 values per item"),
    ("dim { size: 1 } " * 33, "has 33 dimensions"),
])
def test_shapes_beyond_the_bound(tmp_path, capsys, dims, expect):
    folder = csv_graph(str(tmp_path / "g"),
                       f'features {{ key: "v" value {{ dtype: DT_FLOAT shape {{ {dims} }} }} }}')
    code, line = run_sample(capsys, folder, tmp_path / "out")
    assert code == 2 and expect in line


def test_a_record_length_of_a_tebibyte_with_a_valid_checksum(tmp_path):
    """Issue 36: a TFRecord length of 2**40 whose length checksum holds asked numpy for
    1 TiB. It is refused naming the record and the value, having allocated about the
    file's bytes."""
    head = struct.pack("<Q", 1 << 40)
    data = (tfrecord.encode_record(b"first")
            + head + struct.pack("<I", tfrecord.masked_crc32c(head)) + b"x" * 100)
    with Peak() as peak, pytest.raises(TableError, match=r"f: record 1 at byte 21: length "
                                                          r"1099511627776 is more than a record "
                                                          r"may hold"):
        list(tfrecord.iter_records(io.BytesIO(data), "f"))
    assert peak.bytes < 32 << 20


def test_a_length_within_the_bound_costs_the_files_bytes_not_the_claim():
    """A claim of 1.5 GiB in a file of a few bytes reads to the end and says it is cut
    short, without a buffer of the claim's size."""
    head = struct.pack("<Q", 3 << 29)
    data = head + struct.pack("<I", tfrecord.masked_crc32c(head)) + b"x" * 1000
    with Peak() as peak, pytest.raises(TableError, match="record 0 at byte 0: truncated data"):
        list(tfrecord.iter_records(io.BytesIO(data), "f"))
    assert peak.bytes < 256 << 20


def test_a_tfrecord_table_with_a_crafted_length_is_one_line(tmp_path, capsys):
    folder = tmp_path / "g"
    folder.mkdir()
    graphs.write_tfrecord_graph(str(folder))
    path = folder / "item.tfrecord"
    records = list(tfrecord.iter_records(open(path, "rb"), "x"))
    head = struct.pack("<Q", 1 << 40)
    path.write_bytes(tfrecord.encode_record(records[0]) + head
                     + struct.pack("<I", tfrecord.masked_crc32c(head)) + records[1])
    (folder / "spec.pbtxt").write_text(
        'seed_op { op_name: "s" node_set_name: "item" }\n'
        'sampling_ops { op_name: "h" input_op_names: "s" edge_set_name: "link" '
        'sample_size: 2 strategy: RANDOM_UNIFORM }\n')
    code, line = run_sample(capsys, folder, tmp_path / "out")
    assert code == 2 and f"{path}: record 1 at byte" in line
    assert "length 1099511627776 is more than a record may hold" in line


def test_an_id_longer_than_the_bound_is_one_line(tmp_path, capsys):
    folder = csv_graph(str(tmp_path / "g"), rows=("u1,1", "u" * 5000 + ",2"))
    with Peak() as peak:
        code, line = run_sample(capsys, folder, tmp_path / "out")
    assert code == 2 and "u.csv: line 3: column 'id': an id of 5000 bytes, longer than the " \
                         "4096 an id may have" in line
    assert peak.bytes < 256 << 20


def test_ids_of_the_bound_read(tmp_path):
    ids = decode.ids_from_spans(np.frombuffer(b"a" * 4096, np.uint8), np.array([0]),
                                np.array([4096]), lambda i: "x", "id")
    assert ids.dtype == np.dtype("S4096")


def test_a_csv_cell_over_a_mebibyte_reads(tmp_path):
    """Issue 36: a legitimate cell over 1 MiB failed with Arrow's fixed block size."""
    path = tmp_path / "e.csv"
    rows = [f"a{k},b{k},{k},1 2 3,0.5 1,{k} {k}" for k in range(6)]
    long_row = "along,blong,9," + "1 2 3" + ",0.5 1," + " ".join(["7"] * (600 << 10))
    path.write_text("source,target,x,v,h,t\n" + "\n".join(rows[:3] + [long_row] + rows[3:])
                    + "\n")
    batches = read(path)
    merged = graphs.merged(batches)
    assert merged.sources.tolist()[3] == b"along"
    assert merged.features["t"].row_lengths.tolist()[3] == 600 << 10
    assert merged.rows.tolist() == list(range(7))
    with pytest.MonkeyPatch.context() as patch:
        from tests.unigraph.test_csv import precise_only
        precise_only(patch)
        graphs.assert_same_batch(graphs.merged(read(path)), merged)


def test_a_row_beyond_the_longest_is_one_line(tmp_path, monkeypatch):
    monkeypatch.setattr(csv_tables, "MAX_ROW_BYTES", 2 << 20)
    path = tmp_path / "e.csv"
    path.write_text("source,target,x,v,h,t\na,b,1,1 2 3,0.5 1,1\n"
                    + "c,d,2,1 2 3,0.5 1," + " ".join(["7"] * (3 << 20)) + "\n")
    with pytest.raises(TableError, match=r"e.csv: a row after data row 1 is longer than 2 MiB"):
        read(path)


def test_sampling_every_node_of_a_graph_with_a_truncated_parquet_table(tmp_path, capsys):
    """Issue 36: without --seeds, the output-size estimate read the damaged Parquet footer
    first: a pyarrow traceback (the fuzzer always passed --seeds)."""
    folder = tmp_path / "g"
    folder.mkdir()
    graphs.write_parquet_graph(str(folder))
    data = (folder / "link.parquet").read_bytes()
    (folder / "link.parquet").write_bytes(data[:len(data) // 3])
    (folder / "spec.pbtxt").write_text(
        'seed_op { op_name: "s" node_set_name: "item" }\n'
        'sampling_ops { op_name: "h" input_op_names: "s" edge_set_name: "link" '
        'sample_size: 2 strategy: RANDOM_UNIFORM }\n')
    code, line = run_sample(capsys, folder, tmp_path / "out")
    assert code == 2 and f"{folder / 'link.parquet'}: not a Parquet file" in line
    assert not (tmp_path / "out").exists()
