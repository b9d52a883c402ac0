"""Mini-batches sampled at once: the pure steps of sampler.minibatch's driver.

A merged mini-batch (PyG's NeighborLoader, DGL's samplers) samples every distinct node
of an op's frontier once for the whole batch, where a subgraph per seed samples it
once per seed. The core's strategies do that unchanged when every request of the batch
carries one sample id: a draw is keyed by (seed, op, sample, node, position)
(core.rng), so a *batch key* (a hash of the epoch's seed and the batch's seeds) as the
sample makes every node's draw a function of (seed, epoch, batch, op, node, position),
never of the order of the requests, the worker or the thread. A disjoint mini-batch
keeps each seed's own sample id, and so its own draws: the per-seed subgraphs.

Nodes are *keys*: the node's code in its node set (merged), or slot * nodes + code
(disjoint: slot is the seed's, or the pair's, place in the batch), so one set of
functions lays out both. Here:

  op_depths        the hop of every op (the seed op 0, an op 1 + its deepest input)
  batch_key        the one sample id of a merged batch
  NodeLayout       a node set's nodes in the batch, hop after hop, as local indices
  frontier         the distinct nodes an op's inputs reached, each with the earliest
                   cut-off of the requests that reached it
  PairExclusions   link samples: the edges between the two ends of any pair of the
                   batch are never drawn (core.hop.Exclusions)
"""
from __future__ import annotations

import dataclasses

import numpy as np

from sampler.core import rng
from sampler.core.adjacency import AdjacencyBucket
from sampler.core.arrays import argsort, run_starts, unique
from sampler.core.hop import Exclusions, Queries
from sampler.core.selection import row_edges
from sampler.plan.plan import Plan

_BATCH_SALT = rng.name_salt("merged batch")
_END_SALT = rng.name_salt("pair end")


def op_depths(plan: Plan) -> dict[str, int]:
    """The hop of each op (and of the seed op, 0): 1 + the deepest of its inputs. The
    edges an op samples are its hop's, the nodes they reach first at it are that hop's
    new nodes (PyG's num_sampled_nodes / num_sampled_edges)."""
    depth = {plan.seed_op: 0}
    for op in plan.ops:  # plan order: every input op comes first
        depth[op.name] = 1 + max(depth[name] for name in op.input_ops)
    return depth


def batch_key(seed: int, node_fingerprints: np.ndarray, cutoffs: np.ndarray | None = None
              ) -> int:
    """The sample id of a merged batch: a 63-bit hash of the draws' seed (which holds the
    epoch) and the batch's seeds as a set (their fingerprints, and cut-offs if any), so
    the same seeds give the same draws in any order, batch index or process."""
    keys = np.sort(np.asarray(node_fingerprints, np.uint64))
    if cutoffs is not None:  # a seed's cut-off is part of it, as in a seeds table
        bits = np.asarray(cutoffs).astype(np.float64 if np.asarray(cutoffs).dtype.kind == "f"
                                          else np.int64)
        keys = np.sort(rng.mix(np.asarray(node_fingerprints, np.uint64),
                               (bits + 0).view(np.uint64)))  # + 0: -0.0 as 0.0
    folded = rng.mix(np.uint64(seed & (2**64 - 1)), np.uint64(_BATCH_SALT),
                     np.uint64(len(keys)))
    # An order-free fold: the sum of the keys' hashes (mod 2**64), then one more mix.
    with np.errstate(over="ignore"):
        total = np.sum(rng.mix(folded, keys), dtype=np.uint64) if len(keys) else np.uint64(0)
    return int(rng.mix(folded, total)) >> 1


class NodeLayout:
    """A node set's nodes in one batch, as keys, in the order of their local indices:
    hop after hop, each hop's new nodes by key (hop 0: the seeds, in the batch's
    order). `local(keys)` finds keys added before.

    With `table` (merged batches: keys are codes, below the table's length) a key's
    local index + 1 is kept at table[key], zero for keys not laid out: a lookup is one
    gather. The table is scratch reused batch after batch (`release` zeroes the entries
    this batch set). Without, keys are kept sorted and searched (disjoint batches, whose
    keys span seeds times codes)."""

    def __init__(self, table: np.ndarray | None = None):
        self.keys = np.zeros(0, np.int64)
        self.counts: list[int] = []   # new nodes per hop
        self._table = table
        self._sorted = np.zeros(0, np.int64)
        self._order = np.zeros(0, np.int64)

    def __len__(self) -> int:
        return len(self.keys)

    def add_hop(self, keys: np.ndarray, ordered: bool = False) -> None:
        """This hop's reached keys (any order, repeats allowed): those not yet laid out
        become its new nodes, by key; `ordered`: the keys are distinct, in their order
        (the seeds)."""
        keys = np.asarray(keys, np.int64)
        start = len(self.keys)
        if not ordered and len(keys):
            if self._table is not None:
                keys = unique(keys[self._table[keys] == 0])
            else:
                keys = unique(keys)
                if len(self._sorted):
                    keys = keys[self.local(keys) < 0]
        self.keys = np.concatenate([self.keys, keys]) if start else keys
        self.counts.append(len(keys))
        if self._table is not None:
            self._table[keys] = np.arange(start + 1, start + 1 + len(keys), dtype=np.int32)
            return
        merged_keys = np.concatenate([self._sorted, keys])
        merged_order = np.concatenate([self._order, np.arange(start, start + len(keys))])
        by_key = argsort(merged_keys)
        self._sorted, self._order = merged_keys[by_key], merged_order[by_key]

    def local(self, keys: np.ndarray) -> np.ndarray:
        """The local index of each key, -1 where it is not laid out."""
        if self._table is not None:
            return self._table[keys].astype(np.int64) - 1
        if not len(self._sorted):
            return np.full(len(keys), -1, np.int64)
        at = np.minimum(np.searchsorted(self._sorted, keys), len(self._sorted) - 1)
        return np.where(self._sorted[at] == keys, self._order[at], -1)

    def release(self) -> None:
        """Zeroes the table's entries of this batch (the table is then free for another)."""
        if self._table is not None:
            self._table[self.keys] = 0


def frontier(locals_: np.ndarray, cutoffs: np.ndarray | None, n_local: int
             ) -> tuple[np.ndarray, np.ndarray | None]:
    """The distinct local indices an op's inputs reached, ascending (so by hop, then
    key), and for each the earliest cut-off among the requests that reached it: every
    edge the op samples from that node then respects every seed whose sample reached
    it (None without cut-offs)."""
    if cutoffs is None:
        seen = np.zeros(n_local, bool)
        seen[locals_] = True
        return np.flatnonzero(seen), None
    order = argsort(locals_)
    locals_sorted = locals_[order]
    starts = np.flatnonzero(run_starts(locals_sorted))
    if not len(starts):
        return locals_sorted, cutoffs[:0]
    return locals_sorted[starts], np.minimum.reduceat(cutoffs[order], starts)


@dataclasses.dataclass(eq=False)
class PairExclusions(Exclusions):
    """The batch's pairs (each a sample and its two ends' fingerprints: core.pairs's
    leakage rule): a query at an end of a pair of its sample must not draw its row's
    edges to the pair's other end (at a pair of a node and itself, its self-loops). In
    a merged batch every pair has the batch's sample, so a node at the end of several
    pairs leaves out its edges to each of their other ends. Ends are compared by 64-bit
    fingerprint, as core.hop.pair_edges compares them."""

    ends: np.ndarray   # uint64, sorted: mix(sample, end) for both ends of every pair
    links: np.ndarray  # uint64, sorted: mix(sample, end, other end), both ways

    @staticmethod
    def of(samples: np.ndarray, sources: np.ndarray, targets: np.ndarray) -> "PairExclusions":
        """`sources`, `targets`: the pairs' ends as fingerprints; `samples` their sample ids."""
        samples = np.asarray(samples, np.int64)
        ends = np.concatenate([_end(samples, sources), _end(samples, targets)])
        links = np.concatenate([_link(samples, sources, targets),
                                _link(samples, targets, sources)])
        return PairExclusions(np.unique(ends), np.unique(links))

    def positions(self, adjacency: AdjacencyBucket, queries: Queries,
                  row_splits: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        at_end = np.flatnonzero(_isin(_end(queries.samples, queries.nodes), self.ends))
        counts = np.zeros(len(queries.rows), np.int64)
        if not at_end.size:
            return np.zeros(len(queries.rows) + 1, np.int64), np.zeros(0, np.int64)
        seg, positions, _ = row_edges(row_splits, queries.rows[at_end])
        targets = adjacency.target_fingerprints_of(adjacency.target_codes[positions])
        query = at_end[seg]
        hit = _isin(_link(queries.samples[query], queries.nodes[query], targets), self.links)
        counts[at_end] = np.bincount(seg[hit], minlength=len(at_end))
        splits = np.zeros(len(queries.rows) + 1, np.int64)
        np.cumsum(counts, out=splits[1:])
        return splits, positions[hit].astype(np.int64)


def _end(samples: np.ndarray, nodes: np.ndarray) -> np.ndarray:
    return rng.mix(np.uint64(_END_SALT), np.asarray(samples, np.int64),
                   np.asarray(nodes, np.uint64))


def _link(samples: np.ndarray, nodes: np.ndarray, others: np.ndarray) -> np.ndarray:
    return rng.mix(_end(samples, nodes), np.asarray(others, np.uint64))


def _isin(values: np.ndarray, sorted_set: np.ndarray) -> np.ndarray:
    if not len(sorted_set):
        return np.zeros(len(values), bool)
    at = np.minimum(np.searchsorted(sorted_set, values), len(sorted_set) - 1)
    return sorted_set[at] == values
