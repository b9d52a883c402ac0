"""No leakage: the edge a pair predicts (and its reverse, and parallel copies) never
enters the pair's own subgraph, on both engines, unless switched off."""
import os

import pytest

from pipelines import sample
from tests.pipelines.sampled_output import read_records, read_report
from sampler.graph_tensor import parse_example
from unigraph.schema import load_schema

SCHEMA = """
node_sets { key: "user" value { metadata { filename: "users.csv" } } }
node_sets { key: "_readout" value {} }
edge_sets { key: "follows" value { source: "user" target: "user"
                                   metadata { filename: "follows.csv" } } }
edge_sets { key: "followed_by" value { source: "user" target: "user"
  metadata { filename: "follows.csv" extra { key: "edge_type" value: "reversed" } } } }
edge_sets { key: "_readout/source" value { source: "user" target: "_readout" } }
edge_sets { key: "_readout/target" value { source: "user" target: "_readout" } }
"""
# Every edge taken (sample_size above every degree), so the subgraphs are deterministic.
SPEC = """
symmetric_link_seed_op { op_name: "seed" }
sampling_ops { op_name: "out" input_op_names: "seed" edge_set_name: "follows"
               sample_size: 50 strategy: RANDOM_UNIFORM }
sampling_ops { op_name: "in" input_op_names: "seed" edge_set_name: "followed_by"
               sample_size: 50 strategy: RANDOM_UNIFORM }
"""
FOLLOWS = [("u0", "u1"), ("u0", "u1"), ("u1", "u0"), ("u0", "u2"), ("u1", "u2"), ("u2", "u0"),
           ("u3", "u3"), ("u3", "u1"), ("u4", "u3"), ("u1", "u4")]
PAIRS = [("u0", "u1"), ("u1", "u0"), ("u3", "u3"), ("u1", "u4"), ("u2", "u4")]


@pytest.fixture(scope="module")
def graph(tmp_path_factory):
    folder = tmp_path_factory.mktemp("leak")
    (folder / "graph_schema.pbtxt").write_text(SCHEMA)
    (folder / "users.csv").write_text("id\n" + "".join(f"u{i}\n" for i in range(5)))
    (folder / "follows.csv").write_text(
        "source,target\n" + "".join(f"{s},{t}\n" for s, t in FOLLOWS))
    (folder / "spec.pbtxt").write_text(SPEC)
    (folder / "pairs.csv").write_text("source,target\n" + "".join(f"{s},{t}\n"
                                                                  for s, t in PAIRS))
    return folder


def sampled_edges(graph, out, *extra):
    code = sample.main(["--graph", str(graph), "--spec", str(graph / "spec.pbtxt"),
                        "--seeds", str(graph / "pairs.csv"), "--output", f"{out}/", "--quiet",
                        "--workers", "1", *extra])
    assert code == 0
    schema = load_schema(os.path.join(out, "graph_schema.pbtxt")).schema
    result = {}
    for record in read_records(out):
        g = parse_example(schema, record)
        ids = [i.decode() for i in g.node_sets["user"]["#id"]]
        pair = (g.context["source_id"][0].decode(), g.context["target_id"][0].decode())
        result[pair] = {name: sorted((ids[s], ids[t]) for s, t in zip(
            g.edge_sets[name].adjacency.indices("source"),
            g.edge_sets[name].adjacency.indices("target")))
            for name in ("follows", "followed_by")}
    return result, read_report(out)


def between(pair, edge):
    return set(edge) == set(pair) if pair[0] != pair[1] else edge == pair


@pytest.mark.parametrize("engine", ["memory", "beam"])
def test_pair_edges_are_left_out_and_nothing_else(graph, tmp_path, engine):
    kept, _ = sampled_edges(graph, tmp_path / "kept", "--no-exclude-target-edge",
                            "--engine", engine)
    excluded, report = sampled_edges(graph, tmp_path / "excluded", "--engine", engine)
    removed = 0
    for pair, edges in excluded.items():
        for name in ("follows", "followed_by"):
            expected = [e for e in kept[pair][name] if not between(pair, e)]
            assert edges[name] == expected, (pair, name)
            removed += len(kept[pair][name]) - len(expected)
    # u0-u1: 2 + 1 follows edges from u0/u1 and their 3 reverses, twice (both orders);
    # u3-u3: the self-loop, once each way; u1-u4: one edge and its reverse.
    assert kept[("u0", "u1")]["follows"].count(("u0", "u1")) == 2
    assert removed == report["pair_edges_excluded"] == 6 + 6 + 2 + 2
    assert all(not between(p, e) for p, es in excluded.items() for l in es.values() for e in l)


def test_engines_agree_on_excluded_edges(graph, tmp_path):
    for engine in ("memory", "beam"):
        sampled_edges(graph, tmp_path / engine, "--engine", engine)
    files = sorted(n for n in os.listdir(tmp_path / "memory") if n.endswith(".tfrecord"))
    for name in files:
        assert (tmp_path / "memory" / name).read_bytes() == (tmp_path / "beam" / name).read_bytes()


def test_target_edge_sets_limits_the_exclusion(graph, tmp_path):
    edges, report = sampled_edges(graph, tmp_path / "out", "--target-edge-sets", "follows")
    assert ("u0", "u1") not in edges[("u0", "u1")]["follows"]
    assert ("u0", "u1") in edges[("u0", "u1")]["followed_by"]  # the reverse set keeps it
    assert report["pair_edges_excluded"] == 3 + 3 + 1 + 1  # u0-u1 both orders, u3, u1-u4
