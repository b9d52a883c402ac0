"""`sample-inspect`: a record by index, by seed id or by context values; as text, JSON, DOT."""
import json
import os

import numpy as np
import pytest

from pipelines import inspect_output
from sampler.graph_tensor import (Adjacency, Context, EdgeSet, GraphTensor, NodeSet, add_readout,
                                  encode_example, parse_example)
from sampler.output.folder import open_samples
from sampler.output.seek import ScanCounts, find_records, parse_condition, seed_condition
from tests.pipelines.sampled_output import edge_pairs, ids, read_graphs
from unigraph.encoding import tfrecord
from unigraph.errors import SamplerError
from unigraph.columnar.ragged import Ragged
from unigraph.schema import parse_schema_text

SCHEMA = """
node_sets { key: "p" value {
  features { key: "#id" value { dtype: DT_STRING } }
  features { key: "x" value { dtype: DT_FLOAT shape { dim { size: 6 } } } }
  features { key: "w" value { dtype: DT_STRING shape { dim { size: -1 } } } } } }
node_sets { key: "_readout" value {} }
edge_sets { key: "pp" value { source: "p" target: "p"
                              features { key: "k" value { dtype: DT_INT64 } } } }
edge_sets { key: "_readout/seed" value { source: "p" target: "_readout" } }
context { features { key: "seed_id" value { dtype: DT_STRING } }
          features { key: "src" value { dtype: DT_STRING } }
          features { key: "dst" value { dtype: DT_STRING } }
          features { key: "label" value { dtype: DT_INT64 } }
          features { key: "score" value { dtype: DT_FLOAT } } }
"""


def handmade(seed: bytes, other: bytes, label: int, score: float) -> bytes:
    """A record seeded like a link pair would be: context names both ends."""
    graph = GraphTensor.from_pieces(
        context=Context.from_fields(features={
            "seed_id": np.array([seed], object), "src": np.array([seed], object),
            "dst": np.array([other], object), "label": np.array([label]),
            "score": np.array([score], np.float32)}, sizes=[1]),
        node_sets={"p": NodeSet.from_fields(sizes=[2], features={
            "#id": np.array([seed, other], object),
            "x": np.arange(12, dtype=np.float32).reshape(2, 6) / 4,
            "w": Ragged(np.array([b"hi", b"there", b"you"], object), np.array([2, 1]))})},
        edge_sets={"pp": EdgeSet.from_fields(sizes=[1], features={"k": np.array([label * 10])},
                                             adjacency=Adjacency.from_indices(
                                                 source=("p", [0]), target=("p", [1])))})
    return encode_example(add_readout(graph, "seed", "p", [0]))


@pytest.fixture
def folder(tmp_path):
    (tmp_path / "graph_schema.pbtxt").write_text(SCHEMA)
    parse_schema_text(SCHEMA, "check")
    records = [[handmade(b"a", b"b", 1, 0.5), handmade(b"c", b"a", 2, 1.5)],
               [handmade(b"a", b"d", 3, 0.25)]]
    for i, shard in enumerate(records):
        with open(tmp_path / f"samples-{i:05d}-of-00002.tfrecord", "wb") as f:
            for record in shard:
                f.write(tfrecord.encode_record(record))
    return str(tmp_path)


def test_text_shows_ids_feature_values_and_edges(folder, capsys):
    assert inspect_output.main([folder]) == 0
    out = capsys.readouterr().out
    assert "samples-00000-of-00002.tfrecord, record 0:" in out
    assert "context: dst 'b'; label 1; score 0.5; seed_id 'a'; src 'a'" in out
    assert "node set 'p': 2 nodes" in out
    lines = out.splitlines()
    header = next(line for line in lines if "#id" in line and "x (float32[6])" in line)
    assert "w (ragged string)" in header
    assert "  0*  a    ['hi', 'there']    [0, 0.25, 0.5, 0.75, … +2]" in lines
    assert "edge set 'pp' (p -> p): 1 edge" in out and "  a -> b  k 10" in out
    assert inspect_output.main([folder, "--index", "5"]) == 2
    assert "has 3 record(s), no record #5" in capsys.readouterr().err


def test_seed_id_finds_every_subgraph_of_the_seed(folder, capsys):
    assert inspect_output.main([folder, "--seed-id", "a"]) == 0
    out = capsys.readouterr().out
    assert "samples-00000-of-00002.tfrecord, record 0:" in out
    assert "samples-00001-of-00002.tfrecord, record 0:" in out
    assert "record 1:" not in out   # 'a' is only a neighbour there, not the seed
    assert inspect_output.main([folder, "--seed-id", "a", "--first"]) == 0
    assert capsys.readouterr().out.count("record 0:") == 1


def test_context_conditions_of_every_dtype_and_pairs(folder):
    samples = open_samples(folder)

    def found(*conditions):
        return [(os.path.basename(f.path), f.index) for f in find_records(
            samples, [parse_condition(samples.schema, c) for c in conditions])]
    assert found("src=c", "dst=a") == [("samples-00000-of-00002.tfrecord", 1)]
    assert found("src=a", "dst=a") == []
    assert found("label=3") == [("samples-00001-of-00002.tfrecord", 0)]
    assert found("score=1.5") == [("samples-00000-of-00002.tfrecord", 1)]
    with pytest.raises(SamplerError, match="no context feature 'nope' .*seed_id"):
        parse_condition(samples.schema, "nope=1")
    with pytest.raises(SamplerError, match="'x' is not a int64 value"):
        parse_condition(samples.schema, "label=x")
    with pytest.raises(SamplerError, match="out of the int64 range"):
        parse_condition(samples.schema, f"label={1 << 63}")
    with pytest.raises(SamplerError, match="expected KEY=VALUE"):
        parse_condition(samples.schema, "label")


def test_not_found_is_one_line_with_what_was_scanned(folder, capsys):
    assert inspect_output.main([folder, "--seed-id", "zz"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == (f"sample-inspect: error: {folder}: no record has context/seed_id 'zz' "
                   f"(scanned 3 records in 2 files)")


def test_scan_on_a_real_output_parses_only_candidate_records(sampled_outputs):
    folder = sampled_outputs["demo"]
    samples = open_samples(folder)
    graphs = dict(read_graphs(folder))
    for seed in ("p03", "p07"):
        counts = ScanCounts()
        found = list(find_records(samples, [seed_condition(samples.schema, seed)], counts))
        assert len(found) == 1
        graph = parse_example(samples.schema, found[0].record)
        assert ids(graph, "paper") == ids(graphs[seed], "paper")
        assert counts.records == 10 and counts.parsed < counts.records


def test_duplicated_seed_gives_every_copy(sampled_outputs, capsys):
    assert inspect_output.main([sampled_outputs["topk"], "--seed-id", "u1"]) == 0
    assert capsys.readouterr().out.count("context: seed_id 'u1'") == 2


def test_json_holds_every_value(sampled_outputs, capsys):
    folder = sampled_outputs["demo"]
    capsys.readouterr()  # what `sample` printed if it made the folder just now
    assert inspect_output.main([folder, "--seed-id", "p03", "--json"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 1
    got = json.loads(lines[0])
    graph = dict(read_graphs(folder))["p03"]
    assert got["context"] == {"seed_id": ["p03"]}
    assert got["node_sets"]["paper"]["features"]["#id"] == ids(graph, "paper")
    assert got["node_sets"]["paper"]["features"]["feat"] == graph.node_sets["paper"][
        "feat"].tolist()
    assert [tuple(e) for e in got["edge_sets"]["cites"]["edges"]] == edge_pairs(graph, "cites")


def test_dot_draws_every_edge_and_marks_the_seed(sampled_outputs, capsys):
    folder = sampled_outputs["demo"]
    assert inspect_output.main([folder, "--seed-id", "p03", "--dot"]) == 0
    out = capsys.readouterr().out
    graph = dict(read_graphs(folder))["p03"]
    edges = sum(e.total_size for n, e in graph.edge_sets.items() if not n.startswith("_"))
    assert out.startswith("digraph ") and out.rstrip().endswith("}")
    assert out.count(" -> ") == edges
    assert '"paper/0" [label="p03", style="rounded,filled", fillcolor=gold];' in out


def test_max_items_bounds_the_rows(sampled_outputs, capsys):
    folder = sampled_outputs["demo"]
    assert inspect_output.main([folder, "--seed-id", "p03", "--max-items", "2"]) == 0
    out = capsys.readouterr().out
    assert "more nodes (--max-items 0 shows all)" in out
    assert inspect_output.main([folder, "--seed-id", "p03", "--max-items", "0"]) == 0
    assert "more nodes" not in capsys.readouterr().out


def test_a_bad_record_among_many_found_is_named(tmp_path, capsys):
    """Records found are decoded many at a time: a bad one among them is still named by
    its file and index, and the good ones before it are shown."""
    (tmp_path / "graph_schema.pbtxt").write_text(SCHEMA)
    good = handmade(b"a", b"b", 1, 0.5)
    bad = bytearray(good)
    at = bytes(bad).index(b"nodes/p.#size") + len(b"nodes/p.#size") + 4
    bad[at] = 9  # nine nodes, with the features of two
    with open(tmp_path / "samples-00000-of-00001.tfrecord", "wb") as f:
        for record in [good] * 5 + [bytes(bad)] + [good] * 2:
            f.write(tfrecord.encode_record(record))
    with pytest.raises(SamplerError):
        parse_example(parse_schema_text(SCHEMA, "t"), bytes(bad))
    code = inspect_output.main([str(tmp_path), "--seed-id", "a", "--json"])
    out, err = capsys.readouterr()
    assert code == 2
    assert "samples-00000-of-00001.tfrecord: record 5: " in err
    assert len(err.strip().splitlines()) == 1
    assert [json.loads(line)["record"] for line in out.splitlines()] == [0, 1, 2, 3, 4]
