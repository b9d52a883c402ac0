"""The graph in memory: every table a job reads, loaded once into the core's indexes.

One NodeTableBucket per node set with a table and one AdjacencyBucket (a CSR over
every source node) per sampled edge set: the Beam engine's per-bucket indexes with a
single bucket. The core's results never depend on how nodes are bucketed, so the
records are the same bytes.

Ids are interned: each node set's ids, sorted, are its `names`, and the indexes hold
int64 codes into them. Code order is id order, so every canonical order the core
keeps holds unchanged, while sorting, searching and joining run on integers instead
of byte strings. Fingerprints (the random streams) come from the names, and the
assembly writes names (core.assemble.ShardAssembler takes them).
"""
from __future__ import annotations

import dataclasses
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from sampler.core import rng
from sampler.core.adjacency import AdjacencyBucket, build_adjacency, concat_edge_batches
from sampler.core.arrays import unique, unique_inverse
from sampler.core.node_table import NodeTableBucket, build_node_table, ids_only_table
from sampler.core.pieces import PairPiece, Requests, SeedPiece
from sampler.core.temporal import effective_times, lowest_time
from sampler.job.job import SamplingJob
from sampler.job.resources import release_free_memory
from sampler.plan.plan import edge_sets_to_read
from sampler.store.mapped import open_store
from unigraph.columnar.batches import EdgeBatch
from unigraph.protos import graph_schema_pb2 as gs
from unigraph.schema import has_table
from unigraph.tables import read_set, table_locations


@dataclasses.dataclass(eq=False)
class GraphInMemory:
    names: dict[str, np.ndarray]              # node set -> its ids, sorted: codes index them
    node_tables: dict[str, NodeTableBucket]   # node sets with a table, ids as codes
    adjacency: dict[str, AdjacencyBucket]     # the edge sets the plan samples, ids as codes
    seed_table: NodeTableBucket               # the seed set's nodes by name, for the seeds join
    # A graph store's seed set may name more nodes than the job's tables would: the
    # codes of those the job counts (sampler.store.mapped); None: every name.
    seed_codes: np.ndarray | None = None
    # A graph store larger than the memory the job may use, read from disk as hops
    # touch it (sampler.store.mapped): the engine then samples larger chunks.
    read_at_random: bool = False

    @property
    def nbytes(self) -> int:
        """Bytes of every array the graph holds (the "loaded graph" of the README's
        memory figures; the process adds Python, numpy and pyarrow to it)."""
        return _array_bytes(self)

    def intern_requests(self, node_set: str, requests: Requests) -> Requests:
        """Requests of named nodes (all in the graph) as requests of codes."""
        return Requests(requests.samples, requests.codes,
                        np.searchsorted(self.names[node_set], requests.ids), requests.pairs,
                        requests.cutoffs)

    def intern_seeds(self, node_set: str, seeds: SeedPiece) -> SeedPiece:
        return SeedPiece(seeds.samples, np.searchsorted(self.names[node_set], seeds.ids),
                         seeds.timestamps)

    def intern_pairs(self, node_set: str, pairs: PairPiece) -> PairPiece:
        """Pairs of named nodes as pairs of codes; an id that is no node gets code -1 (the
        assembly leaves its pair out: the seeds join did not find it)."""
        return PairPiece(pairs.samples, self._codes_or_missing(node_set, pairs.sources),
                         self._codes_or_missing(node_set, pairs.targets), pairs.features,
                         pairs.timestamps)

    def _codes_or_missing(self, node_set: str, ids: np.ndarray) -> np.ndarray:
        names = self.names[node_set]
        codes = np.minimum(np.searchsorted(names, ids), max(len(names) - 1, 0))
        known = names[codes] == ids if len(names) else np.zeros(len(ids), bool)
        if self.seed_codes is not None and node_set == self.seed_table.node_set:
            known &= np.isin(codes, self.seed_codes)
        return np.where(known, codes, -1).astype(np.int64)


def load_graph(job: SamplingJob, threads: int = 2) -> GraphInMemory:
    """Reads the tables (several at once: Arrow and numpy release the GIL) and builds
    the indexes; a bad row or a duplicate id raises the readers' one-line TableError.
    A graph store (sampler.store) is mapped instead: the same indexes, already built."""
    if job.loaded.store is not None:
        mapped = open_store(job)
        return _marked(GraphInMemory(mapped.names, mapped.node_tables, mapped.adjacency,
                                     mapped.seed_table, mapped.seed_codes,
                                     mapped.read_at_random), job.loaded.schema)
    loaded, plan, time = job.loaded, job.plan, job.time
    schema = loaded.schema
    with_table = [n for n in plan.node_sets() if has_table(schema.node_sets[n].metadata)]
    edge_sets = edge_sets_to_read(plan, schema)
    node_times = time.node_columns if time is not None else {}
    edge_times = time.edge_columns if time is not None else {}

    def node_table(name):
        table = build_node_table(name, list(read_set(loaded, "nodes", name,
                                                     timestamp=node_times.get(name))),
                                 table_locations(loaded, "nodes", name))
        release_free_memory()
        return table

    def edges(name):
        return concat_edge_batches(name, list(read_set(loaded, "edges", name,
                                              timestamp=edge_times.get(name))))

    with ThreadPoolExecutor(max_workers=threads) as pool:
        tables = dict(zip(with_table, pool.map(node_table, with_table)))
        ends = {}  # (edge set, "sources"|"targets") -> (its distinct ids, each edge's index)
        rest = {}  # edge set -> its rows, weights, features, timestamps (ids: in `ends`)
        # One table read ahead of the one being coded: the id columns are an edge set's
        # largest arrays, and each is reduced to its distinct ids and an index before
        # the next set is read, so no more than two sets' raw ids are held at once.
        ahead = pool.submit(edges, edge_sets[0]) if edge_sets else None
        for i, name in enumerate(edge_sets):
            batch = ahead.result()
            ahead = pool.submit(edges, edge_sets[i + 1]) if i + 1 < len(edge_sets) else None
            ends[(name, "sources")], ends[(name, "targets")] = pool.map(
                unique_inverse, (batch.sources, batch.targets))
            rest[name] = (batch.rows, batch.weights, batch.features, batch.timestamps)
            del batch
            release_free_memory()
    names = {}
    for node_set in plan.node_sets():
        parts = [tables[node_set].ids] if node_set in tables else []
        for e in edge_sets:
            edge_set = schema.edge_sets[e]
            parts += [ends[(e, f)][0] for f, end in (("sources", edge_set.source),
                                                     ("targets", edge_set.target))
                      if end == node_set]
        names[node_set] = unique(np.concatenate(parts)) if parts else np.zeros(0, "S1")
    seed_set = plan.seed_set
    seed_table = tables.get(seed_set) or ids_only_table(seed_set, [names[seed_set]])
    fingerprints = {}

    def adjacency(name):
        """The edge set's CSR; what it was built from is dropped (one set's temporaries
        at a time)."""
        edge_set = schema.edge_sets[name]
        source_ids, source_index = ends.pop((name, "sources"))
        target_ids, target_index = ends.pop((name, "targets"))
        rows, weights, features, times = rest.pop(name)
        target_codes = np.searchsorted(names[edge_set.target], target_ids)[target_index]
        if time is not None and name in time.node_targets:
            # Effective times: the later of the edge's and its target node's (core.temporal).
            times = effective_times(times, times_by_code(edge_set.target)[target_codes],
                                    time.dtype)
        coded = EdgeBatch(name, np.searchsorted(names[edge_set.source], source_ids)[source_index],
                          target_codes, rows, weights, features, times)
        del source_index, target_index, target_codes
        built = build_adjacency(name, [coded], fingerprints_of(edge_set.source).__getitem__,
                                job.chunk_edges,
                                lambda codes: fingerprints_of(edge_set.target)[codes])
        if edge_set.target == edge_set.source:  # the leakage check compares targets with ends
            # (an edge table without rows builds an empty bucket whose ids are not codes)
            built.target_fingerprints = (fingerprints_of(edge_set.source)[built.target_ids]
                                         if len(built.target_ids) else np.zeros(0, np.uint64))
        del coded
        release_free_memory()
        return built

    def fingerprints_of(node_set):
        """The set's fingerprints by code, computed once (they key the random streams)."""
        if node_set not in fingerprints:
            fingerprints[node_set] = rng.fingerprint(names[node_set])
        return fingerprints[node_set]

    def times_by_code(node_set):
        """Every node's timestamp by code; nodes absent from the table add nothing."""
        table = tables[node_set]
        times = np.full(len(names[node_set]), lowest_time(time.dtype), dtype=time.dtype)
        times[np.searchsorted(names[node_set], table.ids)] = table.timestamps
        return times

    coded_tables = {name: NodeTableBucket(name, np.searchsorted(names[name], table.ids),
                                          table.features) for name, table in tables.items()}
    adjacencies = {name: adjacency(name) for name in plan.edge_sets()}
    graph = GraphInMemory(names, coded_tables, adjacencies, seed_table)
    release_free_memory()
    return _marked(graph, schema)


def _marked(graph: GraphInMemory, schema: gs.GraphSchema) -> GraphInMemory:
    """The graph, each edge set marked when its ends all have table rows
    (AdjacencyBucket.ends_in_tables). A set's table codes are its rows' codes, distinct
    and increasing (a store's are checked so), and its names hold every id its edges
    name: a table with as many rows as names has them all."""
    def complete(node_set: str) -> bool:
        table = graph.node_tables.get(node_set)
        return table is None or len(table.ids) == len(graph.names[node_set])

    for name, adjacency in graph.adjacency.items():
        edge_set = schema.edge_sets[name]
        adjacency.ends_in_tables = complete(edge_set.source) and complete(edge_set.target)
    return graph


def _array_bytes(value) -> int:
    """Bytes of the numpy arrays in a value of nested containers and dataclasses, each
    array once (a view counts as its base)."""
    seen: dict[int, int] = {}

    def walk(v):
        if isinstance(v, np.ndarray):
            base = v if v.base is None or not isinstance(v.base, np.ndarray) else v.base
            seen[id(base)] = base.nbytes
        elif dataclasses.is_dataclass(v) and not isinstance(v, type):
            for field in dataclasses.fields(v):
                walk(getattr(v, field.name))
        elif isinstance(v, dict):
            for item in v.values():
                walk(item)
        elif isinstance(v, (list, tuple)):
            for item in v:
                walk(item)

    walk(value)
    return sum(seen.values())
