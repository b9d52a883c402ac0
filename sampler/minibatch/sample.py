"""The driver of mini-batches: every op of the plan over a batch's frontiers, on the graph
in memory (or a mapped store), through the core's strategies (core.hop.sample_queries)
and core.merged's steps.

    SeedBatch ─ sample_minibatch ─► MergedBatch (sampler.minibatch.batch)

Hop by hop (core.merged.op_depths): each op takes the distinct nodes its input ops
reached in this batch (its frontier; per seed with `disjoint`), samples each once,
and the nodes its edges reach first at this hop become the hop's new nodes, by id.
A draw is keyed by (seed, op, sample, node, position) with one sample for the whole
merged batch (core.merged.batch_key) or each seed's own sample id (disjoint: the very
draws of `Graph.sample`), so a batch is a function of the graph, the plan, the seed
(epoch included) and the batch's seeds alone: the same bytes in any thread or process.
"""
from __future__ import annotations

import dataclasses
import threading
from typing import Optional

import numpy as np

from sampler.core import rng
from sampler.core.arrays import argsort, run_starts
from sampler.core.hop import Queries, sample_queries
from sampler.core.merged import NodeLayout, PairExclusions, batch_key, frontier, op_depths
from sampler.memory.graph import GraphInMemory
from sampler.minibatch.batch import MergedBatch, NodeSetBatch
from sampler.minibatch.layout import by_distance, edge_set, leave_out_absent
from sampler.plan.plan import Plan
from unigraph.errors import SamplerError


@dataclasses.dataclass(eq=False)
class SeedBatch:
    """A batch's seeds as the graph's codes of the seed set, all found in it. Node seeds:
    `codes` and `rows` (each seed's row in the call); link seeds: `sources`, `targets`
    and `rows` per pair (the pairs given, then their negatives: `labels` 1 and 0).
    `samples`: each seed's (pair's) sample id, for disjoint batches; `cutoffs`: each
    seed's (pair's) cut-off."""

    rows: np.ndarray
    codes: Optional[np.ndarray] = None
    sources: Optional[np.ndarray] = None
    targets: Optional[np.ndarray] = None
    labels: Optional[np.ndarray] = None
    samples: Optional[np.ndarray] = None
    cutoffs: Optional[np.ndarray] = None
    features: dict = dataclasses.field(default_factory=dict)  # the pairs' columns

    @property
    def link(self) -> bool:
        return self.sources is not None

    def __len__(self) -> int:
        return len(self.sources if self.link else self.codes)

    def take(self, positions: np.ndarray) -> "SeedBatch":
        """The seeds (pairs) at these positions, with their rows."""
        def cut(value):
            return None if value is None else value[positions]

        return SeedBatch(self.rows[positions], cut(self.codes), cut(self.sources),
                         cut(self.targets), cut(self.labels), cut(self.samples),
                         cut(self.cutoffs), {k: v[positions] for k, v in self.features.items()})


@dataclasses.dataclass(eq=False)
class _Reached:
    """What an op reached: local indices in its target set, with their cut-offs."""

    locals: np.ndarray
    cutoffs: Optional[np.ndarray]


def sample_minibatch(graph: GraphInMemory, plan: Plan, seed: int, seeds: SeedBatch, *,
                     disjoint: bool = False, epoch: int = 0, base_seed: int = 0
                     ) -> MergedBatch:
    """Every op of `plan` for one batch (module docstring). `seed`: the draws' seed (the
    epoch's, sampler.job.job.epoch_seed); `base_seed`, `epoch`: as the caller gave them,
    recorded on the batch."""
    depth = op_depths(plan)
    num_hops = max(depth.values())
    n_codes = {name: max(len(graph.names[name]), 1) for name in plan.node_sets()}
    tables = _scratch.tables(graph, n_codes) if not disjoint else {}
    layouts = {name: NodeLayout(tables.get(name)) for name in n_codes}
    try:
        return _sample(graph, plan, seed, seeds, disjoint, epoch, base_seed, depth, num_hops,
                       n_codes, layouts)
    finally:
        for layout in layouts.values():
            layout.release()
        _scratch.give_back(graph, tables)


def check_one_cutoff(cutoffs: Optional[np.ndarray]) -> None:
    """A merged batch's seeds share their nodes, so they must share one cut-off (the API
    checks a call's own cut-offs, before the seeds the graph lacks are dropped: whether a
    call is refused does not depend on which of its seeds the graph holds)."""
    if cutoffs is not None and len(np.unique(cutoffs)) > 1:
        raise SamplerError("a merged batch's seeds share their nodes, so they must share one "
                           "cut-off: give seeds of different cut-offs disjoint=True (each "
                           "seed's own subgraph) or batch them by cut-off")


def _sample(graph, plan, seed, seeds, disjoint, epoch, base_seed, depth, num_hops, n_codes,
            layouts) -> MergedBatch:
    seed_set = plan.seed_set
    if not disjoint:
        check_one_cutoff(seeds.cutoffs)
    hop0, input_id, seed_cutoffs, batch_size = _seed_nodes(seeds, disjoint, n_codes[seed_set])
    for name, layout in layouts.items():
        layout.add_hop(hop0 if name == seed_set else np.zeros(0, np.int64), ordered=True)
    seed_codes = hop0 % n_codes[seed_set] if disjoint else hop0
    if disjoint:
        samples = np.asarray(seeds.samples, np.int64)
        key = None
    else:
        samples = None
        key = batch_key(seed, _scratch.fingerprints(graph, seed_set)[seed_codes], seed_cutoffs)
    exclusions = _exclusions(graph, plan, seeds, key) if seeds.link else None
    reached = {plan.seed_op: _Reached(np.arange(len(hop0), dtype=np.int64), seed_cutoffs)}
    parts: dict[str, list] = {}
    op_edges: dict[str, tuple] = {}
    report: dict[str, dict] = {"edges_sampled_per_op": {}, "draws_per_op": {}}
    for hop in range(1, num_hops + 1):
        drawn = []
        for op in (op for op in plan.ops if depth[op.name] == hop):
            inputs = [reached[name] for name in op.input_ops]
            locals_ = np.concatenate([r.locals for r in inputs])
            cutoffs = (np.concatenate([r.cutoffs for r in inputs])
                       if inputs[0].cutoffs is not None else None)
            front, front_cutoffs = frontier(locals_, cutoffs, len(layouts[op.source_set]))
            keys = layouts[op.source_set].keys[front]
            n_source = n_codes[op.source_set]
            codes, slots = (keys % n_source, keys // n_source) if disjoint else (keys, None)
            adjacency = graph.adjacency[op.edge_set]
            rows = adjacency.rows_of(codes)
            has_edges = np.flatnonzero(rows >= 0)
            rows = rows[has_edges]
            query_samples = (samples[slots[has_edges]] if disjoint
                             else np.full(len(rows), key, np.int64))
            query_cutoffs = None if front_cutoffs is None else front_cutoffs[has_edges]
            queries = Queries(query_samples, rows, adjacency.source_fingerprints[rows], None,
                              query_cutoffs)
            query, position, _ = sample_queries(adjacency, queries, op, seed, exclusions)
            from_front = has_edges[query]
            targets = adjacency.target_ids[adjacency.target_codes[position]].astype(
                np.int64, copy=False)
            if disjoint:
                targets = slots[from_front] * n_codes[op.target_set] + targets
            drawn.append((op, front[from_front], targets, position,
                          None if query_cutoffs is None else query_cutoffs[query]))
            op_edges[op.name] = (keys[from_front], targets, position)
            report["edges_sampled_per_op"][op.name] = len(position)
            report["draws_per_op"][op.name] = len(rows)
        reached_keys: dict[str, list] = {}
        for op, _, targets, _, _ in drawn:
            reached_keys.setdefault(op.target_set, []).append(targets)
        for name, layout in layouts.items():
            found = reached_keys.get(name)
            layout.add_hop(np.concatenate(found) if found else np.zeros(0, np.int64))
        for op, sources, targets, position, cutoffs in drawn:
            target_locals = layouts[op.target_set].local(targets)
            reached[op.name] = _Reached(target_locals, cutoffs)
            parts.setdefault(op.edge_set, []).append((hop, op, sources, target_locals,
                                                      position))
    nodes = {}
    for name, layout in layouts.items():
        slot_of = None
        if disjoint:
            slot_of = layout.keys // n_codes[name]
        nodes[name] = NodeSetBatch(layout.keys % n_codes[name] if disjoint else layout.keys,
                                   list(layout.counts), slot_of)
    edges = {name: edge_set(name, pieces, num_hops) for name, pieces in parts.items()}
    dropped = leave_out_absent(graph, nodes, edges)
    if dropped:
        report["dangling_edges"] = dropped
    by_distance(nodes, edges, seed_set, num_hops)
    batch = MergedBatch(seed_set, num_hops, disjoint, nodes, edges, input_id, batch_size,
                        seed=base_seed, epoch=epoch, report=report, op_edges=op_edges)
    if seeds.link:
        _link_labels(batch, seeds, layouts[seed_set], disjoint, n_codes[seed_set])
    elif seeds.cutoffs is not None:
        batch.seed_time = seed_cutoffs if disjoint else seed_cutoffs[:batch_size]
    return batch


class _Scratch:
    """Per thread, the lookup tables of merged batches (NodeLayout's), one per node set
    of a graph, each as long as the set: zeroed by the batch that used it, so allocated
    once per thread (a forked loader worker writes its own copy's pages); and per graph,
    the seed set's fingerprints (a merged batch's key hashes its seeds')."""

    def __init__(self):
        self._local = threading.local()
        self._lock = threading.Lock()
        self._fingerprints: dict = {}

    def tables(self, graph: GraphInMemory, n_codes: dict[str, int]) -> dict[str, np.ndarray]:
        free = getattr(self._local, "free", None)
        if free is None:
            free = self._local.free = {}
        key = id(graph)
        tables = free.pop(key, None)
        if tables is None or any(len(tables.get(name, ())) != n for name, n in n_codes.items()):
            tables = {name: np.zeros(n, np.int32) for name, n in n_codes.items()}
        return tables

    def fingerprints(self, graph: GraphInMemory, node_set: str) -> np.ndarray:
        """The node set's fingerprints by code (sampler.core.rng), computed once per graph
        (before a loader's workers fork: sampler.api.loader.prepare_for_workers)."""
        key = (id(graph), node_set)
        with self._lock:
            found = self._fingerprints.get(key)
        if found is None or found[0] is not graph:
            found = (graph, rng.fingerprint(graph.names[node_set]))
            with self._lock:
                if len(self._fingerprints) > 8:
                    self._fingerprints.clear()
                self._fingerprints[key] = found
        return found[1]

    def give_back(self, graph: GraphInMemory, tables: dict[str, np.ndarray]) -> None:
        if tables:
            free = self._local.free
            if len(free) > 4:  # graphs loaded and dropped: keep a few
                free.clear()
            free[id(graph)] = tables


_scratch = _Scratch()


def seed_fingerprints(graph: GraphInMemory, node_set: str) -> np.ndarray:
    """A node set's fingerprints by code, computed once per graph."""
    return _scratch.fingerprints(graph, node_set)


def _seed_nodes(seeds: SeedBatch, disjoint: bool, n_codes: int):
    """(hop 0's keys in their order, input_id, their cut-offs, batch_size).
    Node seeds: merged, each distinct seed once at its first row; disjoint, each row.
    Link seeds: merged, the pairs' distinct ends by id (PyG's LinkNeighborLoader);
    disjoint, every pair's source, then every target that is not its pair's source."""
    cutoffs = seeds.cutoffs
    if not seeds.link:
        codes = np.asarray(seeds.codes, np.int64)
        if disjoint:
            slots = np.arange(len(codes), dtype=np.int64)
            return slots * n_codes + codes, seeds.rows, cutoffs, len(codes)
        first = _first_rows(codes)
        keys = codes[first]
        node_cutoffs = None
        if cutoffs is not None:  # a node given twice: the earliest of its cut-offs
            node_cutoffs = _min_by(codes, cutoffs, keys)
        return keys, seeds.rows[first], node_cutoffs, len(keys)
    sources = np.asarray(seeds.sources, np.int64)
    targets = np.asarray(seeds.targets, np.int64)
    if disjoint:
        slots = np.arange(len(sources), dtype=np.int64)
        other = targets != sources
        keys = np.concatenate([slots * n_codes + sources, (slots * n_codes + targets)[other]])
        slot_of = np.concatenate([slots, slots[other]])
        node_cutoffs = None if cutoffs is None else cutoffs[slot_of]
        positives = seeds.rows if seeds.labels is None else seeds.rows[seeds.labels != 0]
        return keys, positives, node_cutoffs, 0
    ends = np.concatenate([sources, targets])
    keys = np.unique(ends)
    node_cutoffs = None
    if cutoffs is not None:
        node_cutoffs = _min_by(ends, np.concatenate([cutoffs, cutoffs]), keys)
    positives = seeds.rows if seeds.labels is None else seeds.rows[seeds.labels != 0]
    return keys, positives, node_cutoffs, 0


def _first_rows(codes: np.ndarray) -> np.ndarray:
    """The row of each distinct code's first occurrence, in row order."""
    order = argsort(codes)
    starts = np.flatnonzero(run_starts(codes[order]))
    return np.sort(order[starts])


def _min_by(codes: np.ndarray, values: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """The smallest value of each key's rows (`keys`: distinct codes, any order)."""
    order = np.lexsort((values, codes))
    sorted_codes = codes[order]
    starts = np.flatnonzero(run_starts(sorted_codes))
    smallest = values[order][starts]
    return smallest[np.searchsorted(sorted_codes[starts], keys)]


def _exclusions(graph: GraphInMemory, plan: Plan, seeds: SeedBatch, key) -> PairExclusions:
    names = graph.names[plan.seed_set]
    sources = rng.fingerprint(names[np.asarray(seeds.sources, np.int64)])
    targets = rng.fingerprint(names[np.asarray(seeds.targets, np.int64)])
    samples = (np.asarray(seeds.samples, np.int64) if key is None
               else np.full(len(sources), key, np.int64))
    return PairExclusions.of(samples, sources, targets)


def _link_labels(batch: MergedBatch, seeds: SeedBatch, seed_layout: NodeLayout,
                 disjoint: bool, n_codes: int) -> None:
    """edge_label_index (the pairs' two ends, local), edge_label, seed_time per pair."""
    sources = np.asarray(seeds.sources, np.int64)
    targets = np.asarray(seeds.targets, np.int64)
    if disjoint:
        slots = np.arange(len(sources), dtype=np.int64)
        sources, targets = slots * n_codes + sources, slots * n_codes + targets
    batch.edge_label_index = np.stack([seed_layout.local(sources), seed_layout.local(targets)])
    batch.edge_label = None if seeds.labels is None else np.asarray(seeds.labels)
    batch.seed_time = seeds.cutoffs
    batch.pair_features = dict(seeds.features)
