"""The synthetic OGBN-MAG-shaped graph of `synthetic-graph` (pipelines/synthetic.py), as
arrays: its counts at a scale, the degree model its edges are drawn by, the planted task,
its features' values, and `generate()`, the whole graph in memory. `write_streamed`
(pipelines/synthetic.py) runs the same draws a set or a batch at a time, on scratch
arrays on disk (pipelines/synthetic_scratch.py), and writes the same tables.

Counts. Scale 1.0 is OGBN-MAG: 736,389 papers, 1,134,649 authors, 59,965 fields of
study, 8,740 institutions; 5,416,271 cites, 7,145,660 writes, 7,505,078 has_topic,
1,043,998 affiliated_with. Every count is round(count * scale), at least 2 nodes and
1 edge per set; the tables hold exactly that many rows (plus the hub's edges, which
come on top of the `writes` count).

Node sets without features have no table. author, field_of_study and institution
carry no features, so, as the unigraph format allows (docs/architecture.md), they
have no table and their nodes are the ids their edges name. So that each still has
exactly its nominal number of nodes, every author has at least one `writes` edge and
every field of study and institution at least one incoming edge (the "coverage" below).

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

import dataclasses

import numpy as np

from pipelines import synthetic_features as extra
from pipelines.synthetic_scratch import (IN_MEMORY, Scratch, blocks, choice_no_replace,
                                         count_repeats, gather, is_sorted, positions_where,
                                         ranges_into, repeat_into, repeated_runs,
                                         sorted_keys, stable_order)

FEAT_DIM = 128
OGBN_MAG_CLASSES = 349
PLANTED_DEFAULT_CLASSES = 8
PLANTED_SIGNAL = 5.0  # added to feat[colour]: 5 standard deviations of the N(0, 1) noise
DEDUP_ROUNDS = 50
# Edges per block wherever a step looks at every edge (here and in write_streamed): its
# temporaries stay a block's.
BLOCK = 1 << 20
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


def scaled_counts(scale: float) -> tuple[dict[str, int], dict[str, int]]:
    """(node counts, edge counts) at `scale`: round(count * scale), >= 2 nodes, >= 1 edge."""
    if not scale > 0:
        raise ValueError(f"scale must be > 0, got {scale}")
    nodes = {k: max(2, int(round(v * scale))) for k, v in NODE_COUNTS.items()}
    edges = {k: max(1, int(round(v * scale))) for k, v in EDGE_COUNTS.items()}
    return nodes, edges


def random_stream(seed: int, stream: str) -> np.random.Generator:
    """The numpy stream of one component of the graph (`_STREAMS`) for `seed`."""
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
    index = repeat_into(scratch.empty(size, np.int64), rng.multinomial(size, p), BLOCK)
    rng.shuffle(index)  # a plain ndarray (a view of the mapped file): numpy's fast path
    return index


def _covered_sources(rng, n: int, e: int, p: np.ndarray,
                     scratch: Scratch = IN_MEMORY) -> np.ndarray:
    """Source indices, every node at least once, sorted: degree = 1 + Multinomial(e - n, p)."""
    degrees = 1 + rng.multinomial(e - n, p)
    return repeat_into(scratch.empty(e, np.int64), degrees, BLOCK)


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
        slots = choice_no_replace(rng, n_edges, n_tgt, scratch, BLOCK)
        targets[slots] = rng.permutation(n_tgt)
        fixed[slots] = True
        del slots
    cdf_tgt = np.cumsum(p_tgt)
    same_source = _SourceIndex(sources, n_src, scratch)
    redraw = _bad_edges(sources, targets, fixed, n_tgt, no_self_loops, scratch)
    for _ in range(DEDUP_ROUNDS):
        if not len(redraw):
            break
        for lo, hi in blocks(len(redraw), BLOCK):  # one stream: the numbers drawn whole
            targets[redraw[lo:hi]] = _draw(rng, cdf_tgt, hi - lo)
        # A new repeat shares its source with a redrawn edge: check only those sources
        # (at first, a good share of the set: they are the scratch's too).
        check = same_source(redraw)
        scratch.free(redraw)
        subset = [gather(a, check, scratch, BLOCK) for a in (sources, targets, fixed)]
        found = _bad_edges(*subset, n_tgt, no_self_loops, scratch)
        redraw = gather(check, found, scratch, BLOCK)
        scratch.free(check, found, *subset)
        del check, found, subset
    if no_self_loops:
        loops = positions_where(lambda lo, hi: sources[lo:hi] == targets[lo:hi],
                                n_edges, BLOCK)
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
        self.by_source = None if is_sorted(sources, BLOCK) else stable_order(
            sources, self.splits, scratch.empty(len(sources), np.int64), BLOCK)

    def __call__(self, positions: np.ndarray) -> np.ndarray:
        """Positions of every edge whose source is the source of an edge in `positions`."""
        if not len(positions):
            return positions
        seen = np.zeros(len(self.splits) - 1, bool)  # np.unique, in node-set memory
        for lo, hi in blocks(len(positions), BLOCK):
            seen[self.sources[positions[lo:hi]]] = True
        nodes = np.flatnonzero(seen)
        starts, lengths = self.splits[nodes], self.splits[nodes + 1] - self.splits[nodes]
        index = ranges_into(self.scratch.empty(int(lengths.sum()), np.int64), starts,
                            lengths, BLOCK)  # the scratch's: freed by the caller
        if self.by_source is not None:
            for lo, hi in blocks(len(index), BLOCK):
                index[lo:hi] = self.by_source[index[lo:hi]]
            index.sort()
        return index

    def free(self) -> None:
        if self.by_source is not None:
            self.scratch.free(self.by_source)
            self.by_source = None



def _isin_sorted(values: np.ndarray, sorted_set: np.ndarray) -> np.ndarray:
    """values in sorted_set, for a small sorted_set: one binary search per value."""
    at = np.minimum(np.searchsorted(sorted_set, values), len(sorted_set) - 1)
    return sorted_set[at] == values


def _bad_edges(sources, targets, fixed, n_tgt, no_self_loops,
               scratch: Scratch = IN_MEMORY) -> np.ndarray:
    """Positions to redraw: repeats of an earlier pair (a covered edge is kept) and self-loops,
    in the order of their (source, target) key (a scratch array, or a few self-loops).
    Sorts one array of keys beside the edges (`scratch`'s: in place, on disk for
    write_streamed), then finds the repeats' edges for a few keys at a time (about BLOCK
    edges), so that what is held stays a block's."""
    keys = sorted_keys(sources, targets, n_tgt, scratch, BLOCK)
    repeated, edges_per_key = repeated_runs(keys, scratch, BLOCK)
    scratch.free(keys)
    del keys
    bad = scratch.empty(int(edges_per_key.sum()), np.int64)
    found = 0
    for first, last in _key_groups(edges_per_key):
        some = repeated[first:last]
        candidates = positions_where(
            lambda lo, hi: _isin_sorted(sources[lo:hi] * n_tgt + targets[lo:hi], some),
            len(sources), BLOCK)
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
                                len(sources), BLOCK)
        merged = np.union1d(bad, loops)  # sorted; few, for cites
        scratch.free(bad)
        bad = merged[~fixed[merged]]
    return bad


def _key_groups(edges_per_key: np.ndarray):
    """(first, last) runs of keys with about BLOCK edges in all (a key with more, alone).
    Each key has two edges or more, so BLOCK keys ahead hold the end of a run."""
    first = 0
    while first < len(edges_per_key):
        ahead = np.cumsum(edges_per_key[first:first + BLOCK])
        last = first + max(1, int(np.searchsorted(ahead, BLOCK, side="right")))
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
    for lo, hi in blocks(len(cites_source_index), BLOCK):
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
    for lo, hi in blocks(len(sources), BLOCK):
        wanted[lo:hi] = label_colour[sources[lo:hi]]
        new_targets[lo:hi] = targets[lo:hi]
    for colour in range(num_classes):
        members = np.flatnonzero(own == colour)
        cdf = np.cumsum(popularity[members])
        for lo, hi in blocks(len(sources), BLOCK):
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
    keys = sorted_keys(sources, new_targets, n, scratch, BLOCK)
    duplicates = count_repeats(keys, BLOCK)
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
    rng = random_stream(r.seed, name)
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
    rng = random_stream(r.seed, "hub")
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
        return edge_years(name, sources, targets, self.year,
                          random_stream(self.seed, "affiliated_time"))

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
    feat = feat_rows(random_stream(seed, "feat"), n_papers)
    year = year_rows(random_stream(seed, "year"), n_papers)
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
        own, targets, duplicates["cites"] = plant_colours(
            random_stream(seed, "planted"), n_papers, sources, targets, r.num_classes)
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
        labels = label_rows(random_stream(seed, "labels"), n_papers, r.num_classes)
    return SyntheticGraph(scale, seed, nodes, edges, feat, labels, year, r.num_classes,
                          planted, hub_papers, duplicates, r.planted_feature, venues)

