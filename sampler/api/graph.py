"""`Graph`: a loaded graph and its sampling calls. `sample` and `sample_pairs` run the
in-memory engine's steps on a call's rows, chunk by chunk (in threads with
`load_graph(threads=N)`); `batches` and `pair_batches` make those calls for every
seed of an epoch (sampler.api.batching)."""
from __future__ import annotations

import functools
import logging
import os
from concurrent.futures import ThreadPoolExecutor
from collections.abc import Iterator, Sequence
from typing import Any, Optional, Union

import numpy as np

from sampler.api.batching import ahead, epochs_of, prefetch_depth
from sampler.api.minibatches import (features_of, minibatch, node_rows, node_seeds, pair_rows,
                                     pair_seeds)
from sampler.api.seed_tables import SeedRows, read_seed_rows
from sampler.api.subgraphs import Subgraphs
from sampler.core.assemble import ShardAssembler
from sampler.core.negatives import DrawGroups
from sampler.core.pairs import numbered_pair_rows
from sampler.core.stats import RunStats
from sampler.job.job import DEFAULT_SEED, epoch_seed
from sampler.memory.batch import Samples, negative_draw_groups, pair_samples, sample_batch
from sampler.memory.graph import GraphInMemory
from sampler.minibatch.batch import MergedBatch
from sampler.minibatch.ego import EgoGraph, chain_of, ego_graph
from sampler.minibatch.features import Features
from sampler.output.schema import sampled_schema
from sampler.plan.plan import Plan
from sampler.plan.timing import TimePlan
from unigraph.errors import SamplerError
from unigraph.protos import graph_schema_pb2 as gs
from unigraph.schema import LoadedSchema
from unigraph.storage import bigquery
from unigraph.tables.layout import TimeColumn
from unigraph.timestamps import SEED_TIMESTAMP_COLUMNS

log = logging.getLogger("sampler")

# Samples sampled and assembled at once within a call (the engine's chunk size): a call
# with many seeds holds one chunk's temporaries at a time besides its results.
CALL_CHUNK = 512
# With threads: a call's samples are split so that every thread gets a chunk, but no
# chunk is smaller than this (below it, per-call Python overhead outweighs the split).
THREAD_CHUNK_MIN = 128
CUTOFF_COLUMN = SEED_TIMESTAMP_COLUMNS[0]

Ids = Union[Sequence[Any], np.ndarray]
PathLike = Union[str, "os.PathLike[str]"]


class Graph:
    """A graph loaded for one spec (`load_graph`): sample it with `sample`,
    `sample_pairs` (link specs) and `batches` / `pair_batches`."""

    def __init__(self, loaded: LoadedSchema, plan: Plan, time: TimePlan | None,
                 memory: GraphInMemory, chunk_edges: int,
                 bigquery_project: str | None = None, threads: int = 1):
        self._loaded, self._plan, self._time = loaded, plan, time
        self._threads = threads
        self._pool: ThreadPoolExecutor | None = None
        self._bigquery_project = bigquery_project
        self._memory = memory
        self._chunk_edges = chunk_edges
        self._assembler = ShardAssembler(plan, loaded.schema, memory.names)
        self._draw_groups: DrawGroups | None = None
        self._feature_source: Features | None = None
        cutoff_type = time.dtype if time is not None and time.has_cutoffs else None
        self.output_schema: gs.GraphSchema = sampled_schema(loaded.schema, plan, cutoff_type)

    # --- what it holds ---------------------------------------------------------

    @property
    def schema(self) -> gs.GraphSchema:
        """The input graph's schema."""
        return self._loaded.schema

    @property
    def seed_set(self) -> str:
        """The node set the spec seeds from (a link spec: the paired node set)."""
        return self._plan.seed_set

    @property
    def link(self) -> bool:
        """Whether the spec seeds with pairs (symmetric_link_seed_op): use `sample_pairs`."""
        return self._plan.link

    @property
    def has_cutoffs(self) -> bool:
        """Whether the graph was loaded for seeds with time cut-offs (`cutoffs=True`)."""
        return self._time is not None and self._time.has_cutoffs

    @property
    def nbytes(self) -> int:
        """Bytes of the arrays the graph holds (a store's mapped arrays included)."""
        return self._memory.nbytes

    @property
    def time_type(self) -> str | None:
        """"int64" or "float64": the type of every time of the graph's jobs (None when
        nothing is timed)."""
        return self._time.dtype if self._time is not None else None

    def read_seeds(self, table: str) -> SeedRows:
        """A seeds table (a pairs table for link specs) in any format `sample --seeds`
        reads, files or bq://; its `timestamp` column, if any, as cut-offs (which need
        the graph loaded with `cutoffs=True`)."""
        from sampler.plan.timing import seed_timestamp_column

        column = seed_timestamp_column(table)
        if column is not None and not self.has_cutoffs:
            raise SamplerError(f"seeds {table}: its column '{column}' gives cut-offs; load "
                               f"the graph with cutoffs=True")
        timestamp = TimeColumn(column, self._time.dtype) if column is not None else None
        with bigquery.billing_project_given(self._bigquery_project):
            return read_seed_rows(self._plan, self.schema, table, timestamp)

    def node_ids(self, node_set: str | None = None) -> np.ndarray:
        """The ids of a node set's nodes (default: the seed set), sorted, as bytes ('S')."""
        name = node_set or self.seed_set
        if name == self.seed_set:
            return self._memory.seed_table.ids
        if name not in self._memory.names:
            raise SamplerError(f"node set '{name}': not in the spec's sets "
                               f"({', '.join(sorted(self._memory.names))})")
        return self._memory.names[name]

    def feature_columns(self, set_kind: str, set_name: str) -> Iterator[dict]:
        """The feature columns of every row of a loaded node set ("nodes") or sampled
        edge set ("edges"), as one batch (what sampler.features.FeatureEncoder.fit
        counts); nothing for a set the graph did not load."""
        tables = self._memory.node_tables if set_kind == "nodes" else self._memory.adjacency
        if set_name in tables:
            yield tables[set_name].features

    def __repr__(self) -> str:
        kind = "pairs of" if self.link else "seeds of"
        return (f"Graph({kind} '{self.seed_set}', {len(self._plan.ops)} ops, "
                f"{self.nbytes / 1e6:,.1f} MB of arrays)")

    # --- sampling --------------------------------------------------------------

    def sample(self, seed_ids: Ids, *, seed: int = DEFAULT_SEED, epoch: int = 0,
               cutoffs: Optional[Sequence[Any] | np.ndarray] = None) -> Subgraphs:
        """The subgraphs of these seeds (ids as str, bytes or ints; a seed listed twice is
        two samples with their own draws), in their order; `cutoffs`: each seed's time
        cut-off (needs `load_graph(..., cutoffs=True)`)."""
        rows, row_samples, samples = node_rows(self, seed_ids, cutoffs,
                                               "use sample_pairs(sources, targets)")
        return self._subgraphs(samples, row_samples, rows.ids.tolist(), seed, epoch)

    def sample_pairs(self, sources: Ids, targets: Ids, *, seed: int = DEFAULT_SEED,
                     epoch: int = 0, cutoffs: Optional[Sequence[Any] | np.ndarray] = None,
                     features: Optional[dict[str, Any]] = None,
                     known_positives: Optional[tuple[Ids, Ids]] = None) -> Subgraphs:
        """Link samples: one subgraph per pair (source, target) of the seed set, with the
        pair's own edges left out as the CLI does, then (loaded with `negatives=K`) K
        negatives per pair; `features`: the pairs table's `_readout` feature columns;
        `known_positives` (sources, targets): more pairs that are never drawn as negatives
        (the CLI's known positives are its whole pairs table)."""
        rows, extra = pair_rows(self, sources, targets, cutoffs=cutoffs, features=features,
                                known_positives=known_positives, seed=seed, epoch=epoch,
                                call="use sample(seed_ids)")
        numbered, row_samples = numbered_pair_rows(rows)
        samples = pair_samples(self._memory, self.seed_set, numbered)
        samples.stats.merge(extra)
        labels = rows.features.get("label") if self._plan.negatives else None
        return self._subgraphs(samples, row_samples,
                               list(zip(rows.sources.tolist(), rows.targets.tolist())), seed,
                               epoch, labels)

    def batches(self, seeds: Optional[Ids] = None, batch_size: int = 512, *,
                shuffle: bool = True, epochs: Optional[int] = 1, seed: int = DEFAULT_SEED,
                cutoffs: Optional[Sequence[Any] | np.ndarray] = None,
                drop_last: bool = False, first_epoch: int = 0,
                prefetch: int = 0) -> Iterator[Subgraphs]:
        """Batches of subgraphs for training: every seed once per epoch (default: every
        node of the seed set), in an order shuffled anew each epoch (reproducibly, from
        `seed` and the epoch), each epoch's draws those of `sample(..., epoch=e)`.
        `epochs=None` runs on forever; `first_epoch` resumes at a later epoch.
        `prefetch=N` samples up to N batches ahead in a background thread while the
        caller works on the current one (same batches, same order)."""
        if self.link:
            raise SamplerError("the spec seeds with pairs: use pair_batches(sources, targets)")
        ids = self.node_ids() if seeds is None else np.asarray(seeds)
        times = None if cutoffs is None else np.asarray(cutoffs)
        calls = (functools.partial(self.sample, ids[rows], seed=seed, epoch=epoch,
                                   cutoffs=None if times is None else times[rows])
                 for epoch, rows in epochs_of(len(ids), batch_size, shuffle, epochs, seed,
                                            drop_last, first_epoch))
        return ahead(calls, prefetch_depth(prefetch))

    def pair_batches(self, sources: Ids, targets: Ids, batch_size: int = 512, *,
                     shuffle: bool = True, epochs: Optional[int] = 1,
                     seed: int = DEFAULT_SEED,
                     cutoffs: Optional[Sequence[Any] | np.ndarray] = None,
                     features: Optional[dict[str, Any]] = None, drop_last: bool = False,
                     first_epoch: int = 0,
                     known_positives: Optional[tuple[Ids, Ids]] = None,
                     prefetch: int = 0) -> Iterator[Subgraphs]:
        """`batches` for link specs: the pairs (and their negatives, drawn anew each epoch).
        Known positives of every batch: `known_positives`, by default every pair given
        (as the CLI's whole pairs table is)."""
        if not self.link:
            raise SamplerError("the spec seeds nodes: use batches(seeds)")
        sources, targets = np.asarray(sources), np.asarray(targets)
        if len(sources) != len(targets):
            raise SamplerError(f"pairs: {len(sources)} sources but {len(targets)} targets")
        times = None if cutoffs is None else np.asarray(cutoffs)
        columns = {k: np.asarray(v) for k, v in (features or {}).items()}
        calls = (functools.partial(
            self.sample_pairs, sources[rows], targets[rows], seed=seed, epoch=epoch,
            cutoffs=None if times is None else times[rows],
            features={k: v[rows] for k, v in columns.items()} or None,
            known_positives=(known_positives or (sources, targets)) if self._plan.negatives
            else None)
                 for epoch, rows in epochs_of(len(sources), batch_size, shuffle, epochs, seed,
                                            drop_last, first_epoch))
        return ahead(calls, prefetch_depth(prefetch))

    def sample_merged(self, seed_ids: Ids, *, seed: int = DEFAULT_SEED, epoch: int = 0,
                      cutoffs: Optional[Sequence[Any] | np.ndarray] = None,
                      disjoint: bool = False) -> MergedBatch:
        """One mini-batch of these seeds sampled at once (docs/minibatches.md): every
        distinct node of an op's frontier sampled once for the whole batch, laid out as
        PyG's NeighborLoader lays it out; `disjoint=True`: each seed's own subgraph (the
        draws of `sample`), in the same layout. The same graph, seeds, seed and epoch
        give the same batch, bit for bit, in any thread or process."""
        seeds, missing = node_seeds(self, seed_ids, cutoffs, merged=not disjoint)
        return minibatch(self, seeds, seed=seed, epoch=epoch, disjoint=disjoint,
                         missing=missing)

    def sample_merged_pairs(self, sources: Ids, targets: Ids, *, seed: int = DEFAULT_SEED,
                            epoch: int = 0,
                            cutoffs: Optional[Sequence[Any] | np.ndarray] = None,
                            features: Optional[dict[str, Any]] = None,
                            known_positives: Optional[tuple[Ids, Ids]] = None,
                            disjoint: bool = False) -> MergedBatch:
        """`sample_merged` for link specs: the pairs (then their negatives) as
        LinkNeighborLoader gives them; in the batch no edge between the two ends of any
        of its pairs is sampled (docs/link-prediction.md). Options as `sample_pairs`."""
        seeds, missing = pair_seeds(self, sources, targets, seed=seed, epoch=epoch,
                                    cutoffs=cutoffs, features=features,
                                    known_positives=known_positives, merged=not disjoint)
        return minibatch(self, seeds, seed=seed, epoch=epoch, disjoint=disjoint,
                         missing=missing)

    def sample_ego(self, seed_ids: Ids, *, seed: int = DEFAULT_SEED, epoch: int = 0,
                   cutoffs: Optional[Sequence[Any] | np.ndarray] = None,
                   label: Optional[str] = None, disjoint: bool = False,
                   encoder=None) -> EgoGraph:
        """`sample_merged` in GraphLearn's dense EgoGraph form, for specs whose ops form a
        chain with fixed fan-outs (docs/minibatches.md); `label`: the roots' `y`;
        `encoder`: every feature by a feature spec (sampler.features.FeatureEncoder)."""
        chain_of(self._plan)
        batch = self.sample_merged(seed_ids, seed=seed, epoch=epoch, cutoffs=cutoffs,
                                   disjoint=disjoint)
        return ego_graph(batch, self._plan, label=label, encoder=encoder)

    # --- internals -------------------------------------------------------------

    def _features(self) -> Features:
        """Where mini-batches find their features (built once)."""
        if self._feature_source is None:
            self._feature_source = features_of(self)
        return self._feature_source

    def _chunk_size(self, num_samples: int) -> int:
        """Samples per chunk: the engine's chunk, or with threads a share of the call."""
        if self._threads == 1:
            return CALL_CHUNK
        share = -(-num_samples // self._threads)
        return min(CALL_CHUNK, max(THREAD_CHUNK_MIN, share))

    def _cutoff_column(self, cutoffs) -> TimeColumn | None:
        if cutoffs is None:
            if self.has_cutoffs:
                raise SamplerError("the graph was loaded with cutoffs=True: give every seed "
                                   "its cut-off (cutoffs=...)")
            return None
        if not self.has_cutoffs:
            raise SamplerError("cut-offs need the graph loaded for them: "
                               "load_graph(..., cutoffs=True)")
        return TimeColumn(CUTOFF_COLUMN, self._time.dtype)

    def _negative_groups(self) -> DrawGroups:
        if self._draw_groups is None:  # every call draws from the same candidates
            self._draw_groups = negative_draw_groups(self._memory, self._plan, self._time)
        return self._draw_groups

    def _subgraphs(self, samples: Samples, row_samples: np.ndarray, row_ids: list,
                   seed: int, epoch: int, labels: np.ndarray | None = None) -> Subgraphs:
        """Samples through the job, chunk by chunk; the subgraphs in row order."""
        draws_seed = epoch_seed(seed, epoch)
        stats = samples.stats
        parts = []

        def sample_chunk(batch: Samples):  # a pure function of the chunk: any thread
            chunk, chunk_stats = sample_batch(self._memory, self._plan, self.schema,
                                              draws_seed, batch)
            return chunk_stats, *self._assembler.assemble(chunk.seeds, chunk.features,
                                                          chunk.edges, chunk.pairs)

        chunks = list(samples.chunks(self._chunk_size(len(samples))))
        if len(chunks) > 1 and self._threads > 1:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(self._threads, "sampler")
            done = self._pool.map(sample_chunk, chunks)
        else:
            done = map(sample_chunk, chunks)
        for chunk_stats, assembled, shard_stats in done:  # in order: stats add up alike
            stats.merge(chunk_stats)
            stats.merge(RunStats(subgraphs_written=shard_stats.subgraphs,
                                 pairs_read=shard_stats.pairs,
                                 pairs_dropped=shard_stats.pairs_dropped))
            parts.append(assembled)
        sample_ids = (np.concatenate([p.sample_ids for p in parts]) if parts
                      else np.zeros(0, np.int64))
        flat = np.searchsorted(sample_ids, row_samples)
        found = flat < len(sample_ids)
        found[found] = sample_ids[flat[found]] == row_samples[found]
        positions = np.flatnonzero(found)
        part_starts = np.cumsum([0] + [len(p) for p in parts])
        part = np.searchsorted(part_starts, flat[positions], side="right") - 1
        where = np.stack([part, flat[positions] - part_starts[part]], axis=1).astype(np.int64)
        missing = [row_ids[i] for i in np.flatnonzero(~found).tolist()]
        if missing:
            log.warning("%d of %d %s not in node set '%s' (first: %s)", len(missing),
                        len(row_ids), "pairs have an endpoint" if self.link else "seeds are",
                        self.seed_set, ", ".join(map(_shown, missing[:3])))
        report = stats.as_dict()
        report.update(seed=seed, epoch=epoch)
        return Subgraphs(parts, where.reshape(-1, 2), positions, missing, report, seed=seed,
                         epoch=epoch,
                         labels=None if labels is None else np.asarray(labels)[positions])


def _shown(row) -> str:
    """A missing seed id, or (source, target) pair, for a log line."""
    if isinstance(row, tuple):
        return "(" + ", ".join(map(_shown, row)) + ")"
    return row.decode(errors="replace")
