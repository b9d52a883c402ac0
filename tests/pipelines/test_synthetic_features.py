"""synthetic-graph --extra-features and --planted venue: every kind of feature, as pure
functions of the rows; the planted task carried by a categorical feature alone."""
import json

import numpy as np
import pytest

from pipelines import synthetic
from pipelines import synthetic_model
from pipelines import synthetic_features as extra
from unigraph.columnar.ragged import Ragged
from unigraph.schema import check_schema, load_schema
from unigraph.tables import read_set


def _read(folder, kind, name):
    loaded = load_schema(str(folder))
    batches = list(read_set(loaded, kind, name))
    return batches


def _column(batches, name):
    values = [b.features[name] for b in batches]
    if isinstance(values[0], Ragged):
        return Ragged(np.concatenate([v.values for v in values]),
                      np.concatenate([v.row_lengths for v in values]))
    return np.concatenate(values)


def test_values_are_pure_functions_of_the_rows_whatever_the_batching():
    index = np.arange(1000, dtype=np.int64)
    whole = extra.paper_features(7, index)
    parts = [extra.paper_features(7, index[lo:lo + 333]) for lo in range(0, 1000, 333)]
    assert np.array_equal(np.concatenate([p["venue"] for p in parts]), whole["venue"])
    for name in ("tags", "tokens"):
        assert np.array_equal(np.concatenate([p[name].values for p in parts]),
                              whole[name].values)
        assert np.array_equal(np.concatenate([p[name].row_lengths for p in parts]),
                              whole[name].row_lengths)
    # Another seed gives other values; a row's values do not depend on its neighbours.
    assert not np.array_equal(extra.paper_features(8, index)["venue"], whole["venue"])
    assert extra.paper_features(7, index[500:501])["venue"][0] == whole["venue"][500]
    for name in ("cites", "writes"):
        (key, values), = extra.edge_features(7, name, index).items()
        assert np.array_equal(extra.edge_features(7, name, index[250:])[key], values[250:])
    assert extra.edge_features(7, "has_topic", index) == {}


def test_values_have_the_documented_ranges_and_skew():
    features = extra.paper_features(0, np.arange(20_000))
    tags, tokens = features["tags"], features["tokens"]
    assert tags.row_lengths.min() == 0 and tags.row_lengths.max() <= extra.MAX_TAGS
    # Binomial(6, 0.4): mean 2.4, sd of the mean over 20,000 papers 0.008 (bound 5 sd).
    assert abs(tags.row_lengths.mean() - 2.4) < 0.04
    low, high = extra.TOKENS_PER_PAPER
    assert tokens.row_lengths.min() == low and tokens.row_lengths.max() == high
    assert tokens.values.dtype == np.int64
    assert 0 <= tokens.values.min() and tokens.values.max() < extra.TOKENS
    venues = features["venue"]
    assert venues.dtype == object and isinstance(venues[0], bytes)
    counts = np.unique(venues, return_counts=True)[1]
    # Zipf(1.1) over 1,000 venues: the most common holds 1 / sum(r^-1.1) of the papers
    # (0.179; 5 sd over 20,000 is 0.014).
    top = 1 / (np.arange(1, extra.VENUES + 1) ** -1.1).sum()
    assert abs(counts.max() / len(venues) - top) < 0.014, (counts.max(), top)
    intents = extra.edge_features(0, "cites", np.arange(20_000))["intent"]
    shares = {i: float(np.mean(intents == i)) for i in extra.INTENTS}
    for intent, weight in zip(extra.INTENTS, extra.INTENT_WEIGHTS):
        assert abs(shares[intent] - weight) < 0.02, shares  # 5 sd is at most 0.018
    position = extra.edge_features(0, "writes", np.arange(20_000))["position"]
    assert position.min() == 1 and position.max() == extra.MAX_POSITION
    assert np.mean(position <= 3) > 0.5  # mostly early positions


@pytest.mark.parametrize("fmt", ["csv", "parquet", "tfrecord"])
def test_the_columns_read_back_and_change_nothing_else(tmp_path, fmt):
    graph = synthetic_model.generate(0.001, seed=4, hub_edges=5)
    synthetic.write_graph(graph, str(tmp_path / "plain"), fmt)
    manifest = synthetic.write_graph(graph, str(tmp_path / "extra"), fmt, extra_features=True)
    assert manifest["extra_features"] is True
    check_schema(load_schema(str(tmp_path / "extra")))
    papers = _read(tmp_path / "extra", "nodes", "paper")
    plain = _read(tmp_path / "plain", "nodes", "paper")
    index = np.arange(graph.num_nodes["paper"])
    expected = extra.paper_features(4, index)
    assert [bytes(v) for v in _column(papers, "venue")] == list(expected["venue"])
    for name in ("tags", "tokens"):
        got = _column(papers, name)
        assert np.array_equal(got.row_lengths, expected[name].row_lengths)
        assert [bytes(v) if isinstance(v, bytes) else v for v in got.values.tolist()] == \
            expected[name].values.tolist()
    for name in ("feat", "labels", "year"):
        assert np.array_equal(_column(papers, name), _column(plain, name))
    cites = _read(tmp_path / "extra", "edges", "cites")
    n_cites = len(graph.edges["cites"][0])
    assert [bytes(v) for v in _column(cites, "intent")] == list(
        extra.edge_features(4, "cites", np.arange(n_cites))["intent"])
    # written reads the writes table backwards: the same positions, the hub's rows too.
    writes = _column(_read(tmp_path / "extra", "edges", "writes"), "position")
    written = _column(_read(tmp_path / "extra", "edges", "written"), "position")
    assert len(writes) == len(graph.edges["writes"][0]) and np.array_equal(writes, written)
    for name in ("cites", "writes"):
        a = _read(tmp_path / "plain", "edges", name)
        b = _read(tmp_path / "extra", "edges", name)
        for field in ("sources", "targets", "weights"):
            assert np.array_equal(np.concatenate([getattr(x, field) for x in a]),
                                  np.concatenate([getattr(x, field) for x in b]))


@pytest.fixture(scope="module")
def planted_venue():
    return synthetic_model.generate(0.01, seed=11, planted=True, planted_feature="venue")


def test_planted_on_venues_the_label_is_the_cited_papers_venue_class(planted_venue):
    g = planted_venue
    src, tgt, _ = g.edges["cites"]
    colour = extra.venue_colours(g.venues, 8)
    np.testing.assert_array_equal(
        g.labels, synthetic_model.labels_from_colours(g.num_nodes["paper"], src, tgt, colour, 8))
    assert (colour[tgt] == g.labels[src]).all()  # every cited paper has the label's class
    # No single venue is the class: 8 venues per class, each with papers.
    assert len(np.unique(g.venues)) == 8 * extra.VENUES_PER_CLASS
    # Same cites as the graph planted in `feat` (the same draws), and `feat` is noise:
    # the argmax of its first 8 columns agrees with the label at chance (1/8; 7,364
    # papers, 5 sd is 0.019).
    on_feat = synthetic_model.generate(0.01, seed=11, planted=True)
    assert np.array_equal(on_feat.edges["cites"][1], tgt)
    # (its labels read the colour back from `feat`'s argmax, wrong for about 0.1%)
    assert (on_feat.labels == g.labels).mean() > 0.995
    plain = synthetic_model.generate(0.01, seed=11)
    assert np.array_equal(plain.feat, g.feat)
    agree = (np.argmax(g.feat[:, :8], axis=1) == g.labels).mean()
    assert abs(agree - 1 / 8) < 0.02, agree
    # A paper's own venue tells nothing of its label either.
    assert abs((colour == g.labels).mean() - 1 / 8) < 0.02


def test_cli_planted_venue_writes_the_venues(tmp_path):
    out = tmp_path / "g"
    assert synthetic.main(["--scale", "0.0005", "--planted", "venue", "--quiet",
                           "--output", str(out)]) == 0
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["planted"] and manifest["planted_feature"] == "venue"
    assert manifest["extra_features"] is True  # implied
    graph = synthetic_model.generate(0.0005, seed=0, planted=True, planted_feature="venue")
    venues = [bytes(v) for v in _column(_read(out, "nodes", "paper"), "venue")]
    assert venues == [b"venue/%d" % v for v in graph.venues]
    labels = _column(_read(out, "nodes", "paper"), "labels").reshape(-1)
    assert np.array_equal(labels, graph.labels)
    with pytest.raises(ValueError, match="planted feature"):
        synthetic_model.generate(0.001, seed=0, planted=True, planted_feature="year")
    with pytest.raises(SystemExit):
        synthetic.main(["--planted", "year", "--output", str(tmp_path / "x")])
