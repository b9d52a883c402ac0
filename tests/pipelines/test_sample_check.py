"""sample-check: a good folder passes; each kind of bad record is found and named
by file and record index; the folder-level problems exit with status 2."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

from pipelines import sample_check
from sampler.graph_tensor import (Adjacency, EdgeSet, GraphTensor, NodeSet, encode_example,
                                  merge_batch_to_components)
from sampler.output.files import REPORT_FILE
from tests.sampler.training.toy_samples import planted_graphs, write_samples
from tests.conftest import REPO_ROOT

NUM_SHARDS = 2


@pytest.fixture(scope="module")
def toy():
    return planted_graphs(num_papers=12, num_classes=3, seed=4)


def _replace(graph, *, node_sets=None, edge_sets=None):
    """The graph with some pieces swapped, not validated (so it may be broken)."""
    return GraphTensor.from_pieces(
        context=graph.context,
        node_sets={**graph.node_sets, **(node_sets or {})},
        edge_sets={**graph.edge_sets, **(edge_sets or {})}, validate=False)


def _write(folder, toy, bad_graph=None, bad_at=5):
    """Writes the toy records, record `bad_at` replaced by `bad_graph`; returns the
    file and index where that record lands (records go round-robin into shards)."""
    schema, graphs = toy
    records = [encode_example(g, schema) for g in graphs]
    if bad_graph is not None:
        records[bad_at] = encode_example(bad_graph, schema)
    files = write_samples(str(folder), schema, records, num_shards=NUM_SHARDS)
    return files[bad_at % NUM_SHARDS], bad_at // NUM_SHARDS


def _run(folder, capsys):
    code = sample_check.main([str(folder)])
    return code, capsys.readouterr()


def test_good_folder_reports_counts(tmp_path, toy, capsys):
    _write(tmp_path, toy)
    code, out = _run(tmp_path, capsys)
    assert code == 0, out.out
    lines = out.out.splitlines()
    assert lines[0] == f"{tmp_path}: 12 records in 2 files, 0 bad"
    papers = sum(g.node_sets["paper"].total_size for g in toy[1])
    assert f"paper {papers:,} ({papers / 12:.2f}/record)" in lines[1]
    assert lines[2].startswith("edges: _readout/seed 12 (1.00/record), cites ")
    assert lines[-1] == "OK"


def _seed_paper_edit(graph, **features):
    paper = graph.node_sets["paper"]
    return {"paper": NodeSet.from_fields(sizes=paper.sizes, features={**paper.features,
                                                                      **features})}


def _corruptions(graph):
    cites = graph.edge_sets["cites"]
    papers = graph.node_sets["paper"]
    ids = papers["#id"]
    without_id = {k: v for k, v in papers.features.items() if k != "#id"}
    swapped = np.concatenate([ids[1:2], ids[:1], ids[2:]])
    return {
        "index out of range": (
            {"edge_sets": {"cites": EdgeSet.from_fields(
                sizes=cites.sizes, adjacency=Adjacency.from_indices(
                    source=("paper", cites.adjacency.source),
                    target=("paper", cites.adjacency.target + 100)))}},
            "edge set 'cites' target: edge 0 has index 101, out of range"),
        "missing #id": (
            {"node_sets": {"paper": NodeSet.from_fields(sizes=papers.sizes,
                                                        features=without_id)}},
            "tf.Example key 'nodes/paper.#id' is missing"),
        "seed not node 0": (
            {"node_sets": _seed_paper_edit(graph, **{"#id": swapped})},
            "context seed_id b'p00005' is not node 0 of 'paper' (#id b'p"),
        "readout from node 1": (
            {"edge_sets": {"_readout/seed": EdgeSet.from_fields(
                sizes=[1], adjacency=Adjacency.from_indices(source=("paper", [1]),
                                                            target=("_readout", [0])))}},
            "edge set '_readout/seed' has sources [1], expected [0]"),
        "unsorted ids": (
            {"node_sets": _seed_paper_edit(graph, **{"#id": np.concatenate(
                [ids[:1], ids[1:][::-1]])})},
            "ids must be unique and sorted (after the seed)"),
    }


@pytest.mark.parametrize("kind", ["index out of range", "missing #id", "seed not node 0",
                                  "readout from node 1", "unsorted ids", "two components"])
def test_bad_record_is_named_by_file_and_index(tmp_path, toy, capsys, kind):
    graph = toy[1][5]
    assert graph.node_sets["paper"].total_size >= 3  # room for the edits below
    if kind == "two components":
        # Well formed for the core, but a record must hold one subgraph.
        bad, message = merge_batch_to_components([graph, toy[1][6]]), \
            "2 graph components, expected 1 subgraph"
    else:
        edits, message = _corruptions(graph)[kind]
        bad = _replace(graph, **edits)
    path, index = _write(tmp_path, toy, bad)
    code, out = _run(tmp_path, capsys)
    assert code == 1
    assert "12 records in 2 files, 1 bad" in out.out
    first_bad = next(l for l in out.out.splitlines() if l.startswith("first bad record"))
    assert first_bad.startswith(f"first bad record: {path} record {index}: ")
    assert message in first_bad
    assert out.out.splitlines()[-1] == "FAILED"


def test_truncated_file_is_a_bad_record(tmp_path, toy, capsys):
    path, _ = _write(tmp_path, toy)
    with open(path, "rb+") as f:
        f.truncate(os.path.getsize(path) - 3)
    code, out = _run(tmp_path, capsys)
    assert code == 1
    assert f"first bad record: {path} record 5: " in out.out  # 6 records per shard
    assert "truncated data" in out.out


def test_counts_must_match_the_run_report(tmp_path, toy, capsys):
    _write(tmp_path, toy)
    with open(tmp_path / REPORT_FILE, "w") as f:
        json.dump({"subgraphs_written": 13,
                   "nodes_per_subgraph": {"author": {"total": 1}}}, f)
    code, out = _run(tmp_path, capsys)
    assert code == 1
    authors = sum(g.node_sets["author"].total_size for g in toy[1])
    assert (f"mismatch: {REPORT_FILE} says 13 subgraphs written, the files hold 12 records"
            in out.out)
    assert f"mismatch: {REPORT_FILE}: node set 'author' total 1, the records hold {authors}" \
        in out.out


@pytest.mark.parametrize("damage, message", [
    ("no schema", "no graph_schema.pbtxt"),
    ("missing shard", "1 of 2 shards missing, first: "),
    ("no #id in schema", "graph_schema.pbtxt: node set 'author' has no '#id' feature"),
])
def test_unreadable_folder_exits_2(tmp_path, toy, capsys, damage, message):
    files = _write(tmp_path, toy) and sorted(tmp_path.glob("samples-*"))
    if damage == "no schema":
        os.remove(tmp_path / "graph_schema.pbtxt")
    elif damage == "missing shard":
        os.remove(files[1])
    else:
        text = (tmp_path / "graph_schema.pbtxt").read_text()
        start = text.index('node_sets {\n  key: "author"')
        end = text.index('node_sets {\n  key: "paper"')
        (tmp_path / "graph_schema.pbtxt").write_text(
            text[:start] + 'node_sets {\n  key: "author"\n  value {\n  }\n}\n' + text[end:])
    code, out = _run(tmp_path, capsys)
    assert code == 2
    assert out.err.startswith("sample-check: error: ") and message in out.err
    assert len(out.err.strip().splitlines()) == 1


def test_runs_without_tensorflow(tmp_path, toy):
    _write(tmp_path, toy)
    script = ("import sys; from pipelines import sample_check; "
              "code = sample_check.main([sys.argv[1]]); "
              "assert 'tensorflow' not in sys.modules, 'TensorFlow was imported'; "
              "sys.exit(code)")
    done = subprocess.run([sys.executable, "-c", script, str(tmp_path)], cwd=REPO_ROOT,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("output", ["demo", "topk", "mixed", "link"])
def test_good_folders_pass_as_whole_batches(sampled_outputs, output, monkeypatch):
    """What `sample` writes passes the column checks, so no record is checked alone."""
    folder = sampled_outputs[output]
    monkeypatch.setattr(sample_check, "check_sampled_graph",
                        lambda *a: pytest.fail("a record was checked alone"))
    report = sample_check.check_folder(folder)
    assert report.ok and report.records > 0


@pytest.mark.parametrize("kind", ["index out of range", "missing #id", "seed not node 0",
                                  "readout from node 1", "unsorted ids"])
def test_a_batch_with_a_bad_record_does_not_pass(toy, kind):
    from sampler.graph_tensor.batch_codec import BatchDecoder, record_buffer

    schema, graphs = toy
    edits, _ = _corruptions(graphs[5])[kind]
    records = [encode_example(g, schema) for g in graphs]
    decoder = BatchDecoder(schema)  # validating: a bad index is its to refuse
    assert sample_check.batch_passes(decoder.decode(*record_buffer(records)), "paper")
    records[5] = encode_example(_replace(graphs[5], **edits), schema)
    try:
        batch = decoder.decode(*record_buffer(records))
    except Exception:
        return  # the decoder refuses it already
    assert not sample_check.batch_passes(batch, "paper")
