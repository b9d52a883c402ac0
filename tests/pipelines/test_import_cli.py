"""`unigraph-import` as users run it: the kind of SOURCE told or forced, the tables'
guess printed for review (and nothing written with --dry-run), flags parsed, a bad
value past the sampled rows refused in one line with nothing written."""
import os

import pytest

from pipelines import import_graph

from tests.unigraph.importers.ogb_fixtures import mag_like
from tests.unigraph.importers.test_tables_import import write_shop


def test_an_ogb_folder_is_told_and_imported(tmp_path, capsys):
    mag = mag_like(tmp_path / "dataset")
    assert import_graph.main([str(tmp_path / "dataset"), "--output", str(tmp_path / "g"),
                              "--fanouts", "4", "--format", "parquet"]) == 0
    out = capsys.readouterr().out
    assert "node set 'paper': 20 rows -> paper.parquet" in out
    assert f"--seeds {tmp_path / 'g' / 'seeds-train.parquet'}" in out
    spec = (tmp_path / "g" / "sampling_spec.pbtxt").read_text()
    assert "sample_size: 4" in spec and "hop2" not in spec
    assert mag.folder  # made


def test_tables_are_reviewed_and_a_dry_run_writes_nothing(tmp_path, capsys):
    folder = write_shop(str(tmp_path / "shop"))
    assert import_graph.main([folder, "--output", str(tmp_path / "g"), "--dry-run",
                              "--edges", "follows=src:users,dst:users",
                              "--dtype", "items.price=DT_DOUBLE"]) == 0
    out = capsys.readouterr().out
    assert "price: DT_DOUBLE []" in out and "(--dry-run: nothing written)" in out
    assert not os.path.exists(tmp_path / "g")
    assert import_graph.main([folder, "--output", str(tmp_path / "g")]) == 0
    assert (tmp_path / "g" / "seeds-train.csv").exists()


def test_the_kind_can_be_forced(tmp_path, capsys):
    folder = write_shop(str(tmp_path / "shop"))
    assert import_graph.main([folder, "--output", str(tmp_path / "g"), "--from", "ogb"]) == 2
    assert "not an OGB dataset folder" in capsys.readouterr().err


@pytest.mark.parametrize("flag, message", [
    (["--edges", "follows=src"], "expected SOURCE[:SET],TARGET[:SET]"),
    (["--dtype", "items.price=FLOAT"], "expected TABLE.COLUMN=DT_"),
    (["--nodes", "items"], "expected NAME=VALUE"),
    (["--fanouts", "10,x"], "expected whole numbers")])
def test_bad_flags_are_one_line(tmp_path, capsys, flag, message):
    folder = write_shop(str(tmp_path / "shop"))
    assert import_graph.main([folder, "--output", str(tmp_path / "g"), *flag]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err


def test_a_bad_value_past_the_sample_is_one_line_and_nothing_is_written(tmp_path, capsys):
    folder = write_shop(str(tmp_path / "shop"))
    with open(os.path.join(folder, "items.csv"), "a") as f:
        for i in range(10, 70010):
            f.write(f"i{i},{i},c0\n")
        f.write("i70010,not a price,c1\n")
    out = tmp_path / "g"
    assert import_graph.main([folder, "--output", str(out)]) == 2
    err = capsys.readouterr().err
    assert "items.csv: line 70012" in err and "not a price" in err and err.count("\n") == 1
    assert not out.exists()


def test_an_ogb_dry_run_shows_the_schema_and_writes_nothing(tmp_path, capsys):
    mag = mag_like(tmp_path / "dataset")
    assert import_graph.main([mag.folder, "--output", str(tmp_path / "g"), "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "node set 'paper' (a table): feat DT_FLOAT [4]" in out
    assert "edge set 'writes' (author -> paper): feat DT_FLOAT [2]" in out
    assert "splits (seeds of 'paper'): train, valid, test" in out
    assert not os.path.exists(tmp_path / "g")
