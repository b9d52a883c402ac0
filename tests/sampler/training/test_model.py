"""sampler.training.model: pooling and readout by hand, which sets each round
updates, padding invariance, and the seed-only baseline's input."""
import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")

from sampler.graph_tensor import encode_example, tight_size_constraints
from sampler.output.folder import SamplesError
from sampler.training import input as training_input
from sampler.training.layout import GraphLayout, layout_from_schema
from sampler.training.model import (HeteroGNN, SeedMLP, build_model, mean_pool, node_features,
                                    sets_to_update)
from sampler.training.tf_padding import pad_batch
from tests.sampler.training.toy_samples import planted_graphs


@pytest.fixture(scope="module")
def toy():
    schema, graphs = planted_graphs(num_papers=40, num_classes=3, seed=3)
    records = [encode_example(g, schema) for g in graphs]
    layout = layout_from_schema(schema, "labels")
    inputs, labels = training_input.split_label(
        training_input.parse_and_merge(tf.constant(records[:6]), layout), layout)
    return schema, graphs, layout, inputs, labels


def test_mean_pool_by_hand():
    values = tf.constant([[1.0, 10.0], [3.0, 30.0], [5.0, 50.0]])
    pooled = mean_pool(values, tf.constant([2, 0, 2], tf.int64), tf.constant(4, tf.int64))
    # node 0 gets edge 1; node 2 gets edges 0 and 2; nodes 1 and 3 get nothing: 0.
    np.testing.assert_allclose(pooled.numpy(), [[3, 30], [0, 0], [3, 30], [0, 0]])


def test_node_features_concatenates_as_float(toy):
    _, graphs, layout, inputs, _ = toy
    features = node_features(inputs, layout, "paper")
    assert features.dtype == tf.float32
    expected = np.concatenate([g.node_sets["paper"]["feat"] for g in graphs[:6]])
    np.testing.assert_array_equal(features.numpy(), expected)


def _chain_layout():
    # seed paper - author - institution - country: a path of node sets.
    return GraphLayout(
        node_sets={"_readout": (), "paper": (), "author": (), "institution": (), "country": ()},
        edge_sets={"_readout/seed": ("paper", "_readout"), "written": ("paper", "author"),
                   "affiliated": ("author", "institution"), "in": ("institution", "country")},
        seed_set="paper", label=None)


def test_each_round_updates_only_sets_that_reach_the_seed():
    layout = _chain_layout()
    assert sets_to_update(layout, 1) == [["paper"]]
    assert sets_to_update(layout, 3) == [["author", "institution", "paper"],
                                         ["author", "paper"], ["paper"]]
    model = HeteroGNN(layout, num_classes=2, hidden_dim=4, num_rounds=2)
    # Two rounds see two hops: countries never matter, so get no start state.
    assert sorted(model.start) == ["author", "institution", "paper"]


def test_gnn_ignores_padding(toy):
    _, graphs, layout, inputs, labels = toy
    model = build_model("gnn", layout, num_classes=3, hidden_dim=8)
    logits = model(inputs).numpy()
    assert logits.shape == (6, 3)
    constraints = tight_size_constraints(graphs, 8)
    padded, _, weights = pad_batch(inputs, labels, layout, constraints)
    padded_logits = model(padded).numpy()
    assert padded_logits.shape == (constraints.total_num_components, 3)
    np.testing.assert_allclose(padded_logits[:6], logits, rtol=1e-5, atol=1e-6)
    assert weights.numpy()[:6].tolist() == [1.0] * 6


def test_gnn_output_follows_the_cited_papers(toy):
    """Changing a cited paper's features changes the seed's prediction; the
    message must flow against the edge direction (seed -cites-> paper)."""
    _, _, layout, inputs, _ = toy
    model = build_model("gnn", layout, num_classes=3, hidden_dim=8, num_rounds=1)
    cited = inputs["edges/cites.#target"].numpy()[0]  # a paper the first seed cites
    changed = dict(inputs)
    feat = inputs["nodes/paper.feat"].numpy().copy()
    feat[cited] += 5.0
    changed["nodes/paper.feat"] = tf.constant(feat)
    before, after = model(inputs).numpy(), model(changed).numpy()
    assert not np.allclose(before[0], after[0])
    np.testing.assert_allclose(before[1:], after[1:])  # other subgraphs do not see it


def test_mlp_reads_only_the_seed(toy):
    _, _, layout, inputs, _ = toy
    model = build_model("mlp", layout, num_classes=3, hidden_dim=8)
    changed = dict(inputs)
    feat = inputs["nodes/paper.feat"].numpy().copy()
    seeds = inputs["edges/_readout/seed.#source"].numpy()
    others = np.setdiff1d(np.arange(len(feat)), seeds)
    feat[others] += 5.0
    changed["nodes/paper.feat"] = tf.constant(feat)
    np.testing.assert_allclose(model(inputs).numpy(), model(changed).numpy())
    assert isinstance(model, SeedMLP)


def test_mlp_needs_seed_features():
    with pytest.raises(SamplesError, match="seed node set 'paper' has no features"):
        SeedMLP(_chain_layout(), num_classes=2)
