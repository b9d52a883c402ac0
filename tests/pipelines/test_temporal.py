"""Temporal sampling end to end (issue 15): a real run over a generated temporal graph
leaks no future, LATEST_K picks the latest eligible edges, cut-offs reach the output.

The graph is synthetic-graph's with --timestamps (years 2010..2019 on papers and every
edge set, declared as the `timestamp` feature, so the records carry them). Seeds get
cut-offs from 2009 (nothing eligible) to 2020 (everything), so some seeds are older
than their own cut-off and some newer.
"""
import os

import numpy as np
import pytest

from pipelines import synthetic
from pipelines import synthetic_model
from tests.pipelines.sampled_output import read_graphs, read_report, run_sample
from unigraph.columnar.batches import NodeBatch
from unigraph.tables.layout import TimeColumn, seeds_layout
from unigraph.tables.writers import write_table

K_LATEST = 3
SPEC = f"""
seed_op {{ op_name: "seed" node_set_name: "paper" }}
sampling_ops {{ op_name: "cited" input_op_names: "seed" edge_set_name: "cites"
               sample_size: {K_LATEST} strategy: LATEST_K }}
sampling_ops {{ op_name: "authors" input_op_names: ["seed", "cited"] edge_set_name: "written"
               sample_size: 2 strategy: RANDOM_UNIFORM }}
sampling_ops {{ op_name: "their_papers" input_op_names: "authors" edge_set_name: "writes"
               sample_size: 3 strategy: RANDOM_WEIGHTED }}
sampling_ops {{ op_name: "topics" input_op_names: ["seed", "their_papers"]
               edge_set_name: "has_topic" sample_size: 2 strategy: TOP_K }}
sampling_ops {{ op_name: "cited_again" input_op_names: "their_papers" edge_set_name: "cites"
               sample_size: 2 strategy: RANDOM_UNIFORM }}
"""


@pytest.fixture(scope="module")
def temporal(tmp_path_factory):
    """(graph arrays, folder, spec path, seeds path, {seed id: cut-off})."""
    root = tmp_path_factory.mktemp("temporal")
    graph = synthetic_model.generate(0.0015, seed=11)
    folder = str(root / "graph")
    synthetic.write_graph(graph, folder, "parquet", timestamps=True)
    spec = root / "spec.pbtxt"
    spec.write_text(SPEC)
    rng = np.random.default_rng(4)
    seeds = rng.choice(graph.num_nodes["paper"], 300, replace=False)
    cutoffs = rng.integers(2009, 2021, len(seeds))
    ids = synthetic.node_ids("paper", seeds)
    seeds_path = str(root / "seeds.csv")
    write_table(seeds_path, seeds_layout(TimeColumn("timestamp", "int64")),
                [NodeBatch("seeds", ids, np.arange(len(ids)), {"timestamp": cutoffs})])
    return graph, folder, str(spec), seeds_path, dict(zip(ids.tolist(), cutoffs.tolist()))


@pytest.fixture(scope="module")
def memory_run(temporal, tmp_path_factory):
    _, folder, spec, seeds, _ = temporal
    out = tmp_path_factory.mktemp("out") / "memory"
    # One process: a fork after another test started gRPC threads (Beam) can hang.
    return run_sample(out, folder, spec, "--seeds", seeds, "--engine", "memory", "--workers", "1")


@pytest.fixture(scope="module")
def latest_run(temporal, tmp_path_factory):
    """A run of the LATEST_K op alone, so every cites edge from a seed is that op's."""
    _, folder, _, seeds, _ = temporal
    root = tmp_path_factory.mktemp("latest")
    spec = root / "spec.pbtxt"
    spec.write_text(SPEC[:SPEC.index('sampling_ops { op_name: "authors"')])
    return run_sample(root / "out", folder, str(spec), "--seeds", seeds, "--engine", "memory",
                      "--workers", "1")


def _latest_eligible(graph, paper, cutoff, k):
    """Target ids of the k latest cites of `paper` not after `cutoff`: by (effective time,
    target id, row), the last k (ties: later in canonical order win)."""
    sources, targets, _ = graph.edges["cites"]
    times = np.maximum(graph.edge_times("cites"), graph.year[targets])  # effective
    rows = np.flatnonzero((sources == paper) & (times <= cutoff))
    target_ids = synthetic.node_ids("paper", targets[rows])
    order = sorted(range(len(rows)), key=lambda i: (times[rows[i]], target_ids[i], rows[i]))
    return sorted(target_ids[i].decode() for i in order[max(0, len(order) - k):])


@pytest.fixture(scope="module")
def chunked_run(temporal, tmp_path_factory):
    """Chunks of 2 edges, so most rows are long (core.long_rows: time order only within a
    chunk), and induced edges among the subgraph's nodes."""
    _, folder, spec, seeds, _ = temporal
    out = tmp_path_factory.mktemp("chunked") / "memory"
    return run_sample(out, folder, spec, "--seeds", seeds, "--engine", "memory", "--workers",
                      "1", "--chunk-edges", "2", "--edge-aggregation", "node")


def test_no_edge_or_node_is_later_than_its_seeds_cutoff(temporal, memory_run):
    _assert_nothing_after_the_cutoffs(temporal, memory_run)


def test_long_rows_and_induced_edges_keep_to_the_cutoff(temporal, chunked_run):
    _assert_nothing_after_the_cutoffs(temporal, chunked_run)


def _assert_nothing_after_the_cutoffs(temporal, run):
    graph, _, _, _, cutoffs = temporal
    graphs = read_graphs(run)
    assert len(graphs) == len(cutoffs)
    checked_edges = checked_nodes = 0
    for seed_id, g in graphs:
        cutoff = int(g.context["seed_timestamp"][0])
        assert cutoff == cutoffs[seed_id.encode()]
        for name, edge_set in g.edge_sets.items():
            if "timestamp" in edge_set.features:
                times = np.asarray(edge_set["timestamp"])
                assert (times <= cutoff).all(), (seed_id, name, times, cutoff)
                checked_edges += len(times)
        # Every paper but the seed (node 0) came in over an eligible edge.
        papers = np.asarray(g.node_sets["paper"]["timestamp"])
        assert (papers[1:] <= cutoff).all(), (seed_id, papers, cutoff)
        checked_nodes += len(papers) - 1
    assert checked_edges > 2000 and checked_nodes > 500  # the check saw real data


def test_latest_k_picks_the_latest_eligible_edges(temporal, latest_run):
    graph, _, _, _, cutoffs = temporal
    index = {f"paper/{i}": i for i in range(graph.num_nodes["paper"])}
    full = short = none = 0
    for seed_id, g in read_graphs(latest_run):
        cites = g.edge_sets["cites"]
        ids = [i.decode() for i in g.node_sets["paper"]["#id"]]
        assert set(cites.adjacency.indices("source")) <= {0}
        sampled = sorted(ids[t] for t in cites.adjacency.indices("target"))
        expected = _latest_eligible(graph, index[seed_id], cutoffs[seed_id.encode()],
                                    K_LATEST)
        assert sampled == expected, (seed_id, cutoffs[seed_id.encode()])
        full += len(expected) == K_LATEST
        short += 0 < len(expected) < K_LATEST
        none += not expected
    assert full > 20 and short > 5 and none > 20  # every case was seen


def _assert_same_files(expected_folder, folder):
    """The records and the schema of two output folders are byte for byte the same."""
    for name in sorted(os.listdir(expected_folder)):
        if name.endswith(".tfrecord") or name == "graph_schema.pbtxt":
            with open(os.path.join(expected_folder, name), "rb") as f, \
                    open(os.path.join(folder, name), "rb") as g:
                assert f.read() == g.read(), name


def test_beam_writes_the_same_bytes(temporal, memory_run, tmp_path):
    _, folder, spec, seeds, _ = temporal
    beam = run_sample(tmp_path / "beam", folder, spec, "--seeds", seeds, "--engine", "beam",
                      "--node-buckets", "4")
    _assert_same_files(memory_run, beam)
    report = read_report(beam)
    assert report["subgraphs_written"] == 300
    assert report["time"] == {"seed_cutoff_column": "timestamp", "time_type": "int64",
                              "time_ordered_edge_sets": ["cites", "written", "writes",
                                                         "has_topic"]}
    assert read_report(memory_run)["time"] == report["time"]


def test_dry_run_says_what_time_does(temporal, capsys):
    from pipelines import sample

    _, folder, spec, seeds, _ = temporal
    assert sample.main(["--graph", folder, "--spec", spec, "--seeds", seeds, "--dry-run"]) == 0
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert last.startswith("time: cut-offs from the seeds' 'timestamp' column; int64 times; "
                           "time-ordered edge sets: cites (timestamp + target node times)")
    assert sample.main(["--graph", folder, "--spec", spec, "--dry-run"]) == 0
    assert capsys.readouterr().out.strip().splitlines()[-1] == (
        "time: no cut-offs; int64 times; time-ordered edge sets: cites (timestamp + target "
        "node times)")


def test_a_bad_cutoff_is_one_line_naming_the_file(temporal, tmp_path, capsys):
    from pipelines import sample

    _, folder, spec, _, _ = temporal
    seeds = tmp_path / "seeds.csv"
    seeds.write_text("id,timestamp\npaper/1,2015\npaper/2,soon\n")
    assert sample.main(["--graph", folder, "--spec", spec, "--seeds", str(seeds),
                        "--output", str(tmp_path / "out"), "--quiet"]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "seeds.csv: line 3" in err and "'soon'" in err, err


def test_float_times_declared_in_the_schema(tmp_path):
    """Float timestamps (declared DT_DOUBLE), float cut-offs, node times without edge
    times on one edge set: both engines agree and nothing is later than the cut-off."""
    folder = tmp_path / "g"
    folder.mkdir()
    (folder / "graph_schema.pbtxt").write_text("""
node_sets { key: "u" value { features { key: "timestamp" value { dtype: DT_DOUBLE } }
                              metadata { filename: "u.csv" } } }
edge_sets { key: "follows" value { source: "u" target: "u"
            features { key: "timestamp" value { dtype: DT_DOUBLE } }
            metadata { filename: "follows.csv" } } }
edge_sets { key: "knows" value { source: "u" target: "u" metadata { filename: "knows.csv" } } }
""")
    rng = np.random.default_rng(3)
    n = 40
    (folder / "u.csv").write_text("id,timestamp\n" + "".join(
        f"u{i},{t:.3f}\n" for i, t in enumerate(rng.uniform(0, 10, n))))
    for name, timed in (("follows", True), ("knows", False)):
        rows = [(f"u{a}", f"u{b}", rng.uniform(0, 12)) for a, b in rng.integers(0, n, (300, 2))]
        (folder / f"{name}.csv").write_text(
            ("source,target,timestamp\n" if timed else "source,target\n") + "".join(
                f"{a},{b},{t:.3f}\n" if timed else f"{a},{b}\n" for a, b, t in rows))
    (tmp_path / "seeds.csv").write_text("id,timestamp\n" + "".join(
        f"u{i},{c:.2f}\n" for i, c in zip(range(0, n, 2), rng.uniform(-1, 13, n // 2))))
    spec = tmp_path / "spec.pbtxt"
    spec.write_text("""
seed_op { op_name: "s" node_set_name: "u" }
sampling_ops { op_name: "f" input_op_names: "s" edge_set_name: "follows" sample_size: 3
               strategy: LATEST_K }
sampling_ops { op_name: "k" input_op_names: ["s", "f"] edge_set_name: "knows" sample_size: 3
               strategy: RANDOM_UNIFORM }
""")
    seeds = str(tmp_path / "seeds.csv")
    memory = run_sample(tmp_path / "m", folder, spec, "--seeds", seeds, "--engine", "memory",
                        "--workers", "1")
    beam = run_sample(tmp_path / "b", folder, spec, "--seeds", seeds, "--engine", "beam")
    from tests.pipelines.sampled_output import read_records
    assert read_records(memory) == read_records(beam)
    graphs = read_graphs(memory)
    assert len(graphs) == n // 2
    edges = 0
    for _, g in graphs:
        cutoff = float(g.context["seed_timestamp"][0])   # float32 in the record
        users = np.asarray(g.node_sets["u"]["timestamp"])[1:]
        follows = np.asarray(g.edge_sets["follows"]["timestamp"])
        assert (users <= cutoff + 1e-3).all() and (follows <= cutoff + 1e-3).all()
        edges += len(follows) + int(g.edge_sets["knows"].sizes[0])
    assert edges > 50


# ---- link pairs with cut-offs -----------------------------------------------------------

LINK_READOUT = """
node_sets { key: "_readout" value { features { key: "label" value { dtype: DT_INT64 } } } }
edge_sets { key: "_readout/source" value { source: "paper" target: "_readout" } }
edge_sets { key: "_readout/target" value { source: "paper" target: "_readout" } }
"""
LINK_SPEC = SPEC.replace('seed_op { op_name: "seed" node_set_name: "paper" }',
                         'symmetric_link_seed_op { op_name: "seed" }')
NEGATIVES = 2
# Induced edges too: they must not be later than the cut-off either.
LINK_FLAGS = ("--negatives", str(NEGATIVES), "--edge-aggregation", "node")


def _pairs_layout(folder):
    from unigraph.schema import load_schema
    from unigraph.tables import pairs_layout

    return pairs_layout(load_schema(folder).schema, timestamp=TimeColumn("timestamp", "int64"))


@pytest.fixture(scope="module")
def link_temporal(temporal, tmp_path_factory):
    """(graph arrays, folder, spec, pairs path, [(source, target, cut-off)] of the table).

    The temporal graph with TF-GNN's link structure on papers. Pairs: cites edges with a
    cut-off just before, at or after the edge's time (so the pair's own edge is sometimes
    eligible and excluded as leakage), random pairs of papers with any cut-off, and one
    pair listed twice at two cut-offs."""
    import shutil

    from unigraph.columnar.batches import PairBatch

    graph, folder, _, _, _ = temporal
    root = tmp_path_factory.mktemp("link_temporal")
    link = str(root / "graph")
    shutil.copytree(folder, link)
    with open(os.path.join(link, "graph_schema.pbtxt"), "a") as f:
        f.write(LINK_READOUT)
    spec = root / "spec.pbtxt"
    spec.write_text(LINK_SPEC)
    rng = np.random.default_rng(8)
    sources, targets, _ = graph.edges["cites"]
    chosen = rng.choice(len(sources), 150, replace=False)
    edge_cutoffs = graph.edge_times("cites")[chosen] + rng.integers(-1, 2, len(chosen))
    random_sources = rng.integers(0, graph.num_nodes["paper"], 50)
    random_targets = rng.integers(0, graph.num_nodes["paper"], 50)
    src = np.concatenate([sources[chosen], random_sources, sources[chosen[:1]]])
    tgt = np.concatenate([targets[chosen], random_targets, targets[chosen[:1]]])
    cutoffs = np.concatenate([edge_cutoffs, rng.integers(2009, 2021, 50),
                              edge_cutoffs[:1] + 3])
    src_ids, tgt_ids = synthetic.node_ids("paper", src), synthetic.node_ids("paper", tgt)
    pairs_path = str(root / "pairs.parquet")
    write_table(pairs_path, _pairs_layout(link),
                [PairBatch(src_ids, tgt_ids, np.arange(len(src)),
                           {"label": np.ones(len(src), np.int64), "timestamp": cutoffs})])
    rows = list(zip(src_ids.tolist(), tgt_ids.tolist(), cutoffs.tolist()))
    return graph, link, str(spec), pairs_path, rows


@pytest.fixture(scope="module")
def link_memory_run(link_temporal, tmp_path_factory):
    _, folder, spec, pairs, _ = link_temporal
    out = tmp_path_factory.mktemp("link_out") / "memory"
    return run_sample(out, folder, spec, "--seeds", pairs, "--engine", "memory", "--workers",
                      "1", *LINK_FLAGS)


def _link_records(folder):
    from sampler.graph_tensor import parse_example
    from tests.pipelines.sampled_output import read_records
    from unigraph.schema import load_schema

    schema = load_schema(os.path.join(folder, "graph_schema.pbtxt")).schema
    return [parse_example(schema, r) for r in read_records(folder)]


def test_no_edge_or_node_is_later_than_its_pairs_cutoff(link_temporal, link_memory_run):
    graph, _, _, _, rows = link_temporal
    year = dict(zip(synthetic.node_ids("paper", np.arange(graph.num_nodes["paper"])).tolist(),
                    graph.year.tolist()))
    records = _link_records(link_memory_run)
    report = read_report(link_memory_run)
    assert len(records) == report["subgraphs_written"] == len(rows) * (1 + NEGATIVES) - \
        report["negatives_not_found"]
    positives, negatives = [], []
    checked_edges = checked_nodes = 0
    for g in records:
        source, target = g.context["source_id"][0], g.context["target_id"][0]
        cutoff = int(g.context["seed_timestamp"][0])
        label = int(g.node_sets["_readout"]["label"][0])
        (positives if label else negatives).append((source, target, cutoff))
        for name, edge_set in g.edge_sets.items():
            if "timestamp" in edge_set.features:
                times = np.asarray(edge_set["timestamp"])
                assert (times <= cutoff).all(), (source, target, name, times, cutoff)
                checked_edges += len(times)
        # Every paper but the pair's two ends (nodes 0 and 1) came in over an eligible edge.
        ends = 1 if source == target else 2
        papers = np.asarray(g.node_sets["paper"]["timestamp"])
        assert (papers[ends:] <= cutoff).all(), (source, target, papers, cutoff)
        checked_nodes += len(papers) - ends
        if not label:  # a negative's target existed at its pair's cut-off
            assert year[target] <= cutoff, (source, target, cutoff)
    # Each pair's record has its own cut-off (the pair listed twice: two records).
    assert sorted(positives) == sorted(rows)
    assert len(negatives) == report["negatives"] > len(rows)
    cutoffs_of = {}
    for source, _, cutoff in rows:
        cutoffs_of.setdefault(source, set()).add(cutoff)
    assert all(cutoff in cutoffs_of[source] for source, _, cutoff in negatives)
    assert report["negatives_after_cutoff"] > 0 and sum(report["induced_edges"].values()) > 0
    assert checked_edges > 2000 and checked_nodes > 500  # the check saw real data


def test_link_cutoffs_beam_writes_the_same_bytes(link_temporal, link_memory_run, tmp_path):
    _, folder, spec, pairs, _ = link_temporal
    beam = run_sample(tmp_path / "beam", folder, spec, "--seeds", pairs, "--engine", "beam",
                      "--node-buckets", "4", *LINK_FLAGS)
    _assert_same_files(link_memory_run, beam)
    report = read_report(beam)
    assert report["time"] == {"seed_cutoff_column": "timestamp", "time_type": "int64",
                              "time_ordered_edge_sets": ["cites", "written", "writes",
                                                         "has_topic"],
                              "negative_target_times": "paper"}
    assert report["negatives_after_cutoff"] == read_report(link_memory_run)[
        "negatives_after_cutoff"]
    with open(os.path.join(beam, "graph_schema.pbtxt")) as f:
        schema = f.read()
    assert 'key: "seed_timestamp"' in schema and "DT_INT64" in schema


@pytest.mark.parametrize("fmt", ["csv", "tfrecord"])
def test_every_pairs_format_gives_the_same_records(link_temporal, link_memory_run, tmp_path,
                                                   fmt):
    """The same timed pairs as CSV or TFRecord, in reverse order: the same bytes."""
    from unigraph.tables import read_pair_set

    _, folder, spec, pairs, _ = link_temporal
    layout = _pairs_layout(folder)
    [batch] = [b for b in read_pair_set(layout, pairs)]
    reordered = batch.take(np.arange(len(batch))[::-1])
    reordered.features["timestamp"] = reordered.timestamps
    path = str(tmp_path / f"pairs.{fmt}")
    write_table(path, layout, [reordered])
    out = run_sample(tmp_path / "out", folder, spec, "--seeds", path, "--engine", "memory",
                     "--workers", "1", *LINK_FLAGS)
    from tests.pipelines.sampled_output import read_records
    assert read_records(out) == read_records(link_memory_run)


@pytest.mark.parametrize("value", ["soon", "2015.5"])
def test_a_bad_pair_cutoff_is_one_line_naming_the_file(link_temporal, tmp_path, capsys, value):
    from pipelines import sample

    _, folder, spec, _, _ = link_temporal
    pairs = tmp_path / "pairs.csv"
    pairs.write_text(f"source,target,label,timestamp\npaper/1,paper/2,1,2015\n"
                     f"paper/2,paper/3,1,{value}\n")
    assert sample.main(["--graph", folder, "--spec", spec, "--seeds", str(pairs),
                        "--output", str(tmp_path / "out"), "--quiet"]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "pairs.csv: line 3" in err and f"'{value}'" in err, err
    assert not os.path.exists(tmp_path / "out" / "sample_report.json")


def test_tfgnn_parses_link_records_with_their_cutoffs(link_temporal, link_memory_run):
    """TF-GNN reads the timed link records with the output schema: seed_timestamp in the
    context, and the structured readout of the endpoints (a negative's target existed at
    the cut-off)."""
    tf = pytest.importorskip("tensorflow")
    tfgnn = pytest.importorskip("tensorflow_gnn")
    from tests.pipelines.sampled_output import read_records

    schema = tfgnn.read_schema(os.path.join(link_memory_run, "graph_schema.pbtxt"))
    spec = tfgnn.create_graph_spec_from_schema_pb(schema)
    graph = tfgnn.parse_example(spec, tf.constant(read_records(link_memory_run)))
    graph = graph.merge_batch_to_components()
    cutoffs = graph.context["seed_timestamp"].numpy().reshape(-1)
    labels = graph.node_sets["_readout"]["label"].numpy().reshape(-1)
    targets = tfgnn.structured_readout(graph, "target", feature_name="timestamp").numpy()
    rows = link_temporal[4]
    assert sorted(cutoffs[labels == 1].tolist()) == sorted(c for _, _, c in rows)
    assert (targets[labels == 0] <= cutoffs[labels == 0]).all()
