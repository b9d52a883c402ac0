"""What flows between the sampler's stages: arrays of (sample, node) pairs and pieces
of subgraphs, each a batch of numpy columns for many samples at once.

Data shapes:
  SampleId = int64: the seed row's RowId in the seeds table (see unigraph.batches),
             so a duplicated seed id is two samples with their own random draws.
  NodeId   = bytes: numpy 'S' arrays.
"""
from __future__ import annotations

import dataclasses

import numpy as np

from unigraph.batches import FeatureValues
from unigraph.ragged import concat, take


@dataclasses.dataclass(eq=False)
class Requests:
    """(sample, node) pairs: the nodes some op reached, per sample."""

    samples: np.ndarray  # int64
    nodes: np.ndarray    # 'S'

    def __len__(self) -> int:
        return len(self.samples)

    def take(self, positions: np.ndarray) -> "Requests":
        return Requests(self.samples[positions], self.nodes[positions])

    @staticmethod
    def concat(parts: list["Requests"]) -> "Requests":
        if not parts:
            return Requests(np.zeros(0, np.int64), np.zeros(0, "S1"))
        return Requests(np.concatenate([p.samples for p in parts]),
                        np.concatenate([p.nodes for p in parts]))

    def unique(self) -> "Requests":
        """Each (sample, node) pair once, sorted by sample then node: a node reached
        twice within one sample (by several input ops, or several edges) is sampled once."""
        if len(self) == 0:
            return self
        order = np.lexsort((self.nodes, self.samples))
        samples, nodes = self.samples[order], self.nodes[order]
        keep = np.r_[True, (samples[1:] != samples[:-1]) | (nodes[1:] != nodes[:-1])]
        return Requests(samples[keep], nodes[keep])


@dataclasses.dataclass(eq=False)
class EdgePiece:
    """Sampled edges of one edge set, for many samples."""

    edge_set: str
    samples: np.ndarray   # int64
    sources: np.ndarray   # 'S'
    targets: np.ndarray   # 'S'
    rows: np.ndarray      # int64 RowId of the edge in its table
    features: dict[str, FeatureValues]

    def __len__(self) -> int:
        return len(self.samples)

    def take(self, positions: np.ndarray) -> "EdgePiece":
        return EdgePiece(self.edge_set, self.samples[positions], self.sources[positions],
                         self.targets[positions], self.rows[positions],
                         {k: take(v, positions) for k, v in self.features.items()})

    @staticmethod
    def concat(parts: list["EdgePiece"]) -> "EdgePiece":
        return EdgePiece(parts[0].edge_set,
                         np.concatenate([p.samples for p in parts]),
                         np.concatenate([p.sources for p in parts]),
                         np.concatenate([p.targets for p in parts]),
                         np.concatenate([p.rows for p in parts]),
                         {k: concat([p.features[k] for p in parts]) for k in parts[0].features})


@dataclasses.dataclass(eq=False)
class SeedPiece:
    """Each sample's seed: one (sample, seed id) pair per sample."""

    samples: np.ndarray  # int64
    ids: np.ndarray      # 'S'

    def __len__(self) -> int:
        return len(self.samples)

    def take(self, positions: np.ndarray) -> "SeedPiece":
        return SeedPiece(self.samples[positions], self.ids[positions])

    @staticmethod
    def concat(parts: list["SeedPiece"]) -> "SeedPiece":
        return SeedPiece(np.concatenate([p.samples for p in parts]),
                         np.concatenate([p.ids for p in parts]))


@dataclasses.dataclass(eq=False)
class NodeFeatures:
    """Features of distinct nodes of one node set, sent once to each output shard that
    holds a sample reaching them (not once per sample: the copies into every subgraph
    happen when the shard is assembled, so Beam moves each node's features once)."""

    node_set: str
    ids: np.ndarray      # 'S', distinct
    features: dict[str, FeatureValues]

    def __len__(self) -> int:
        return len(self.ids)

    def take(self, positions: np.ndarray) -> "NodeFeatures":
        return NodeFeatures(self.node_set, self.ids[positions],
                            {k: take(v, positions) for k, v in self.features.items()})

    @staticmethod
    def concat(parts: list["NodeFeatures"]) -> "NodeFeatures":
        return NodeFeatures(parts[0].node_set, np.concatenate([p.ids for p in parts]),
                            {k: concat([p.features[k] for p in parts]) for k in parts[0].features})
