"""What flows between the sampler's stages: arrays of (sample, node) pairs and pieces
of subgraphs, each a batch of numpy columns for many samples at once.

Node ids travel dictionary-encoded: a piece holds a small sorted array of the
distinct ids it names and int32 codes into it. Shuffles then move 4 bytes per
node reference instead of a padded id, and joins, dedupes and sorts work on
integers; since a dictionary is sorted, code order is id order.

Data shapes:
  SampleId = int64: the seed row's RowId in the seeds table (see unigraph.columnar.batches),
             so a duplicated seed id is two samples with their own random draws.
  NodeId   = bytes, in numpy 'S' arrays.
  Code     = int32 index into a piece's sorted id dictionary.
"""
from __future__ import annotations

import dataclasses
from typing import Sequence

import numpy as np

from sampler.core.arrays import (LOOKUP_TABLE_FACTOR, SortedIndex, argsort, run_starts, unique,
                                  unique_inverse)
from unigraph.columnar.batches import FeatureValues
from unigraph.columnar.ragged import concat, take

_EMPTY_IDS = np.zeros(0, "S1")


def encode_ids(ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(sorted distinct ids, int32 code of every id)."""
    if len(ids) == 0:
        return _EMPTY_IDS, np.zeros(0, np.int32)
    dictionary, codes = unique_inverse(ids)
    return dictionary, codes.astype(np.int32)


# prune sorts its codes when they are this many times fewer than the dictionary's ids,
# else marks them in a mask over the dictionary: into 1.1M ids, 50K codes sorted 0.76 ms
# and masked 1.23 ms; 250K codes, 5.6 against 2.9 ms.
PRUNE_SORT_FACTOR = 16


def prune(dictionary: np.ndarray, codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The dictionary cut down to the ids `codes` use, and the codes renumbered
    (order kept, so the smaller dictionary stays sorted). Few codes into a large
    dictionary (the in-memory engine's whole node set) are sorted, costing what the
    codes cost; more are marked in a mask over the dictionary, no sort."""
    if len(codes) * PRUNE_SORT_FACTOR < len(dictionary):
        kept, renumbered = unique_inverse(codes)
        return take(dictionary, kept), renumbered.astype(np.int32)
    used = np.zeros(len(dictionary), bool)
    used[codes] = True
    kept = np.flatnonzero(used)
    renumber = np.empty(len(dictionary), np.int32)
    renumber[kept] = np.arange(len(kept), dtype=np.int32)
    return take(dictionary, kept), take(renumber, codes)


def merge(dictionaries: Sequence[np.ndarray], codes: Sequence[np.ndarray]
          ) -> tuple[np.ndarray, np.ndarray]:
    """One dictionary for several (dictionary, codes) parts, and all codes concatenated."""
    merged = unique(np.concatenate(dictionaries)) if dictionaries else _EMPTY_IDS
    # The in-memory engine's codes are looked up in a table, byte-string ids searched.
    index = SortedIndex(merged, table_factor=LOOKUP_TABLE_FACTOR)
    remapped = [index.positions(d).astype(np.int32)[c] for d, c in zip(dictionaries, codes)]
    return merged, (np.concatenate(remapped) if remapped else np.zeros(0, np.int32))


@dataclasses.dataclass(eq=False)
class Requests:
    """(sample, node) pairs: the nodes some op reached, per sample."""

    samples: np.ndarray  # int64
    codes: np.ndarray    # int32 into ids
    ids: np.ndarray      # 'S', sorted distinct
    # Link samples only: uint64 [n, 2], the fingerprints of the request's sample's pair
    # (source, target), so a hop knows its sample's endpoints (core.pairs); else None.
    pairs: np.ndarray | None = None
    # The sample's time cut-off per request (int64 or float64, the job's time type),
    # or None when the samples have none. It travels with every request, hop after hop,
    # so a hop needs no side input that grows with the graph or the seeds.
    cutoffs: np.ndarray | None = None

    @staticmethod
    def from_ids(samples: np.ndarray, nodes: np.ndarray,
                 cutoffs: np.ndarray | None = None) -> "Requests":
        ids, codes = encode_ids(nodes)
        return Requests(samples, codes, ids, cutoffs=cutoffs)

    @property
    def nodes(self) -> np.ndarray:
        return self.ids[self.codes]

    def __len__(self) -> int:
        return len(self.samples)

    def take(self, positions: np.ndarray) -> "Requests":
        ids, codes = prune(self.ids, self.codes[positions])
        return Requests(self.samples[positions], codes, ids,
                        None if self.pairs is None else self.pairs[positions],
                        None if self.cutoffs is None else self.cutoffs[positions])

    @staticmethod
    def concat(parts: list["Requests"]) -> "Requests":
        parts = [p for p in parts if len(p)]
        if not parts:
            return Requests(np.zeros(0, np.int64), np.zeros(0, np.int32), _EMPTY_IDS)
        if len(parts) == 1:
            return parts[0]
        timed = [p.cutoffs is not None for p in parts]
        if any(timed) and not all(timed):
            raise ValueError("Requests.concat: parts with and without cut-offs")
        ids, codes = merge([p.ids for p in parts], [p.codes for p in parts])
        pairs = (np.concatenate([p.pairs for p in parts])
                 if all(p.pairs is not None for p in parts) else None)
        return Requests(np.concatenate([p.samples for p in parts]), codes, ids, pairs,
                        np.concatenate([p.cutoffs for p in parts]) if all(timed) else None)

    def unique(self) -> "Requests":
        """Each (sample, node) pair once, sorted by sample then node: a node reached
        twice within one sample (by several input ops, or several edges) is sampled once.
        (A sample has one cut-off and one pair, so the copies dropped carry the same.)"""
        if len(self) == 0:
            return self
        # One int64 key (the sample's rank, then the code) instead of a two-key lexsort.
        _, sample_rank = unique_inverse(self.samples)
        order = argsort(sample_rank * max(len(self.ids), 1) + self.codes)
        samples, codes = self.samples[order], self.codes[order]
        keep = run_starts(samples, codes)
        return Requests(samples[keep], codes[keep], self.ids,
                        None if self.pairs is None else self.pairs[order][keep],
                        None if self.cutoffs is None else self.cutoffs[order][keep])


@dataclasses.dataclass(eq=False)
class EdgePiece:
    """Sampled edges of one edge set, for many samples: the largest payload the pipeline
    moves, so ids are int32 codes into small dictionaries (24 bytes per edge in all)."""

    edge_set: str
    sample_codes: np.ndarray   # int32 into sample_ids
    source_codes: np.ndarray   # int32 into source_ids
    target_codes: np.ndarray   # int32 into target_ids
    positions: np.ndarray      # int32: the edge's place in its source's row of the
                               # canonical adjacency (by source, target, table row), so for
                               # edges of one source it identifies the edge and orders like
                               # the row; small, so the element coder writes it in 1-2 bytes
    rows: np.ndarray           # int64 RowId of the edge's table row: names a dropped edge
    sample_ids: np.ndarray     # int64, sorted distinct
    source_ids: np.ndarray     # 'S', sorted distinct
    target_ids: np.ndarray     # 'S', sorted distinct
    features: dict[str, FeatureValues]

    @staticmethod
    def from_ids(edge_set: str, samples: np.ndarray, sources: np.ndarray, targets: np.ndarray,
                 positions: np.ndarray, features: dict[str, FeatureValues],
                 rows: np.ndarray | None = None) -> "EdgePiece":
        """`rows` default to the positions (for tests that need no table rows)."""
        sample_ids, sample_codes = unique_inverse(np.asarray(samples))
        source_ids, source_codes = encode_ids(sources)
        target_ids, target_codes = encode_ids(targets)
        return EdgePiece(edge_set, sample_codes.astype(np.int32), source_codes, target_codes,
                         np.asarray(positions, np.int32),
                         np.asarray(positions if rows is None else rows, np.int64),
                         sample_ids.astype(np.int64), source_ids, target_ids, features)

    @property
    def samples(self) -> np.ndarray:
        return self.sample_ids[self.sample_codes]

    @property
    def sources(self) -> np.ndarray:
        return self.source_ids[self.source_codes]

    @property
    def targets(self) -> np.ndarray:
        return self.target_ids[self.target_codes]

    def __len__(self) -> int:
        return len(self.sample_codes)

    @staticmethod
    def concat(parts: list["EdgePiece"]) -> "EdgePiece":
        """The parts' edges (one edge set, features alike) in one piece, part after part."""
        if len(parts) == 1:
            return parts[0]
        sample_ids, sample_codes = merge([p.sample_ids for p in parts],
                                         [p.sample_codes for p in parts])
        source_ids, source_codes = merge([p.source_ids for p in parts],
                                         [p.source_codes for p in parts])
        target_ids, target_codes = merge([p.target_ids for p in parts],
                                         [p.target_codes for p in parts])
        return EdgePiece(parts[0].edge_set, sample_codes, source_codes, target_codes,
                         np.concatenate([p.positions for p in parts]),
                         np.concatenate([p.rows for p in parts]), sample_ids.astype(np.int64),
                         source_ids, target_ids,
                         {k: concat([p.features[k] for p in parts]) for k in parts[0].features})

    def take(self, positions: np.ndarray) -> "EdgePiece":
        sample_ids, sample_codes = prune(self.sample_ids, self.sample_codes[positions])
        source_ids, source_codes = prune(self.source_ids, self.source_codes[positions])
        target_ids, target_codes = prune(self.target_ids, self.target_codes[positions])
        return EdgePiece(self.edge_set, sample_codes, source_codes, target_codes,
                         self.positions[positions], self.rows[positions], sample_ids,
                         source_ids, target_ids,
                         {k: take(v, positions) for k, v in self.features.items()})


@dataclasses.dataclass(eq=False)
class SeedPiece:
    """Each sample's seed: one (sample, seed id) pair per sample."""

    samples: np.ndarray  # int64
    ids: np.ndarray      # 'S'
    timestamps: np.ndarray | None = None  # the sample's cut-off (context/seed_timestamp)

    def __len__(self) -> int:
        return len(self.samples)

    def take(self, positions: np.ndarray) -> "SeedPiece":
        return SeedPiece(self.samples[positions], self.ids[positions],
                         None if self.timestamps is None else self.timestamps[positions])

    @staticmethod
    def concat(parts: list["SeedPiece"]) -> "SeedPiece":
        timed = all(p.timestamps is not None for p in parts) and bool(parts)
        return SeedPiece(np.concatenate([p.samples for p in parts]),
                         np.concatenate([p.ids for p in parts]),
                         np.concatenate([p.timestamps for p in parts]) if timed else None)


@dataclasses.dataclass(eq=False)
class PairPiece:
    """Link seeds: each sample's pair (source, target) and the features its `_readout`
    node carries (one row per sample), for the assembly."""

    samples: np.ndarray                 # int64
    sources: np.ndarray                 # 'S' (or int64 codes in the in-memory engine)
    targets: np.ndarray                 # 'S' (or int64 codes)
    features: dict[str, FeatureValues]  # dense, one row per sample
    timestamps: np.ndarray | None = None  # the pair's cut-off (context/seed_timestamp)

    def __len__(self) -> int:
        return len(self.samples)

    def take(self, positions: np.ndarray) -> "PairPiece":
        return PairPiece(self.samples[positions], self.sources[positions],
                         self.targets[positions],
                         {k: take(v, positions) for k, v in self.features.items()},
                         None if self.timestamps is None else self.timestamps[positions])

    @staticmethod
    def concat(parts: list["PairPiece"]) -> "PairPiece":
        timed = all(p.timestamps is not None for p in parts)
        return PairPiece(np.concatenate([p.samples for p in parts]),
                         np.concatenate([p.sources for p in parts]),
                         np.concatenate([p.targets for p in parts]),
                         {k: concat([p.features[k] for p in parts]) for k in parts[0].features},
                         np.concatenate([p.timestamps for p in parts]) if timed else None)


@dataclasses.dataclass(eq=False)
class NodeFeatures:
    """Features of distinct nodes of one node set, sent once to each output shard that
    holds a sample reaching them (not once per sample: the copies into every subgraph
    happen when the shard is encoded, so Beam moves each node's features once).

    With `rows`, the features are not copied at all: node i's are row rows[i] of
    `features`, a whole node table (the in-memory engine, where the table is at hand
    when the shard is encoded, so each feature row is read once, into its record)."""

    node_set: str
    ids: np.ndarray      # 'S', distinct
    features: dict[str, FeatureValues]
    rows: np.ndarray | None = None  # int64 row of `features` per id; None: row i is node i

    def __len__(self) -> int:
        return len(self.ids)

    def take(self, positions: np.ndarray) -> "NodeFeatures":
        if self.rows is not None:
            return NodeFeatures(self.node_set, self.ids[positions], self.features,
                                self.rows[positions])
        return NodeFeatures(self.node_set, self.ids[positions],
                            {k: take(v, positions) for k, v in self.features.items()})

    def gathered(self) -> "NodeFeatures":
        """The same nodes with their own copy of their feature rows."""
        if self.rows is None:
            return self
        return NodeFeatures(self.node_set, self.ids,
                            {k: take(v, self.rows) for k, v in self.features.items()})

    @staticmethod
    def concat(parts: list["NodeFeatures"]) -> "NodeFeatures":
        if len(parts) == 1:  # no copy of what may be a whole batch's feature rows
            return parts[0]
        if all(p.rows is not None and p.features is parts[0].features for p in parts):
            return NodeFeatures(parts[0].node_set, np.concatenate([p.ids for p in parts]),
                                parts[0].features, np.concatenate([p.rows for p in parts]))
        parts = [p.gathered() for p in parts]
        return NodeFeatures(parts[0].node_set, np.concatenate([p.ids for p in parts]),
                            {k: concat([p.features[k] for p in parts]) for k in parts[0].features})
