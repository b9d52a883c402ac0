"""The in-memory engine: the whole graph in one machine's memory, the core's steps in
plain function calls, worker processes over output shards.

1. load_graph: every table once, into one node table and one CSR per set.
2. The seeds are numbered and joined with the seed set (core.seeds), as in Beam.
3. Worker processes, forked after loading so they share the graph copy-on-write,
   each write whole output shards. A shard's samples go through the ops a chunk at a
   time (core.hop.sample_hop, core.node_table.features_by_shard) and end in
   output.shards.write_shard, so memory holds one chunk's subgraphs, not a shard's.

Which worker writes which shard, and how samples are chunked, change nothing in the
files: the core's results depend on a sample alone, and shards are numbered by the
samples they hold. So the bytes equal the Beam engine's, for any number of workers.
"""
from __future__ import annotations

import ctypes
import multiprocessing
import signal
import sys
from typing import Callable, Iterator

import numpy as np

from sampler.core.assemble import ShardAssembler
from sampler.core.buckets import split_by_shard
from sampler.core.hop import sample_hop
from sampler.core.induced import candidate_edges, keep_induced
from sampler.core.negatives import Candidates, negatives_in_memory, negative_stats
from sampler.core.node_table import features_by_shard
from sampler.core.pairs import number_pairs, pair_requests
from sampler.core.pieces import PairPiece, Requests, SeedPiece
from sampler.core.seeds import join_seeds, number_seeds
from sampler.core.stats import RunStats
from sampler.job.job import SamplingJob
from sampler.memory.graph import GraphInMemory, load_graph
from sampler.output.shards import ShardChunk, write_shard
from sampler.plan.plan import (DEGREE, excludes_pair_edges, label_dtype, members_ops,
                               pair_edge_sets)

# Samples assembled at once: big enough to vectorize, small in memory. On the MAG job
# (about 50 KB of output per sample) 256 took the same CPU as 512 and 2048 (within the
# noise of a shared machine), and the tree's peak PSS with two workers at scale 0.01
# fell from about 470 MB (2048) and 340 MB (512) to 295 MB.
CHUNK_SAMPLES = 256

# What forked workers read: set in the parent just before the fork, so the children
# share the loaded graph copy-on-write instead of receiving a pickled copy.
_SHARED: dict = {}


def fork_is_safe() -> bool:
    """Whether worker processes may be forked from this one. A fork copies only the
    calling thread, so a lock another thread held at that moment stays locked in the
    child forever. gRPC's core, once loaded (Beam imports it; the BigQuery Storage
    client runs on it), keeps threads that take such locks, and children forked
    after it were seen to hang. Without it, the threads here (Arrow's pool) are
    fork-safe."""
    return "grpc._cython.cygrpc" not in sys.modules


def run_in_memory(job: SamplingJob, *, workers: int = 1,
                  on_start: Callable[[int, int, int], None] = lambda *started: None,
                  on_progress: Callable[[int], None] = lambda seeds: None) -> RunStats:
    """Samples the job and writes every shard; the merged counts. `on_start(n, b, p)` is
    called once the n samples are known, with the bytes b of the loaded graph's arrays
    and the number p of processes that will write shards; `on_progress(n)` (in this
    process) as n more are written."""
    graph = load_graph(job)  # its temporaries already handed back: workers share less
    # Decided after loading: reading BigQuery tables loads gRPC.
    processes = max(1, min(workers, job.num_shards)) if fork_is_safe() else 1
    seed_set = job.plan.seed_set
    pairs = {}
    if job.plan.link:  # a pair is a sample of two seed requests; from there on, the same path
        rows, negative_stats = _with_negatives(graph, job)
        numbered_pairs = number_pairs(rows)
        numbered = pair_requests(numbered_pairs)
        pairs = {shard: graph.intern_pairs(seed_set, piece)
                 for shard, piece in split_by_shard(numbered_pairs, job.num_shards)}
        on_start(len(numbered_pairs), graph.nbytes, processes)
    else:
        numbered = number_seeds(graph.seeds)
        on_start(len(numbered), graph.nbytes, processes)
    # The join runs on names (a seed may name no node at all); what it finds is interned.
    join = join_seeds(graph.seed_table, numbered, job.num_shards, with_features=False)
    found = {shard: graph.intern_requests(seed_set, requests)
             for shard, requests in split_by_shard(join.found, job.num_shards)}
    seeds = {shard: graph.intern_seeds(seed_set, piece) for shard, piece in join.seeds_by_shard}
    stats = join.stats
    if job.plan.link:
        stats.merge(negative_stats)
    _SHARED.update(graph=graph, job=job, found=found, seeds=seeds, pairs=pairs)
    samples_of = pairs if job.plan.link else seeds
    try:
        shards = sorted(range(job.num_shards), key=lambda s: -len(samples_of.get(s, ())))
        if processes == 1:
            for shard in shards:
                stats.merge(_write_one_shard(shard, on_progress))
            return stats
        progress = multiprocessing.get_context("fork").SimpleQueue()
        _SHARED["progress"] = progress
        with multiprocessing.get_context("fork").Pool(
                processes, initializer=_init_worker) as pool:
            pending = pool.map_async(_write_one_shard_in_worker, shards)
            while not pending.ready() or not progress.empty():
                if not progress.empty():
                    on_progress(progress.get())
                else:
                    pending.wait(0.05)
            for shard_stats in pending.get():
                stats.merge(shard_stats)
            # Let the workers end on their own (task queue closed) before the `with`
            # terminates the pool: a SIGTERM that reaches a worker between its fork and
            # Python's after-fork reset is lost, and joining that worker then hangs.
            pool.close()
            pool.join()
        return stats
    finally:
        _SHARED.clear()


def _with_negatives(graph: GraphInMemory, job: SamplingJob) -> tuple[list, RunStats]:
    """The pairs table's rows, and with --negatives their negatives (core.negatives)."""
    plan = job.plan
    if not plan.negatives:
        return graph.pairs, RunStats()
    if plan.negatives.mode == DEGREE:
        names = graph.names[plan.seed_set]
        parts = [graph.adjacency[name] for name in pair_edge_sets(plan)]
        candidates = np.concatenate([names[a.sources] for a in parts])
        degrees = np.concatenate([np.diff(a.row_splits) for a in parts])
    else:
        candidates, degrees = graph.seed_table.ids, None
    node_times = None
    if job.time is not None and job.time.negative_target_set is not None:
        # Negatives' targets must exist at their pair's cut-off: the paired set's times.
        node_times = Candidates(graph.seed_table.ids, times=graph.seed_table.timestamps)
    rows, counts = negatives_in_memory(graph.pairs, candidates, degrees, plan.negatives,
                                       job.seed, label_dtype(job.loaded.schema), node_times)
    return rows, negative_stats(counts)


def _init_worker() -> None:
    # The parent handles Ctrl-C and SIGTERM and then stops the pool; a worker must not
    # print its own traceback for them, nor outlive a parent that was killed.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    try:
        ctypes.CDLL("libc.so.6").prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except OSError:  # not Linux: workers end when their task queue closes
        pass


def _write_one_shard_in_worker(shard: int) -> RunStats:
    return _write_one_shard(shard, _SHARED["progress"].put)


def _write_one_shard(shard: int, on_progress: Callable[[int], None]) -> RunStats:
    graph, job = _SHARED["graph"], _SHARED["job"]
    assembler = ShardAssembler(job.plan, job.loaded.schema, graph.names)
    empty = Requests.concat([])
    chunks = _shard_chunks(graph, job, _SHARED["found"].get(shard, empty),
                           _SHARED["seeds"].get(shard), _SHARED["pairs"].get(shard),
                           on_progress)
    stats = RunStats()
    _, written = write_shard(assembler, job.output, shard, job.num_shards,
                             _counting(chunks, stats))
    return stats.merge(written)


def _counting(chunks: Iterator[tuple[ShardChunk, RunStats]], stats: RunStats
              ) -> Iterator[ShardChunk]:
    for chunk, chunk_stats in chunks:
        stats.merge(chunk_stats)
        yield chunk


def _shard_chunks(graph: GraphInMemory, job: SamplingJob, found: Requests,
                  seeds: SeedPiece | None, pairs: PairPiece | None,
                  on_progress: Callable[[int], None]) -> Iterator[tuple[ShardChunk, RunStats]]:
    """The shard's pieces, CHUNK_SAMPLES samples at a time in ascending sample id (a link
    job's samples are its pairs; `seeds` are then the endpoints the join found)."""
    samples = pairs if job.plan.link else seeds
    if samples is None or not len(samples):
        return
    samples = samples.take(np.argsort(samples.samples, kind="stable"))
    found = found.take(np.argsort(found.samples, kind="stable"))
    seeds = seeds.take(np.argsort(seeds.samples, kind="stable")) if seeds is not None else (
        SeedPiece(np.zeros(0, np.int64), np.zeros(0, np.int64)))

    def within(piece, lo_sample, hi_sample):
        first = np.searchsorted(piece.samples, lo_sample, side="left")
        end = np.searchsorted(piece.samples, hi_sample, side="right")
        return piece.take(np.arange(first, end))

    for lo in range(0, len(samples), CHUNK_SAMPLES):
        chunk = samples.take(np.arange(lo, min(lo + CHUNK_SAMPLES, len(samples))))
        bounds = chunk.samples[0], chunk.samples[-1]
        if job.plan.link:
            yield _sample_chunk(graph, job, within(found, *bounds), within(seeds, *bounds), chunk)
        else:
            yield _sample_chunk(graph, job, within(found, *bounds), chunk)
        on_progress(len(chunk))


def _sample_chunk(graph: GraphInMemory, job: SamplingJob, found: Requests,
                  seeds: SeedPiece, pairs: PairPiece | None = None
                  ) -> tuple[ShardChunk, RunStats]:
    """Every op for the chunk's samples, then the features of the nodes they reached."""
    plan = job.plan
    reached = {plan.seed_op: found}
    edges, stats = [], RunStats()
    for op in plan.ops:
        requests = Requests.concat([reached[name] for name in op.input_ops])
        drawn = sample_hop(graph.adjacency[op.edge_set], requests, op, job.seed)
        stats.merge(drawn.stats(op))
        edges.append(drawn.edges)
        reached[op.name] = drawn.reached()
    for name in plan.induced_edge_sets:
        edge_set = job.loaded.schema.edge_sets[name]
        members = {end: Requests.concat([reached[op] for op in members_ops(plan, end)])
                   for end in (edge_set.source, edge_set.target)}
        candidates, _ = candidate_edges(graph.adjacency[name], members[edge_set.source],
                                        exclude_pair_edges=excludes_pair_edges(plan, name))
        induced = keep_induced(candidates, members[edge_set.target])
        stats.merge(RunStats(induced_edges={name: len(induced)}))
        edges.append(induced)
    features = []
    for name, table in graph.node_tables.items():
        arriving = [found] if name == plan.seed_set else []
        arriving += [reached[op.name] for op in plan.ops if op.target_set == name]
        if arriving:
            features += [piece for _, piece in
                         features_by_shard(table, Requests.concat(arriving), job.num_shards)[0]]
    return ShardChunk([seeds], features, edges, [pairs] if pairs is not None else []), stats
