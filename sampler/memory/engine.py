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

import multiprocessing
import pickle
import queue
import signal
import sys
from typing import Callable, Iterator

from sampler.core.assemble import ShardAssembler
from sampler.core.pairs import number_pairs
from sampler.core.seeds import number_seeds, seeds_from_ids
from sampler.core.stats import RunStats
from sampler.job.job import SamplingJob
from sampler.memory.batch import (Samples, negative_draw_groups, node_samples, pair_samples,
                                  sample_batch, with_negatives)
from sampler.memory.graph import GraphInMemory, load_graph
from sampler.output.shards import ShardChunk, write_shard
from sampler.plan.plan import label_dtype, pairs_table_layout
from unigraph.columnar.batches import PairBatch, SeedBatch
from unigraph.errors import SamplerError
from unigraph.interrupts import quiet_worker, workers_forked_quietly
from unigraph.tables import read_pair_set, read_seed_set

# Samples assembled at once: big enough to vectorize, small in memory. On the MAG job
# (about 50 KB of output per sample) 256 took the same CPU as 512 and 2048 (within the
# noise of a shared machine), and the tree's peak PSS with two workers at scale 0.01
# fell from about 470 MB (2048) and 340 MB (512) to 295 MB.
CHUNK_SAMPLES = 256
# ...and over a graph store read from disk at random (larger than the memory the job
# may use), larger chunks, whose node features are gathered at once before they are
# encoded: every gather of a hop, and that of the chunk's features, then asks for the
# pages of this many samples at once, in the arrays' order, so that pages close
# together are read together (store.prefetch). The scale-10 MAG store under a 3 GB
# cap, 16,000 seeds, 6 workers: 256 gave about 90 subgraphs/s, 4096 about 650. A
# worker then holds a chunk's feature rows (about 300 MB there).
CHUNK_SAMPLES_READ_AT_RANDOM = 4096

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
                  on_progress: Callable[[int], None] = lambda seeds: None,
                  on_loaded: Callable[[GraphInMemory], None] = lambda graph: None
                  ) -> RunStats:
    """Samples the job and writes every shard; the merged counts. `on_start(n, b, p)` is
    called once the n samples are known, with the bytes b of the loaded graph's arrays
    and the number p of processes that will write shards; `on_progress(n)` (in this
    process) as n more are written; `on_loaded(graph)` once the graph is loaded, before
    any worker starts (the driver computes the features' vocabularies from it)."""
    graph = load_graph(job)  # its temporaries already handed back: workers share less
    on_loaded(graph)
    # Decided after loading: reading BigQuery tables loads gRPC.
    processes = max(1, min(workers, job.num_shards)) if fork_is_safe() else 1
    samples = _samples(graph, job)
    on_start(len(samples), graph.nbytes, processes)
    stats = samples.stats
    _SHARED.update(graph=graph, job=job, samples=samples.by_shard(job.num_shards))
    try:
        shards = sorted(range(job.num_shards), key=lambda s: -len(_SHARED["samples"].get(s, ())))
        if processes == 1:
            for shard in shards:
                stats.merge(_write_one_shard(shard, on_progress))
            return stats
        by_shard = dict(_in_workers(shards, processes, on_progress))
        for shard in shards:  # merged in the order one process writes them
            stats.merge(by_shard[shard])
        return stats
    finally:
        _SHARED.clear()


class WorkerKilled(SamplerError):
    """A worker process that ended before its shards were written: killed by a signal
    (the out-of-memory killer's SIGKILL, most often)."""


def _in_workers(shards: list[int], processes: int, on_progress: Callable[[int], None]
                ) -> Iterator[tuple[int, RunStats]]:
    """(shard, its counts) for every shard, written by `processes` forked workers that
    take shards from a queue, largest first. The workers are this module's own, not a
    multiprocessing Pool's: a Pool replaces a worker that died and waits forever for the
    shards it held, and its terminate can then wait forever for a lock the dead one
    held. Here a worker that died ends the run (WorkerKilled), and the others are
    killed; so are they when this process is interrupted or a worker fails."""
    context = multiprocessing.get_context("fork")
    tasks, results = context.SimpleQueue(), context.Queue()
    for shard in shards:
        tasks.put(shard)
    for _ in range(processes):
        tasks.put(None)  # one stop for each worker
    with workers_forked_quietly():
        workers = [context.Process(target=_worker, args=(tasks, results), daemon=True)
                   for _ in range(processes)]
        for worker in workers:
            worker.start()
    written = 0
    try:
        while written < len(shards):
            try:
                kind, *rest = results.get(timeout=0.05)
            except queue.Empty:
                _check_workers(workers)
                continue
            if kind == "progress":
                on_progress(rest[0])
            elif kind == "error":
                raise rest[0]
            else:
                written += 1
                yield rest[0], rest[1]
        for worker in workers:  # each has taken its stop: it ends on its own
            worker.join()
    finally:
        for worker in workers:
            if worker.exitcode is None:
                worker.kill()  # SIGKILL: never lost, whatever the worker was doing
                worker.join()
        results.close()


def _worker(tasks, results) -> None:
    """A worker process: shards from `tasks` until its stop (None); progress, counts and
    a failure put into `results`."""
    quiet_worker()
    while (shard := tasks.get()) is not None:
        try:
            shard_stats = _write_one_shard(shard, lambda n: results.put(("progress", n)))
        except Exception as error:  # sent to the parent, which raises it
            results.put(("error", _picklable(error)))
            break
        results.put(("done", shard, shard_stats))
    results.close()
    results.join_thread()  # everything put is sent before the process ends


def _picklable(error: Exception) -> Exception:
    """The error itself when it can be sent to another process, else its text."""
    try:
        pickle.loads(pickle.dumps(error))
        return error
    except Exception:
        return RuntimeError(f"{type(error).__name__}: {error}")


def _check_workers(workers: list) -> None:
    """WorkerKilled when a worker has ended while shards were left (a worker ends only
    after its stop, which it takes once the shards are all taken, or after sending
    its failure, which comes first in the queue)."""
    for worker in workers:
        code = worker.exitcode
        if code is None or code == 0:
            continue
        if code < 0 and -code in signal.valid_signals():
            how = f"killed by {signal.Signals(-code).name}" + (
                " (the system's out-of-memory killer, or a user)"
                if -code == signal.SIGKILL else "")
        else:
            how = f"ended with status {code}"
        raise WorkerKilled(f"worker process {worker.pid} was {how}; give the job more "
                           f"memory, or fewer --workers")


def _samples(graph: GraphInMemory, job: SamplingJob) -> Samples:
    """Every sample of the job: the seeds table's rows (or every node of the seed set),
    or the pairs table's with their negatives, numbered and found in the graph."""
    plan = job.plan
    column = job.time.seed_column if job.time is not None else None
    if not plan.link:
        rows = (list(read_seed_set(job.seeds_path, timestamp=column)) if job.seeds_path
                else [_every_seed(graph)])
        return node_samples(graph, plan.seed_set, number_seeds(rows))
    rows: list[PairBatch] = list(read_pair_set(
        pairs_table_layout(plan, job.loaded.schema, column), job.seeds_path))
    stats = RunStats()
    if plan.negatives:
        rows, stats = with_negatives(rows, plan, negative_draw_groups(graph, plan, job.time),
                                     job.seed, label_dtype(job.loaded.schema))
    samples = pair_samples(graph, plan.seed_set, number_pairs(rows))
    samples.stats.merge(stats)
    return samples


def _every_seed(graph: GraphInMemory) -> SeedBatch:
    """Without a seeds table, every node of the seed set is a seed (a sample's id depends
    on its row's content only, so the table need not be read twice)."""
    return seeds_from_ids(graph.seed_table.ids)


def _write_one_shard(shard: int, on_progress: Callable[[int], None]) -> RunStats:
    graph, job = _SHARED["graph"], _SHARED["job"]
    assembler = ShardAssembler(job.plan, job.loaded.schema, graph.names)
    samples = _SHARED["samples"].get(shard)
    stats = RunStats()
    size = CHUNK_SAMPLES_READ_AT_RANDOM if graph.read_at_random else CHUNK_SAMPLES
    _, written = write_shard(assembler, job.output, shard, job.num_shards,
                             _chunks(graph, job, samples, stats, on_progress, size),
                             gather_node_rows=graph.read_at_random)
    return stats.merge(written)


def _chunks(graph: GraphInMemory, job: SamplingJob, samples: Samples | None, stats: RunStats,
            on_progress: Callable[[int], None], size: int) -> Iterator[ShardChunk]:
    """The shard's samples through the job, `size` at a time (their counts merged into
    `stats`)."""
    if samples is None:
        return
    for batch in samples.chunks(size):
        chunk, chunk_stats = sample_batch(graph, job.plan, job.loaded.schema, job.seed, batch)
        stats.merge(chunk_stats)
        yield chunk
        on_progress(len(batch))
