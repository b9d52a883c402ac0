"""unigraph-convert: every format to every other, the schema kept, errors as one line."""
import os

import pytest

from pipelines import convert
from unigraph.schema import load_schema
from unigraph.tables import is_reversed, read_set

from tests.unigraph import graphs
from tests.unigraph.test_formats import SETS


def read_all(schema):
    loaded = load_schema(schema)
    return {name: graphs.merged(read_set(loaded, kind, name)) for kind, name in SETS}


@pytest.mark.parametrize("chain", [("parquet", "tfrecord", "csv"), ("tfrecord", "parquet")])
def test_conversions_keep_every_column(tmp_path, chain):
    original = read_all(graphs.MIXED)
    source = graphs.MIXED
    for step, fmt in enumerate(chain):
        out = str(tmp_path / f"{step}-{fmt}")
        assert convert.main(["--graph", source, "--output", out, "--format", fmt]) == 0
        for kind, name in SETS:
            graphs.assert_same_batch(original[name], read_all(out)[name])
        source = out
    loaded = load_schema(source)
    assert is_reversed(loaded.schema.edge_sets["linked_by"])
    # The reversed set still shares its table with the forward one.
    assert (loaded.schema.edge_sets["linked_by"].metadata.filename
            == loaded.schema.edge_sets["link"].metadata.filename)


def test_shards(tmp_path, capsys):
    out = str(tmp_path / "out")
    assert convert.main(["--graph", graphs.MIXED, "--output", out, "--format", "tfrecord",
                         "--shards", "3"]) == 0
    assert "node set 'item': 3 rows -> item@3.tfrecord" in capsys.readouterr().out
    assert sorted(f for f in os.listdir(out) if f.startswith("item")) == [
        f"item-0000{i}-of-00003.tfrecord" for i in range(3)]
    graphs.assert_same_batch(read_all(graphs.MIXED)["item"], read_all(out)["item"])


def test_too_many_tfrecord_shards_is_an_error(tmp_path, capsys):
    assert convert.main(["--graph", graphs.MIXED, "--output", str(tmp_path / "o"),
                         "--format", "tfrecord", "--shards", "4"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("unigraph-convert: error: ") and "a TFRecord table cannot be empty" in err
    assert err.count("\n") == 1


def test_bad_input_is_one_line(tmp_path, capsys):
    graphs.write_csv_graph(str(tmp_path))
    with open(tmp_path / "item.csv", "a") as f:
        f.write("i4,x,1,1.0,1 2,,\n")
    assert convert.main(["--graph", str(tmp_path), "--output", str(tmp_path / "o"),
                         "--format", "parquet"]) == 2
    err = capsys.readouterr().err
    assert err == (f"unigraph-convert: error: {tmp_path / 'item.csv'}: line 6: column 'vec': "
                   f"expected 3 values for shape [3], found 2\n")


def test_refuses_to_overwrite_the_input(capsys):
    assert convert.main(["--graph", graphs.MIXED, "--output", graphs.MIXED,
                         "--format", "csv"]) == 2
    assert "is the input graph's folder" in capsys.readouterr().err


def test_a_users_file_under_a_table_name_is_never_replaced(tmp_path, capsys):
    """Issue 36: a conversion replaces only what a conversion wrote; the user's own
    `graph_schema.pbtxt` or table of the same name is refused before anything moves."""
    out = tmp_path / "o"
    out.mkdir()
    (out / "graph_schema.pbtxt").write_text("the user's own graph")
    code = convert.main(["--graph", graphs.MIXED, "--output", str(out), "--format", "csv"])
    err = capsys.readouterr().err
    assert code == 2 and "holds graph_schema.pbtxt, which this run would replace" in err
    assert sorted(os.listdir(out)) == ["graph_schema.pbtxt"]
    os.remove(out / "graph_schema.pbtxt")
    assert convert.main(["--graph", graphs.MIXED, "--output", str(out), "--format", "csv"]) == 0
    first = sorted(os.listdir(out))
    table = next(n for n in first if n.endswith(".csv"))
    assert convert.main(["--graph", graphs.MIXED, "--output", str(out),
                         "--format", "csv"]) == 0  # its own earlier output: replaced
    assert sorted(os.listdir(out)) == first
    (out / ".unigraph-written.json").unlink()  # no longer provably ours
    (out / "notes.txt").write_text("mine")
    code = convert.main(["--graph", graphs.MIXED, "--output", str(out), "--format", "csv"])
    assert code == 2 and "which this run would replace" in capsys.readouterr().err
    assert (out / "notes.txt").read_text() == "mine" and (out / table).exists()
    assert not [n for n in os.listdir(out) if n.startswith(".convert-staging")]
