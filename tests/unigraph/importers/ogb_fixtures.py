"""Small OGB dataset folders made by the tests (nothing is downloaded), with the arrays
they hold, laid out as the `ogb` package stores them (pipelines/bench/ogb_layout.py)."""
from __future__ import annotations

import dataclasses
import os

import numpy as np

from pipelines.bench import ogb_layout


@dataclasses.dataclass
class MagLike:
    folder: str
    num_nodes: dict
    relations: dict        # (source, relation, target) -> [E, 2]
    feat: np.ndarray       # paper [N, 4] float32
    year: np.ndarray       # paper [N, 1]
    labels: np.ndarray     # paper [N, 1]
    writes_feat: np.ndarray  # [E, 2] float32
    splits: dict           # split -> paper indices


def mag_like(root, seed: int = 0, name: str = "ogbn_mag") -> MagLike:
    """ogbn-mag's layout: papers with features, years and labels, authors and
    institutions without, three relations (one with edge features), a time split."""
    rng = np.random.default_rng(seed)
    counts = {"paper": 20, "author": 12, "institution": 3}

    def edges(n, source, target):
        return np.stack([rng.integers(0, counts[source], n), rng.integers(0, counts[target], n)],
                        axis=1)

    relations = {("paper", "cites", "paper"): edges(40, "paper", "paper"),
                 ("author", "writes", "paper"): edges(30, "author", "paper"),
                 ("author", "affiliated_with", "institution"): edges(10, "author",
                                                                     "institution")}
    feat = (rng.integers(-1000, 1000, (20, 4)) / 8).astype(np.float32)  # exact in text
    year = rng.integers(2010, 2020, (20, 1))
    labels = rng.integers(0, 5, (20, 1))
    writes_feat = (rng.integers(0, 100, (30, 2)) / 4).astype(np.float32)
    papers = np.arange(20)
    splits = {"train": papers[:12], "valid": papers[12:16], "test": papers[16:]}
    folder = os.path.join(str(root), name)
    ogb_layout.write_heterogeneous(
        folder, num_nodes=counts, relations=relations, node_feat={"paper": feat},
        node_label={"paper": labels}, node_extra={"node_year": {"paper": year}},
        edge_feat={("author", "writes", "paper"): writes_feat},
        splits={"time": {"paper": splits}})
    return MagLike(folder, counts, relations, feat, year, labels, writes_feat, splits)


@dataclasses.dataclass
class ArxivLike:
    folder: str
    num_nodes: int
    edges: np.ndarray
    feat: np.ndarray
    year: np.ndarray
    labels: np.ndarray
    edge_feat: np.ndarray
    splits: dict


def arxiv_like(root, name: str = "ogbn_arxiv", seed: int = 1) -> ArxivLike:
    """ogbn-arxiv's layout: one node type with features, years and labels, edge features."""
    rng = np.random.default_rng(seed)
    n = 15
    edges = np.stack([rng.integers(0, n, 25), rng.integers(0, n, 25)], axis=1)
    feat = (rng.integers(-100, 100, (n, 3)) / 4).astype(np.float32)
    year = rng.integers(2000, 2020, (n, 1))
    labels = rng.integers(0, 4, (n, 1))
    edge_feat = (rng.integers(0, 10, (25, 2)) / 2).astype(np.float32)
    nodes = np.arange(n)
    splits = {"train": nodes[:9], "valid": nodes[9:12], "test": nodes[12:]}
    folder = os.path.join(str(root), name)
    ogb_layout.write_homogeneous(folder, num_nodes=n, edges=edges, node_feat=feat,
                                 node_label=labels, node_extra={"node_year": year},
                                 edge_feat=edge_feat, splits={"time": splits})
    return ArxivLike(folder, n, edges, feat, year, labels, edge_feat, splits)
