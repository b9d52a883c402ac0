"""The synthetic OGBN-MAG-shaped generator: determinism, counts, skew, formats, planted labels."""
import json
import os

import numpy as np
import pytest

from pipelines import synthetic
from pipelines import synthetic_model
from sampler.plan.plan import build_plan
from sampler.plan.spec import load_spec
from unigraph.schema import check_schema, load_schema
from unigraph.tables import read_set
from unigraph.tables.layout import seeds_layout
from unigraph.tables.read import WorkUnit, read_unit


def _ids(prefix, index):
    return synthetic.node_ids(prefix, np.asarray(index))


def _concat(batches, *names):
    batches = list(batches)
    return [np.concatenate([getattr(b, n) if n != "feat" else b.features["feat"]
                            for b in batches]) for n in names]


@pytest.fixture(scope="module")
def graph_001():
    return synthetic_model.generate(0.01, seed=5)


def test_generator_is_deterministic_for_a_seed():
    a = synthetic_model.generate(0.002, seed=3, hub_edges=20, planted=True)
    b = synthetic_model.generate(0.002, seed=3, hub_edges=20, planted=True)
    c = synthetic_model.generate(0.002, seed=4, hub_edges=20, planted=True)
    for name in synthetic_model.EDGE_COUNTS:
        for x, y in zip(a.edges[name], b.edges[name]):
            np.testing.assert_array_equal(x, y)
    np.testing.assert_array_equal(a.feat, b.feat)
    np.testing.assert_array_equal(a.labels, b.labels)
    np.testing.assert_array_equal(a.hub_papers, b.hub_papers)
    assert not np.array_equal(a.edges["cites"][1], c.edges["cites"][1])
    assert not np.array_equal(a.feat, c.feat)


def test_hub_does_not_change_the_rest_of_the_graph():
    plain = synthetic_model.generate(0.002, seed=3)
    hub = synthetic_model.generate(0.002, seed=3, hub_edges=30)
    n = len(plain.edges["writes"][0])
    for x, y in zip(plain.edges["writes"], hub.edges["writes"]):
        np.testing.assert_array_equal(x, y[:n])
    assert (hub.edges["writes"][0][n:] == hub.hub_index).all()
    assert len(np.unique(hub.hub_papers)) == 30  # distinct: 30 <= number of papers


def test_files_are_byte_identical_across_runs(tmp_path):
    for out in ("a", "b"):
        synthetic.write_graph(synthetic_model.generate(0.001, seed=9), str(tmp_path / out), "csv")
    for name in ("paper.csv", "cites.csv", "writes.csv", "seeds.csv", "graph_schema.pbtxt"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()


def test_scale_one_is_ogbn_mag():
    nodes, edges = synthetic_model.scaled_counts(1.0)
    assert nodes == {"paper": 736_389, "author": 1_134_649, "field_of_study": 59_965,
                     "institution": 8_740}
    assert edges == {"cites": 5_416_271, "writes": 7_145_660, "has_topic": 7_505_078,
                     "affiliated_with": 1_043_998}


@pytest.mark.parametrize("scale", [0.003, 0.006])
def test_counts_scale_linearly_and_every_featureless_node_exists(scale):
    g = synthetic_model.generate(scale, seed=1)
    for name, count in synthetic_model.NODE_COUNTS.items():
        assert g.num_nodes[name] == round(count * scale)
    for name, count in synthetic_model.EDGE_COUNTS.items():
        assert len(g.edges[name][0]) == round(count * scale)
    # author, field_of_study, institution have no table: coverage makes every one appear.
    assert len(np.unique(g.edges["writes"][0])) == g.num_nodes["author"]
    assert len(np.unique(g.edges["has_topic"][1])) == g.num_nodes["field_of_study"]
    assert len(np.unique(g.edges["affiliated_with"][1])) == g.num_nodes["institution"]
    # Every paper cites one, has an author and a topic.
    n = g.num_nodes["paper"]
    for name, end in (("cites", 0), ("writes", 1), ("has_topic", 0)):
        assert len(np.unique(g.edges[name][end])) == n


def test_bad_arguments_raise():
    with pytest.raises(ValueError, match="scale"):
        synthetic_model.generate(0, seed=0)
    with pytest.raises(ValueError, match="num_classes"):
        synthetic_model.generate(0.001, seed=0, planted=True, num_classes=129)
    assert synthetic.main(["--scale", "-1", "--output", "/tmp/never-written"]) == 2


# Skew. A uniform endpoint choice with these means gives Poisson degrees: max/mean
# at most about 3 (about 1.3 for the 87 institutions), top-1% share about 2-3%, Gini
# about 0.2 or less. The heavy (Zipf) ends must be far above that: max >= 10 x mean
# (measured at seed 5: 15x for institutions, 44x fields, 168x authors, 248x cited
# papers), top 1% of nodes >= 15% of the edges, Gini >= 0.45.
# The paper-side ends stay moderate at this scale: max <= 8 x mean (measured 4.2x cites
# out-degree, 4.7x topics per paper, 5.5x authors per paper).
HEAVY_ENDS = [("cites", 1), ("writes", 0), ("has_topic", 1), ("affiliated_with", 1)]
MILD_ENDS = [("cites", 0), ("has_topic", 0), ("writes", 1)]


@pytest.mark.parametrize("name,end", HEAVY_ENDS)
def test_heavy_ends_are_skewed(graph_001, name, end):
    node_set = synthetic_model.EDGE_ENDS[name][end]
    stats = synthetic_model.degree_stats(graph_001.edges[name][end], graph_001.num_nodes[node_set])
    assert stats["max"] >= 10 * stats["mean"], stats
    assert stats["top1pct_share"] >= 0.15, stats
    assert stats["gini"] >= 0.45, stats


@pytest.mark.parametrize("name,end", MILD_ENDS)
def test_paper_side_degrees_stay_moderate(graph_001, name, end):
    stats = synthetic_model.degree_stats(graph_001.edges[name][end], graph_001.num_nodes["paper"])
    assert stats["max"] <= 8 * stats["mean"], stats


def test_no_self_citations_and_no_duplicate_pairs(graph_001):
    src, tgt, _ = graph_001.edges["cites"]
    assert not (src == tgt).any()
    for name, (s, t, w) in graph_001.edges.items():
        keys = s * (t.max() + 1) + t
        assert len(np.unique(keys)) == len(keys), name
        assert (w > 0).all()


# ---- files through unigraph's readers ---------------------------------------------------

@pytest.fixture(scope="module")
def written(tmp_path_factory):
    """One graph (with a hub) written in every format; tfrecord in 2 shards."""
    g = synthetic_model.generate(0.001, seed=2, hub_edges=15)
    folders = {}
    for fmt in synthetic.FORMATS:
        folder = str(tmp_path_factory.mktemp(fmt))
        synthetic.write_graph(g, folder, fmt, shards=2 if fmt == "tfrecord" else 1)
        folders[fmt] = folder
    return g, folders


def _edge_table(loaded, name):
    """(sources, targets, weights) sorted. Weights as float32: a TFRecord float_list holds
    float32, so only at that precision do all three formats agree (CSV and Parquet keep the
    float64 4-decimal values exactly)."""
    src, tgt, w = _concat(read_set(loaded, "edges", name), "sources", "targets", "weights")
    w = w.astype(np.float32)
    order = np.lexsort((w, tgt, src))
    return src[order], tgt[order], w[order]


def _expected_edges(g, name, swap=False):
    src_set, tgt_set = synthetic_model.EDGE_ENDS[name]
    s, t, w = g.edges[name]
    src = _ids(src_set, s)
    if name == "writes":
        src[s == g.hub_index] = synthetic.HUB_ID
    tgt = _ids(tgt_set, t)
    if swap:
        src, tgt = tgt, src
    src, tgt, w = src.astype("S"), tgt.astype("S"), w.astype(np.float32)
    order = np.lexsort((w, tgt, src))
    return src[order], tgt[order], w[order]


@pytest.mark.parametrize("fmt", sorted(synthetic.FORMATS))
def test_every_format_reads_back_to_the_generated_columns(written, fmt):
    g, folders = written
    loaded = load_schema(folders[fmt])
    check_schema(loaded)
    ids, feat, = _concat(read_set(loaded, "nodes", "paper"), "ids", "feat")
    batches = list(read_set(loaded, "nodes", "paper"))
    labels = np.concatenate([b.features["labels"] for b in batches])
    year = np.concatenate([b.features["year"] for b in batches])
    order = np.argsort(ids)
    expected_ids = _ids("paper", np.arange(g.num_nodes["paper"]))
    expected_order = np.argsort(expected_ids)
    np.testing.assert_array_equal(ids[order], expected_ids[expected_order])
    assert feat.dtype == np.float32 and feat.shape == (g.num_nodes["paper"], 128)
    np.testing.assert_array_equal(feat[order], g.feat[expected_order])
    np.testing.assert_array_equal(labels[order, 0], g.labels[expected_order])
    np.testing.assert_array_equal(year[order, 0], g.year[expected_order])
    for name in synthetic_model.EDGE_COUNTS:
        got = _edge_table(loaded, name)
        want = _expected_edges(g, name)
        for x, y in zip(got, want):
            np.testing.assert_array_equal(x, y)


def test_csv_and_parquet_keep_float64_weights_exactly(written):
    g, folders = written
    want = np.sort(g.edges["has_topic"][2])
    for fmt in ("csv", "parquet"):
        got, = _concat(read_set(load_schema(folders[fmt]), "edges", "has_topic"), "weights")
        np.testing.assert_array_equal(np.sort(got), want)


def test_written_reads_the_writes_table_backwards(written):
    g, folders = written
    loaded = load_schema(folders["parquet"])
    got = _edge_table(loaded, "written")
    want = _expected_edges(g, "writes", swap=True)
    for x, y in zip(got, want):
        np.testing.assert_array_equal(x, y)
    assert (got[0] != synthetic.HUB_ID).all() and (got[1] == synthetic.HUB_ID).sum() == 15


def test_seed_files_and_spec(written):
    g, folders = written
    folder = folders["csv"]
    seeds, = _concat(read_unit(seeds_layout(), WorkUnit(os.path.join(folder, "seeds.csv"), 0)),
                     "ids")
    assert len(seeds) == g.num_nodes["paper"]
    hub, = _concat(read_unit(seeds_layout(), WorkUnit(os.path.join(folder, "hub_seeds.csv"), 0)),
                   "ids")
    np.testing.assert_array_equal(np.sort(hub), np.sort(_ids("paper", g.hub_papers)))
    spec_path = os.path.join(folder, "sampling_spec.pbtxt")
    plan = build_plan(load_spec(spec_path), load_schema(folder), source=spec_path)
    assert [(op.name, op.edge_set, op.sample_size) for op in plan.ops] == [
        ("seed->paper", "cites", 8), ("paper->author", "written", 4),
        ("author->paper", "writes", 4), ("author->institution", "affiliated_with", 2),
        ("paper->field_of_study", "has_topic", 4)]
    assert {op.strategy_name for op in plan.ops} == {"RANDOM_UNIFORM"}


def test_cli_writes_a_graph_and_manifest(tmp_path, capsys):
    out = tmp_path / "g"
    assert synthetic.main(["--scale", "0.0005", "--format", "parquet", "--shards", "3",
                           "--planted", "--output", str(out)]) == 0
    assert "graph: " in capsys.readouterr().out
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["nodes"]["paper"] == 368 and manifest["planted"]
    assert manifest["num_classes"] == synthetic_model.PLANTED_DEFAULT_CLASSES
    assert sorted(p.name for p in out.glob("cites-*")) == [
        f"cites-0000{i}-of-00003.parquet" for i in range(3)]
    check_schema(load_schema(str(out)))


# ---- planted task -----------------------------------------------------------------------

def test_planted_labels_follow_the_rule_on_a_hand_example():
    feat = np.array([[0.0, 0.0, 9.0],   # paper 0: colour 0 (dim 2 is beyond num_classes)
                     [1.0, 0.0, 0.0],   # paper 1: colour 0
                     [0.0, 2.0, 0.0],   # paper 2: colour 1
                     [0.5, 0.5, 0.0]],  # paper 3: colour 0 (a tie goes to the smaller)
                    dtype=np.float32)
    # 0 cites 1 and 2 -> one vote each: tie, colour 0; 1 cites 2 and 2 -> colour 1;
    # 2 cites 1 and 3 -> colour 0; 3 cites nobody -> -1.
    labels = synthetic_model.planted_labels(4, np.array([0, 0, 1, 1, 2, 2]),
                                      np.array([1, 2, 2, 2, 1, 3]), feat, num_classes=2)
    np.testing.assert_array_equal(labels, [0, 1, 0, -1])
    with pytest.raises(ValueError):
        synthetic_model.planted_labels(4, np.array([0]), np.array([1]), feat, num_classes=4)


@pytest.fixture(scope="module")
def planted():
    return synthetic_model.generate(0.01, seed=11, planted=True)


def test_generated_planted_labels_are_the_rule(planted):
    g = planted
    src, tgt, _ = g.edges["cites"]
    np.testing.assert_array_equal(
        g.labels, synthetic_model.planted_labels(g.num_nodes["paper"], src, tgt, g.feat, 8))
    shares = np.bincount(g.labels, minlength=8) / len(g.labels)
    # The label colour is uniform: 7,364 papers, 1/8 each; bound 5 sigma (0.019).
    assert np.abs(shares - 1 / 8).max() < 0.02, shares
    # Every paper cites only papers of one colour: its label.
    colour = np.argmax(g.feat[:, :8], axis=1)
    assert (colour[tgt] == g.labels[src]).mean() > 0.995
    assert not (src == tgt).any()


def _least_squares_accuracy(x, y, num_classes, seed=0):
    """One-vs-all least squares with a bias, fit on a random half, accuracy on the other."""
    n = len(y)
    perm = np.random.default_rng(seed).permutation(n)
    train, test = perm[: n // 2], perm[n // 2:]
    x = np.hstack([x, np.ones((n, 1))]).astype(np.float64)
    w = np.linalg.lstsq(x[train], np.eye(num_classes)[y[train]], rcond=None)[0]
    return float((np.argmax(x[test] @ w, axis=1) == y[test]).mean()), y[test]


def test_own_features_carry_no_label_signal(planted):
    # Chance is the test half's majority-class share (classes are not exactly balanced).
    # Bound: 5 sigma of a binomial at that share over the 3,682 test papers (seed 0 split).
    g = planted
    accuracy, y_test = _least_squares_accuracy(g.feat, g.labels, 8)
    chance = np.bincount(y_test).max() / len(y_test)
    sigma = np.sqrt(chance * (1 - chance) / len(y_test))
    assert accuracy <= chance + 5 * sigma, (accuracy, chance)


def test_the_neighbourhood_carries_the_signal_even_when_sampled(planted):
    g = planted
    n = g.num_nodes["paper"]
    src, tgt, _ = g.edges["cites"]
    # The mean feature of the cited papers, through the same least squares: far above chance
    # (1.0 at this seed; bound 0.9).
    degree = np.bincount(src, minlength=n)
    mean = np.zeros((n, synthetic_model.FEAT_DIM))
    np.add.at(mean, src, g.feat[tgt])
    mean /= degree[:, None]
    accuracy, _ = _least_squares_accuracy(mean, g.labels, 8)
    assert accuracy >= 0.9, accuracy
    # The spec samples 8 cites per seed: the rule applied to a random 8 of each paper's cites
    # agrees with the label for nearly every paper (bound 0.99); out-degree is at most 8
    # for about two thirds of the papers (then the sample is everything).
    assert (degree <= 8).mean() >= 0.55
    keys = np.random.default_rng(3).random(len(src))
    order = np.lexsort((keys, src))
    s, t = src[order], tgt[order]
    rank = np.arange(len(s)) - np.searchsorted(s, np.arange(n))[s]
    sampled = synthetic_model.planted_labels(n, s[rank < 8], t[rank < 8], g.feat, 8)
    assert (sampled == g.labels).mean() >= 0.99


@pytest.mark.parametrize("fmt", ["csv", "parquet", "tfrecord"])
def test_timestamps_are_years_consistent_with_the_papers(tmp_path, fmt):
    graph = synthetic_model.generate(0.002, seed=3)
    synthetic.write_graph(graph, str(tmp_path), fmt, timestamps=True)
    loaded = load_schema(str(tmp_path))
    check_schema(loaded)
    papers = list(read_set(loaded, "nodes", "paper"))
    year = np.concatenate([b.features["timestamp"] for b in papers])
    assert np.array_equal(year, graph.year)
    assert np.array_equal(year, np.concatenate([b.features["year"][:, 0] for b in papers]))
    for name, (src_set, tgt_set) in synthetic_model.EDGE_ENDS.items():
        batches = list(read_set(loaded, "edges", name))
        times = np.concatenate([b.features["timestamp"] for b in batches])
        sources, targets, _ = graph.edges[name]
        assert np.array_equal(times, graph.edge_times(name))
        assert ((2010 <= times) & (times <= 2019)).all()
        # No edge is older than a paper it touches.
        if src_set == "paper":
            assert (times >= graph.year[sources]).all()
        if tgt_set == "paper":
            assert (times >= graph.year[targets]).all()
    written = np.concatenate([b.features["timestamp"] for b in read_set(loaded, "edges",
                                                                         "written")])
    assert np.array_equal(written, graph.edge_times("writes"))


def test_without_timestamps_the_schema_is_unchanged():
    assert "timestamp" not in synthetic.schema_text("csv", 1)
    assert synthetic.schema_text("csv", 1).count('metadata {') == 6
    assert synthetic.schema_text("csv", 1, timestamps=True).count('key: "timestamp"') == 6
