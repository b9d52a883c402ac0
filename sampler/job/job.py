"""A sampling job: everything a run needs, fixed before any engine starts.

The job is engine-neutral: the Beam pipeline and the in-memory engine take the
same SamplingJob, and the output is a function of it alone (never of the engine,
runner or worker count). Its sizes (node buckets, output shards) only change how
the work is cut, not what is written, except that the shard count decides which
file a subgraph lands in.
"""
from __future__ import annotations

import dataclasses

import numpy as np

from sampler.core import rng
from sampler.core.long_rows import CHUNK_EDGES
from sampler.output.files import OutputSpec
from sampler.plan.plan import Plan
from sampler.job.sizing import DEFAULT_SHARDS, node_buckets
from sampler.plan.timing import TimePlan
from unigraph.schema import LoadedSchema

__all__ = ["DEFAULT_SEED", "DEFAULT_SHARDS", "SamplingJob", "choose_node_buckets", "epoch_seed"]

DEFAULT_SEED = 42  # `sample --seed` and sampler.api's default
_EPOCH_SALT = rng.name_salt("epoch")


@dataclasses.dataclass(frozen=True)
class SamplingJob:
    loaded: LoadedSchema
    plan: Plan
    seeds_path: str | None  # None: every node of the seed node set is a seed
    output: OutputSpec | None  # None: nothing is written (sampler.api)
    num_shards: int
    node_buckets: int
    seed: int
    stats_path: str  # where the engine leaves the merged RunStats (JSON) for the driver
    time: TimePlan | None = None  # timestamps to read, time-ordered edge sets, cut-offs
    # Rows with more edges are sampled chunk by chunk (core.long_rows); it decides those
    # rows' random streams, so it is part of the job like the seed.
    chunk_edges: int = CHUNK_EDGES
    # Elements the Beam engine numbers the seeds in (job.sizing.numbering_keys); 0: one
    # per node bucket. Cuts the work only, like node_buckets.
    numbering_keys: int = 0

    @property
    def seed_numbering_keys(self) -> int:
        """numbering_keys, or the power of two at or above node_buckets (at most 4096)."""
        if self.numbering_keys:
            return self.numbering_keys
        return min(4096, 1 << (max(self.node_buckets, 1) - 1).bit_length())

    @property
    def seed_timestamp_dtype(self) -> str | None:
        """The cut-offs' type when the samples have cut-offs (context/seed_timestamp)."""
        return self.time.dtype if self.time is not None and self.time.has_cutoffs else None


def choose_node_buckets(loaded: LoadedSchema, plan: Plan) -> int:
    """More buckets for bigger graphs, so each join element stays under a byte budget
    (sampler.job.sizing)."""
    return node_buckets(loaded, plan)


def epoch_seed(seed: int, epoch: int) -> int:
    """The random seed of epoch `epoch`'s draws: `seed` itself for epoch 0 (so epoch 0 is
    what `sample --seed` writes), else a 63-bit hash of both, so each epoch draws anew
    and every epoch is reproducible."""
    if epoch < 0:
        raise ValueError(f"epoch {epoch}: give 0 or more")
    if epoch == 0:
        return seed
    return int(rng.mix(np.uint64(seed & (2**64 - 1)), np.uint64(_EPOCH_SALT),
                       np.uint64(epoch))) >> 1
