"""Assembling subgraphs: the node and edge pieces of one output shard, laid out as
one subgraph per sample in canonical order.

Canonical order (docs/architecture.md, "The output contract"), so the output is a
function of the inputs alone: within a subgraph, the seed is node 0 of its node
set, the other nodes of each set follow by id; edges are ordered by (source index,
target index, table row). A node reached several times, or an edge sampled by
several ops, appears once.

`ShardAssembler.assemble` lays out every set for the whole shard with vectorized
integer sorts (ids become codes into one sorted dictionary per set, so code order
is id order). The result, an AssembledShard, is arrays only: output/encoder.py
encodes it into records, output/reference.py into GraphTensors (the reference the
encoder is tested against).

One module of about 450 lines on purpose: ShardAssembler's steps (node codes, ranks,
the node layout, the edge layout, features and pairs) share one shard's layout state,
and the helpers under the class serve only those steps.
"""
from __future__ import annotations

import dataclasses
from typing import Mapping, Sequence

import numpy as np

from sampler.core.arrays import (LOOKUP_TABLE_FACTOR, SortedIndex, argsort, offsets,
                                  run_starts, unique, unique_inverse)
from sampler.core.pieces import EdgePiece, NodeFeatures, PairPiece, SeedPiece
from sampler.core.stats import MAX_LISTED_IDS
from sampler.plan.plan import LABEL, Plan, label_dtype, pairs_table_layout
from unigraph.protos import graph_schema_pb2 as gs
from unigraph.columnar.batches import FeatureValues
from unigraph.columnar.ragged import Ragged, concat, take
from unigraph.schema import (ID_COLUMNS, LINK_READOUT_NODE_SET, feature_shape, has_table,
                             numpy_dtype)



@dataclasses.dataclass
class ShardStats:
    """Counts from assembling one shard, merged across shards for the run report."""

    subgraphs: int = 0
    nodes: dict[str, list[int]] = dataclasses.field(default_factory=dict)  # set -> per subgraph
    edges: dict[str, list[int]] = dataclasses.field(default_factory=dict)
    dangling_edges: dict[str, int] = dataclasses.field(default_factory=dict)
    # The first (by sort order) dropped edges: (edge set, source id, target id, RowId).
    dangling_examples: list[tuple[str, str, str, int]] = dataclasses.field(
        default_factory=list)
    nodes_missing: dict[str, int] = dataclasses.field(default_factory=dict)
    pairs: int = 0          # link samples: pairs this shard was given
    pairs_dropped: int = 0  # ... left out because an endpoint is not in the graph


@dataclasses.dataclass
class _Layout:
    """One set's items for every sample of the shard, sorted by (sample, canonical order)."""

    offsets: np.ndarray                  # int64 [num_samples + 1]
    # Features stay where they are (a node table, the edge pieces) until encoded: item i
    # of the layout is row feature_rows[i] of feature_values. Gathering them for the
    # whole shard at once would hold every copy of every node's features in memory.
    feature_values: dict[str, FeatureValues]
    feature_rows: np.ndarray | None = None
    ids: np.ndarray | None = None        # node sets: 'S' ids in layout order
    keys: np.ndarray | None = None       # node sets: int64 sort key per node (see _NodeKeys)
    sources: np.ndarray | None = None    # edge sets: local source indices
    targets: np.ndarray | None = None    # edge sets: local target indices

    def features(self, lo: int, hi: int) -> dict[str, FeatureValues]:
        """Features of items [lo, hi), gathered."""
        rows = self.feature_rows[lo:hi] if self.feature_rows is not None else np.arange(lo, hi)
        return {k: take(v, rows) for k, v in self.feature_values.items()}

    def with_rows_gathered(self) -> "_Layout":
        """The same layout with the rows its features point to copied out, each once, in
        one gather per feature in the rows' order: over a store read from disk at random
        (store.prefetch), the pages of a whole chunk are then asked for together, in
        order, instead of a few hundred samples' at a time as they are encoded."""
        if self.feature_rows is None or not self.feature_values:
            return self
        rows, index = np.unique(self.feature_rows, return_inverse=True)
        return dataclasses.replace(
            self, feature_values={k: take(v, rows) for k, v in self.feature_values.items()},
            feature_rows=index.astype(np.int64, copy=False))


def empty_feature(feature: gs.Feature) -> FeatureValues:
    """A zero-item value of the feature's dtype and shape (each ragged dim a Ragged level)."""
    shape = feature_shape(feature)
    dtype = numpy_dtype(feature)
    if -1 not in shape:
        return np.zeros((0,) + shape, dtype=dtype)
    last_ragged = len(shape) - 1 - shape[::-1].index(-1)
    value: FeatureValues = np.zeros((0,) + shape[last_ragged + 1:], dtype=dtype)
    for _ in range(shape.count(-1)):
        value = Ragged(value, np.zeros(0, np.int64))
    return value


def _offsets(ranks: np.ndarray, num_samples: int) -> np.ndarray:
    counts = np.bincount(ranks, minlength=num_samples)
    return offsets(counts)


def _schema_features(features: dict[str, gs.Feature]) -> dict[str, gs.Feature]:
    return {k: v for k, v in sorted(features.items()) if k not in ID_COLUMNS}


@dataclasses.dataclass
class AssembledShard:
    """Every sample of one shard, laid out as arrays per node set and edge set."""

    schema: gs.GraphSchema  # the input schema (its sets' features and ends)
    seed_set: str
    sample_ids: np.ndarray  # int64, ascending
    seed_ids: np.ndarray    # 'S'
    nodes: dict[str, _Layout]
    edges: dict[str, _Layout]
    # Link samples: each pair's target ('S', node 1 of the seed set, or node 0 when it is
    # the source, whose ids are seed_ids) and its `_readout` features, one row per sample.
    target_ids: np.ndarray | None = None
    readout: dict[str, FeatureValues] | None = None
    seed_timestamps: np.ndarray | None = None  # each sample's cut-off, if the seeds had one

    def __len__(self) -> int:
        return len(self.sample_ids)

    def with_node_rows_gathered(self) -> "AssembledShard":
        """The same samples, every node set's feature rows gathered at once
        (_Layout.with_rows_gathered); edge features are the pieces' own copies already."""
        return AssembledShard(self.schema, self.seed_set, self.sample_ids, self.seed_ids,
                              {s: l.with_rows_gathered() for s, l in self.nodes.items()},
                              self.edges, self.target_ids, self.readout,
                              self.seed_timestamps)


class ShardAssembler:
    """Builds the GraphTensors of one shard from its pieces.

    A subgraph's nodes of a set are its seed (for the seed set) and the targets of
    its sampled edges into the set; their features come from the shard's
    NodeFeatures. A node absent from its set's table is left out, and so are the
    edges that touch it (counted as dangling).

    Ids are byte strings, or (the in-memory engine) integer codes into `names`, one
    sorted array of ids per node set: code order is id order, so the canonical orders
    hold either way, and the ids written are the names.
    """

    def __init__(self, plan: Plan, schema: gs.GraphSchema,
                 names: Mapping[str, np.ndarray] | None = None):
        self.plan = plan
        self.schema = schema
        self.names = dict(names or {})
        self.node_features = {s: _schema_features(schema.node_sets[s].features)
                              for s in plan.node_sets()}
        self.edge_features = {e: _schema_features(schema.edge_sets[e].features)
                              for e in plan.edge_sets()}
        self.has_table = {s: has_table(schema.node_sets[s].metadata)
                          for s in plan.node_sets()}

    def assemble(self, seed_pieces: Sequence[SeedPiece], feature_pieces: Sequence[NodeFeatures],
                 edge_pieces: Sequence[EdgePiece], pair_pieces: Sequence[PairPiece] = ()
                 ) -> tuple["AssembledShard", ShardStats]:
        """Every sample's subgraph, by ascending sample id; and the stats.

        A link plan's samples are its `pair_pieces`; `seed_pieces` then hold the pairs'
        endpoints the seeds join found, and a pair missing one is left out (counted)."""
        stats = ShardStats()
        seed_pieces = [p for p in seed_pieces if len(p)]
        target_ids, readout, seed_times = None, None, None
        if self.plan.link:
            sample_ids, seed_ids, target_ids, readout, seed_times = self._pairs(
                [p for p in pair_pieces if len(p)], seed_pieces, stats)
        elif seed_pieces:
            seeds = SeedPiece.concat(seed_pieces)
            order = np.argsort(seeds.samples, kind="stable")
            sample_ids, seed_ids = seeds.samples[order], seeds.ids[order]
            seed_times = None if seeds.timestamps is None else seeds.timestamps[order]
        if not self.plan.link and not seed_pieces or self.plan.link and not len(sample_ids):
            empty = np.zeros(0, np.int64)
            return AssembledShard(self.schema, self.plan.seed_set, empty, np.zeros(0, "S1"),
                                  {}, {}, target_ids, readout), stats
        edge_pieces = [p for p in edge_pieces if len(p)]
        if self.plan.link:  # a dropped pair's found endpoint may have been sampled from
            edge_pieces = [_of_samples(p, sample_ids) for p in edge_pieces]
            edge_pieces = [p for p in edge_pieces if len(p)]
        ends = {e: (self.schema.edge_sets[e].source, self.schema.edge_sets[e].target)
                for e in self.plan.edge_sets()}
        # One sorted id dictionary per node set for the whole shard.
        keys = {}
        for s in self.plan.node_sets():
            parts = [p.source_ids for p in edge_pieces if ends[p.edge_set][0] == s]
            parts += [p.target_ids for p in edge_pieces if ends[p.edge_set][1] == s]
            parts += [p.ids for p in feature_pieces if p.node_set == s]
            if s == self.plan.seed_set:
                parts.append(seed_ids)
            if s == self.plan.seed_set and target_ids is not None:
                parts.append(target_ids)
            keys[s] = _NodeKeys(unique(np.concatenate(parts)) if parts else
                                np.zeros(0, "S1"), len(sample_ids),
                                seed_ids if s == self.plan.seed_set else None,
                                target_ids if s == self.plan.seed_set else None)
        # Each edge's sample rank, and (from its target set's layout) its target's index
        # among all the set's nodes of the shard, -1 if that node was left out.
        edge_ranks = [np.searchsorted(sample_ids, p.sample_ids)[p.sample_codes]
                      for p in edge_pieces]
        target_index: list[np.ndarray | None] = [None] * len(edge_pieces)
        nodes = {}
        for s in self.plan.node_sets():
            arriving = [(np.arange(len(sample_ids)), keys[s].codes_of(seed_ids))] \
                if s == self.plan.seed_set else []
            if s == self.plan.seed_set and target_ids is not None:
                arriving.append((np.arange(len(sample_ids)), keys[s].codes_of(target_ids)))
            into = [i for i, p in enumerate(edge_pieces) if ends[p.edge_set][1] == s]
            arriving += [(edge_ranks[i], keys[s].codes_of(edge_pieces[i].target_ids)[
                edge_pieces[i].target_codes]) for i in into]
            nodes[s], missing, index = self._node_layout(
                s, keys[s], arriving, [p for p in feature_pieces if p.node_set == s])
            ends_at = np.cumsum([len(r) for r, _ in arriving])
            for i, end in zip(into, ends_at[len(arriving) - len(into):]):
                target_index[i] = index[end - len(edge_pieces[i]):end]
            if missing:
                stats.nodes_missing[s] = missing
        edges = {}
        for e in self.plan.edge_sets():
            of_set = [i for i, p in enumerate(edge_pieces) if p.edge_set == e]
            edges[e], dropped, examples = self._edge_layout(
                e, [edge_pieces[i] for i in of_set], [edge_ranks[i] for i in of_set],
                [target_index[i] for i in of_set], sample_ids, keys[ends[e][0]],
                keys[ends[e][1]], nodes[ends[e][0]], nodes[ends[e][1]])
            if dropped:
                stats.dangling_edges[e] = dropped
                stats.dangling_examples += examples
        stats.subgraphs = len(sample_ids)
        stats.nodes = {s: np.diff(l.offsets).tolist() for s, l in nodes.items()}
        stats.edges = {e: np.diff(l.offsets).tolist() for e, l in edges.items()}
        return AssembledShard(self.schema, self.plan.seed_set, sample_ids,
                              self._named(self.plan.seed_set, seed_ids), nodes, edges,
                              None if target_ids is None else
                              self._named(self.plan.seed_set, target_ids), readout,
                              seed_times), stats

    def _pairs(self, pair_pieces: list[PairPiece], found: list[SeedPiece], stats: ShardStats):
        """(sample ids, sources, targets, readout features, cut-offs or None) of the pairs
        whose endpoints were both found, by ascending sample id."""
        features = self.schema.node_sets[LINK_READOUT_NODE_SET].features
        if not pair_pieces:
            wanted = pairs_table_layout(self.plan, self.schema).features
            empty = {f.name: empty_feature(features[f.name]) for f in wanted}
            if self.plan.negatives:
                empty[LABEL] = np.zeros(0, label_dtype(self.schema))
            return np.zeros(0, np.int64), np.zeros(0, "S1"), np.zeros(0, "S1"), empty, None
        pairs = PairPiece.concat(pair_pieces)
        pairs = pairs.take(np.argsort(pairs.samples, kind="stable"))
        stats.pairs = len(pairs)
        if found:
            endpoints = SeedPiece.concat(found)
            ids = unique(np.concatenate([pairs.sources, pairs.targets, endpoints.ids]))
            width = np.int64(len(ids))
            rank = np.searchsorted(pairs.samples, endpoints.samples)
            known = rank * width + np.searchsorted(ids, endpoints.ids)
            ranks = np.arange(len(pairs), dtype=np.int64) * width
            keep = (np.isin(ranks + np.searchsorted(ids, pairs.sources), known)
                    & np.isin(ranks + np.searchsorted(ids, pairs.targets), known))
        else:
            keep = np.zeros(len(pairs), bool)
        stats.pairs_dropped = int((~keep).sum())
        pairs = pairs.take(np.flatnonzero(keep))
        return pairs.samples, pairs.sources, pairs.targets, pairs.features, pairs.timestamps

    def _named(self, node_set: str, ids: np.ndarray) -> np.ndarray:
        """The ids as the output writes them: codes become their names (a set nothing
        reached has an empty, untyped dictionary)."""
        if node_set not in self.names:
            return ids
        # take: fancy indexing of byte strings is slow (unigraph.columnar.ragged.take).
        return take(self.names[node_set], ids) if len(ids) else self.names[node_set][:0]

    def _node_layout(self, node_set: str, keys: "_NodeKeys",
                     arriving: list[tuple[np.ndarray, np.ndarray]],
                     feature_pieces: list[NodeFeatures]) -> tuple[_Layout, int, np.ndarray]:
        """The set's nodes of every sample: its seed (if any) and the targets of its edges
        into the set, each once, in canonical order (by key: rank, seed first, then id);
        how many were left out (absent from the set's table); and for each arriving
        (rank, code), its node's index in the layout (-1 if left out), so that edges
        find their targets without a search."""
        wanted = self.node_features[node_set]
        if arriving:
            node_keys, arrival_index = unique_inverse(
                np.concatenate([keys.key(r, c) for r, c in arriving]))
        else:
            node_keys, arrival_index = np.zeros(0, np.int64), np.zeros(0, np.int64)
        ranks, codes = keys.split(node_keys)
        features, missing = {}, 0
        if self.has_table[node_set]:
            row_of_code = np.full(len(keys.ids), -1, np.int64)
            pieces = [p for p in feature_pieces if len(p)]
            table = NodeFeatures.concat(pieces) if pieces else None
            if table is not None:
                row_of_code[keys.codes_of(table.ids)] = np.arange(len(table))
            rows = row_of_code[codes]
            found = rows >= 0
            missing = int((~found).sum())
            if missing:
                node_keys, ranks, codes, rows = (node_keys[found], ranks[found], codes[found],
                                                 rows[found])
                kept_index = np.where(found, np.cumsum(found) - 1, -1)
                arrival_index = kept_index[arrival_index]
            if table is not None and table.rows is not None:
                rows = table.rows[rows]  # the piece points into a whole node table
            features = table.features if table is not None else {
                k: empty_feature(f) for k, f in wanted.items()}
            return _Layout(_offsets(ranks, keys.num_samples), features, rows,
                           ids=self._named(node_set, keys.ids[codes]), keys=node_keys), \
                missing, arrival_index
        return _Layout(_offsets(ranks, keys.num_samples), {},
                       ids=self._named(node_set, keys.ids[codes]), keys=node_keys), missing, \
            arrival_index

    def _edge_layout(self, edge_set: str, pieces: list[EdgePiece], piece_ranks: list[np.ndarray],
                     piece_target_index: list[np.ndarray], sample_ids: np.ndarray,
                     source_keys: "_NodeKeys", target_keys: "_NodeKeys",
                     sources_layout: _Layout, targets_layout: _Layout
                     ) -> tuple[_Layout, int, list[tuple[str, str, str, int]]]:
        """The set's edges of every sample; how many were dropped for an absent endpoint,
        and the first few of them. Per piece: each edge's sample rank and its target's
        index in `targets_layout` (from the node layout, -1 if left out)."""
        wanted = self.edge_features[edge_set]
        if not pieces:
            empty = np.zeros(0, np.int64)
            return _Layout(np.zeros(len(sample_ids) + 1, np.int64),
                           {k: empty_feature(f) for k, f in wanted.items()},
                           sources=empty, targets=empty), 0, []
        ranks = np.concatenate(piece_ranks)
        source_codes = np.concatenate([source_keys.codes_of(p.source_ids)[p.source_codes]
                                       for p in pieces])
        target_codes = np.concatenate([target_keys.codes_of(p.target_ids)[p.target_codes]
                                       for p in pieces])
        positions = np.concatenate([p.positions for p in pieces])
        features = {k: concat([p.features[k] for p in pieces]) for k in wanted}
        sources = _source_indices(sources_layout, source_keys, ranks, source_codes)
        target_index = np.concatenate(piece_target_index)
        targets = np.where(target_index >= 0, target_index - take(targets_layout.offsets, ranks),
                           -1)
        # One sort into canonical order: (sample, source index, target index, position);
        # for one source and target, adjacency position orders like the table row. An
        # edge sampled twice in one sample (by two ops) lands next to its copy and is
        # kept once; an edge with an absent endpoint (-1) is dropped.
        pair = _pair_key(ranks, sources, targets)
        order = _sort_pairs(pair, positions)
        # take, not []: the shard's largest gathers (unigraph.columnar.ragged.take).
        pair, positions = take(pair, order), take(positions, order)
        first = run_starts(pair, positions)
        ranks, sources, targets = take(ranks, order), take(sources, order), take(targets, order)
        valid = first & (sources >= 0) & (targets >= 0)
        layout = _Layout(_offsets(ranks[valid], len(sample_ids)), features, order[valid],
                         sources=sources[valid], targets=targets[valid])
        dropped = order[first & ~valid]
        examples = []
        if len(dropped):
            rows = np.concatenate([p.rows for p in pieces])
            ends = self.schema.edge_sets[edge_set]
            examples = sorted({(edge_set, s.decode(errors="replace"), t.decode(errors="replace"),
                                int(r)) for s, t, r in zip(
                self._named(ends.source, source_keys.ids[source_codes[dropped]]).tolist(),
                self._named(ends.target, target_keys.ids[target_codes[dropped]]).tolist(),
                rows[dropped].tolist())})
        return layout, len(dropped), examples[:MAX_LISTED_IDS]


def _of_samples(piece: EdgePiece, sample_ids: np.ndarray) -> EdgePiece:
    """The piece's edges of samples in `sample_ids` (sorted)."""
    pos = np.minimum(np.searchsorted(sample_ids, piece.sample_ids), len(sample_ids) - 1)
    kept = (sample_ids[pos] == piece.sample_ids)[piece.sample_codes]
    return piece if kept.all() else piece.take(np.flatnonzero(kept))


def _sort_pairs(pair: np.ndarray, positions: np.ndarray) -> np.ndarray:
    """The order that sorts by (pair, position). Equal pairs (parallel edges, or an edge
    two ops sampled) are rare, so one sort by pair, then only their runs by position."""
    order = argsort(pair)
    ranked = pair[order]
    tie = ranked[1:] == ranked[:-1]
    if tie.any():
        in_tie = np.zeros(len(order), bool)
        in_tie[1:] |= tie
        in_tie[:-1] |= tie
        slots = np.flatnonzero(in_tie)
        members = order[slots]
        order[slots] = members[np.lexsort((positions[members], pair[members]))]
    return order


def _pair_key(ranks: np.ndarray, sources: np.ndarray, targets: np.ndarray) -> np.ndarray:
    """One int64 that sorts like (rank, source, target); indices may be -1."""
    width_s, width_t = int(sources.max(initial=0)) + 2, int(targets.max(initial=0)) + 2
    if (int(ranks.max(initial=0)) + 1) * width_s * width_t >= 2**62:
        # Too wide to pack: the dense rank of each triple (equal triples share a key).
        order = np.lexsort((targets, sources, ranks))
        r, s, t = ranks[order], sources[order], targets[order]
        change = np.r_[False, (r[1:] != r[:-1]) | (s[1:] != s[:-1]) | (t[1:] != t[:-1])]
        key = np.empty(len(order), np.int64)
        key[order] = np.cumsum(change)
        return key
    return (ranks.astype(np.int64) * width_s + (sources + 1)) * width_t + (targets + 1)


class _NodeKeys:
    """Integer sort keys for the (sample, node) pairs of one node set in a shard.

    key = (rank * 3 + tier) * N + code, where code indexes the shard's sorted id
    dictionary of the set (N ids) and tier is 0 for the sample's seed (a pair's
    source), 1 for a pair's target (unless it is the source) and 2 for every other
    node: sorting keys sorts by sample, puts the seeds first and the other nodes by
    id -- the canonical order."""

    def __init__(self, ids: np.ndarray, num_samples: int, seed_ids: np.ndarray | None,
                 target_ids: np.ndarray | None = None):
        self.ids = ids
        # Integer ids (the in-memory engine's codes) are looked up in a table, ids searched:
        # a shard's dictionary is looked up once per edge, far more often than it has ids.
        self._index = SortedIndex(ids, table_factor=LOOKUP_TABLE_FACTOR)
        self.num_samples = num_samples
        self.width = np.int64(max(len(ids), 1))
        self.seed_codes = self.codes_of(seed_ids) if seed_ids is not None else None
        self.target_codes = self.codes_of(target_ids) if target_ids is not None else None

    def codes_of(self, ids: np.ndarray) -> np.ndarray:
        """Codes of ids that are in the dictionary (all are, by construction)."""
        return self._index.positions(ids)

    def key(self, ranks: np.ndarray, codes: np.ndarray) -> np.ndarray:
        ranks = ranks.astype(np.int64)
        codes = codes.astype(np.int64)
        tier = np.full(len(codes), 2, np.int64)
        if self.target_codes is not None:
            tier[codes == self.target_codes[ranks]] = 1
        if self.seed_codes is not None:
            tier[codes == self.seed_codes[ranks]] = 0
        return (ranks * 3 + tier) * self.width + codes

    def split(self, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(rank, code) of every key."""
        return keys // (3 * self.width), keys % self.width


def _source_indices(layout: _Layout, keys: _NodeKeys, ranks: np.ndarray,
                    codes: np.ndarray) -> np.ndarray:
    """Index of each edge's source within its sample's node set; -1 if absent. A hop
    draws a source's edges together, so the (rank, code) pairs come in runs: each run
    is looked up once."""
    if len(ranks) == 0:
        return np.zeros(0, np.int64)
    head = run_starts(ranks, codes)
    heads = np.flatnonzero(head)
    local = _local_indices(layout, keys.key(ranks[heads], codes[heads]), ranks[heads])
    return take(local, np.cumsum(head) - 1)


def _local_indices(layout: _Layout, keys: np.ndarray, ranks: np.ndarray) -> np.ndarray:
    """Index of each (sample rank, node) key within its sample's node set; -1 if absent."""
    if len(layout.keys) == 0 or len(keys) == 0:
        return np.full(len(keys), -1, np.int64)
    pos = np.minimum(np.searchsorted(layout.keys, keys), len(layout.keys) - 1)
    local = pos - layout.offsets[ranks]
    return np.where(layout.keys[pos] == keys, local, -1).astype(np.int64)
