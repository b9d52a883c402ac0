"""tf.data input: sampled records -> batches of one merged graph each -> Keras.

A batch is decoded by the batched decoder (columns.py, in a `tf.numpy_function`: the
keys the model reads, a key at a time over the batch) and merged into one graph with
one component per record, in the flat form `sampler.graph_tensor.to_tensors` gives for
a numpy graph; `parse_and_merge` gives the same arrays by one `tf.io.parse_example`
call (a feature spec derived from the output schema, see layout.py), for the seed ids
of an export and the tests:

    nodes/<set>.#size   [components]      nodes/<set>.<feature>   [nodes, *shape]
    edges/<set>.#size   [components]      edges/<set>.#source     [edges] (into the batch)
                                          edges/<set>.#target     [edges]

The label is split off: `(inputs, labels)` with labels [components], one per
`_readout` node. Held-out records are chosen by a hash of their seed id, so the
split is the same on every run and does not depend on file order or sharding.
"""
from __future__ import annotations

from typing import Optional, Sequence

import tensorflow as tf

from sampler.graph_tensor.keys import (SIZE_NAME, SOURCE_NAME, TARGET_NAME, context_key,
                                       edge_key, node_key)
from sampler.graph_tensor.padding import SizeConstraints
from sampler.graph_tensor.readout_structure import READOUT_NODE_SET
from sampler.output.folder import SamplesError
from sampler.output.names import (READOUT_EDGE_SET, SEED_ID_FEATURE, SOURCE_ID_FEATURE,
                                  TARGET_ID_FEATURE)
from sampler.training.columns import BatchMerger
from sampler.training.layout import GraphLayout
from sampler.training.tf_padding import Graph, pad_batch

SEED_ID_KEY = context_key(SEED_ID_FEATURE)
PAIR_ID_KEYS = (context_key(SOURCE_ID_FEATURE), context_key(TARGET_ID_FEATURE))
HASH_BUCKETS = 10_000
PAIR_SEPARATOR = "\x1f"  # a pair is held out by its two ids joined by a unit separator
PARTS = ("train", "held_out", "all")


# --- parsing and merging -------------------------------------------------------

def feature_spec(layout: GraphLayout, *, with_seed_ids: bool = False) -> dict:
    """A ragged feature per key: each record's values flat, one row per record."""
    def ragged(dtype):
        return tf.io.RaggedFeature(dtype, row_splits_dtype=tf.int64)

    spec = {}
    for set_name, features in layout.node_sets.items():
        spec[node_key(set_name, SIZE_NAME)] = ragged(tf.int64)
        for feature in features:
            spec[node_key(set_name, feature.name)] = ragged(
                tf.float32 if feature.is_float else tf.int64)
    for set_name in layout.edge_sets:
        for name in (SIZE_NAME, SOURCE_NAME, TARGET_NAME):
            spec[edge_key(set_name, name)] = ragged(tf.int64)
    if layout.label is not None:
        spec[label_key(layout)] = ragged(tf.int64)
    if with_seed_ids:
        spec[SEED_ID_KEY] = ragged(tf.string)
    return spec


def label_key(layout: GraphLayout) -> str:
    return node_key(layout.label.node_set, layout.label.feature)


def parse_and_merge(serialized: tf.Tensor, layout: GraphLayout, *,
                    with_seed_ids: bool = False) -> Graph:
    """A batch of serialized records [batch] as one graph, one component per record."""
    parsed = tf.io.parse_example(serialized, feature_spec(layout, with_seed_ids=with_seed_ids))
    graph = {}
    nodes_per_record = {}
    for set_name, features in layout.node_sets.items():
        sizes = parsed[node_key(set_name, SIZE_NAME)]
        graph[node_key(set_name, SIZE_NAME)] = sizes.flat_values
        nodes_per_record[set_name] = tf.reduce_sum(sizes, axis=1)
        for feature in features:
            key = node_key(set_name, feature.name)
            graph[key] = tf.reshape(parsed[key].flat_values, (-1,) + feature.shape)
    for set_name, (source, target) in layout.edge_sets.items():
        graph[edge_key(set_name, SIZE_NAME)] = parsed[edge_key(set_name, SIZE_NAME)].flat_values
        for tag, end in ((SOURCE_NAME, source), (TARGET_NAME, target)):
            key = edge_key(set_name, tag)
            # Indices of record i move past the nodes of records 0..i-1 of their set.
            offsets = tf.cumsum(nodes_per_record[end], exclusive=True)
            indices = parsed[key]
            graph[key] = indices.flat_values + tf.repeat(offsets, indices.row_lengths())
    if layout.label is not None:
        graph[label_key(layout)] = tf.reshape(parsed[label_key(layout)].flat_values, [-1])
    if with_seed_ids:
        graph[SEED_ID_KEY] = parsed[SEED_ID_KEY].flat_values
    return graph


def decode_and_merge(serialized: tf.Tensor, merger: BatchMerger) -> Graph:
    """parse_and_merge by the batched decoder (columns.py, through tf.numpy_function): the
    same arrays for about half the CPU of tf.io.parse_example's (docs/performance.md).
    `merger`: a BatchMerger of the layout, made once per dataset."""
    arrays = tf.numpy_function(merger, [serialized],
                               [tf.float32 if o.is_float else tf.int64 for o in merger.outputs],
                               stateful=False)
    graph = {}
    for output, array in zip(merger.outputs, arrays):
        array.set_shape((None,) + output.shape)
        graph[output.key] = array
    return graph


def split_label(graph: Graph, layout: GraphLayout) -> tuple[Graph, tf.Tensor]:
    """(model inputs without the label feature, labels [readout nodes])."""
    inputs = dict(graph)
    values = inputs.pop(label_key(layout))
    inputs.pop(SEED_ID_KEY, None)
    if layout.label.on_readout:
        return inputs, values
    return inputs, read_out(inputs, values)


def read_out(graph: Graph, node_values: tf.Tensor,
             edge_set: str = READOUT_EDGE_SET) -> tf.Tensor:
    """Values of the seed node set's nodes -> one per `_readout` node, via `edge_set`
    (`_readout/seed`; for pairs `_readout/source` or `_readout/target`)."""
    source = graph[edge_key(edge_set, SOURCE_NAME)]
    target = graph[edge_key(edge_set, TARGET_NAME)]
    count = tf.reduce_sum(graph[node_key(READOUT_NODE_SET, SIZE_NAME)])
    # Scatter by target rather than trusting edge order: the readout rules say
    # each `_readout` node is the target of exactly one edge.
    return tf.math.unsorted_segment_sum(tf.gather(node_values, source), target, count)


# --- the held-out split ----------------------------------------------------------

def is_held_out(seed_ids: tf.Tensor, fraction: float) -> tf.Tensor:
    """True for the seeds in the held-out part: a fixed hash of the id, not file order."""
    buckets = tf.strings.to_hash_bucket_fast(seed_ids, HASH_BUCKETS)
    return buckets < int(round(fraction * HASH_BUCKETS))


def select_part(records: tf.data.Dataset, part: str, fraction: float,
                link: bool = False) -> tf.data.Dataset:
    """The records of one part: "train", "held_out" (a `fraction` of the seeds or pairs,
    by a hash of their ids) or "all"."""
    if part == "all" or (part == "train" and fraction <= 0):
        return records
    keys = PAIR_ID_KEYS if link else (SEED_ID_KEY,)

    def keep(batch):
        parsed = tf.io.parse_example(batch, {k: tf.io.FixedLenFeature([], tf.string)
                                             for k in keys})
        # A pair is held out by its two ids together (a unit separator between them).
        seed_ids = tf.strings.join([parsed[k] for k in keys], separator=PAIR_SEPARATOR)
        held_out = is_held_out(seed_ids, fraction)
        return tf.boolean_mask(batch, held_out if part == "held_out" else ~held_out)

    # Decide in batches (one parse per 1024 records), then go back to records.
    return records.batch(1024).map(keep, num_parallel_calls=tf.data.AUTOTUNE,
                                   deterministic=True).unbatch()


# --- the dataset -----------------------------------------------------------------

def record_dataset(files: Sequence[str], *, shuffle: bool = False,
                   seed: int = 0) -> tf.data.Dataset:
    """Serialized records of all files, files interleaved (and shuffled if asked)."""
    dataset = tf.data.Dataset.from_tensor_slices(list(files))
    if shuffle:
        dataset = dataset.shuffle(len(files), seed=seed, reshuffle_each_iteration=True)
    return dataset.interleave(tf.data.TFRecordDataset, cycle_length=min(len(files), 8),
                              num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)


def make_dataset(records: tf.data.Dataset, layout: GraphLayout, *, batch_size: int,
                 shuffle: bool = False, shuffle_buffer: int = 10_000, seed: int = 0,
                 size_constraints: Optional[SizeConstraints] = None) -> tf.data.Dataset:
    """Batches for Keras from serialized records (one part, sources.py): `(inputs,
    labels)`, or `(inputs, labels, weights)` when padded to `size_constraints` (weights
    are 0 for the padding)."""
    if layout.label is None:
        raise ValueError("make_dataset needs a layout with a label")
    if shuffle:
        records = records.shuffle(shuffle_buffer, seed=seed, reshuffle_each_iteration=True)
    merger = BatchMerger(layout)

    def to_batch(serialized):
        inputs, labels = split_label(decode_and_merge(serialized, merger), layout)
        if size_constraints is None:
            return inputs, labels
        return pad_batch(inputs, labels, layout, size_constraints)

    return (records.batch(batch_size)
            .map(to_batch, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
            .prefetch(tf.data.AUTOTUNE))


def fixed_size_constraints(files: Sequence[str], layout: GraphLayout,
                           batch_size: int) -> SizeConstraints:
    """Constraints that fit any `batch_size` records of these files, padding included:
    batch_size times the largest record per set, plus room for the padding
    (as `sampler.graph_tensor.tight_size_constraints`). Reads every record's sizes."""
    size_keys = [node_key(n, SIZE_NAME) for n in layout.node_sets]
    size_keys += [edge_key(n, SIZE_NAME) for n in layout.edge_sets]
    spec = {key: tf.io.RaggedFeature(tf.int64, row_splits_dtype=tf.int64) for key in size_keys}

    components_key = node_key(READOUT_NODE_SET, SIZE_NAME) + " components"

    def largest(batch):
        parsed = tf.io.parse_example(batch, spec)
        result = {key: tf.reduce_max(tf.reduce_sum(parsed[key], axis=1)) for key in size_keys}
        result[components_key] = tf.reduce_max(
            parsed[node_key(READOUT_NODE_SET, SIZE_NAME)].row_lengths())
        return result

    maxima = {key: 0 for key in size_keys + [components_key]}
    for batch_max in record_dataset(files).batch(4096).map(largest):
        maxima = {key: max(value, int(batch_max[key])) for key, value in maxima.items()}
    if not maxima[components_key]:
        raise SamplesError("padding: the records hold no subgraph")
    nodes = {n: batch_size * maxima[node_key(n, SIZE_NAME)] + 1 for n in layout.node_sets}
    edges = {n: batch_size * maxima[edge_key(n, SIZE_NAME)] + (target == READOUT_NODE_SET)
             for n, (_, target) in layout.edge_sets.items()}
    components = batch_size * maxima[components_key] + 1
    return SizeConstraints(components, nodes, edges)
