"""Epochs of batches for training: the order of each epoch (shuffled reproducibly from
the seed and the epoch), sampling calls run ahead in a thread (`prefetch`), and a
tf.data view of the batches (`to_tf_dataset`, the [tf] extra)."""
from __future__ import annotations

import collections
import logging
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, Callable, Optional, Sequence

import numpy as np

from sampler.api.subgraphs import Subgraphs
from sampler.core import rng
from sampler.job.job import DEFAULT_SEED
from unigraph.errors import SamplerError

if TYPE_CHECKING:
    from sampler.api.graph import Graph, Ids

_SHUFFLE_SALT = rng.name_salt("api-shuffle")


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


def prefetch_depth(prefetch) -> int:
    if isinstance(prefetch, bool) or not isinstance(prefetch, int) or prefetch < 0:
        raise SamplerError(f"prefetch must be a whole number of 0 or more, got {prefetch!r}")
    return prefetch


def ahead(calls: Iterator[Callable[[], Subgraphs]], depth: int) -> Iterator[Subgraphs]:
    """Each call's result, in order; with depth > 0 up to `depth` calls run ahead in a
    background thread while the caller holds the current result. Closing the iterator
    early cancels what has not started and waits for what has."""
    if depth == 0:
        for call in calls:
            yield call()
        return
    with ThreadPoolExecutor(1, "sampler-prefetch") as pool:
        pending: collections.deque = collections.deque()
        try:
            for call in calls:
                pending.append(pool.submit(call))
                if len(pending) > depth:
                    yield pending.popleft().result()
            while pending:
                yield pending.popleft().result()
        finally:
            for future in pending:
                future.cancel()


def epoch_order(n: int, shuffle: bool, seed: int, epoch: int) -> np.ndarray:
    """The rows 0 .. n-1 in epoch `epoch`'s order: shuffled from the seed and the epoch
    by counter-based keys (the same order on every machine and numpy), or as given."""
    order = np.arange(n)
    if shuffle:
        keys = rng.mix(np.uint64(seed & (2**64 - 1)), np.uint64(_SHUFFLE_SALT),
                       np.uint64(epoch), order.astype(np.uint64))
        order = np.argsort(keys, kind="stable")
    return order


def epochs_of(n: int, batch_size: int, shuffle: bool, epochs: Optional[int], seed: int,
            drop_last: bool, first_epoch: int) -> Iterator[tuple[int, np.ndarray]]:
    """(epoch, the rows of one batch) for every batch of every epoch."""
    if batch_size < 1:
        raise SamplerError(f"batch_size {batch_size}: give at least 1")
    if epochs is not None and epochs < 0:
        raise SamplerError(f"epochs {epochs}: give 0 or more, or None for no end")
    epoch = first_epoch
    while epochs is None or epoch < first_epoch + epochs:
        order = epoch_order(n, shuffle, seed, epoch)
        end = n - n % batch_size if drop_last else n
        for lo in range(0, end, batch_size):
            yield epoch, order[lo:lo + batch_size]
        epoch += 1
