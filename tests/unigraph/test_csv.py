"""CSV tables: Arrow's typed fast way and the precise text way read the same columns."""
import os
import tempfile

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.unigraph import graphs
from unigraph.errors import TableError
from unigraph.tables import csv as csv_tables
from unigraph.tables.layout import EDGES, FeatureSpec, TableLayout

LAYOUT = TableLayout(EDGES, "e", (
    FeatureSpec("x", np.dtype(np.int32), (), "DT_INT32"),
    FeatureSpec("v", np.dtype(np.float32), (3,), "DT_FLOAT"),
    FeatureSpec("h", np.dtype(np.float16), (2,), "DT_HALF"),
    FeatureSpec("t", np.dtype(np.int64), (-1,), "DT_INT64"),
))


def precise_only(monkeypatch):
    monkeypatch.setattr(csv_tables, "_typed", lambda layout, columns: {})

    def decline(spec, column):
        raise csv_tables._Declined

    monkeypatch.setattr(csv_tables, "_vectors", decline)


def read(path, batch_rows=4):
    return list(csv_tables.read_csv(LAYOUT, str(path), 0, batch_rows))


def number_text(value, style):
    return {0: repr(value), 1: f"{value:.3e}", 2: f" {value}"}[style]


cells = st.tuples(st.integers(-2 ** 31, 2 ** 31 - 1),
                  st.lists(st.floats(-1e6, 1e6, allow_nan=False, width=32), min_size=3,
                           max_size=3),
                  st.lists(st.floats(-100, 100, allow_nan=False, width=16), min_size=2,
                           max_size=2),
                  st.lists(st.integers(-10 ** 12, 10 ** 12), max_size=3),
                  st.sampled_from([" ", "  ", "\t"]), st.integers(0, 2))


@settings(max_examples=30, deadline=None)
@given(st.lists(cells, min_size=1, max_size=12))
def test_fast_and_precise_ways_agree(rows):
    with tempfile.TemporaryDirectory() as folder:
        lines = ["source,target,weight,x,v,h,t"]
        for k, (x, v, h, t, gap, style) in enumerate(rows):
            vector = gap.join(number_text(value, style) for value in v)
            lines.append(f"a{k},b{k},{k * 0.5},{x},{vector},{' '.join(map(str, h))},"
                         f"{' '.join(map(str, t))}")
        path = os.path.join(folder, "e.csv")
        with open(path, "w") as f:
            f.write("\n".join(lines) + "\n")
        fast = graphs.merged(read(path))
        with pytest.MonkeyPatch.context() as patch:
            precise_only(patch)
            precise = graphs.merged(read(path))
    graphs.assert_same_batch(precise, fast)
    assert fast.rows.tolist() == list(range(len(rows)))


def test_well_formed_files_stay_on_the_fast_way(tmp_path, monkeypatch):
    path = tmp_path / "e.csv"
    path.write_text("source,target,weight,x,v,h,t\n"
                    + "".join(f"a{k},b{k},1.5,{k},1 2 3,0.5 1,{k} {k}\n" for k in range(10)))

    def no_fallback(*args):
        raise AssertionError("fell back to the precise way")

    monkeypatch.setattr(csv_tables, "_skipped", no_fallback)
    batches = read(path)
    assert [len(b) for b in batches] == [4, 4, 2]
    assert batches[1].features["v"].tolist()[0] == [1.0, 2.0, 3.0]
    assert batches[2].features["x"].tolist() == [8, 9]


@pytest.mark.parametrize("bad_line, cell, message", [
    (9, "a,b,1,7,1 2 x,0 0,1", "line 9: column 'v': 'x' is not a valid DT_FLOAT"),
    (8, "a,b,1,2.5,1 2 3,0 0,1", "line 8: column 'x': '2.5' is not a valid DT_INT32"),
    (7, "a,b,NaN,7,1 2 3,0 0,1", "line 7: column 'weight': weight 'NaN' is not a finite number"),
    (6, "a,b,1,7,1 2,0 0,1", "line 6: column 'v': expected 3 values for shape [3], found 2"),
])
def test_errors_in_later_batches_name_the_line(tmp_path, bad_line, cell, message):
    lines = ["source,target,weight,x,v,h,t"] + [f"a{k},b{k},1,{k},1 2 3,0 0,1"
                                                 for k in range(10)]
    lines[bad_line - 1] = cell
    path = tmp_path / "e.csv"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(TableError) as error:
        read(path, batch_rows=2)
    assert str(error.value) == f"{path}: {message}"


def test_a_file_changed_after_its_header_was_read_is_one_line(tmp_path, monkeypatch):
    """The header is read on its own first; the rows are read in a second pass. A file
    rewritten between the two (another header) is a TableError, not Arrow's KeyError."""
    path = tmp_path / "e.csv"
    path.write_text("source,target,weight,x,v,h,t\n" + "a,b,1,7,1 2 3,0 0,1\n")
    read_header = csv_tables.read_header

    def read_then_rewrite(header_path):
        header = read_header(header_path)
        path.write_text("from,to\n" + "a,b\n")
        return header

    monkeypatch.setattr(csv_tables, "read_header", read_then_rewrite)
    with pytest.raises(TableError) as error:
        read(path)
    assert str(error.value).startswith(f"{path}: ")
    assert "source" in str(error.value)
