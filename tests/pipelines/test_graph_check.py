"""`unigraph-check`: every kind of finding on a graph made to have them, counted and
located; text on one screen, --json, exit status by level."""
import json

import pytest

from pipelines import graph_check
from unigraph.check.graph_check import check_graph, time_summary
from unigraph.schema import load_schema

SCHEMA = """
node_sets { key: "user" value {
  features { key: "v" value { dtype: DT_FLOAT shape { dim { size: 2 } } } }
  features { key: "#timestamp" value { dtype: DT_INT64 } }
  metadata { filename: "users.csv" } } }
node_sets { key: "tag" value { } }
edge_sets { key: "follows" value { source: "user" target: "user"
  metadata { filename: "follows.csv" } } }
edge_sets { key: "followed_by" value { source: "user" target: "user"
  metadata { filename: "follows.csv" extra { key: "edge_type" value: "reversed" } } } }
edge_sets { key: "tagged" value { source: "user" target: "tag"
  metadata { filename: "tagged.csv" } } }
"""
NOW = 1_800_000_000.0  # seconds


def write_graph(folder):
    (folder / "graph_schema.pbtxt").write_text(SCHEMA)
    (folder / "users.csv").write_text(
        "#id,v,#timestamp\n"
        "u0,1 2,1700000000\nu1,3 4,1700000001\nu1,5 6,1700000002\nu2,nan 1,1700000003\n"
        "u3,1 inf,-5\nu4,0 0,1900000000\nu9,0 0,1700000004\n")
    follows = ["u0,u1", "u0,u2", "u0,u3", "u0,u4", "u0,u1", "u2,u2", "u1,ghost"]
    (folder / "follows.csv").write_text("#source,#target\n" + "\n".join(follows) + "\n")
    (folder / "tagged.csv").write_text("#source,#target\nu1,t1\nu2,t1\nnobody,t2\n")
    return str(folder)


def findings(report):
    return {(f.level, f.where, f.what): f.count for f in report.findings}


def test_every_kind_of_finding(tmp_path):
    report = check_graph(load_schema(write_graph(tmp_path)), now=NOW)
    assert findings(report) == {
        ("error", "node set 'user'", "duplicate ids"): 1,
        ("warning", "node set 'user'", "NaN features"): 2,
        ("warning", "node set 'user'", "timestamps out of range"): 2,
        ("error", "edge set 'follows'", "missing targets"): 1,
        ("warning", "edge set 'follows'", "self-loops"): 1,
        ("note", "edge set 'follows'", "parallel edges"): 1,
        ("error", "edge set 'tagged'", "missing sources"): 1,
        ("note", "node set 'user'", "isolated nodes"): 1}
    messages = {f.what: f.message for f in report.findings}
    assert "users.csv line 4" in messages["duplicate ids"]
    assert "'ghost'" in messages["missing targets"] and "follows.csv line 8" in messages[
        "missing targets"]
    assert "'u9'" in messages["isolated nodes"]
    follows = report.edge_sets["follows"]
    assert follows["out_degree"]["hubs"][0] == ["u0", 5]
    assert follows["out_degree"]["max"] == 5 and follows["rows"] == 7
    assert report.edge_sets["followed_by"] == {"reads_backwards": "follows"}
    assert report.node_sets["tag"] == {"table": False}
    assert report.node_sets["user"]["timestamps"]["unit"] == "seconds"


def test_time_ranges():
    assert time_summary(__import__("numpy").array([2001, 2030, 1999]), None, NOW)[
        "out_of_range"] == 1  # years: 2030 is after 2027
    assert time_summary(__import__("numpy").array([5.0, 50.0]), (0, 10), NOW)[
        "out_of_range"] == 1


def test_the_command(tmp_path, capsys):
    folder = write_graph(tmp_path)
    assert graph_check.main([folder]) == 1  # errors
    text = capsys.readouterr().out
    assert len(text.splitlines()) < 40 and "3 error(s)" in text
    assert "error: edge set 'follows': 1 edges name a target absent" in text
    assert graph_check.main([folder, "--json"]) == 1
    document = json.loads(capsys.readouterr().out)
    assert document["errors"] == 3 and document["edge_sets"]["tagged"]["missing_sources"] == 1
    assert graph_check.main([folder, "--time-range", "0,2000000000"]) == 1
    assert "1 timestamps in '#timestamp' are outside [0.0, 2000000000.0]" in capsys.readouterr().out


@pytest.mark.parametrize("strict, code", [(False, 0), (True, 0)])
def test_a_clean_graph_passes(capsys, strict, code):
    args = ["examples/mag_tiny"] + (["--strict"] if strict else [])
    assert graph_check.main(args) == code
    assert "0 error(s), 0 warning(s), 1 note(s)" in capsys.readouterr().out


def test_an_unreadable_graph_is_exit_status_two(tmp_path, capsys):
    assert graph_check.main([str(tmp_path)]) == 2
    assert capsys.readouterr().err.startswith("unigraph-check: error: graph schema")
