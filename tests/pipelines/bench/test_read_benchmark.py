"""The read benchmark runs end to end on tiny tables (it checks every row count itself)."""
from pipelines.bench import read_benchmark


def test_every_table_and_format_is_measured(tmp_path, capsys):
    assert read_benchmark.main(["--edges", "300", "--nodes", "40", "--features", "4",
                                "--repeat", "1", "--dir", str(tmp_path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    rows = [line.split()[:2] for line in lines[2:]]
    names = [name for name, _, _ in read_benchmark.FORMATS]
    assert [r[0] for r in rows] == ["edges"] * len(names) + ["nodes"] * len(names)
    assert len(lines) == 2 + 2 * len(names)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        f"{table}{suffix}" for table in ("edges", "nodes")
        for suffix in {s for _, s, _ in read_benchmark.FORMATS})


def test_a_subset_of_tables_and_formats(tmp_path, capsys):
    assert read_benchmark.main(["--edges", "300", "--nodes", "40", "--features", "4",
                                "--repeat", "1", "--dir", str(tmp_path), "--tables", "nodes",
                                "--formats", "tfrecord-gz", "csv"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[:2] for line in lines[2:]] == [["nodes", "csv"],
                                                       ["nodes", "tfrecord.gz"]]
    assert lines[1].split()[-2:] == ["CPU", "rows/s"]
    assert all(float(line.split()[-1].replace(",", "")) > 0 for line in lines[2:])
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "nodes.csv", "nodes.tfrecord", "nodes.tfrecord.gz"]
