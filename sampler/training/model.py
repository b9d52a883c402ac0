"""A minimal heterogeneous GNN in Keras, and a seed-only MLP to compare it with.

Both take the flat graph of input.py (`nodes/<set>.<feature>`, `edges/<set>.#source`,
...) and return logits, one row per `_readout` node (= per subgraph).

The GNN, in four steps:
  start state  per node set: Dense over its features (standardized with the
               training data's mean and variance, when given: raw features
               like a year would otherwise swamp the rest), or a learned
               embedding (one vector for the whole set) when it has none;
  rounds       per edge set, mean pooling in both directions: the mean of the
               source states at each target, and of the target states at each
               source; per node set, new state = Dense(concat(old state, means));
  readout      the seed's final state, through `_readout/seed`;
  head         Dense(num_classes).
For link samples (pairs) the readout is the final states of the pair's two nodes
(`_readout/source`, `_readout/target`) and the head a LinkScorer: one logit per
pair, a dot product of the two states (each through a Dense projection) or an MLP
over [s, t, s*t].
Why both directions: the sampler walks edges from source to target, away from
the seed (seed -cites-> paper), so what the seed needs to know sits at the
targets of its edges. Messages only along the edges would flow away from it.

Written against `tf.keras`, so it runs with Keras 3 and with tf-keras
(TF_USE_LEGACY_KERAS=1) alike.
"""
from __future__ import annotations

import re
from typing import Mapping, Optional

import numpy as np
import tensorflow as tf

from sampler.graph_tensor.keys import SIZE_NAME, SOURCE_NAME, TARGET_NAME, edge_key, node_key
from sampler.training.input import Graph, read_out
from sampler.training.layout import GraphLayout
from sampler.output.folder import SamplesError

MODEL_KINDS = ("gnn", "mlp")
SCORERS = ("dot", "mlp")  # link models: how two read-out states become one logit

# Per node set: (mean, variance) of its node_features columns, from the training data.
FeatureNorms = Mapping[str, tuple[np.ndarray, np.ndarray]]


def node_features(graph: Graph, layout: GraphLayout, node_set: str) -> tf.Tensor:
    """The model features of a node set as one float matrix [nodes, total width]."""
    columns = [tf.reshape(tf.cast(graph[node_key(node_set, f.name)], tf.float32), [-1, f.width])
               for f in layout.node_sets[node_set]]
    return tf.concat(columns, axis=1)


def mean_pool(values: tf.Tensor, to_indices: tf.Tensor, num_nodes: tf.Tensor) -> tf.Tensor:
    """out[i] = mean of values[e] over the edges e with to_indices[e] == i (0 if none)."""
    return tf.math.unsorted_segment_mean(values, to_indices, num_nodes)


def _layer_name(*parts: str) -> str:
    # Keras layer names may not hold '/' and friends; node set names may.
    return re.sub(r"[^A-Za-z0-9_]", "_", "_".join(parts))


class FeatureInput(tf.keras.layers.Layer):
    """A featured node set's start state: Dense over its standardized features."""

    def __init__(self, hidden_dim: int, norms: Optional[tuple] = None, dropout: float = 0.0,
                 **kwargs):
        super().__init__(**kwargs)
        # Plain numpy constants, not Keras weights: they are fixed, and this also
        # sidesteps Keras 3's lazily built Normalization inside a subclassed model.
        self.mean = self.inverse_std = None
        if norms is not None:
            mean, variance = norms
            self.mean = np.asarray(mean, np.float32)
            self.inverse_std = (1.0 / np.sqrt(np.maximum(variance, 1e-12))).astype(np.float32)
        self.dropout = tf.keras.layers.Dropout(dropout)
        self.dense = tf.keras.layers.Dense(hidden_dim, activation="relu")

    def call(self, features, training=False):
        if self.mean is not None:
            features = (features - self.mean) * self.inverse_std
        return self.dense(self.dropout(features, training=training))


def _feature_input(set_name: str, hidden_dim: int, norms: Optional[FeatureNorms],
                   dropout: float) -> FeatureInput:
    return FeatureInput(hidden_dim, (norms or {}).get(set_name), dropout,
                        name=_layer_name("start", set_name))


def sets_to_update(layout: GraphLayout, num_rounds: int) -> list[list[str]]:
    """Per round, the node sets whose new state can still reach the seed's final
    state: the last round updates the seed set only, each round before it also
    their neighbours. Updating the others would train weights without a gradient."""
    needed, per_round = [layout.seed_set], []
    for _ in range(num_rounds):
        per_round.append(needed)
        needed = _with_neighbours(layout, needed)
    return per_round[::-1]


def _with_neighbours(layout: GraphLayout, node_sets: list[str]) -> list[str]:
    result = set(node_sets)
    for source, target in layout.message_edge_sets.values():
        if source in node_sets or target in node_sets:
            result |= {source, target}
    return sorted(result)


class LinkScorer(tf.keras.layers.Layer):
    """One logit per pair from the two endpoints' states: `dot` (a Dense projection of
    each, then their dot product) or `mlp` (Dense over [s, t, s * t], then one unit)."""

    def __init__(self, kind: str, hidden_dim: int, **kwargs):
        super().__init__(**kwargs)
        if kind not in SCORERS:
            raise ValueError(f"scorer must be one of {SCORERS}, got {kind!r}")
        self.kind = kind
        if kind == "dot":
            self.project = tf.keras.layers.Dense(hidden_dim, name="project")
            self.bias = tf.keras.layers.Dense(1, name="bias")  # a learned offset
        else:
            self.hidden = tf.keras.layers.Dense(hidden_dim, activation="relu", name="hidden")
            self.out = tf.keras.layers.Dense(1, name="out")

    def call(self, source, target):
        if self.kind == "dot":
            s, t = self.project(source), self.project(target)
            score = tf.reduce_sum(s * t, axis=1, keepdims=True)
            return tf.reshape(score + self.bias(tf.zeros_like(score)), [-1])
        joint = tf.concat([source, target, source * target], axis=1)
        return tf.reshape(self.out(self.hidden(joint)), [-1])


def _head(layout: GraphLayout, num_classes: int, hidden_dim: int, scorer: str):
    if layout.link:
        return LinkScorer(scorer, hidden_dim, name="head")
    return tf.keras.layers.Dense(num_classes, name="head")


def _read_out_head(head, layout: GraphLayout, graph: Graph, states: tf.Tensor) -> tf.Tensor:
    """The head over the read-out states: one pair's two, or the seed's."""
    if layout.link:
        source_set, target_set = layout.readout_edge_sets
        return head(read_out(graph, states, source_set), read_out(graph, states, target_set))
    return head(read_out(graph, states))


class HeteroGNN(tf.keras.Model):
    def __init__(self, layout: GraphLayout, num_classes: int, hidden_dim: int = 64,
                 num_rounds: int = 2, feature_norms: Optional[FeatureNorms] = None,
                 dropout: float = 0.0, scorer: str = "dot", **kwargs):
        super().__init__(**kwargs)
        self.graph_layout = layout
        updated = sets_to_update(layout, num_rounds)
        self.start = {
            set_name: (_feature_input(set_name, hidden_dim, feature_norms, dropout)
                       if layout.node_sets[set_name] else
                       tf.keras.layers.Embedding(1, hidden_dim,
                                                 name=_layer_name("start", set_name)))
            for set_name in _with_neighbours(layout, updated[0])}
        self.rounds = [
            {set_name: tf.keras.layers.Dense(hidden_dim, activation="relu",
                                             name=_layer_name(f"round{r}", set_name))
             for set_name in sets}
            for r, sets in enumerate(updated)]
        self.dropout = tf.keras.layers.Dropout(dropout)
        self.head = _head(layout, num_classes, hidden_dim, scorer)

    def call(self, graph: Graph, training=False):
        layout = self.graph_layout
        counts = {n: tf.reduce_sum(graph[node_key(n, SIZE_NAME)]) for n in layout.graph_node_sets}
        states = {}
        for set_name, start in self.start.items():
            if layout.node_sets[set_name]:
                states[set_name] = start(node_features(graph, layout, set_name),
                                         training=training)
            else:
                states[set_name] = start(tf.zeros([counts[set_name]], tf.int32))
        for updates in self.rounds:
            received = {set_name: [states[set_name]] for set_name in updates}
            for edge_set, (source, target) in layout.message_edge_sets.items():
                sources = graph[edge_key(edge_set, SOURCE_NAME)]
                targets = graph[edge_key(edge_set, TARGET_NAME)]
                if target in updates:
                    received[target].append(
                        mean_pool(tf.gather(states[source], sources), targets, counts[target]))
                if source in updates:
                    received[source].append(
                        mean_pool(tf.gather(states[target], targets), sources, counts[source]))
            states.update({set_name: update(self.dropout(tf.concat(received[set_name], axis=1),
                                                         training=training))
                           for set_name, update in updates.items()})
        return _read_out_head(self.head, layout, graph, states[layout.seed_set])


class SeedMLP(tf.keras.Model):
    """The baseline: the seed's own features only, no graph."""

    def __init__(self, layout: GraphLayout, num_classes: int, hidden_dim: int = 64,
                 feature_norms: Optional[FeatureNorms] = None, dropout: float = 0.0,
                 scorer: str = "dot", **kwargs):
        super().__init__(**kwargs)
        if not layout.node_sets[layout.seed_set]:
            raise SamplesError(f"--baseline mlp: the seed node set '{layout.seed_set}' has no "
                               f"features for an MLP to read")
        self.graph_layout = layout
        self.hidden = [_feature_input(layout.seed_set, hidden_dim, feature_norms, dropout),
                       tf.keras.layers.Dense(hidden_dim, activation="relu", name="hidden")]
        self.head = _head(layout, num_classes, hidden_dim, scorer)

    def call(self, graph: Graph, training=False):
        layout = self.graph_layout
        features = node_features(graph, layout, layout.seed_set)

        def encode(x):
            for layer in self.hidden:
                x = layer(x, training=training)
            return x
        if layout.link:  # the pair's two nodes, each encoded alone: no graph
            source_set, target_set = layout.readout_edge_sets
            return self.head(encode(read_out(graph, features, source_set)),
                             encode(read_out(graph, features, target_set)))
        return self.head(encode(read_out(graph, features)))


def build_model(kind: str, layout: GraphLayout, num_classes: int, *, hidden_dim: int = 64,
                num_rounds: int = 2, feature_norms: Optional[FeatureNorms] = None,
                dropout: float = 0.0, scorer: str = "dot") -> tf.keras.Model:
    if kind == "gnn":
        return HeteroGNN(layout, num_classes, hidden_dim, num_rounds, feature_norms, dropout,
                         scorer, name="gnn")
    if kind == "mlp":
        return SeedMLP(layout, num_classes, hidden_dim, feature_norms, dropout, scorer,
                       name="seed_mlp")
    raise ValueError(f"model kind must be one of {MODEL_KINDS}, got {kind!r}")


def compile_for_classification(model: tf.keras.Model, *, learning_rate: float = 1e-3,
                               weight_decay: float = 0.0, padded: bool = False) -> tf.keras.Model:
    """AdamW, cross-entropy on logits, accuracy. Padded batches carry sample weights,
    which only `weighted_metrics` honour, so accuracy moves there."""
    accuracy = [tf.keras.metrics.SparseCategoricalAccuracy(name="accuracy")]
    model.compile(
        optimizer=tf.keras.optimizers.AdamW(learning_rate, weight_decay=weight_decay),
        loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=None if padded else accuracy,
        weighted_metrics=accuracy if padded else None)
    return model


def compile_for_links(model: tf.keras.Model, *, learning_rate: float = 1e-3,
                      weight_decay: float = 0.0) -> tf.keras.Model:
    """AdamW, binary cross-entropy on the pair logits, ROC AUC."""
    model.compile(
        optimizer=tf.keras.optimizers.AdamW(learning_rate, weight_decay=weight_decay),
        loss=tf.keras.losses.BinaryCrossentropy(from_logits=True),
        metrics=[tf.keras.metrics.AUC(name="auc", from_logits=True)])
    return model
