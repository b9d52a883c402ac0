"""Where `train` gets its records: a `sample` output folder, or a graph sampled online.

Both give the trainer serialized records of one part (training or held out, chosen by
a hash of the seed id, the same rule for both, input.is_held_out) as a tf.data.Dataset:

  FileSource    the folder's shards (input.record_dataset), the part selected as they
                stream by; the same records every epoch.
  OnlineSource  sampler.api on a loaded graph: the part's seeds (or pairs) split up
                front, and each pass over the training part samples a new epoch
                (`graph.batches(..., first_epoch=e)`), so epoch e trains on the
                subgraphs `sample --seed S --epoch e` would write. Held-out subgraphs
                and the summaries are epoch 0's, fixed.
"""
from __future__ import annotations

import numpy as np
import tensorflow as tf

from sampler import api
from sampler.output.folder import SampleFolder
from sampler.training.input import PAIR_SEPARATOR, is_held_out, record_dataset, select_part
from unigraph.protos import graph_schema_pb2 as gs

ONLINE_BATCH = 512  # seeds sampled per API call; the trainer batches records its own way


class FileSource:
    """The records of a `sample` output folder."""

    def __init__(self, samples: SampleFolder):
        self.samples = samples
        self.schema: gs.GraphSchema = samples.schema
        self.name = samples.folder
        self.files = samples.files

    def records(self, part: str, fraction: float, *, shuffle: bool = False, seed: int = 0,
                link: bool = False, next_epoch: bool = False) -> tf.data.Dataset:
        return select_part(record_dataset(self.files, shuffle=shuffle, seed=seed), part,
                           fraction, link)


class OnlineSource:
    """Records sampled by sampler.api as training asks for them: a new epoch of draws on
    every pass over the training part (see the module docstring)."""

    def __init__(self, graph: api.Graph, seeds: api.SeedRows, *, seed: int = api.DEFAULT_SEED):
        self.graph = graph
        self.schema: gs.GraphSchema = graph.output_schema
        self.name = f"online sampling of {graph!r}"
        self.seeds = seeds
        self.seed = seed
        self._epoch = 0

    def part(self, part: str, fraction: float) -> api.SeedRows:
        """The seeds (or pairs) of one part, by the held-out rule of the files."""
        if part == "all" or (part == "train" and fraction <= 0):
            return self.seeds
        held_out = is_held_out(tf.constant(_hash_keys(self.seeds)), fraction).numpy()
        return self.seeds.take(np.flatnonzero(held_out if part == "held_out" else ~held_out))

    def records(self, part: str, fraction: float, *, shuffle: bool = False, seed: int = 0,
                link: bool = False, next_epoch: bool = False) -> tf.data.Dataset:
        """The part's records; with `next_epoch`, every iteration samples the next epoch
        (Keras iterates the training dataset once per epoch), else always epoch 0."""
        chosen = self.part(part, fraction)

        def generate():
            epoch = 0
            if next_epoch:
                epoch, self._epoch = self._epoch, self._epoch + 1
            yield from self._sample(chosen, epoch, shuffle)

        return tf.data.Dataset.from_generator(
            generate, output_signature=tf.TensorSpec(shape=[], dtype=tf.string))

    def _sample(self, seeds: api.SeedRows, epoch: int, shuffle: bool):
        # prefetch: the next batch is sampled while TensorFlow trains on this one.
        common = dict(shuffle=shuffle, epochs=1, first_epoch=epoch, seed=self.seed, prefetch=1)
        if seeds.ids is not None:
            batches = self.graph.batches(seeds.ids, ONLINE_BATCH, cutoffs=seeds.cutoffs,
                                         **common)
        else:
            # Every pair of the table is a known positive, held out or not, as in `sample`.
            batches = self.graph.pair_batches(
                seeds.sources, seeds.targets, ONLINE_BATCH, cutoffs=seeds.cutoffs,
                features=seeds.features or None,
                known_positives=(self.seeds.sources, self.seeds.targets), **common)
        for batch in batches:
            yield from batch.to_examples()


def _hash_keys(seeds: api.SeedRows) -> np.ndarray:
    """The strings the held-out rule hashes: a seed's id, a pair's two ids together (as
    input.select_part joins them from the records)."""
    if seeds.ids is not None:
        return seeds.ids.astype(object)
    separator = PAIR_SEPARATOR.encode()
    return np.array([s + separator + t for s, t in zip(seeds.sources.tolist(),
                                                       seeds.targets.tolist())], dtype=object)
