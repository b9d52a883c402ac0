"""The Python API: load a graph once, then sample subgraphs in the training loop.

    from sampler import api

    graph = api.load_graph("examples/mag_tiny", "examples/mag_tiny/sampling_spec.pbtxt")
    subgraphs = graph.sample(["p01", "p02"], seed=42)   # numpy GraphTensors, in that order
    for batch in graph.batches(batch_size=512, epochs=3, seed=42):
        ...                                             # new draws every epoch
    record = api.to_example(subgraphs[0])               # the bytes `sample` writes for p01

Same subgraphs as the CLI: `graph.sample([id], seed=S)[0]` is, byte for byte once
encoded, the record `sample --seed S` writes for that seed (a subgraph depends on the
graph, the spec, the seed and its row's content only, never on the other seeds asked
for), and epoch 0 of `batches` is exactly that; epoch e > 0 draws with
`sampler.job.job.epoch_seed(S, e)`, as `sample --seed S --epoch e` does. The CLI's
in-memory engine runs the same calls (sampler.memory.batch).

Errors: every problem of input raises `SamplerError` (a ValueError) with the one-line
message the CLI prints. Seeds that are not nodes of the seed set are not an error:
each call reports them (`Subgraphs.missing`) and logs a warning, as the CLI's report
does. The library prints nothing; it logs to the `sampler` logger.

TensorFlow is imported only by `to_tf_dataset`; PyTorch by `sampler.torch`.
"""
from __future__ import annotations

import collections
import dataclasses
import functools
import logging
import os
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Optional, Union, overload

import numpy as np

from sampler.core import rng
from sampler.core.assemble import AssembledShard, ShardAssembler
from sampler.core.long_rows import CHUNK_EDGES
from sampler.core.negatives import DrawGroups
from sampler.core.pairs import numbered_pair_rows
from sampler.core.seeds import numbered_seed_rows
from sampler.core.stats import RunStats
from sampler.graph_tensor.codec import encode_example
from sampler.graph_tensor.model import GraphTensor
from sampler.job.job import DEFAULT_SEED, SamplingJob, epoch_seed
from sampler.job.options import link_plan, load_and_check
from sampler.memory.batch import (Samples, negative_draw_groups, node_samples, pair_samples,
                                  sample_batch, with_negatives)
from sampler.memory.graph import GraphInMemory, load_graph as load_into_memory
from sampler.numpy_cpu import sort_hint
from sampler.output.encoder import encode_shard
from sampler.output.reference import shard_graphs
from sampler.output.schema import sampled_schema
from sampler.plan import sampling_spec_pb2 as ss
from sampler.plan.plan import UNIFORM, Plan, label_dtype, pairs_table_layout, with_edge_aggregation
from sampler.plan.timing import TimePlan, time_plan_of
from unigraph.errors import SamplerError, one_line
from unigraph.protos import graph_schema_pb2 as gs
from unigraph.schema import LoadedSchema
from unigraph.storage import bigquery
from unigraph.tables import build
from unigraph.tables.layout import TableLayout, TimeColumn, seeds_layout
from unigraph.timestamps import SEED_TIMESTAMP_COLUMNS

__all__ = ["DEFAULT_SEED", "Graph", "SamplerError", "SeedRows", "Subgraphs", "load_graph",
           "to_example", "to_tf_dataset"]

log = logging.getLogger("sampler")

# Samples sampled and assembled at once within a call (the engine's chunk size): a call
# with many seeds holds one chunk's temporaries at a time besides its results.
CALL_CHUNK = 512
# With threads: a call's samples are split so that every thread gets a chunk, but no
# chunk is smaller than this (below it, per-call Python overhead outweighs the split).
THREAD_CHUNK_MIN = 128
_SHUFFLE_SALT = rng.name_salt("api-shuffle")
_CUTOFF_COLUMN = SEED_TIMESTAMP_COLUMNS[0]

Ids = Union[Sequence[Any], np.ndarray]
PathLike = Union[str, "os.PathLike[str]"]


@dataclasses.dataclass
class SeedRows:
    """The rows of a seeds table (`ids`) or, for link specs, a pairs table (`sources`,
    `targets`, the `_readout` `features` it carries), with each row's time cut-off when
    the table has one: what `Graph.read_seeds` reads, in the table's order."""

    ids: Optional[np.ndarray] = None
    sources: Optional[np.ndarray] = None
    targets: Optional[np.ndarray] = None
    features: dict = dataclasses.field(default_factory=dict)
    cutoffs: Optional[np.ndarray] = None

    def __len__(self) -> int:
        return len(self.ids if self.ids is not None else self.sources)

    def take(self, rows: np.ndarray) -> "SeedRows":
        """The rows at these positions."""
        def cut(value):
            return None if value is None else value[rows]

        return SeedRows(cut(self.ids), cut(self.sources), cut(self.targets),
                        {k: v[rows] for k, v in self.features.items()}, cut(self.cutoffs))


class Subgraphs(Sequence[GraphTensor]):
    """The subgraphs of one call, in the order of the rows asked for; rows whose seed
    (or a pair's endpoint) is not in the graph are left out and listed in `missing`.

    Items are numpy GraphTensors (`sampler.graph_tensor`), built on first access; the
    sampled arrays behind them are held once (`to_examples` encodes from them directly).
    """

    def __init__(self, parts: list[AssembledShard], where: np.ndarray, positions: np.ndarray,
                 missing: list, report: dict, *, seed: int, epoch: int,
                 labels: np.ndarray | None = None):
        self._parts = parts
        self._where = where            # [n, 2]: (part, index in part) of each subgraph
        self._graphs: dict[int, list[GraphTensor]] = {}
        # Each subgraph's row in the call: the ids (or pairs) given, then (link calls with
        # negatives) their negatives, K per pair in the order of the pairs.
        self.positions = positions
        # The rows asked for whose seed is no node of the seed set: ids (bytes), or a link
        # call's (source, target) pairs with an endpoint that is none.
        self.missing = missing
        self.report = report           # the call's counts, as the CLI's run report names them
        self.seed = seed
        self.epoch = epoch
        self.labels = labels           # link samples with negatives: 1 positive, 0 negative

    def __len__(self) -> int:
        return len(self._where)

    @overload
    def __getitem__(self, index: int) -> GraphTensor: ...

    @overload
    def __getitem__(self, index: slice) -> list[GraphTensor]: ...

    def __getitem__(self, index):
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        if not -len(self) <= index < len(self):
            raise IndexError(f"subgraph {index} of {len(self)}")
        part, within = self._where[index]
        if part not in self._graphs:
            self._graphs[part] = [graph for _, graph in shard_graphs(self._parts[part])]
        return self._graphs[part][within]

    @property
    def seed_ids(self) -> np.ndarray:
        """Each subgraph's seed id (a link sample's source), bytes."""
        return self._ids(lambda part: part.seed_ids)

    @property
    def target_ids(self) -> np.ndarray | None:
        """Link samples: each subgraph's target id."""
        if not self._parts or self._parts[0].target_ids is None:
            return None
        return self._ids(lambda part: part.target_ids)

    def _ids(self, of) -> np.ndarray:
        if not len(self):
            return np.zeros(0, object)
        return np.concatenate([of(part).astype(object) for part in self._parts])[
            self._flat_index()]

    def _flat_index(self) -> np.ndarray:
        starts = np.cumsum([0] + [len(p) for p in self._parts])
        return starts[self._where[:, 0]] + self._where[:, 1]

    def to_examples(self) -> list[bytes]:
        """Each subgraph's tf.train.Example bytes, as `sample` writes them (encoded from
        the sampled arrays at once: faster than `to_example` one by one)."""
        encoded = [list(encode_shard(part)) for part in self._parts]
        return [encoded[part][within] for part, within in self._where.tolist()]

    @property
    def assembled(self) -> list[AssembledShard]:
        """The sampled arrays behind the subgraphs (for converters such as sampler.torch)
        and, with `order`, which sample of them each subgraph is."""
        return self._parts

    @property
    def order(self) -> np.ndarray:
        """[n, 2]: (index into `assembled`, sample within it) of each subgraph."""
        return self._where

    def __repr__(self) -> str:
        return (f"Subgraphs({len(self)} subgraphs, seed={self.seed}, epoch={self.epoch}, "
                f"{len(self.missing)} missing)")


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
            return self._read_seed_rows(table, column, timestamp)

    def _read_seed_rows(self, table: str, column: str | None,
                        timestamp: TimeColumn | None) -> SeedRows:
        from unigraph.tables import read_pair_set, read_seed_set

        if not self.link:
            rows = list(read_seed_set(table, timestamp=timestamp))
            return SeedRows(ids=_concat([r.ids for r in rows], "S1"),
                            cutoffs=None if timestamp is None else
                            _concat([r.timestamps for r in rows], self._time.dtype))
        layout = pairs_table_layout(self._plan, self.schema, timestamp)
        rows = list(read_pair_set(layout, table))
        features = {f.name: np.concatenate([r.features[f.name] for r in rows])
                    for f in layout.features if f.name != column} if rows else {}
        return SeedRows(sources=_concat([r.sources for r in rows], "S1"),
                        targets=_concat([r.targets for r in rows], "S1"), features=features,
                        cutoffs=None if timestamp is None else
                        _concat([r.timestamps for r in rows], self._time.dtype))

    def node_ids(self, node_set: str | None = None) -> np.ndarray:
        """The ids of a node set's nodes (default: the seed set), sorted, as bytes ('S')."""
        name = node_set or self.seed_set
        if name == self.seed_set:
            return self._memory.seed_table.ids
        if name not in self._memory.names:
            raise SamplerError(f"node set '{name}': not in the spec's sets "
                               f"({', '.join(sorted(self._memory.names))})")
        return self._memory.names[name]

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
        if self.link:
            raise SamplerError(f"the spec seeds with pairs (symmetric_link_seed_op "
                               f"'{self._plan.seed_op}'): use sample_pairs(sources, targets)")
        layout = seeds_layout(self._cutoff_column(cutoffs))
        rows = _decode_rows(layout, {"id": seed_ids, _CUTOFF_COLUMN: cutoffs}, "seeds")
        numbered, row_samples = numbered_seed_rows(rows)
        samples = node_samples(self._memory, self.seed_set, numbered)
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
        if not self.link:
            raise SamplerError(f"the spec's seed op '{self._plan.seed_op}' seeds nodes: use "
                               f"sample(seed_ids)")
        layout = pairs_table_layout(self._plan, self.schema, self._cutoff_column(cutoffs))
        wanted = [f.name for f in layout.features if f.name != _CUTOFF_COLUMN]
        unknown = sorted(set(features or {}) - set(wanted))
        if unknown:
            raise SamplerError(f"pairs: feature '{unknown[0]}' is not a feature of node set "
                               f"'_readout' the pairs table feeds (those: "
                               f"{', '.join(wanted) or 'none'})")
        columns = {"source": sources, "target": targets, _CUTOFF_COLUMN: cutoffs,
                   **(features or {})}
        rows = _decode_rows(layout, columns, "pairs")
        seed_for_draws = epoch_seed(seed, epoch)
        extra = RunStats()
        if self._plan.negatives:
            known = None
            if known_positives is not None:
                known_layout = pairs_table_layout(self._plan, self.schema)
                known = _decode_rows(_ends_only(known_layout),
                                     {"source": known_positives[0],
                                      "target": known_positives[1]}, "known_positives")
            [rows], extra = with_negatives([rows], self._plan, self._negative_groups(),
                                           seed_for_draws, label_dtype(self.schema), known)
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
                 for epoch, rows in _epochs(len(ids), batch_size, shuffle, epochs, seed,
                                            drop_last, first_epoch))
        return _ahead(calls, _prefetch_depth(prefetch))

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
                 for epoch, rows in _epochs(len(sources), batch_size, shuffle, epochs, seed,
                                            drop_last, first_epoch))
        return _ahead(calls, _prefetch_depth(prefetch))

    # --- internals -------------------------------------------------------------

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
        return TimeColumn(_CUTOFF_COLUMN, self._time.dtype)

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


def _concat(parts: list[np.ndarray], dtype) -> np.ndarray:
    return np.concatenate(parts) if parts else np.zeros(0, dtype)


def _shown(row) -> str:
    """A missing seed id, or (source, target) pair, for a log line."""
    if isinstance(row, tuple):
        return "(" + ", ".join(map(_shown, row)) + ")"
    return row.decode(errors="replace")


def _ends_only(layout: TableLayout) -> TableLayout:
    """A pairs layout that reads the ends only (known positives carry no features)."""
    return dataclasses.replace(layout, features=(), timestamp=None)


def load_graph(graph: PathLike, spec: PathLike | ss.SamplingSpec, *,
               data_path: PathLike | None = None, timestamp_column: str | None = None,
               cutoffs: bool = False, edge_aggregation: str = "edge", negatives: int = 0,
               negative_sampling: str = UNIFORM, exclude_target_edge: bool = True,
               target_edge_sets: Optional[Sequence[str]] = None,
               chunk_edges: int = CHUNK_EDGES,
               bigquery_project: str | None = None, threads: int = 1) -> Graph:
    """Loads the graph a spec samples, once: `graph` is a schema file or its folder (any
    table format, local, gs:// or BigQuery), or a graph store (docs/store.md), which is
    mapped instead of read. The options are `sample`'s flags of the same names:
    `cutoffs=True` prepares sampling with per-seed time cut-offs; `negatives`,
    `negative_sampling`, `exclude_target_edge`, `target_edge_sets` are for link specs;
    `bigquery_project` bills BigQuery reads (default: GOOGLE_CLOUD_PROJECT, else the
    credentials' project).
    `threads`: each sampling call splits its seeds into up to this many chunks (of at
    least 128 seeds) sampled at once in threads; numpy releases the GIL in the sorts
    and gathers that take most of the time, so a batch comes back sooner where cores
    are free. The subgraphs are the same for any number of threads.
    How much memory it holds is logged and is `Graph.nbytes`."""
    if isinstance(threads, bool) or not isinstance(threads, int) or threads < 1:
        raise SamplerError(f"threads must be a whole number of at least 1, got {threads!r}")
    with bigquery.billing_project_given(bigquery_project):
        return _load_graph(graph, spec, data_path, timestamp_column, cutoffs, edge_aggregation,
                           negatives, negative_sampling, exclude_target_edge,
                           target_edge_sets, chunk_edges, bigquery_project, threads)


def _load_graph(graph, spec, data_path, timestamp_column, cutoffs, edge_aggregation,
                negatives, negative_sampling, exclude_target_edge, target_edge_sets,
                chunk_edges, bigquery_project, threads) -> Graph:
    loaded, plan = load_and_check(os.fspath(graph), spec if isinstance(spec, ss.SamplingSpec)
                                  else os.fspath(spec),
                                  None if data_path is None else os.fspath(data_path),
                                  timestamp_column)
    plan = with_edge_aggregation(
        link_plan(plan, loaded, exclude_target_edge=exclude_target_edge,
                  target_edge_sets=None if target_edge_sets is None else list(target_edge_sets),
                  negatives=negatives, negative_sampling=negative_sampling), edge_aggregation)
    if chunk_edges < 1:
        raise SamplerError(f"chunk_edges must be at least 1, got {chunk_edges}")
    time = time_plan_of(loaded, plan, _CUTOFF_COLUMN if cutoffs else None, "cutoffs")
    # The engine's job, minus what only a run that writes files needs.
    job = SamplingJob(loaded=loaded, plan=plan, seeds_path=None, output=None, num_shards=1,
                      node_buckets=1, seed=DEFAULT_SEED, stats_path="", time=time,
                      chunk_edges=chunk_edges)
    memory = load_into_memory(job)
    loaded_graph = Graph(loaded, plan, time, memory, chunk_edges, bigquery_project, threads)
    log.info("graph loaded: %s (%s)", loaded_graph,
             "a graph store, mapped" if loaded.store is not None else "tables read")
    hint = sort_hint()
    if hint is not None:
        log.info(hint)
    return loaded_graph


def to_example(subgraph: GraphTensor, schema: gs.GraphSchema | None = None) -> bytes:
    """The serialized tf.train.Example of a subgraph: for one `Graph.sample` returned, the
    bytes `sample` writes for it. `schema` (`Graph.output_schema`) matters only for a
    feature declared with a fixed dimension before a ragged one (its row lengths are
    then not written)."""
    return encode_example(subgraph, schema)


def to_tf_dataset(graph: Graph, seeds: Optional[Ids] = None, *, batch_size: int = 32,
                  epochs: Optional[int] = 1, shuffle: bool = True, seed: int = DEFAULT_SEED,
                  cutoffs: Optional[Sequence[Any] | np.ndarray] = None,
                  parse: bool = True):
    """A tf.data.Dataset over `graph.batches(...)` (node specs; `seeds` default to every
    node of the seed set): with `parse`, each element a batch of `batch_size` subgraphs
    as a `tfgnn.GraphTensor` parsed with the output schema (TF-GNN's `parse_example`);
    else each element the batch's serialized records (a string vector), as `train`'s
    input reads files. Needs the [tf] extra."""
    from unigraph.errors import require_extra

    tf = require_extra("tensorflow", "tf", "to_tf_dataset")

    def records():
        for batch in graph.batches(seeds, batch_size, shuffle=shuffle, epochs=epochs,
                                   seed=seed, cutoffs=cutoffs):
            yield np.array(batch.to_examples(), dtype=object)

    dataset = tf.data.Dataset.from_generator(
        records, output_signature=tf.TensorSpec(shape=[None], dtype=tf.string))
    if not parse:
        return dataset
    tfgnn = require_extra("tensorflow_gnn", "tf", "to_tf_dataset(parse=True)")
    spec = tfgnn.create_graph_spec_from_schema_pb(
        tfgnn.GraphSchema.FromString(graph.output_schema.SerializeToString()))
    return dataset.map(lambda serialized: tfgnn.parse_example(spec, serialized))


def _prefetch_depth(prefetch) -> int:
    if isinstance(prefetch, bool) or not isinstance(prefetch, int) or prefetch < 0:
        raise SamplerError(f"prefetch must be a whole number of 0 or more, got {prefetch!r}")
    return prefetch


def _ahead(calls: Iterator[Callable[[], Subgraphs]], depth: int) -> Iterator[Subgraphs]:
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


def _epochs(n: int, batch_size: int, shuffle: bool, epochs: Optional[int], seed: int,
            drop_last: bool, first_epoch: int) -> Iterator[tuple[int, np.ndarray]]:
    """(epoch, the rows of one batch) for every batch of every epoch."""
    if batch_size < 1:
        raise SamplerError(f"batch_size {batch_size}: give at least 1")
    if epochs is not None and epochs < 0:
        raise SamplerError(f"epochs {epochs}: give 0 or more, or None for no end")
    epoch = first_epoch
    while epochs is None or epoch < first_epoch + epochs:
        order = np.arange(n)
        if shuffle:  # counter-based keys: the same order on every machine and numpy
            keys = rng.mix(np.uint64(seed & (2**64 - 1)), np.uint64(_SHUFFLE_SALT),
                           np.uint64(epoch), order.astype(np.uint64))
            order = np.argsort(keys, kind="stable")
        end = n - n % batch_size if drop_last else n
        for lo in range(0, end, batch_size):
            yield epoch, order[lo:lo + batch_size]
        epoch += 1


def _decode_rows(layout: TableLayout, columns: dict[str, Any], what: str):
    """Rows given in Python as the batch a table of them would read to: the same
    decoding (ids from text, bytes or integers; cut-offs and features by the schema's
    types) and the same one-line errors, rows named `<what> row <i>`."""
    import pyarrow as pa

    given = {name: value for name, value in columns.items() if value is not None}
    lengths = {name: len(value) for name, value in given.items()}
    if len(set(lengths.values())) > 1:
        raise SamplerError(f"{what}: columns of different lengths: "
                           + ", ".join(f"{k} {v}" for k, v in lengths.items()))
    try:
        table = pa.table({name: _arrow_column(value, name in _ID_COLUMNS)
                          for name, value in given.items()})
    except (pa.ArrowInvalid, pa.ArrowTypeError, ValueError, TypeError) as e:
        raise SamplerError(f"{what}: {one_line(e)}") from None
    where = f"{what} (Python)"
    mapping = build.resolve_columns(layout, table.column_names, where)

    def locate(i: int) -> str:
        return f"{what} row {i}"

    keys, weights, features = build.decode_arrow(layout, mapping, table, locate)
    return build.make_batch(layout, keys, weights, features, locate=locate)


_ID_COLUMNS = ("id", "source", "target")


def _arrow_column(value, ids: bool):
    """A column of ids, times or dense features as Arrow: numbers and strings as they
    are, arrays of shape [n, d1, ...] as fixed-size lists; no ids at all as text."""
    import pyarrow as pa

    array = np.asarray(value) if not isinstance(value, np.ndarray) else value
    if ids and not len(array):
        return pa.array([], pa.binary())
    if array.dtype.kind in "SUO" or array.ndim == 1:
        return pa.array(array.tolist() if array.dtype.kind in "SUO" else array)
    column = pa.array(array.reshape(-1))
    for size in reversed(array.shape[1:]):
        column = pa.FixedSizeListArray.from_arrays(column, size)
    return column
