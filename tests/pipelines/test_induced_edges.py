"""Induced edges (--edge-aggregation node): every input edge between two nodes of a
subgraph is in it, checked against a brute-force induced subgraph of small random
graphs, on both engines (byte-identical); a link sample's own edge stays out."""
import collections
import os

import numpy as np
import pytest

from pipelines import sample
from sampler.graph_tensor import parse_example
from tests.conftest import TESTDATA
from tests.pipelines.sampled_output import read_records, read_report
from unigraph.schema import load_schema

SCHEMA = """
node_sets { key: "a" value { metadata { filename: "a.csv" } } }
node_sets { key: "b" value { } }
edge_sets { key: "aa" value { source: "a" target: "a" metadata { filename: "aa.csv" } } }
edge_sets { key: "ab" value { source: "a" target: "b" metadata { filename: "ab.csv" } } }
edge_sets { key: "ba" value { source: "b" target: "a"
  metadata { filename: "ab.csv" extra { key: "edge_type" value: "reversed" } } } }
"""
SPEC = """
seed_op { op_name: "seed" node_set_name: "a" }
sampling_ops { op_name: "h1" input_op_names: "seed" edge_set_name: "aa" sample_size: 2
               strategy: RANDOM_UNIFORM }
sampling_ops { op_name: "h2" input_op_names: ["seed", "h1"] edge_set_name: "ab"
               sample_size: 1 strategy: RANDOM_UNIFORM }
sampling_ops { op_name: "h3" input_op_names: "h2" edge_set_name: "ba" sample_size: 2
               strategy: RANDOM_UNIFORM }
"""


def write_graph(tmp_path, rng):
    folder = tmp_path / "graph"
    folder.mkdir()
    n_a, n_b = int(rng.integers(3, 12)), int(rng.integers(1, 6))
    (folder / "graph_schema.pbtxt").write_text(SCHEMA)
    (folder / "spec.pbtxt").write_text(SPEC)
    (folder / "a.csv").write_text("id\n" + "".join(f"a{i}\n" for i in range(n_a)))
    edges = {}
    for name, (src, tgt, n_src, n_tgt) in {"aa": ("a", "a", n_a, n_a),
                                           "ab": ("a", "b", n_a, n_b)}.items():
        m = int(rng.integers(n_src, 4 * n_src))
        rows = [(f"{src}{rng.integers(0, n_src)}", f"{tgt}{rng.integers(0, n_tgt)}")
                for _ in range(m)]  # duplicates and self-loops included
        (folder / f"{name}.csv").write_text(
            "source,target\n" + "".join(f"{s},{t}\n" for s, t in rows))
        edges[name] = rows
    edges["ba"] = [(t, s) for s, t in edges["ab"]]
    return folder, edges


def records(out):
    schema = load_schema(os.path.join(out, "graph_schema.pbtxt")).schema
    for record in read_records(out):
        yield parse_example(schema, record)


def edge_multiset(graph, name, ends):
    es = graph.edge_sets[name]
    src = [i.decode() for i in graph.node_sets[ends[0]]["#id"]]
    tgt = [i.decode() for i in graph.node_sets[ends[1]]["#id"]]
    return collections.Counter((src[s], tgt[t]) for s, t in zip(
        es.adjacency.indices("source"), es.adjacency.indices("target")))


ENDS = {"aa": ("a", "a"), "ab": ("a", "b"), "ba": ("b", "a")}


@pytest.mark.parametrize("seed", range(4))
def test_induced_edges_equal_the_brute_force_induced_subgraph(tmp_path, seed):
    graph_dir, edges = write_graph(tmp_path, np.random.default_rng(seed))
    outs = {}
    for engine in ("memory", "beam"):
        out = tmp_path / f"out_{engine}"
        assert sample.main(["--graph", str(graph_dir), "--spec", str(graph_dir / "spec.pbtxt"),
                            "--output", f"{out}/", "--quiet", "--engine", engine, "--workers", "1",
                            "--node-buckets", "3", "--edge-aggregation", "node"]) == 0
        outs[engine] = out
    names = sorted(n for n in os.listdir(outs["memory"]) if n.endswith(".tfrecord"))
    for name in names:
        assert (outs["memory"] / name).read_bytes() == (outs["beam"] / name).read_bytes()
    total = 0
    for graph in records(outs["memory"]):
        nodes = {s: {i.decode() for i in graph.node_sets[s]["#id"]} for s in ("a", "b")}
        for name, (src, tgt) in ENDS.items():
            expected = collections.Counter(
                (s, t) for s, t in edges[name] if s in nodes[src] and t in nodes[tgt])
            assert edge_multiset(graph, name, (src, tgt)) == expected, name
            total += sum(expected.values())
    assert total > 0
    report = read_report(outs["memory"])
    assert set(report["induced_edges"]) == {"aa", "ab", "ba"}


def test_default_keeps_sampled_edges_only_and_named_sets_limit_it(tmp_path):
    graph_dir, _ = write_graph(tmp_path, np.random.default_rng(9))
    runs = {}
    for flag in ("edge", "node", "node:ab"):
        out = tmp_path / flag.replace(":", "_")
        assert sample.main(["--workers", "1", "--graph", str(graph_dir), "--spec", str(graph_dir / "spec.pbtxt"),
                            "--output", f"{out}/", "--quiet",
                            "--edge-aggregation", flag]) == 0
        runs[flag] = {int(i): g for i, g in enumerate(records(out))}
    for i, g in runs["node"].items():
        for name in ENDS:
            sampled = edge_multiset(runs["edge"][i], name, ENDS[name])
            induced = edge_multiset(g, name, ENDS[name])
            assert not sampled - induced  # the induced subgraph holds every sampled edge
            limited = edge_multiset(runs["node:ab"][i], name, ENDS[name])
            assert limited == (induced if name == "ab" else sampled)


def test_bad_edge_aggregation_is_one_line(tmp_path, capsys):
    graph_dir, _ = write_graph(tmp_path, np.random.default_rng(1))
    code = sample.main(["--workers", "1", "--graph", str(graph_dir), "--spec", str(graph_dir / "spec.pbtxt"),
                        "--output", f"{tmp_path}/out/", "--edge-aggregation", "node:zz"])
    assert code == sample.EXIT_ERROR
    assert "edge set 'zz' is not sampled by the spec" in capsys.readouterr().err


def test_induced_edges_leave_a_pairs_own_edge_out(tmp_path):
    link = os.path.join(TESTDATA, "link")
    out = tmp_path / "out"
    assert sample.main(["--workers", "1", "--graph", link, "--spec", os.path.join(link, "sampling_spec.pbtxt"),
                        "--seeds", os.path.join(link, "pairs.csv"), "--output", f"{out}/",
                        "--quiet", "--edge-aggregation", "node"]) == 0
    for graph in records(out):
        pair = {graph.context["source_id"][0].decode(), graph.context["target_id"][0].decode()}
        for name in ("follows", "followed_by"):
            for s, t in edge_multiset(graph, name, ("user", "user")):
                assert {s, t} != pair or (len(pair) == 1 and s != t)


def test_an_edge_set_with_no_induced_edge_reports_zero_on_both_engines(tmp_path):
    """The Beam engine counts where it found candidates, the in-memory engine per chunk:
    the report lists every induced edge set, 0 included, so the engines agree."""
    folder = tmp_path / "graph"
    folder.mkdir()
    (folder / "graph_schema.pbtxt").write_text(SCHEMA)
    (folder / "a.csv").write_text("id\na0\na1\n")
    (folder / "aa.csv").write_text("source,target\na0,a1\n")
    (folder / "ab.csv").write_text("source,target\na1,b0\n")
    (tmp_path / "seeds.txt").write_text("a1\n")   # a1 starts no edge of 'aa': no candidate
    spec = tmp_path / "spec.pbtxt"
    spec.write_text(SPEC.split("sampling_ops")[0] + "sampling_ops" + SPEC.split(
        "sampling_ops")[1].rstrip() + "\n")   # h1 alone: no edge set 'ab' sampled
    reports = []
    for engine in ("memory", "beam"):
        out = tmp_path / engine
        assert sample.main(["--graph", str(folder), "--spec", str(spec), "--seeds",
                            str(tmp_path / "seeds.txt"), "--output", f"{out}/", "--quiet",
                            "--engine", engine, "--workers", "1",
                            "--edge-aggregation", "node"]) == 0
        reports.append(read_report(out)["induced_edges"])
    assert reports[0] == reports[1] == {"aa": 0}
