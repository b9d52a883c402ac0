"""`sample` with link seeds (symmetric_link_seed_op) end to end: both engines, every pairs
table format, TF-GNN's structured readout of the endpoints, dropped pairs."""
import os
import shutil

import numpy as np
import pytest

from pipelines import sample, sample_check
from tests.conftest import TESTDATA
from tests.pipelines.sampled_output import read_records, read_report
from unigraph.columnar.batches import PairBatch, row_ids
from unigraph.protos.graph_schema_pb2 import GraphSchema  # noqa: F401  (the schema module loads)
from unigraph.schema import load_schema
from unigraph.tables import pairs_layout, read_pair_set
from unigraph.tables.writers import write_sharded, write_table

LINK = os.path.join(TESTDATA, "link")
SPEC = os.path.join(LINK, "sampling_spec.pbtxt")
PAIRS = os.path.join(LINK, "pairs.csv")


def run(out, *extra, seeds=PAIRS, graph=LINK, spec=SPEC):
    code = sample.main(["--graph", graph, "--spec", spec, "--seeds", seeds,
                        "--output", f"{out}/", "--quiet", "--workers", "1", *extra])
    assert code == 0
    return str(out)


def shards(folder):
    names = sorted(n for n in os.listdir(folder) if n.endswith(".tfrecord"))
    return {n: open(os.path.join(folder, n), "rb").read() for n in names}


@pytest.fixture(scope="module")
def memory_out(tmp_path_factory):
    return run(tmp_path_factory.mktemp("link") / "memory", "--engine", "memory")


def test_engines_write_the_same_bytes(memory_out, tmp_path):
    beam_out = run(tmp_path / "beam", "--engine", "beam", "--node-buckets", "3")
    assert shards(beam_out) == shards(memory_out)
    for name in ("graph_schema.pbtxt",):
        assert open(os.path.join(beam_out, name)).read() == open(
            os.path.join(memory_out, name)).read()


def test_output_passes_sample_check_and_reports_pairs(memory_out):
    report = sample_check.check_folder(memory_out)
    assert report.ok and report.records == 5
    counts = read_report(memory_out)
    assert counts["pairs_read"] == 5 and counts["pairs_dropped"] == 0
    assert counts["subgraphs_written"] == 5
    assert counts["seeds_read"] == 9  # endpoints: u3-u3 is one request


def test_tfgnn_structured_readout_gives_the_endpoints(memory_out):
    tf = pytest.importorskip("tensorflow")
    tfgnn = pytest.importorskip("tensorflow_gnn")
    schema = tfgnn.read_schema(os.path.join(memory_out, "graph_schema.pbtxt"))
    spec = tfgnn.create_graph_spec_from_schema_pb(schema)
    users = {f"u{i}".encode(): [float(i), i + 0.5] for i in range(6)}
    expected = {(b"u0", b"u1"): 1, (b"u2", b"u3"): 1, (b"u4", b"u0"): 1, (b"u3", b"u3"): 0,
                (b"u5", b"u2"): 0}
    seen = {}
    records = tf.constant(read_records(memory_out))
    graph = tfgnn.parse_example(spec, records).merge_batch_to_components()
    sources = tfgnn.structured_readout(graph, "source", feature_name="x").numpy()
    targets = tfgnn.structured_readout(graph, "target", feature_name="x").numpy()
    source_ids = graph.context["source_id"].numpy().reshape(-1)
    target_ids = graph.context["target_id"].numpy().reshape(-1)
    labels = graph.node_sets["_readout"]["label"].numpy()
    for i in range(len(source_ids)):
        assert sources[i].tolist() == users[source_ids[i]]
        assert targets[i].tolist() == users[target_ids[i]]
        seen[(source_ids[i], target_ids[i])] = int(labels[i])
    assert seen == expected


def _pairs_of(layout):
    return list(read_pair_set(layout, PAIRS))


@pytest.mark.parametrize("name", ["pairs.parquet", "pairs.tfrecord", "pairs@3.csv",
                                  "pairs-*.parquet"])
def test_every_pairs_format_gives_the_same_records(memory_out, tmp_path, name):
    """Sample ids depend on the pairs' content, not their file, format or order."""
    layout = pairs_layout(load_schema(LINK).schema)
    batch = _pairs_of(layout)[0]
    reordered = batch.take(np.arange(len(batch))[::-1])
    folder = tmp_path / "seeds"
    folder.mkdir()
    if name == "pairs@3.csv":
        write_sharded([str(folder / f"pairs-0000{i}-of-00003.csv") for i in range(3)], layout,
                      [reordered])
        pattern = str(folder / "pairs@3.csv")
    elif name == "pairs-*.parquet":
        write_table(str(folder / "pairs-a.parquet"), layout, [reordered.take(np.arange(2))])
        write_table(str(folder / "pairs-b.parquet"), layout,
                    [reordered.take(np.arange(2, len(batch)))])
        pattern = str(folder / name)
    else:
        write_table(str(folder / name), layout, [reordered])
        pattern = str(folder / name)
    out = run(tmp_path / "out", "--engine", "memory", seeds=pattern)
    assert shards(out) == shards(memory_out)


def test_pair_with_an_endpoint_outside_the_graph_is_left_out_and_counted(tmp_path):
    seeds = tmp_path / "pairs.csv"
    seeds.write_text("source,target,label\nu0,u1,1\nu0,ghost,0\nnobody,u2,1\n")
    for engine in ("memory", "beam"):
        out = run(tmp_path / engine, "--engine", engine, seeds=str(seeds))
        counts = read_report(out)
        assert (counts["pairs_read"], counts["pairs_dropped"], counts["subgraphs_written"]) == (
            3, 2, 1), engine
        assert counts["seeds_missing"] == 2 and counts["missing_seed_ids"] == ["ghost", "nobody"]
    assert shards(tmp_path / "memory") == shards(tmp_path / "beam")


def test_no_pair_in_the_graph_is_exit_1(tmp_path, capsys):
    seeds = tmp_path / "pairs.csv"
    seeds.write_text("source,target,label\nu0,ghost,1\n")
    code = sample.main(["--workers", "1", "--graph", LINK, "--spec", SPEC, "--seeds", str(seeds),
                        "--output", f"{tmp_path}/out/", "--quiet"])
    assert code == sample.EXIT_NOTHING_SAMPLED
    assert "none of the 1 pairs has both endpoints in node set 'user'" in capsys.readouterr().err


@pytest.mark.parametrize("text, message", [
    ("source,label\nu0,1\n", "pairs table: missing target column ('#target' or 'target')"),
    ("source,target\nu0,u1\n", "pairs table: missing feature column 'label'"),
    ("source,target,label\nu0,u1,yes\n", "line 2"),
])
def test_bad_pairs_table_is_one_line(tmp_path, capsys, text, message):
    seeds = tmp_path / "pairs.csv"
    seeds.write_text(text)
    code = sample.main(["--workers", "1", "--graph", LINK, "--spec", SPEC, "--seeds", str(seeds),
                        "--output", f"{tmp_path}/out/", "--quiet"])
    err = capsys.readouterr().err
    assert code == sample.EXIT_ERROR and message in err and str(seeds) in err
    assert len(err.strip().splitlines()) == 1
    assert not os.path.exists(tmp_path / "out" / "sample_report.json")


def test_link_spec_without_seeds_is_one_line(tmp_path, capsys):
    code = sample.main(["--workers", "1", "--graph", LINK, "--spec", SPEC, "--output", f"{tmp_path}/out/"])
    assert code == sample.EXIT_ERROR
    assert "give --seeds, a table with source and target columns" in capsys.readouterr().err


@pytest.mark.parametrize("mode", ["uniform", "degree"])
def test_negatives_are_the_same_on_both_engines_and_never_known_positives(tmp_path, mode):
    flags = ["--negatives", "3", "--negative-sampling", mode]
    memory = run(tmp_path / "memory", "--engine", "memory", *flags)
    beam = run(tmp_path / "beam", "--engine", "beam", "--node-buckets", "3", *flags)
    assert shards(beam) == shards(memory)
    report = read_report(memory)
    assert report["positives"] == 5 and report["negatives"] + report[
        "negatives_not_found"] == 15
    assert report["subgraphs_written"] == 5 + report["negatives"]
    assert sample_check.check_folder(memory).ok
    from sampler.graph_tensor import parse_example
    schema = load_schema(os.path.join(memory, "graph_schema.pbtxt")).schema
    known = {("u0", "u1"), ("u2", "u3"), ("u4", "u0"), ("u3", "u3"), ("u5", "u2")}
    labels = []
    for record in read_records(memory):
        g = parse_example(schema, record)
        pair = (g.context["source_id"][0].decode(), g.context["target_id"][0].decode())
        label = int(g.node_sets["_readout"]["label"][0])
        labels.append(label)
        assert (pair in known) == (label == 1) and pair[0] != pair[1] or label == 1
    assert labels.count(1) == 5


def test_a_different_seed_draws_different_negatives(tmp_path):
    a = run(tmp_path / "a", "--negatives", "3", "--seed", "1")
    b = run(tmp_path / "b", "--negatives", "3", "--seed", "2")
    assert shards(a) != shards(b)


@pytest.mark.parametrize("flags, message", [
    (["--negatives", "-1"], "--negatives -1: give 0 or more"),
    (["--target-edge-sets", "follows", "--no-exclude-target-edge"], "contradict"),
])
def test_bad_link_flags_are_one_line(tmp_path, capsys, flags, message):
    code = sample.main(["--workers", "1", "--graph", LINK, "--spec", SPEC, "--seeds", PAIRS,
                        "--output", f"{tmp_path}/out/", *flags])
    assert code == sample.EXIT_ERROR and message in capsys.readouterr().err


def test_link_flags_on_a_node_spec_are_refused(tmp_path, capsys):
    mag = os.path.join(os.path.dirname(TESTDATA), "..", "examples", "mag_tiny")
    code = sample.main(["--workers", "1", "--graph", mag, "--spec", os.path.join(mag, "sampling_spec.pbtxt"),
                        "--output", f"{tmp_path}/out/", "--negatives", "2"])
    assert code == sample.EXIT_ERROR
    assert "--negatives is for link seeds" in capsys.readouterr().err


def test_worker_processes_do_not_change_link_output(memory_out, tmp_path):
    """Two forked workers, negatives and induced edges: the same bytes as one worker. In a
    fresh process: forking a test process that ran Beam (its threads) is not safe."""
    import subprocess
    import sys
    flags = ["--negatives", "2", "--edge-aggregation", "node"]
    one = run(tmp_path / "one", "--engine", "memory", *flags)
    two = tmp_path / "two"
    subprocess.run([sys.executable, "-m", "pipelines.sample", "--graph", LINK, "--spec", SPEC,
                    "--seeds", PAIRS, "--output", f"{two}/", "--quiet", "--engine", "memory",
                    "--workers", "2", *flags], check=True, capture_output=True)
    assert shards(two) == shards(one)
