"""`sample` end to end on small hand-made graphs: golden TOP_K output, structure of the
random strategies, seeds (missing, duplicated, edgeless), unreached sets, report."""
import os
import shutil

import numpy as np
import pytest

from pipelines import sample
from tests.conftest import REPO_ROOT, TESTDATA
from tests.pipelines.sampled_output import (edge_pairs, ids, read_graphs, read_records,
                                            read_report)
from unigraph.schema import load_schema

TOPK = os.path.join(TESTDATA, "topk")
DEMO = os.path.join(REPO_ROOT, "examples", "mag_tiny")


def run(tmp_path, graph, spec, *extra, name="out"):
    out = tmp_path / name
    code = sample.main(["--graph", graph, "--spec", spec, "--output", f"{out}/", "--quiet",
                        *extra])
    assert code == 0
    return str(out)


@pytest.fixture(scope="module")
def topk_out(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("topk")
    return run(tmp, TOPK, os.path.join(TOPK, "sampling_spec.pbtxt"),
               "--seeds", os.path.join(TOPK, "seeds.csv"))


def test_topk_golden_subgraph_of_u1(topk_out):
    graphs = dict(read_graphs(topk_out))  # the duplicated u1: either copy (they are equal)
    g = graphs["u1"]
    # bought TOP_K 2 of u1: i2, i3, i4 all weigh 2.0; ties go by target id -> i2, i3.
    # similar TOP_K 1: i2 -> i4 (5); i3 -> i1 or i2 (both 1): target id -> i1.
    # tagged TOP_K 2 from {i2, i3} and {i4, i1}: i1 -> t2, t1; i2 -> t2; i3 -> t3;
    # i4 -> t1, t2 (3, 3; t3 weighs 1).
    assert ids(g, "user") == ["u1"]
    assert ids(g, "item") == ["i1", "i2", "i3", "i4"]
    assert ids(g, "tag") == ["t1", "t2", "t3"]
    assert edge_pairs(g, "bought") == [("u1", "i2"), ("u1", "i3")]
    assert g.edge_sets["bought"]["qty"].tolist() == [2, 3]
    assert edge_pairs(g, "similar") == [("i2", "i4"), ("i3", "i1")]
    assert edge_pairs(g, "tagged") == [("i1", "t1"), ("i1", "t2"), ("i2", "t2"), ("i3", "t3"),
                                       ("i4", "t1"), ("i4", "t2")]
    assert g.node_sets["item"]["price"].tolist() == [[1, 1.5], [2, 2.5], [3, 3.5], [4, 4.5]]
    assert g.node_sets["user"]["age"].tolist() == [30]


def test_topk_golden_subgraph_of_u2(topk_out):
    g = dict(read_graphs(topk_out))["u2"]
    # bought: i1 (3), i4 (1); similar: i1 -> i2, i4 -> i3.
    assert ids(g, "item") == ["i1", "i2", "i3", "i4"]
    assert edge_pairs(g, "bought") == [("u2", "i1"), ("u2", "i4")]
    assert g.edge_sets["bought"]["qty"].tolist() == [5, 4]
    assert edge_pairs(g, "similar") == [("i1", "i2"), ("i4", "i3")]


def test_seed_without_edges_yields_just_the_seed(topk_out):
    g = dict(read_graphs(topk_out))["u3"]
    assert ids(g, "user") == ["u3"]
    assert g.node_sets["item"].sizes.tolist() == [0]
    assert g.node_sets["item"]["price"].shape == (0, 2)
    assert all(g.edge_sets[e].sizes.tolist() == [0] for e in ("bought", "similar", "tagged"))
    assert g.edge_sets["_readout/seed"].sizes.tolist() == [1]


def test_missing_and_duplicated_seeds_are_reported(topk_out):
    report = read_report(topk_out)
    assert report["seeds_read"] == 5
    assert report["seeds_missing"] == 1 and report["missing_seed_ids"] == ["u9"]
    assert report["subgraphs_written"] == 4
    assert [seed for seed, _ in read_graphs(topk_out)] == ["u1", "u1", "u2", "u3"]


def test_every_record_has_the_readout_and_the_seed_first(topk_out):
    for seed, g in read_graphs(topk_out):
        g.validate()
        assert ids(g, "user")[0] == seed
        readout = g.edge_sets["_readout/seed"].adjacency
        assert readout.node_set_name("source") == "user"
        assert readout.indices("source").tolist() == [0]
        assert g.node_sets["_readout"].sizes.tolist() == [1]


def test_records_are_the_core_encoders_bytes(topk_out):
    from sampler.graph_tensor import encode_example, parse_example

    schema = load_schema(os.path.join(topk_out, "graph_schema.pbtxt")).schema
    for record in read_records(topk_out):
        assert encode_example(parse_example(schema, record), schema) == record


def test_unreached_sets_are_left_out_of_records_and_schema(topk_out):
    schema = load_schema(os.path.join(topk_out, "graph_schema.pbtxt")).schema
    assert "shop" not in schema.node_sets and "sells" not in schema.edge_sets
    assert set(schema.node_sets) == {"user", "item", "tag", "_readout"}
    assert schema.node_sets["tag"].features["#id"].dtype == 7  # DT_STRING
    assert not schema.node_sets["item"].HasField("metadata")
    for _, g in read_graphs(topk_out):
        assert "shop" not in g.node_sets and "sells" not in g.edge_sets


def test_report_counts(topk_out):
    report = read_report(topk_out)
    assert report["edges_sampled_per_op"]["bought"] == 2 + 2 + 2  # u1 twice, u2
    assert report["nodes_per_subgraph"]["item"] == {"min": 0, "mean": 3.0, "max": 4,
                                                    "total": 12}
    assert report["output_schema"].endswith("graph_schema.pbtxt")


def _input_edges(folder, name):
    """(source, target) -> feature row of every edge in a CSV table."""
    import csv

    with open(os.path.join(folder, f"{name}.csv")) as f:
        return {(r["source"], r["target"]): r for r in csv.DictReader(f)}


def test_random_strategies_keep_the_structure(tmp_path):
    out = run(tmp_path, DEMO, os.path.join(DEMO, "sampling_spec.pbtxt"))
    graphs = read_graphs(out)
    assert len(graphs) == 40  # every paper is a seed without --seeds
    spec_sizes = {"cites": 8, "written": 4, "writes": 4, "affiliated_with": 2, "has_topic": 4}
    # has_topic is sampled by one op from three inputs: a node is sampled once per sample.
    input_edges = {name: _input_edges(DEMO, name) for name in
                   ("cites", "writes", "has_topic", "affiliated_with")}
    input_edges["written"] = {(t, s): r for (s, t), r in input_edges["writes"].items()}
    for seed, g in graphs:
        g.validate()
        assert ids(g, "paper")[0] == seed
        for edge_set, k in spec_sizes.items():
            pairs = edge_pairs(g, edge_set)
            assert len(set(pairs)) == len(pairs), "an edge appears twice"
            assert all(p in input_edges[edge_set] for p in pairs), "an edge not in the input"
            sources = [s for s, _ in pairs]
            assert max([sources.count(s) for s in set(sources)] or [0]) <= k
        papers = read_papers()
        for i, paper in enumerate(ids(g, "paper")):
            assert np.allclose(g.node_sets["paper"]["feat"][i], papers[paper], atol=1e-6)


def read_papers():
    import csv

    with open(os.path.join(DEMO, "paper.csv")) as f:
        return {r["id"]: [float(x) for x in r["feat"].split()] for r in csv.DictReader(f)}


def test_same_seed_same_bytes_other_seed_other_bytes(tmp_path):
    spec = os.path.join(DEMO, "sampling_spec.pbtxt")
    a = run(tmp_path, DEMO, spec, "--seed", "7", name="a")
    b = run(tmp_path, DEMO, spec, "--seed", "7", "--node-buckets", "3", name="b")
    c = run(tmp_path, DEMO, spec, "--seed", "8", name="c")
    assert sorted(read_records(a)) == sorted(read_records(b))
    assert sorted(read_records(a)) != sorted(read_records(c))


def test_duplicated_seed_draws_independently(tmp_path):
    seeds = tmp_path / "seeds.txt"
    # p00 has many cites edges (degree > 8), so two independent draws differ.
    seeds.write_text("p00\np00\n")
    out = run(tmp_path, DEMO, os.path.join(DEMO, "sampling_spec.pbtxt"), "--seeds", str(seeds))
    (_, g1), (_, g2) = read_graphs(out)
    assert edge_pairs(g1, "has_topic") != edge_pairs(g2, "has_topic")


def test_output_prefix_with_shard_count(tmp_path):
    out = tmp_path / "o" / "part.tfrecord@3"
    code = sample.main(["--graph", TOPK, "--spec", os.path.join(TOPK, "sampling_spec.pbtxt"),
                        "--output", str(out), "--quiet"])
    assert code == 0
    names = sorted(os.listdir(tmp_path / "o"))
    # TF-GNN's naming: the shard suffix goes after the name as given.
    assert names == ["graph_schema.pbtxt", "part.tfrecord-00000-of-00003",
                     "part.tfrecord-00001-of-00003", "part.tfrecord-00002-of-00003",
                     "sample_report.json"]


@pytest.mark.parametrize("fmt", ["parquet", "tfrecord", "txt"])
def test_seeds_in_every_format(tmp_path, fmt):
    seeds_path = tmp_path / f"seeds.{fmt}"
    if fmt == "txt":
        seeds_path.write_text("u2\nu1\n")
    elif fmt == "parquet":
        import pyarrow as pa
        import pyarrow.parquet as pq

        pq.write_table(pa.table({"id": ["u2", "u1"]}), str(seeds_path))
    else:
        from unigraph.encoding import tfrecord
        from unigraph.protos import example_pb2

        with open(seeds_path, "wb") as f:
            for seed in (b"u2", b"u1"):
                example = example_pb2.Example()
                example.features.feature["#id"].bytes_list.value.append(seed)
                f.write(tfrecord.encode_record(example.SerializeToString()))
    out = run(tmp_path, TOPK, os.path.join(TOPK, "sampling_spec.pbtxt"), "--seeds",
              str(seeds_path))
    assert [s for s, _ in read_graphs(out)] == ["u1", "u2"]


def test_tfgnn_creditcard_example_runs_unchanged(tmp_path):
    folder = os.path.join(TESTDATA, "creditcard")
    out = run(tmp_path, os.path.join(folder, "graph_schema.pbtxt"),
              os.path.join(folder, "sampling_spec.pbtxt"))
    graphs = dict(read_graphs(out))
    assert sorted(graphs) == ["c1", "c2", "c3", "c4"]
    assert ids(graphs["c3"], "creditcard") == ["k1", "k4", "k5"]
    assert graphs["c4"].edge_sets["owns_card"].sizes.tolist() == [0]
    assert graphs["c1"].node_sets["customer"]["name"].tolist() == [b"Ada Byron"]


def test_tfgnn_parses_every_record(topk_out, tmp_path):
    tfgnn = pytest.importorskip("tensorflow_gnn", reason="tensorflow-gnn is not installed")
    import tensorflow as tf

    schema = tfgnn.read_schema(os.path.join(topk_out, "graph_schema.pbtxt"))
    spec = tfgnn.create_graph_spec_from_schema_pb(schema)
    records = read_records(topk_out)
    batch = tfgnn.parse_example(spec, tf.constant(records))
    assert batch.node_sets["user"]["#id"].to_list()[0][0] in (b"u1", b"u2", b"u3")
    for record in records:
        g = tfgnn.parse_single_example(spec, tf.constant(record))
        seed = g.context["seed_id"].numpy()[0]
        assert g.node_sets["user"]["#id"].numpy()[0] == seed
        assert g.edge_sets["_readout/seed"].adjacency.source.numpy().tolist() == [0]


def test_bad_table_inside_the_pipeline_is_one_line(tmp_path):
    import subprocess
    import sys

    graph = tmp_path / "g"
    shutil.copytree(TOPK, graph)
    (graph / "user.csv").write_text("id,age\nu1,30\nu2,41\nu1,25\n")
    result = subprocess.run(
        [sys.executable, "-m", "pipelines.sample", "--graph", str(graph), "--spec",
         str(graph / "sampling_spec.pbtxt"), "--output", f"{tmp_path}/out/", "--quiet"],
        capture_output=True, text=True, cwd=REPO_ROOT)
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert result.stderr.count("\n") == 1
    assert (f"sample: error: node set 'user': duplicate node id 'u1' in {graph}/user.csv line 2 "
            f"and {graph}/user.csv line 4") in result.stderr


def test_seed_set_without_a_table(tmp_path):
    # 'tag' has no table: its nodes are the ids the 'tagged' edges name (t1, t2, t3).
    spec = tmp_path / "spec.pbtxt"
    spec.write_text('seed_op { op_name: "seed" node_set_name: "tag" }')
    everything = run(tmp_path, TOPK, str(spec), name="all")
    assert [seed for seed, _ in read_graphs(everything)] == ["t1", "t2", "t3"]
    seeds = tmp_path / "seeds.txt"
    seeds.write_text("t2\nt9\n")
    listed = run(tmp_path, TOPK, str(spec), "--seeds", str(seeds), name="listed")
    (seed, g), = read_graphs(listed)
    assert seed == "t2" and ids(g, "tag") == ["t2"]
    assert read_report(listed)["missing_seed_ids"] == ["t9"]


@pytest.mark.parametrize("engine", ["memory", "beam"])
def test_seed_set_whose_table_has_ids_only(tmp_path, engine):
    """A seed node set with a table but no features keeps its seed (the Beam engine once
    dropped it, as if absent from the table)."""
    graph = tmp_path / "g"
    graph.mkdir()
    (graph / "graph_schema.pbtxt").write_text(
        'node_sets { key: "u" value { metadata { filename: "u.csv" } } }\n'
        'edge_sets { key: "f" value { source: "u" target: "u" '
        'metadata { filename: "f.csv" } } }\n')
    (graph / "u.csv").write_text("id\nx\ny\n")
    (graph / "f.csv").write_text("source,target\nx,y\n")
    (graph / "spec.pbtxt").write_text(
        'seed_op { op_name: "s" node_set_name: "u" }\n'
        'sampling_ops { op_name: "h" input_op_names: "s" edge_set_name: "f" sample_size: 1 '
        'strategy: RANDOM_UNIFORM }\n')
    out = run(tmp_path, str(graph), str(graph / "spec.pbtxt"), "--engine", engine)
    graphs = dict(read_graphs(out))
    assert ids(graphs["x"], "u") == ["x", "y"] and ids(graphs["y"], "u") == ["y"]
