"""A tf.data view of `Graph.batches` (`to_tf_dataset`, the [tf] extra): batches of
sampled subgraphs as TF-GNN GraphTensors, or as their serialized records."""
from __future__ import annotations

import logging
from typing import Any, Optional, Sequence

import numpy as np

from sampler.api.graph import Graph, Ids
from sampler.job.job import DEFAULT_SEED


def to_tf_dataset(graph: Graph, seeds: Optional[Ids] = None, *, batch_size: int = 32,
                  epochs: Optional[int] = 1, shuffle: bool = True, seed: int = DEFAULT_SEED,
                  cutoffs: Optional[Sequence[Any] | np.ndarray] = None,
                  parse: bool = True):
    """A tf.data.Dataset over `graph.batches(...)` (node specs; `seeds` default to every
    node of the seed set): with `parse`, each element a batch of `batch_size` subgraphs
    as a `tfgnn.GraphTensor` of shape [batch], the one TF-GNN's `parse_example` gives for
    the batch's records with the output schema (parsed by it: the batched decoder's route,
    sampler.graph_tensor.tfgnn_batch, costs more CPU inside tf.data, docs/performance.md;
    said once in the log); else each element the batch's serialized records (a string
    vector), as `train`'s input reads files. Needs the [tf] extra."""
    from unigraph.errors import require_extra

    tf = require_extra("tensorflow", "tf", "to_tf_dataset")

    def batches():
        return graph.batches(seeds, batch_size, shuffle=shuffle, epochs=epochs, seed=seed,
                             cutoffs=cutoffs)

    def records():
        for batch in batches():
            yield np.array(batch.to_examples(), dtype=object)

    serialized = tf.data.Dataset.from_generator(
        records, output_signature=tf.TensorSpec(shape=[None], dtype=tf.string))
    if not parse:
        return serialized
    tfgnn = require_extra("tensorflow_gnn", "tf", "to_tf_dataset(parse=True)")
    decoded = _decoded_dataset(tf, graph.output_schema, batches)
    if decoded is not None:
        return decoded
    spec = tfgnn.create_graph_spec_from_schema_pb(
        tfgnn.GraphSchema.FromString(graph.output_schema.SerializeToString()))
    return serialized.map(lambda records: tfgnn.parse_example(spec, records))


# Whether the batched decoder's GraphTensors cost less CPU than TF-GNN's parser in
# tf.data. Measured by the decode benchmark (tf_decoder beside tensorflow, docs/
# performance.md): not so far. The decoder's arrays cost a fifth of the parser's time,
# but tf.data's from_generator and the GraphTensor's ops per batch cost more than the
# parse they replace, at batches of 64 to 1024 records. Set True where it measures faster.
DECODER_BEATS_TFGNN = False


def _decoded_dataset(tf, schema, batches):
    """to_tf_dataset's GraphTensors from the batched decoder (sampler.graph_tensor.
    tfgnn_batch) where that is faster, or None: TF-GNN's parser then, the reason logged
    once (slower, or its layout not TF-GNN parser's for this schema)."""
    from sampler.graph_tensor.tfgnn_batch import TfgnnBatches

    reason = TfgnnBatches.unsupported(schema) or (
        None if DECODER_BEATS_TFGNN else "the batched decoder's route costs more CPU in "
                                         "tf.data (decode benchmark, tf_decoder)")
    if reason is None:
        layout = TfgnnBatches(schema)

        def arrays():
            for batch in batches():
                yield tuple(layout.arrays(batch.to_examples()))

        dataset = tf.data.Dataset.from_generator(
            arrays, output_signature=layout.signature()).map(layout.graph)
        if dataset.element_spec == layout.parsed_spec():
            return dataset
        reason = "its GraphTensor's spec is not the parser's"
    _log_once(f"to_tf_dataset parses with TF-GNN's parse_example, not the batched "
              f"decoder: {reason}")
    return None


_LOGGED: set[str] = set()


def _log_once(message: str) -> None:
    if message not in _LOGGED:
        _LOGGED.add(message)
        logging.getLogger("sampler").info("%s (logged once per process)", message)
