"""`synthetic-graph`: a seeded OGBN-MAG-shaped heterogeneous graph at any scale.

    synthetic-graph --scale 0.01 --format parquet --output /tmp/mag_0.01

writes, into the output folder, a unigraph that `sample` reads unchanged:

  graph_schema.pbtxt    node sets paper, author, field_of_study, institution; edge sets
                        cites, writes, written (writes read backwards: `edge_type: reversed`,
                        as in TF-GNN's MAG example), has_topic, affiliated_with
  sampling_spec.pbtxt   the benchmark spec (seed paper; cites 8, written 4, writes 4,
                        affiliated_with 2, has_topic 4; all RANDOM_UNIFORM)
  paper.<ext>           `#id`, `feat` (128 floats), `labels` (int64 [1]), `year` (int64 [1])
  cites/writes/has_topic/affiliated_with.<ext>   `#source`, `#target`, `#weight` (float)
  seeds.<ext>           every paper id (column `#id`)
  timed_seeds.<ext>     with --timestamps: every paper id and its year as the cut-off
                        (columns `#id`, `timestamp`)
  hub_seeds.<ext>       with --hub-edges: the papers "author/hub" wrote
  manifest.json         the arguments, counts, degree statistics and timings

Tables are written by unigraph.tables.writers (so the readers read them back to the same
columns; TFRecord's float_list holds float32, so weights read from TFRecord equal the
4-decimal float64 weights of CSV/Parquet only as float32); with --shards N each table
is `name@N.<ext>` (name-0000i-of-0000N.<ext>).

Memory. The command writes the tables streamed (`write_streamed`): paper rows are drawn
a batch (BATCH_ROWS) at a time as they are written, and one edge set at a time is drawn,
written and dropped. The draw needs the set's arrays whole (a shuffle, a sort to find
repeated pairs, the edges grouped by source: about 40 bytes per edge), so they are
memory-mapped files in a scratch folder (pipelines/synthetic_scratch.py; inside the
output, or --scratch-dir; removed at the end and on failure, and after a kill by the
next run there), worked on in place or a block (_BLOCK edges) at a time. The heap holds
arrays of node-set size and those blocks whatever the scale; the edge set is page
cache, which the kernel writes back and evicts under a memory cap
(tests/pipelines/test_synthetic_memory_cap.py), so a graph of any scale is written in
bounded memory, given the disk for its largest edge set's draw beside its tables. A cap
that leaves less page cache than that draw still completes, but slowly: the shuffles
and the sort touch the set's pages at random, and each page evicted is read again.
Every step draws the numbers and gives the values the whole-array numpy calls give, and
generate() runs the same code on heap arrays: the tables are byte for byte those of
`write_graph(generate(...))`, which holds the whole graph
(tests/pipelines/test_synthetic_streamed.py).

Counts. Scale 1.0 is OGBN-MAG: 736,389 papers, 1,134,649 authors, 59,965 fields of
study, 8,740 institutions; 5,416,271 cites, 7,145,660 writes, 7,505,078 has_topic,
1,043,998 affiliated_with. Every count is round(count * scale), at least 2 nodes and
1 edge per set; the tables hold exactly that many rows (plus the hub's edges, which
come on top of the `writes` count).

Node sets without features have no table. author, field_of_study and institution
carry no features, so, as the unigraph format allows (docs/architecture.md), they
have no table and their nodes are the ids their edges name. So that each still has exactly its nominal number of
nodes, every author has at least one `writes` edge and every field of study and
institution at least one incoming edge (the "coverage" below).

Ids are strings "<node set>/<index>" (e.g. "paper/123"); the hub author is "author/hub".

Degree model. Each end of each edge set has a popularity distribution:
  heavy  Zipf by rank: p(node) ~ rank**-a with a random rank permutation (a few hubs
         with thousands of edges, most nodes with few): cites targets (a=0.8, citation
         counts), writes sources (a=0.7, papers per author), has_topic targets (a=1.0),
         affiliated_with targets (a=1.0).
  mild   Gamma(k)-distributed weights, so degrees are negative-binomial-like around
         the mean: cites sources (k=4: out-degree stays moderate, so sampling 8 cites per
         paper keeps most of a paper's citations), writes targets (k=2), has_topic
         sources (k=4), affiliated_with sources (k=2).
An end "covered" by its edge set gets degree >= 1 for every node: sources by
degree = 1 + Multinomial(E - N, p); targets by giving N randomly chosen edges the
targets 0..N-1 (the rest are drawn from p). Covered: cites sources (every paper cites
a paper), writes sources and targets (every author wrote, every paper has an author),
has_topic sources and targets, affiliated_with targets. Other ends are drawn
i.i.d. from p, so some nodes have none of those edges (authors without institution).
Duplicates: a drawn (source, target) pair that repeats an earlier one, and a
self-citation, gets a fresh target, up to 50 rounds; the few left (only when a
source's degree nears the size of the target set, at tiny scales) stay and are
counted in manifest.json ("duplicates_left"); cites never keeps a self-loop (a
leftover one is moved to the next paper). The hub's papers are distinct when
--hub-edges <= the number of papers; beyond that they repeat.

Features. `feat` is i.i.d. N(0, 1) noise rounded to 4 decimals; `year` uniform in
2010..2019; edge weights are log-normal(0, 1) rounded to 4 decimals (>= 1e-4).
Without --planted, `labels` are uniform in [0, num_classes) (default 349, OGBN-MAG's
venue count): no signal anywhere, a pure throughput graph.

Planted task (--planted; default 8 classes, at most 128): a label that the
neighbourhood determines and the paper's own features do not predict.
  colour(q) = argmax_c feat_q[c], c < num_classes
  label(p)  = the colour most of the papers p cites have (smallest on a tie)
Generation makes this clean: every paper gets its own colour z, written into its
features as feat[z] += PLANTED_SIGNAL (5 standard deviations, so the argmax reads it
back for all but about 0.1% of papers), and, independently, a label colour t; its
cites are then redrawn, by the same popularity, among the papers of colour t (no
self-citations). So all papers p cites share one colour, the label is that colour,
and since z_p is independent of t_p a classifier on a paper's own features is at
chance, while a single sampled citation reveals the label. Classes are balanced
(t is uniform). Every paper cites at least one paper (coverage above), so every
label is defined; `planted_labels` returns -1 for a paper that cites nobody, which
the generator never produces (it refuses a scale so small that there are fewer
cites than papers). The rule is `planted_labels()` below, a pure function for tests
and training.

Planted on venues (--planted venue): the same task with the colour carried by a
categorical feature alone. `feat` stays pure noise; a paper of colour c publishes in one
of 8 venues of that colour ("venue/<c + num_classes * k>", k uniform; synthetic_features.
planted_venues), so the label is the colour of the venues of the papers a paper cites: a
model that embeds its neighbours' venues learns it, one on the numbers alone is at chance.
It implies --extra-features.

Extra features (--extra-features; pipelines/synthetic_features.py): every kind a
feature spec turns into tensors (docs/features.md): paper `venue` (a string), `tags` (a
list of strings), `tokens` (a ragged list of int64 ids); cites `intent` (a string);
writes/written `position` (int64). Each value is a pure function of (seed, its row's
index), so these columns change nothing else in the graph and are written a batch at a
time like the rest.

Timestamps (--timestamps). Every table gains an int64 scalar feature `timestamp`
(the default timestamp column, unigraph/timestamps.py), in years: a paper's is its
`year`; a cites edge's the later of its two papers' years (a citation exists once both
papers do); writes/written and has_topic edges take their paper's year;
affiliated_with edges a year uniform in 2010..2019. So every edge is no older than the
papers it touches, and a paper's own year as its seed cut-off keeps its own edges.

Randomness: every table comes from its own numpy stream, SeedSequence(seed, k) with a
fixed k per component, so the output is a function of (scale, seed, flags) alone, and
e.g. --hub-edges does not change the rest of the graph.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import time

import numpy as np

from unigraph.columnar.batches import EdgeBatch, NodeBatch
from unigraph.interrupts import interruptible
from unigraph.storage.paths import shard_names
from unigraph.schema import load_schema
from unigraph.tables.layout import FeatureSpec, seeds_layout, table_layout
from unigraph.tables.writers import write_sharded, write_table

from pipelines import synthetic_features as extra
from pipelines.synthetic_scratch import (IN_MEMORY, Scratch, blocks, choice_no_replace,
                                         count_repeats, gather, is_sorted, positions_where,
                                         ranges_into, repeat_into, repeated_runs,
                                         sorted_keys, stable_order)

FEAT_DIM = 128
OGBN_MAG_CLASSES = 349
PLANTED_DEFAULT_CLASSES = 8
PLANTED_SIGNAL = 5.0  # added to feat[colour]: 5 standard deviations of the N(0, 1) noise
BATCH_ROWS = 65536
HUB_ID = b"author/hub"
FORMATS = {"csv": ".csv", "parquet": ".parquet", "tfrecord": ".tfrecord"}
DEDUP_ROUNDS = 50
PLANTED_FEATURES = ("feat", "venue")  # where --planted puts each paper's colour

# OGBN-MAG at scale 1.0.
NODE_COUNTS = {"paper": 736_389, "author": 1_134_649, "field_of_study": 59_965,
               "institution": 8_740}
EDGE_COUNTS = {"cites": 5_416_271, "writes": 7_145_660, "has_topic": 7_505_078,
               "affiliated_with": 1_043_998}
EDGE_ENDS = {"cites": ("paper", "paper"), "writes": ("author", "paper"),
             "has_topic": ("paper", "field_of_study"),
             "affiliated_with": ("author", "institution")}


@dataclasses.dataclass(frozen=True)
class EndModel:
    """How one end of an edge set picks its nodes: ('zipf', a) or ('gamma', k), covered or not."""

    kind: str
    param: float
    covered: bool


# (source model, target model) per edge set; see the module docstring.
DEGREE_MODELS = {
    "cites": (EndModel("gamma", 4.0, True), EndModel("zipf", 0.8, False)),
    "writes": (EndModel("zipf", 0.7, True), EndModel("gamma", 2.0, True)),
    "has_topic": (EndModel("gamma", 4.0, True), EndModel("zipf", 1.0, True)),
    "affiliated_with": (EndModel("gamma", 2.0, False), EndModel("zipf", 1.0, True)),
}

# Stream numbers of SeedSequence(seed, k): fixed forever, so outputs stay stable.
_STREAMS = {"feat": 1, "year": 2, "labels": 3, "cites": 4, "writes": 5, "has_topic": 6,
            "affiliated_with": 7, "hub": 8, "planted": 9, "affiliated_time": 10}
TIME_FEATURE = "timestamp"  # the default timestamp column (unigraph.timestamps)


def scaled_counts(scale: float) -> tuple[dict[str, int], dict[str, int]]:
    """(node counts, edge counts) at `scale`: round(count * scale), >= 2 nodes, >= 1 edge."""
    if not scale > 0:
        raise ValueError(f"scale must be > 0, got {scale}")
    nodes = {k: max(2, int(round(v * scale))) for k, v in NODE_COUNTS.items()}
    edges = {k: max(1, int(round(v * scale))) for k, v in EDGE_COUNTS.items()}
    return nodes, edges


def _rng(seed: int, stream: str) -> np.random.Generator:
    return np.random.default_rng(np.random.SeedSequence([seed, _STREAMS[stream]]))


# ---- degree model ---------------------------------------------------------------------

def popularity(rng: np.random.Generator, n: int, model: EndModel) -> np.ndarray:
    """Probabilities over n nodes (float64, sums to 1)."""
    if model.kind == "zipf":
        ranks = rng.permutation(n).astype(np.float64) + 1.0
        weights = ranks ** -model.param
    elif model.kind == "gamma":
        weights = rng.gamma(model.param, 1.0, n)
    else:
        raise ValueError(f"unknown popularity model {model.kind!r}")
    return weights / weights.sum()


def _draw(rng: np.random.Generator, cdf: np.ndarray, size: int) -> np.ndarray:
    """`size` i.i.d. draws from the distribution with cumulative sums `cdf` (few draws)."""
    index = np.searchsorted(cdf, rng.random(size) * cdf[-1], side="right")
    return np.minimum(index, len(cdf) - 1).astype(np.int64)


def _draw_many(rng: np.random.Generator, p: np.ndarray, size: int,
               scratch: Scratch = IN_MEMORY) -> np.ndarray:
    """`size` i.i.d. draws from `p`, as multinomial counts in a random order.

    The same distribution as `_draw`, but without `size` random lookups into a large
    table: several times faster for millions of draws.
    """
    index = repeat_into(scratch.empty(size, np.int64), rng.multinomial(size, p), _BLOCK)
    rng.shuffle(index)  # a plain ndarray (a view of the mapped file): numpy's fast path
    return index


def _covered_sources(rng, n: int, e: int, p: np.ndarray,
                     scratch: Scratch = IN_MEMORY) -> np.ndarray:
    """Source indices, every node at least once, sorted: degree = 1 + Multinomial(e - n, p)."""
    degrees = 1 + rng.multinomial(e - n, p)
    return repeat_into(scratch.empty(e, np.int64), degrees, _BLOCK)


def draw_edges(rng: np.random.Generator, n_src: int, n_tgt: int, n_edges: int,
               src_model: EndModel, tgt_model: EndModel, *, no_self_loops: bool = False,
               scratch: Scratch = IN_MEMORY) -> tuple[np.ndarray, np.ndarray, int]:
    """(source index, target index, duplicates left) of one edge set; see the docstring.
    Every array of the set's size is `scratch`'s (on disk for write_streamed) and is
    worked on in place or a block at a time; the caller frees the two it gets back."""
    p_src = popularity(rng, n_src, src_model)
    p_tgt = popularity(rng, n_tgt, tgt_model)
    if src_model.covered and n_edges >= n_src:
        sources = _covered_sources(rng, n_src, n_edges, p_src, scratch)
    else:
        sources = _draw_many(rng, p_src, n_edges, scratch)
    targets = _draw_many(rng, p_tgt, n_edges, scratch)
    fixed = scratch.empty(n_edges, bool)
    fixed.fill(False)
    if tgt_model.covered and n_edges >= n_tgt:
        slots = choice_no_replace(rng, n_edges, n_tgt, scratch, _BLOCK)
        targets[slots] = rng.permutation(n_tgt)
        fixed[slots] = True
        del slots
    cdf_tgt = np.cumsum(p_tgt)
    same_source = _SourceIndex(sources, n_src, scratch)
    redraw = _bad_edges(sources, targets, fixed, n_tgt, no_self_loops, scratch)
    for _ in range(DEDUP_ROUNDS):
        if not len(redraw):
            break
        for lo, hi in blocks(len(redraw), _BLOCK):  # one stream: the numbers drawn whole
            targets[redraw[lo:hi]] = _draw(rng, cdf_tgt, hi - lo)
        # A new repeat shares its source with a redrawn edge: check only those sources
        # (at first, a good share of the set: they are the scratch's too).
        check = same_source(redraw)
        scratch.free(redraw)
        subset = [gather(a, check, scratch, _BLOCK) for a in (sources, targets, fixed)]
        found = _bad_edges(*subset, n_tgt, no_self_loops, scratch)
        redraw = gather(check, found, scratch, _BLOCK)
        scratch.free(check, found, *subset)
        del check, found, subset
    if no_self_loops:
        loops = positions_where(lambda lo, hi: sources[lo:hi] == targets[lo:hi],
                                n_edges, _BLOCK)
        targets[loops] = (targets[loops] + 1) % n_tgt
        merged = np.union1d(redraw, loops)
        scratch.free(redraw)
        redraw = merged
    check = same_source(redraw)
    scratch.free(redraw)
    keys = np.sort(sources[check] * n_tgt + targets[check])
    duplicates = int(np.count_nonzero(keys[1:] == keys[:-1]))
    scratch.free(check)
    same_source.free()
    scratch.free(fixed)
    return sources, targets, duplicates


class _SourceIndex:
    """Edges grouped by source (CSR), to list every edge of a few sources quickly."""

    def __init__(self, sources: np.ndarray, n_src: int, scratch: Scratch = IN_MEMORY):
        self.sources, self.scratch = sources, scratch
        counts = np.bincount(sources, minlength=n_src)
        self.splits = np.concatenate([[0], np.cumsum(counts)])
        # The edges in source order: np.argsort(sources, kind="stable"), by a counting sort.
        self.by_source = None if is_sorted(sources, _BLOCK) else stable_order(
            sources, self.splits, scratch.empty(len(sources), np.int64), _BLOCK)

    def __call__(self, positions: np.ndarray) -> np.ndarray:
        """Positions of every edge whose source is the source of an edge in `positions`."""
        if not len(positions):
            return positions
        seen = np.zeros(len(self.splits) - 1, bool)  # np.unique, in node-set memory
        for lo, hi in blocks(len(positions), _BLOCK):
            seen[self.sources[positions[lo:hi]]] = True
        nodes = np.flatnonzero(seen)
        starts, lengths = self.splits[nodes], self.splits[nodes + 1] - self.splits[nodes]
        index = ranges_into(self.scratch.empty(int(lengths.sum()), np.int64), starts,
                            lengths, _BLOCK)  # the scratch's: freed by the caller
        if self.by_source is not None:
            for lo, hi in blocks(len(index), _BLOCK):
                index[lo:hi] = self.by_source[index[lo:hi]]
            index.sort()
        return index

    def free(self) -> None:
        if self.by_source is not None:
            self.scratch.free(self.by_source)
            self.by_source = None


# Edges per block wherever a step looks at every edge: its temporaries stay a block's.
_BLOCK = 1 << 20


def _isin_sorted(values: np.ndarray, sorted_set: np.ndarray) -> np.ndarray:
    """values in sorted_set, for a small sorted_set: one binary search per value."""
    at = np.minimum(np.searchsorted(sorted_set, values), len(sorted_set) - 1)
    return sorted_set[at] == values


def _bad_edges(sources, targets, fixed, n_tgt, no_self_loops,
               scratch: Scratch = IN_MEMORY) -> np.ndarray:
    """Positions to redraw: repeats of an earlier pair (a covered edge is kept) and self-loops,
    in the order of their (source, target) key (a scratch array, or a few self-loops).
    Sorts one array of keys beside the edges (`scratch`'s: in place, on disk for
    write_streamed), then finds the repeats' edges for a few keys at a time (about _BLOCK
    edges), so that what is held stays a block's."""
    keys = sorted_keys(sources, targets, n_tgt, scratch, _BLOCK)
    repeated, edges_per_key = repeated_runs(keys, scratch, _BLOCK)
    scratch.free(keys)
    del keys
    bad = scratch.empty(int(edges_per_key.sum()), np.int64)
    found = 0
    for first, last in _key_groups(edges_per_key):
        some = repeated[first:last]
        candidates = positions_where(
            lambda lo, hi: _isin_sorted(sources[lo:hi] * n_tgt + targets[lo:hi], some),
            len(sources), _BLOCK)
        keys = sources[candidates] * n_tgt + targets[candidates]
        order = np.lexsort((~fixed[candidates], keys))  # a covered edge first
        grouped = keys[order]
        later = np.concatenate([[False], grouped[1:] == grouped[:-1]])
        later = candidates[order[later]]
        later = later[~fixed[later]]
        bad[found:found + len(later)] = later
        found += len(later)
    scratch.free(repeated, edges_per_key)
    bad = bad[:found]
    if no_self_loops:
        loops = positions_where(lambda lo, hi: sources[lo:hi] == targets[lo:hi],
                                len(sources), _BLOCK)
        merged = np.union1d(bad, loops)  # sorted; few, for cites
        scratch.free(bad)
        bad = merged[~fixed[merged]]
    return bad


def _key_groups(edges_per_key: np.ndarray):
    """(first, last) runs of keys with about _BLOCK edges in all (a key with more, alone).
    Each key has two edges or more, so _BLOCK keys ahead hold the end of a run."""
    first = 0
    while first < len(edges_per_key):
        ahead = np.cumsum(edges_per_key[first:first + _BLOCK])
        last = first + max(1, int(np.searchsorted(ahead, _BLOCK, side="right")))
        yield first, last
        first = last


def degree_stats(index: np.ndarray, n: int) -> dict:
    """max/mean degree, share of edges held by the top 1% of nodes, Gini coefficient."""
    degrees = np.bincount(index, minlength=n)
    ordered = np.sort(degrees)
    total = max(int(ordered.sum()), 1)
    top = max(1, n // 100)
    cum = np.cumsum(ordered, dtype=np.float64)
    gini = float((n + 1 - 2 * cum.sum() / cum[-1]) / n) if cum[-1] else 0.0
    return {"max": int(ordered[-1]), "mean": round(total / n, 3),
            "zero": int(np.count_nonzero(degrees == 0)),
            "top1pct_share": round(float(ordered[-top:].sum()) / total, 4),
            "gini": round(gini, 4)}


# ---- planted task ---------------------------------------------------------------------

def planted_labels(num_papers: int, cites_source_index: np.ndarray,
                   cites_target_index: np.ndarray, feat: np.ndarray,
                   num_classes: int) -> np.ndarray:
    """label(p) = the colour (argmax of feat[q, :num_classes]) most papers q that p cites
    have; ties go to the smallest colour, a repeated (p, q) row counts twice.

    int64 [num_papers]; -1 for a paper with no cites row.
    """
    feat = np.asarray(feat)
    if not 1 <= num_classes <= feat.shape[1]:
        raise ValueError(f"num_classes must be in 1..{feat.shape[1]}, got {num_classes}")
    return labels_from_colours(num_papers, cites_source_index, cites_target_index,
                               colours(feat, num_classes), num_classes)


def colours(feat: np.ndarray, num_classes: int) -> np.ndarray:
    """colour(q) = argmax_c feat_q[c], c < num_classes (int64), for rows of features."""
    return np.argmax(feat[:, :num_classes], axis=1).astype(np.int64)


def labels_from_colours(num_papers: int, cites_source_index: np.ndarray,
                        cites_target_index: np.ndarray, colour: np.ndarray,
                        num_classes: int) -> np.ndarray:
    """planted_labels, given every paper's colour."""
    votes = np.zeros(num_papers * num_classes, np.int64)
    for lo, hi in blocks(len(cites_source_index), _BLOCK):
        src = np.asarray(cites_source_index[lo:hi], dtype=np.int64)
        keys = src * num_classes + colour[np.asarray(cites_target_index[lo:hi], np.int64)]
        # Count over the keys' span only: cites are in source order, so a block's is short.
        first = int(keys.min())
        votes[first:int(keys.max()) + 1] += np.bincount(keys - first)
    votes = votes.reshape(num_papers, num_classes)
    labels = np.argmax(votes, axis=1).astype(np.int64)
    labels[votes.sum(axis=1) == 0] = -1
    return labels


def plant_colours(rng: np.random.Generator, num_papers: int, sources: np.ndarray,
                  targets: np.ndarray, num_classes: int, scratch: Scratch = IN_MEMORY
                  ) -> tuple[np.ndarray, np.ndarray, int]:
    """Every paper's own colour (written into its features by the caller: feat[p, own[p]]
    += PLANTED_SIGNAL) and the cites targets redrawn so that each paper cites only papers
    of its (independent) label colour.

    Returns (own colours, the new targets, the number of duplicate (source, target) pairs
    left). Within a colour, targets are drawn by the popularity the first draw gave them
    (in-degree + 1), so the cited side stays skewed. The new targets and the arrays of the
    set's size it works with are `scratch`'s, filled a block at a time (a colour's draws
    come block after block from the same stream: the numbers drawn whole).
    """
    n = num_papers
    own = rng.integers(0, num_classes, n)
    label_colour = rng.integers(0, num_classes, n)
    popularity = np.bincount(targets, minlength=n).astype(np.float64) + 1.0
    wanted = scratch.empty(len(sources), np.int8)  # num_classes <= FEAT_DIM (128)
    new_targets = scratch.empty(len(targets), np.int64)
    for lo, hi in blocks(len(sources), _BLOCK):
        wanted[lo:hi] = label_colour[sources[lo:hi]]
        new_targets[lo:hi] = targets[lo:hi]
    for colour in range(num_classes):
        members = np.flatnonzero(own == colour)
        cdf = np.cumsum(popularity[members])
        for lo, hi in blocks(len(sources), _BLOCK):
            edges = lo + np.flatnonzero(wanted[lo:hi] == colour)
            if not len(edges):
                continue
            picks = np.minimum(np.searchsorted(cdf, rng.random(len(edges)) * cdf[-1]),
                               len(members) - 1)
            # A self-citation moves to the next paper of the colour (none if it is alone).
            self_cite = members[picks] == sources[edges]
            picks[self_cite] = (picks[self_cite] + 1) % len(members)
            new_targets[edges] = members[picks]
    scratch.free(wanted)
    keys = sorted_keys(sources, new_targets, n, scratch, _BLOCK)
    duplicates = count_repeats(keys, _BLOCK)
    scratch.free(keys)
    return own, new_targets, duplicates


# ---- the graph in memory --------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class Recipe:
    """A graph's arguments, checked, and its counts: what generate() and write_streamed()
    share."""

    scale: float
    seed: int
    nodes: dict[str, int]
    counts: dict[str, int]   # edges per edge set, before the hub's
    hub_edges: int
    planted: bool
    num_classes: int
    planted_feature: str = "feat"  # where the planted colour is: "feat" or "venue"


def recipe(scale: float, seed: int, *, hub_edges: int = 0, planted: bool = False,
           num_classes: int | None = None, planted_feature: str = "feat") -> Recipe:
    if planted_feature not in PLANTED_FEATURES:
        raise ValueError(f"the planted feature must be one of {', '.join(PLANTED_FEATURES)}, "
                         f"got {planted_feature!r}")
    if num_classes is None:
        num_classes = PLANTED_DEFAULT_CLASSES if planted else OGBN_MAG_CLASSES
    if num_classes < 1 or (planted and num_classes > FEAT_DIM):
        raise ValueError(f"num_classes must be in 1..{FEAT_DIM if planted else 'inf'} "
                         f"{'with --planted ' if planted else ''}, got {num_classes}")
    if hub_edges < 0:
        raise ValueError(f"hub_edges must be >= 0, got {hub_edges}")
    nodes, counts = scaled_counts(scale)
    if planted and counts["cites"] < nodes["paper"]:
        raise ValueError(f"--planted needs every paper to cite one, but scale {scale} gives "
                         f"{counts['cites']} cites for {nodes['paper']} papers; use a larger "
                         f"scale")
    return Recipe(scale, seed, nodes, counts, hub_edges, planted, num_classes,
                  planted_feature if planted else "feat")


# Column draws. numpy's generators draw element after element, so `count` rows drawn in
# pieces are the rows drawn at once: write_streamed draws each column a chunk at a time
# from the same stream that generate() draws whole.

def feat_rows(rng: np.random.Generator, count: int) -> np.ndarray:
    """float32 [count, FEAT_DIM]: N(0, 1) rounded to 4 decimals (stream "feat")."""
    return np.round(rng.standard_normal((count, FEAT_DIM), dtype=np.float32), 4)


def year_rows(rng: np.random.Generator, count: int) -> np.ndarray:
    """int64 years uniform in 2010..2019 (streams "year" and "affiliated_time")."""
    return rng.integers(2010, 2020, count, dtype=np.int64)


def label_rows(rng: np.random.Generator, count: int, num_classes: int) -> np.ndarray:
    """int64 labels uniform in [0, num_classes) (stream "labels"; without --planted)."""
    return rng.integers(0, num_classes, count, dtype=np.int64)


def weight_rows(rng: np.random.Generator, count: int) -> np.ndarray:
    """float64 edge weights: log-normal(0, 1) rounded to 4 decimals, at least 1e-4 (drawn
    from an edge set's stream after its edges, and from "hub" after the hub's papers)."""
    return np.maximum(np.round(rng.lognormal(0.0, 1.0, count), 4), 1e-4)


def edge_years(name: str, sources: np.ndarray, targets: np.ndarray, year: np.ndarray,
               affiliated: np.random.Generator) -> np.ndarray:
    """int64 year of each of these edges of `name` (rows in table order; `affiliated`,
    the stream "affiliated_time", is drawn for affiliated_with only). See "Timestamps" in
    the module docstring."""
    if name == "cites":
        return np.maximum(year[sources], year[targets])
    if name == "writes":
        return year[targets]
    if name == "has_topic":
        return year[sources]
    return year_rows(affiliated, len(sources))


def draw_edge_set(r: Recipe, name: str, scratch: Scratch = IN_MEMORY
                  ) -> tuple[np.ndarray, np.ndarray, int, np.random.Generator]:
    """(source index, target index, duplicates left, the set's stream ready to draw its
    weights) of one edge set, before the hub and the planted redraw; the index arrays
    are `scratch`'s."""
    src_set, tgt_set = EDGE_ENDS[name]
    rng = _rng(r.seed, name)
    src_model, tgt_model = DEGREE_MODELS[name]
    sources, targets, dups = draw_edges(rng, r.nodes[src_set], r.nodes[tgt_set],
                                        r.counts[name], src_model, tgt_model,
                                        no_self_loops=(src_set == tgt_set), scratch=scratch)
    return sources, targets, dups, rng


def draw_hub(r: Recipe) -> tuple[np.ndarray, np.ndarray]:
    """(the papers the hub wrote, their writes edges' weights); empty without a hub."""
    if not r.hub_edges:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float64)
    n_papers = r.nodes["paper"]
    rng = _rng(r.seed, "hub")
    distinct = min(r.hub_edges, n_papers)
    hub_papers = rng.choice(n_papers, distinct, replace=False).astype(np.int64)
    if r.hub_edges > distinct:
        hub_papers = np.concatenate(
            [hub_papers, rng.integers(0, n_papers, r.hub_edges - distinct, dtype=np.int64)])
    return hub_papers, weight_rows(rng, r.hub_edges)


@dataclasses.dataclass
class SyntheticGraph:
    """Index arrays of every set; ids are made from them when the tables are written."""

    scale: float
    seed: int
    num_nodes: dict[str, int]
    edges: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]]  # (source, target, weight)
    feat: np.ndarray       # float32 [papers, 128]
    labels: np.ndarray     # int64 [papers]
    year: np.ndarray       # int64 [papers]
    num_classes: int
    planted: bool
    hub_papers: np.ndarray  # int64 paper indices the hub wrote (empty without a hub)
    duplicates_left: dict[str, int]
    planted_feature: str = "feat"  # where the planted colour is: "feat" or "venue"
    venues: np.ndarray | None = None  # int64 venue number per paper (planted on venue)

    def edge_times(self, name: str) -> np.ndarray:
        """int64 year of every edge of `name` (see "Timestamps" in the module docstring)."""
        sources, targets, _ = self.edges[name]
        return edge_years(name, sources, targets, self.year, _rng(self.seed, "affiliated_time"))

    @property
    def hub_index(self) -> int:
        """The hub's author index in `edges['writes']` sources (one past the last author)."""
        return self.num_nodes["author"]


def generate(scale: float, seed: int, *, hub_edges: int = 0, planted: bool = False,
             num_classes: int | None = None, planted_feature: str = "feat") -> SyntheticGraph:
    """The whole graph as arrays; deterministic in (scale, seed, hub_edges, planted, classes,
    planted_feature). For small graphs (tests, examples): `write_streamed` writes the
    same tables at any scale without holding them. `planted_feature` "venue": the colours
    are in the papers' venues, not in `feat` (written by write_graph's extra features)."""
    r = recipe(scale, seed, hub_edges=hub_edges, planted=planted, num_classes=num_classes,
               planted_feature=planted_feature)
    nodes, n_papers = r.nodes, r.nodes["paper"]
    feat = feat_rows(_rng(seed, "feat"), n_papers)
    year = year_rows(_rng(seed, "year"), n_papers)
    edges, duplicates = {}, {}
    for name in EDGE_ENDS:
        sources, targets, duplicates[name], rng = draw_edge_set(r, name)
        edges[name] = (sources, targets, weight_rows(rng, r.counts[name]))
    hub_papers, hub_weights = draw_hub(r)
    if hub_edges:
        sources, targets, weights = edges["writes"]
        edges["writes"] = (
            np.concatenate([sources, np.full(hub_edges, nodes["author"], dtype=np.int64)]),
            np.concatenate([targets, hub_papers]), np.concatenate([weights, hub_weights]))
    venues = None
    if planted:
        sources, targets, weights = edges["cites"]
        own, targets, duplicates["cites"] = plant_colours(_rng(seed, "planted"), n_papers,
                                                          sources, targets, r.num_classes)
        edges["cites"] = (sources, targets, weights)
        if r.planted_feature == "venue":  # feat stays noise; a venue's number tells its colour
            venues = extra.planted_venues(seed, np.arange(n_papers), own, r.num_classes)
            colour = extra.venue_colours(venues, r.num_classes)
        else:
            feat[np.arange(n_papers), own] += PLANTED_SIGNAL
            colour = colours(feat, r.num_classes)
        labels = labels_from_colours(n_papers, sources, targets, colour, r.num_classes)
        assert (labels >= 0).all(), "every paper cites a paper"
    else:
        labels = label_rows(_rng(seed, "labels"), n_papers, r.num_classes)
    return SyntheticGraph(scale, seed, nodes, edges, feat, labels, year, r.num_classes,
                          planted, hub_papers, duplicates, r.planted_feature, venues)


# ---- files ----------------------------------------------------------------------------

def node_ids(node_set: str, index: np.ndarray, hub_index: int | None = None) -> np.ndarray:
    """b"<node_set>/<index>" for every index (bytes 'S' array); the hub index as author/hub."""
    # np.strings: numpy 2 (fast); np.char: the same on numpy 1.26, which setup.py allows.
    ids = getattr(np, "strings", np.char).add(f"{node_set}/".encode(),
                                              np.asarray(index).astype("S"))
    if hub_index is not None:
        ids[np.asarray(index) == hub_index] = HUB_ID
    return ids


def table_name(name: str, fmt: str, shards: int) -> str:
    ext = FORMATS[fmt]
    return f"{name}@{shards}{ext}" if shards > 1 else f"{name}{ext}"


def schema_text(fmt: str, shards: int, note: str = "", timestamps: bool = False,
                extra_features: bool = False) -> str:
    """graph_schema.pbtxt of a generated graph."""
    t = {name: table_name(name, fmt, shards) for name in ("paper", *EDGE_COUNTS)}
    header = f"# OGBN-MAG-shaped synthetic graph (pipelines/synthetic.py). {note}".rstrip()
    time = (f'features {{ key: "{TIME_FEATURE}" value {{ dtype: DT_INT64 }} }} '
            if timestamps else "")
    more = {name: extra.schema_lines(name) + " " if extra_features else ""
            for name in ("paper", "cites", "writes", "written")}
    text = f"""{header}
node_sets {{
  key: "paper"
  value {{
    features {{ key: "feat"   value {{ dtype: DT_FLOAT shape {{ dim {{ size: {FEAT_DIM} }} }} }} }}
    features {{ key: "labels" value {{ dtype: DT_INT64 shape {{ dim {{ size: 1 }} }} }} }}
    features {{ key: "year"   value {{ dtype: DT_INT64 shape {{ dim {{ size: 1 }} }} }} }}
    {time}{more['paper']}metadata {{ filename: "{t['paper']}" }}
  }}
}}
# Featureless node sets without tables: their nodes are the ids the edges name.
node_sets {{ key: "author" value {{}} }}
node_sets {{ key: "field_of_study" value {{}} }}
node_sets {{ key: "institution" value {{}} }}
# Every edge table has a float '#weight' column (used by TOP_K and RANDOM_WEIGHTED).
edge_sets {{
  key: "cites"
  value {{ source: "paper" target: "paper" {time}{more['cites']}metadata {{ filename: "{t['cites']}" }} }}
}}
edge_sets {{
  key: "writes"
  value {{ source: "author" target: "paper" {time}{more['writes']}metadata {{ filename: "{t['writes']}" }} }}
}}
edge_sets {{
  key: "written"
  value {{
    source: "paper" target: "author"
    {time}{more['written']}metadata {{ filename: "{t['writes']}" extra {{ key: "edge_type" value: "reversed" }} }}
  }}
}}
edge_sets {{
  key: "has_topic"
  value {{ source: "paper" target: "field_of_study" {time}metadata {{ filename: "{t['has_topic']}" }} }}
}}
edge_sets {{
  key: "affiliated_with"
  value {{ source: "author" target: "institution" {time}metadata {{ filename: "{t['affiliated_with']}" }} }}
}}
"""
    return text


def spec_text(strategy: str = "RANDOM_UNIFORM") -> str:
    """The benchmark SamplingSpec, every op with `strategy`."""
    ops = [("seed->paper", ["seed"], "cites", 8),
           ("paper->author", ["seed", "seed->paper"], "written", 4),
           ("author->paper", ["paper->author"], "writes", 4),
           ("author->institution", ["paper->author"], "affiliated_with", 2),
           ("paper->field_of_study", ["seed", "seed->paper", "author->paper"], "has_topic", 4)]
    lines = ["# The benchmark spec (pipelines/synthetic.py).",
             'seed_op { op_name: "seed" node_set_name: "paper" }']
    for name, inputs, edge_set, k in ops:
        names = ", ".join(f'"{i}"' for i in inputs)
        lines.append(f'sampling_ops {{ op_name: "{name}" input_op_names: [{names}] '
                     f'edge_set_name: "{edge_set}" sample_size: {k} strategy: {strategy} }}')
    return "\n".join(lines) + "\n"


def _chunks(n: int):
    rows = BATCH_ROWS
    for lo in range(0, n, rows):
        yield lo, min(n, lo + rows)


def _shard_paths(folder: str, name: str, fmt: str, shards: int) -> list[str]:
    pattern = os.path.join(folder, table_name(name, fmt, shards))
    return shard_names(pattern) if shards > 1 else [pattern]


class _Folder:
    """The output folder of one graph: its schema and spec, then its tables one at a
    time, each written batch by batch from `chunk(lo, hi)` functions that are called in
    row order (so a function may draw its rows from a random stream as it goes).
    `extra_seed`: the graph's seed, to write the extra features (synthetic_features: pure
    functions of the seed and the rows), or None."""

    def __init__(self, output: str, fmt: str, shards: int, note: str, timestamps: bool,
                 extra_seed: int | None = None):
        if fmt not in FORMATS:
            raise ValueError(f"format must be one of {', '.join(FORMATS)}, got {fmt!r}")
        if shards < 1:
            raise ValueError(f"shards must be >= 1, got {shards}")
        self.output, self.fmt, self.shards, self.timestamps = output, fmt, shards, timestamps
        self.extra_seed = extra_seed
        os.makedirs(output, exist_ok=True)
        schema_path = os.path.join(output, "graph_schema.pbtxt")
        with open(schema_path, "w") as f:
            f.write(schema_text(fmt, shards, note, timestamps, extra_seed is not None))
        with open(os.path.join(output, "sampling_spec.pbtxt"), "w") as f:
            f.write(spec_text())
        self.loaded = load_schema(schema_path)
        self.timings: dict[str, float] = {}

    def papers(self, n_papers: int, feat, labels, year: np.ndarray, venues=None) -> None:
        """The paper table; `feat(lo, hi)`, `labels(lo, hi)` and `venues(lo, hi)` (the
        planted venue numbers, or None) give rows lo:hi."""
        started = time.perf_counter()

        def batches():
            for lo, hi in _chunks(n_papers):
                index = np.arange(lo, hi, dtype=np.int64)
                features = {"feat": feat(lo, hi), "labels": labels(lo, hi)[:, None],
                            "year": year[lo:hi, None]}
                if self.timestamps:
                    features[TIME_FEATURE] = year[lo:hi]
                if self.extra_seed is not None:
                    features.update(extra.paper_features(
                        self.extra_seed, index, None if venues is None else venues(lo, hi)))
                yield NodeBatch("paper", node_ids("paper", index), index, features)

        write_sharded(_shard_paths(self.output, "paper", self.fmt, self.shards),
                      table_layout(self.loaded, "nodes", "paper"), batches())
        self.timings["paper"] = round(time.perf_counter() - started, 3)

    def edges(self, name: str, sources: np.ndarray, targets: np.ndarray, weights,
              times, hub: int | None) -> None:
        """An edge table; `weights(lo, hi)` and `times(lo, hi)` (None without
        --timestamps) give rows lo:hi; the source index `hub` is the hub author."""
        started = time.perf_counter()
        src_set, tgt_set = EDGE_ENDS[name]

        def batches():
            for lo, hi in _chunks(len(sources)):
                index = np.arange(lo, hi, dtype=np.int64)
                features = {} if times is None else {TIME_FEATURE: times(lo, hi)}
                if self.extra_seed is not None:
                    features.update(extra.edge_features(self.extra_seed, name, index))
                yield EdgeBatch(name, node_ids(src_set, sources[lo:hi], hub),
                                node_ids(tgt_set, targets[lo:hi]), index, weights(lo, hi),
                                features)

        write_sharded(_shard_paths(self.output, name, self.fmt, self.shards),
                      table_layout(self.loaded, "edges", name), batches())
        self.timings[name] = round(time.perf_counter() - started, 3)

    def seeds(self, n_papers: int, hub_papers: np.ndarray, year: np.ndarray) -> dict:
        """seeds, hub_seeds (with a hub) and timed_seeds (with timestamps): their names."""
        started = time.perf_counter()
        ext = FORMATS[self.fmt]

        def seed_batches(index, times=None):
            for lo, hi in _chunks(len(index)):
                yield NodeBatch("seeds", node_ids("paper", index[lo:hi]),
                                np.arange(lo, hi, dtype=np.int64),
                                {} if times is None else {TIME_FEATURE: times[lo:hi]})

        seeds = {"all": f"seeds{ext}"}
        every = np.arange(n_papers, dtype=np.int64)
        write_table(os.path.join(self.output, seeds["all"]), seeds_layout(),
                    seed_batches(every))
        if len(hub_papers):
            seeds["hub"] = f"hub_seeds{ext}"
            write_table(os.path.join(self.output, seeds["hub"]), seeds_layout(),
                        seed_batches(np.unique(hub_papers)))
        if self.timestamps:  # every paper, its own year as its cut-off
            seeds["timed"] = f"timed_seeds{ext}"
            timed = dataclasses.replace(seeds_layout(), features=(
                FeatureSpec(TIME_FEATURE, np.dtype(np.int64), (), "DT_INT64"),))
            write_table(os.path.join(self.output, seeds["timed"]), timed,
                        seed_batches(every, year))
        self.timings["seeds"] = round(time.perf_counter() - started, 3)
        return seeds


def _note(scale, seed, planted, num_classes, hub_edges) -> str:
    return (f"scale={scale} seed={seed} planted={planted} classes={num_classes} "
            f"hub_edges={hub_edges}")


def _edge_degrees(name: str, sources: np.ndarray, targets: np.ndarray, nodes: dict,
                  hub: bool) -> dict:
    src, tgt = EDGE_ENDS[name]
    return {"out": degree_stats(sources, nodes[src] + (name == "writes" and hub)),
            "in": degree_stats(targets, nodes[tgt])}


def _manifest(r: Recipe, folder: _Folder, edges: dict, duplicates: dict, degrees: dict,
              seeds: dict) -> dict:
    return {
        "scale": r.scale, "seed": r.seed, "format": folder.fmt, "shards": folder.shards,
        "planted": r.planted, "num_classes": r.num_classes, "timestamps": folder.timestamps,
        "extra_features": folder.extra_seed is not None,
        **({"planted_feature": r.planted_feature} if r.planted else {}),
        "hub_edges": r.hub_edges, "nodes": r.nodes, "edges": edges,
        "duplicates_left": duplicates, "degrees": degrees, "seeds": seeds,
        "write_seconds": folder.timings, "bytes": _folder_bytes(folder.output),
    }


def write_graph(graph: SyntheticGraph, output: str, fmt: str, shards: int = 1, *,
                timestamps: bool = False, extra_features: bool = False) -> dict:
    """Writes schema, spec, tables, seeds and manifest.json's content into `output` from a
    graph in memory; returns the manifest. `timestamps`: the `timestamp` columns and
    timed_seeds (module docstring); `extra_features`: the venue, tags, tokens, intent and
    position columns (pipelines/synthetic_features.py; always with a graph planted on
    venues)."""
    hub_edges = len(graph.hub_papers)
    extra_features = extra_features or graph.venues is not None
    r = Recipe(graph.scale, graph.seed, graph.num_nodes, {}, hub_edges, graph.planted,
               graph.num_classes, graph.planted_feature)
    folder = _Folder(output, fmt, shards, _note(graph.scale, graph.seed, graph.planted,
                                                graph.num_classes, hub_edges), timestamps,
                     graph.seed if extra_features else None)
    n_papers = graph.num_nodes["paper"]
    folder.papers(n_papers, lambda lo, hi: graph.feat[lo:hi],
                  lambda lo, hi: graph.labels[lo:hi], graph.year,
                  None if graph.venues is None else lambda lo, hi: graph.venues[lo:hi])
    for name in EDGE_ENDS:
        sources, targets, weights = graph.edges[name]
        times = graph.edge_times(name) if timestamps else None
        folder.edges(name, sources, targets, lambda lo, hi, w=weights: w[lo:hi],
                     None if times is None else lambda lo, hi, t=times: t[lo:hi],
                     graph.hub_index if name == "writes" else None)
    seeds = folder.seeds(n_papers, graph.hub_papers, graph.year)
    return _manifest(r, folder, {name: int(len(e[0])) for name, e in graph.edges.items()},
                     graph.duplicates_left,
                     {name: _edge_degrees(name, graph.edges[name][0], graph.edges[name][1],
                                          graph.num_nodes, bool(hub_edges))
                      for name in EDGE_ENDS}, seeds)


class _Rows:
    """A column drawn chunk after chunk from one random stream: rows lo:hi, asked for in
    row order, are the rows lo:hi of the column drawn whole (numpy's generators draw
    element after element)."""

    def __init__(self, rng: np.random.Generator, draw):
        self.rng, self.draw, self.at = rng, draw, 0

    def __call__(self, lo: int, hi: int) -> np.ndarray:
        if lo != self.at:
            raise AssertionError(f"rows {lo}:{hi} asked for after row {self.at}")
        self.at = hi
        return self.draw(self.rng, hi - lo)


def write_streamed(output: str, fmt: str, shards: int = 1, *, scale: float, seed: int,
                   hub_edges: int = 0, planted: bool = False, num_classes: int | None = None,
                   timestamps: bool = False, planted_feature: str = "feat",
                   extra_features: bool = False, scratch_dir: str | None = None) -> dict:
    """The tables of write_graph(generate(...)), byte for byte, without holding the graph:
    paper rows are drawn a batch at a time as they are written, and each edge set is drawn,
    written and dropped before the next. The arrays of an edge set's size (its index
    arrays, and what its draw shuffles, sorts and groups) are memory-mapped files in a
    scratch folder made inside `scratch_dir` (default: inside `output`) and removed at the
    end, whether the run succeeds or fails (a killed run's, by the next run there).
    Memory: arrays of node-set size plus blocks of _BLOCK edges on the heap; the edge set
    being drawn is page cache, which the kernel writes back and evicts under a memory
    cap. Returns the manifest."""
    r = recipe(scale, seed, hub_edges=hub_edges, planted=planted, num_classes=num_classes,
               planted_feature=planted_feature)
    on_venues = r.planted_feature == "venue"
    folder = _Folder(output, fmt, shards, _note(scale, seed, planted, r.num_classes,
                                                hub_edges), timestamps,
                     seed if extra_features or on_venues else None)
    if scratch_dir is not None:
        os.makedirs(scratch_dir, exist_ok=True)
    with Scratch(output if scratch_dir is None else scratch_dir) as scratch:
        counts, duplicates, degrees, seeds = _write_streamed(r, folder, scratch)
    return _manifest(r, folder, counts, duplicates, degrees, seeds)


def _write_streamed(r: Recipe, folder: _Folder, scratch: Scratch):
    """write_streamed's tables: (edge counts, duplicates left, degrees, seed tables)."""
    seed, hub_edges, planted = r.seed, r.hub_edges, r.planted
    n_papers = r.nodes["paper"]
    year = year_rows(_rng(seed, "year"), n_papers)
    hub_papers, hub_weights = draw_hub(r)
    counts, duplicates, degrees = {}, {}, {}
    planted_cites = None
    for name in EDGE_ENDS:
        sources, targets, duplicates[name], rng = draw_edge_set(r, name, scratch)
        weights = _Rows(rng, weight_rows)
        if name == "writes" and hub_edges:
            n = len(sources)
            sources, targets = (_append(scratch, sources, np.full(
                hub_edges, r.nodes["author"], dtype=np.int64)),
                _append(scratch, targets, hub_papers))

            def weights(lo, hi, main=weights, n=n):  # the set's own draws, then the hub's
                own = main(lo, min(hi, n)) if lo < n else np.zeros(0)
                return np.concatenate([own, hub_weights[max(lo, n) - n:hi - n]]) \
                    if hi > n else own
        if name == "cites" and planted:
            own, planted_targets, duplicates[name] = plant_colours(
                _rng(seed, "planted"), n_papers, sources, targets, r.num_classes, scratch)
            scratch.free(targets)
            targets = planted_targets
            planted_cites = (sources, targets, own)
        times = None
        if folder.timestamps:
            affiliated = _rng(seed, "affiliated_time")

            def times(lo, hi, name=name, sources=sources, targets=targets):
                return edge_years(name, sources[lo:hi], targets[lo:hi], year, affiliated)
        counts[name] = int(len(sources))
        degrees[name] = _edge_degrees(name, sources, targets, r.nodes, bool(hub_edges))
        folder.edges(name, sources, targets, weights, times,
                     r.nodes["author"] if name == "writes" else None)
        if planted_cites is None or planted_cites[0] is not sources:
            scratch.free(sources, targets)
        del sources, targets, weights, times
    if planted:
        cites_sources, cites_targets, own = planted_cites
        del planted_cites
    if planted and r.planted_feature == "venue":  # feat stays noise; the venues' colours
        all_labels = labels_from_colours(n_papers, cites_sources, cites_targets, own,
                                         r.num_classes)
        assert (all_labels >= 0).all(), "every paper cites a paper"
        scratch.free(cites_sources, cites_targets)
        del cites_sources, cites_targets
        folder.papers(n_papers, _Rows(_rng(seed, "feat"), feat_rows),
                      lambda lo, hi: all_labels[lo:hi], year,
                      lambda lo, hi: extra.planted_venues(seed, np.arange(lo, hi), own[lo:hi],
                                                          r.num_classes))
    elif planted:
        colour = np.zeros(n_papers, np.int64)
        pass_one = _Rows(_rng(seed, "feat"), feat_rows)
        for lo, hi in _chunks(n_papers):
            colour[lo:hi] = colours(_planted_rows(pass_one(lo, hi), own[lo:hi]),
                                    r.num_classes)
        all_labels = labels_from_colours(n_papers, cites_sources, cites_targets, colour,
                                         r.num_classes)
        assert (all_labels >= 0).all(), "every paper cites a paper"
        scratch.free(cites_sources, cites_targets)
        del cites_sources, cites_targets, colour
        feat_stream = _Rows(_rng(seed, "feat"), feat_rows)
        folder.papers(n_papers, lambda lo, hi: _planted_rows(feat_stream(lo, hi), own[lo:hi]),
                      lambda lo, hi: all_labels[lo:hi], year)
    else:
        folder.papers(n_papers, _Rows(_rng(seed, "feat"), feat_rows),
                      _Rows(_rng(seed, "labels"),
                            lambda rng, count: label_rows(rng, count, r.num_classes)), year)
    seeds = folder.seeds(n_papers, hub_papers, year)
    return counts, duplicates, degrees, seeds


def _append(scratch: Scratch, head: np.ndarray, tail: np.ndarray) -> np.ndarray:
    """np.concatenate([head, tail]) into a scratch array; `head`'s is freed."""
    out = scratch.empty(len(head) + len(tail), head.dtype)
    for lo, hi in blocks(len(head), _BLOCK):
        out[lo:hi] = head[lo:hi]
    out[len(head):] = tail
    scratch.free(head)
    return out


def _planted_rows(feat: np.ndarray, own: np.ndarray) -> np.ndarray:
    """Paper rows with each paper's own colour written into its features."""
    feat[np.arange(len(feat)), own] += PLANTED_SIGNAL
    return feat


def _folder_bytes(folder: str) -> int:
    return sum(os.path.getsize(os.path.join(folder, f)) for f in os.listdir(folder)
               if os.path.isfile(os.path.join(folder, f)))


# ---- command line ---------------------------------------------------------------------

EXAMPLES = """\
examples:
  synthetic-graph --scale 0.01 --output /tmp/mag_0.01
  synthetic-graph --scale 0.1 --format csv --shards 4 --seed 7 --output /tmp/mag_csv
  synthetic-graph --scale 0.01 --planted --num-classes 8 --output /tmp/mag_planted
  synthetic-graph --scale 0.01 --hub-edges 100000 --output /tmp/mag_hub
  synthetic-graph --scale 0.01 --timestamps --output /tmp/mag_timed
  synthetic-graph --scale 0.01 --extra-features --output /tmp/mag_features
  synthetic-graph --scale 0.01 --planted venue --output /tmp/mag_planted_venue
"""


def make_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="synthetic-graph", description=__doc__.split("\n\n")[0],
        epilog=EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--output", required=True, metavar="DIR",
                        help="folder to write the graph into (created if missing)")
    parser.add_argument("--scale", type=float, default=0.01,
                        help="1.0 = OGBN-MAG's node and edge counts; counts scale linearly "
                             "(default 0.01)")
    parser.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    parser.add_argument("--format", choices=sorted(FORMATS), default="parquet",
                        help="table file format (default parquet)")
    parser.add_argument("--shards", type=int, default=1, metavar="N",
                        help="files per table, as name@N (default 1)")
    parser.add_argument("--hub-edges", type=int, default=0, metavar="N",
                        help="add author 'author/hub' with N writes edges, and hub_seeds.<ext> "
                             "listing its papers (default 0: no hub)")
    parser.add_argument("--planted", nargs="?", const="feat", choices=PLANTED_FEATURES,
                        metavar="FEATURE",
                        help="paper labels from the features of the cited papers (see the "
                             "module docstring); own features carry no signal. FEATURE "
                             "`feat` (the default) plants the colour in `feat`, `venue` in "
                             "the venue strings only (implies --extra-features)")
    parser.add_argument("--num-classes", type=int, metavar="C",
                        help=f"label classes (default {OGBN_MAG_CLASSES}, or "
                             f"{PLANTED_DEFAULT_CLASSES} with --planted, at most {FEAT_DIM})")
    parser.add_argument("--timestamps", action="store_true",
                        help="a `timestamp` column (years) in every table and "
                             "timed_seeds.<ext> with every paper's year as its cut-off (see "
                             "the module docstring)")
    parser.add_argument("--extra-features", action="store_true",
                        help="every kind of feature: a venue string and lists of tags and "
                             "token ids per paper, a citation's intent, an author's "
                             "position (pipelines/synthetic_features.py)")
    parser.add_argument("--scratch-dir", metavar="DIR",
                        help="where to keep the edge set being drawn (memory-mapped files, "
                             "about 40 bytes per edge of the largest set, in a folder made "
                             "here and removed at the end; default: inside --output)")
    parser.add_argument("--quiet", action="store_true", help="print only the output folder")
    return parser


@interruptible("synthetic-graph", "interrupted")
def main(argv: list[str] | None = None) -> int:
    args = make_parser().parse_args(argv)
    started = time.perf_counter()
    try:
        manifest = write_streamed(args.output, args.format, args.shards, scale=args.scale,
                                  seed=args.seed, hub_edges=args.hub_edges,
                                  planted=args.planted is not None,
                                  num_classes=args.num_classes, timestamps=args.timestamps,
                                  planted_feature=args.planted or "feat",
                                  extra_features=args.extra_features,
                                  scratch_dir=args.scratch_dir)
    except ValueError as e:
        print(f"synthetic-graph: error: {e}", file=sys.stderr)
        return 2
    manifest["total_seconds"] = round(time.perf_counter() - started, 3)
    with open(os.path.join(args.output, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=2)
    if not args.quiet:
        print("nodes: " + ", ".join(f"{k} {v:,}" for k, v in manifest["nodes"].items()))
        print("edges: " + ", ".join(f"{k} {v:,}" for k, v in manifest["edges"].items()))
        print(f"{manifest['bytes'] / 1e6:.1f} MB of {args.format} in "
              f"{manifest['total_seconds']:.2f} s")
    print(f"graph: {os.path.join(args.output, 'graph_schema.pbtxt')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
