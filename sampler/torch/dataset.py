"""`SampleDataset`: a `sample` output folder as a PyTorch `IterableDataset` of HeteroData.

Records are decoded many at a time by the project's batched decoder
(`sampler.graph_tensor.batch_codec`, no TensorFlow; sampler/output/batches.py reads the
shards) and each batch's columns become one HeteroData (`convert.batch_to_hetero_data`),
without a GraphTensor per record. With `torch.utils.data.DataLoader` workers, each
worker reads whole shards, shard i going to worker i mod workers, so every record is
read exactly once per pass whatever the number of workers (a worker with no shard
yields nothing). Shards are files, local or gs://.
"""
from __future__ import annotations

import logging
from typing import Iterator, Optional, Union

import numpy as np

from sampler.api.shared_blocks import settle_worker
from sampler.features import FeatureEncoder
from sampler.graph_tensor.batch_codec import BatchDecoder
from sampler.output.batches import SHARD_STRIDE, read_batches
from sampler.output.folder import open_samples
from sampler.torch.convert import EdgeType, batch_to_hetero_data, torch
from sampler.torch.handoff import Blocks, sent
from sampler.torch.vocabulary import Vocabulary
from unigraph.errors import SamplerError

__all__ = ["SHARD_STRIDE", "SampleDataset"]  # SHARD_STRIDE: a record's input_id, see below
AUTO = "auto"
log = logging.getLogger("sampler")


class SampleDataset(torch.utils.data.IterableDataset):
    """The subgraphs of an output folder (local or gs://) as `HeteroData` (docs/torch.md).

    batch_size=None yields one HeteroData per record: batch them with PyG's
    `torch_geometric.loader.DataLoader` (or `collate_fn=Batch.from_data_list`). A
    batch_size yields batches merged as `to_hetero_data` merges a list (seeds first,
    `batch_size` set); give the DataLoader `batch_size=None` then. Each worker makes
    its own batches from its own shards.

    `vocabulary`, `features`, `label`, `link_edge_type`: as `to_hetero_data`; a growing
    Vocabulary only without DataLoader workers (workers could not agree on its codes).
    `encoder`: how features become tensors (sampler.features, docs/features.md), applied
    to each batch's decoded columns at once; "auto" the folder's own (`sample` writes
    features/ beside the records: its vocabularies, the same in every worker), or
    without one every feature's default but strings (left out, as they need a
    vocabulary); None: dense numbers only, as `to_hetero_data` without an encoder.
    `shuffle`: shard order and records within a buffer of `shuffle_buffer`, anew for
    each epoch (`set_epoch`), from `seed`. `input_id` of a record: its shard's index
    times 2**32 plus its position in the shard.
    """

    def __init__(self, folder: str, *, batch_size: Optional[int] = None,
                 vocabulary: Optional[Vocabulary] = None, features: str = "x",
                 label: Optional[str] = None, link_edge_type: Optional[EdgeType] = None,
                 shuffle: bool = False, shuffle_buffer: int = 1024, seed: int = 0,
                 drop_last: bool = False,
                 encoder: Union[FeatureEncoder, None, str] = AUTO):
        if batch_size is not None and batch_size < 1:
            raise SamplerError(f"batch_size {batch_size}: give at least 1, or None")
        self.samples = open_samples(folder)
        self.batch_size = batch_size
        self.vocabulary = vocabulary
        if isinstance(encoder, str):
            if encoder != AUTO:
                raise SamplerError(f"encoder={encoder!r}: give a FeatureEncoder, None or "
                                   f"{AUTO!r}")
            encoder, left_out = FeatureEncoder.for_samples(folder, self.samples.schema)
            if left_out:
                log.warning("%s has no features/ folder (vocabularies), so these are left "
                            "out: %s", folder, ", ".join(left_out))
        self.encoder = encoder
        self.options = dict(vocabulary=vocabulary, features=features, label=label,
                            link_edge_type=link_edge_type, encoder=encoder)
        self.shuffle, self.shuffle_buffer, self.seed = shuffle, max(1, shuffle_buffer), seed
        self.drop_last = drop_last
        # The epoch in shared memory: persistent DataLoader workers keep the copy of the
        # dataset they were forked with, and read set_epoch's epoch from it every pass.
        self._epoch = torch.zeros(1, dtype=torch.int64).share_memory_()

    @property
    def schema(self):
        """The subgraphs' GraphSchema (the folder's graph_schema.pbtxt)."""
        return self.samples.schema

    @property
    def files(self) -> tuple[str, ...]:
        return self.samples.files

    @property
    def epoch(self) -> int:
        """The epoch whose shuffle the next pass uses."""
        return int(self._epoch[0])

    def set_epoch(self, epoch: int) -> None:
        """The epoch whose shuffle the next pass uses (call it before each epoch, as with
        DistributedSampler; DataLoader workers, persistent ones too, read it as a pass
        starts)."""
        if isinstance(epoch, bool) or not isinstance(epoch, int) or epoch < 0:
            raise SamplerError(f"epoch {epoch!r}: give a whole number, 0 or more")
        self._epoch[0] = epoch

    def __iter__(self) -> Iterator:
        info = torch.utils.data.get_worker_info()
        worker, workers = (0, 1) if info is None else (info.id, info.num_workers)
        if info is not None:
            settle_worker()  # once per worker: inherited objects frozen (shared_blocks)
        if workers > 1 and self.vocabulary is not None and not self.vocabulary.fixed:
            raise SamplerError("a growing Vocabulary cannot be shared by DataLoader workers: "
                               "use Vocabulary.from_samples(folder) or "
                               "Vocabulary.from_graph(graph)")
        shards, epoch = np.arange(len(self.files)), self.epoch
        rng = np.random.default_rng([self.seed, epoch, worker])
        if self.shuffle:  # the same shard order in every worker: the split stays a split
            shards = np.random.default_rng([self.seed, epoch]).permutation(shards)
        mine = shards[worker::workers].tolist()
        batches = read_batches(self.files, mine, BatchDecoder(self.schema),
                               batch_size=self.batch_size, drop_last=self.drop_last,
                               shuffle_buffer=self.shuffle_buffer if self.shuffle else 0,
                               rng=rng)
        if self.batch_size is not None:
            # In a DataLoader worker, each batch goes to the main process in one block of
            # shared memory the worker reuses (sampler/torch/handoff.py).
            blocks = Blocks.of_process() if info is not None else None
            for ids, batch in batches:
                data = batch_to_hetero_data(batch, input_id=ids, **self.options)
                yield data if blocks is None else sent(data, blocks)
            return
        for ids, batch in batches:  # one HeteroData per record (collated in the worker by
            for i in range(batch.records):  # PyG's loader, which sends its own Batch)
                yield batch_to_hetero_data(batch.select(i, i + 1), input_id=ids[i:i + 1],
                                           batched=False, **self.options)

    def __repr__(self) -> str:
        return (f"SampleDataset({self.samples.folder!r}, {len(self.files)} shards, "
                f"batch_size={self.batch_size})")
