"""Negative pairs for link prediction: per positive pair, K pairs with the same source
and a target drawn from the paired node set, never a known positive of that source.

Everything here is a pure function of the pairs table, the paired node set (and, for
`degree`, its degrees) and `--seed`, so both engines and every bucket count draw the
same negatives:

* Candidates. The paired node set's nodes are cut into 2**12 fixed *draw groups* by
  the fingerprint of their id (never by the job's buckets); a group lists its ids
  sorted, with weights: 1 each (`uniform`) or degree**0.75 (`degree`, as word2vec and
  PinSage do; the degree is the number of edges a node starts in the edge sets from
  the paired set to itself that the plan samples, so a reversed set counts in-edges;
  a node without such edges is never drawn). The candidates are in (group, id) order,
  and a draw picks candidate i with probability weight_i / total: an integer in
  [0, count) (uniform, exact) or a float in [0, total) (degree) located by the groups'
  running totals, then inside the group.
* Draws. Negative j of a positive row takes the first of ATTEMPTS draws, attempt
  a = 0, 1, ..., whose target is neither the source nor a known positive of the
  source (any row of the pairs table with that source); each draw is a hash of
  (seed, the row's content fingerprints, the row's occurrence among identical rows,
  j, a). Rejected attempts are counted ("redrawn"); a negative whose ATTEMPTS draws
  all collide is not made and is counted too.
* Rows. A negative copies its positive's `_readout` features, with label 0
  (positives get 1), and is numbered with the positives like any pair row.
* Time. A negative copies its positive's cut-off too (the pairs table's `timestamp`),
  so its subgraph is sampled as of that time. When the paired node set has
  timestamps, each candidate carries its node's time, and an attempt whose target is
  later than the row's cut-off is rejected like a known positive (the node did not
  exist yet), and counted ("after_cutoff", within "redrawn"). What is *not* timed:
  a known positive is any row of the source whatever its cut-off (a pair that links
  later is never made a negative earlier), and `degree` weights are the degrees in
  the whole graph, not at the cut-off (that would make every cut-off its own
  distribution).

In Beam (sampler/beam/negatives.py) positives are grouped by source bucket (all rows
of a source meet there, so the known positives are at hand), draws go to their draw
group and come back with a target id: two keyed joins, no global state but the
groups' 2**12 running totals.
"""
from __future__ import annotations

import dataclasses
from typing import Iterator, Sequence

import numpy as np

from sampler.core import rng
from sampler.core.arrays import unique, unique_inverse
from sampler.core.buckets import split_by_bucket
from sampler.core.pairs import pair_fingerprints
from sampler.core.stats import RunStats
from sampler.core.temporal import lowest_time
from sampler.plan.plan import DEGREE, LABEL, UNIFORM, NegativeSampling
from unigraph.columnar.batches import PairBatch

DRAW_GROUP_BITS = 12
NUM_DRAW_GROUPS = 1 << DRAW_GROUP_BITS
ATTEMPTS = 8             # draws per negative before it is given up (counted)
DEGREE_EXPONENT = 0.75
_DRAW_SALT = rng.name_salt("negative-draws")
_SECOND_SALT = rng.name_salt("pair-content-2")  # = core.pairs' second fingerprint


@dataclasses.dataclass(eq=False)
class Candidates:
    """Some candidate targets of one draw group, as a table or adjacency bucket gives
    them: ids, and their out-degrees (`degree` mode, from an adjacency) or their node
    times (from the paired set's table, when negatives must exist at the cut-off)."""

    ids: np.ndarray                  # 'S'
    degrees: np.ndarray | None = None
    times: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.ids)


@dataclasses.dataclass(eq=False)
class DrawGroup:
    """One draw group's candidates: ids sorted, and the running total of their weights
    (and each one's node time, when negatives' targets must exist at the cut-off)."""

    group: int
    ids: np.ndarray          # 'S', sorted distinct
    cumulative: np.ndarray   # int64 (uniform: 1, 2, ...) or float64 (degree) running total
    times: np.ndarray | None = None  # per id: its node's time (lowest when it has none)

    @property
    def total(self):
        return self.cumulative[-1] if len(self.cumulative) else 0


def draw_group_of(ids: np.ndarray) -> np.ndarray:
    return (rng.fingerprint(ids) >> np.uint64(64 - DRAW_GROUP_BITS)).astype(np.int64)


def split_by_draw_group(ids: np.ndarray, degrees: np.ndarray | None = None,
                        times: np.ndarray | None = None) -> Iterator[tuple[int, Candidates]]:
    """(draw group, Candidates) of some candidate ids (with their degrees or times)."""
    for group, positions in split_by_bucket(draw_group_of(ids)):
        yield group, Candidates(ids[positions],
                                None if degrees is None else degrees[positions],
                                None if times is None else times[positions])


def build_draw_group(group: int, parts: Sequence[Candidates], mode: str,
                     time_dtype: str | None = None) -> DrawGroup:
    """A group from its parts. An id may come in several: its degrees add up; in
    `degree` mode the candidates are the ids with degrees, and parts with times (the
    node table's) only give those ids their times. `time_dtype` (the job's time type,
    when negatives must exist at the cut-off): every id gets a time, the lowest when
    no timed part names it (a node without a time is always eligible)."""
    parts = [p for p in parts if len(p)]
    timed = [p for p in parts if p.times is not None]
    if mode == DEGREE:
        parts = [p for p in parts if p.degrees is not None]
    if not parts:
        return DrawGroup(group, np.zeros(0, "S1"), np.zeros(0, np.int64),
                         None if time_dtype is None else np.zeros(0, time_dtype))
    ids, inverse = unique_inverse(np.concatenate([p.ids for p in parts]))
    if mode == UNIFORM:
        chosen = DrawGroup(group, ids, np.arange(1, len(ids) + 1, dtype=np.int64))
    else:
        degrees = np.bincount(inverse, weights=np.concatenate([p.degrees for p in parts]).astype(
            np.float64), minlength=len(ids))
        keep = degrees > 0
        chosen = DrawGroup(group, ids[keep], np.cumsum(degrees[keep] ** DEGREE_EXPONENT))
    if time_dtype is not None:
        chosen.times = _times_of(chosen.ids, timed, np.dtype(time_dtype))
    return chosen


def _times_of(ids: np.ndarray, timed: Sequence[Candidates], dtype: np.dtype) -> np.ndarray:
    """Each of `ids`' time among the timed parts (the latest, should an id come twice),
    the lowest time for an id they do not name."""
    out = np.full(len(ids), lowest_time(dtype), dtype)
    if not timed or not len(ids):
        return out
    known = np.concatenate([p.ids for p in timed])
    times = np.concatenate([p.times for p in timed]).astype(dtype, copy=False)
    if len(known):
        at = np.minimum(np.searchsorted(ids, known), len(ids) - 1)
        hit = ids[at] == known
        np.maximum.at(out, at[hit], times[hit])
    return out


@dataclasses.dataclass(frozen=True)
class GroupTotals:
    """Every draw group's total weight, as running totals over the groups (small: one
    number per group)."""

    before: np.ndarray   # [NUM_DRAW_GROUPS] total of the groups before each
    totals: np.ndarray   # [NUM_DRAW_GROUPS]

    @property
    def grand_total(self):
        return self.before[-1] + self.totals[-1]

    @staticmethod
    def of(group_totals: Sequence[tuple[int, object]], mode: str) -> "GroupTotals":
        totals = np.zeros(NUM_DRAW_GROUPS, np.int64 if mode == UNIFORM else np.float64)
        for group, total in group_totals:
            totals[group] = total
        before = np.zeros_like(totals)
        np.cumsum(totals[:-1], out=before[1:])
        return GroupTotals(before, totals)


@dataclasses.dataclass(eq=False)
class Draws:
    """Draws of many negatives: row key (source, two content fingerprints, occurrence),
    negative j, attempt a, and where the draw lands: draw group and offset within it."""

    sources: np.ndarray      # 'S'
    first: np.ndarray        # uint64
    second: np.ndarray       # uint64
    occurrence: np.ndarray   # int64
    negative: np.ndarray     # int64 j
    attempt: np.ndarray      # int64 a
    group: np.ndarray        # int64
    offset: np.ndarray       # int64 (uniform) or float64 (degree), within the group
    targets: np.ndarray | None = None  # 'S', once resolved
    target_times: np.ndarray | None = None  # the targets' node times, when the group has them

    def __len__(self) -> int:
        return len(self.sources)

    def take(self, positions: np.ndarray) -> "Draws":
        return Draws(*[getattr(self, f.name)[positions] if getattr(self, f.name) is not None
                       else None for f in dataclasses.fields(self)])

    @staticmethod
    def concat(parts: Sequence["Draws"]) -> "Draws":
        parts = [p for p in parts if len(p)]
        if not parts:
            return Draws(*[np.zeros(0, t) for t in ("S1", np.uint64, np.uint64, np.int64,
                                                     np.int64, np.int64, np.int64)],
                         np.zeros(0, np.float64), np.zeros(0, "S1"))
        return Draws(*[None if any(getattr(p, f.name) is None for p in parts)
                       else np.concatenate([getattr(p, f.name) for p in parts])
                       for f in dataclasses.fields(Draws)])


def _row_keys(positives: PairBatch) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(first, second, occurrence, order): content fingerprints, and each row's index among
    the rows of identical content in canonical order (they are interchangeable)."""
    first, second = pair_fingerprints(positives), pair_fingerprints(positives, _SECOND_SALT)
    order = np.lexsort((second, first))
    f, s = first[order], second[order]
    starts = np.flatnonzero(np.r_[True, (f[1:] != f[:-1]) | (s[1:] != s[:-1])])
    occurrence_sorted = np.arange(len(order)) - np.repeat(
        starts, np.diff(np.r_[starts, len(order)]))
    occurrence = np.empty(len(order), np.int64)
    occurrence[order] = occurrence_sorted
    return first, second, occurrence, order


def draw_negatives(positives: PairBatch, sampling: NegativeSampling, totals: GroupTotals,
                   seed: int) -> Draws:
    """Every attempt of every negative of these positive rows (all rows of their sources
    or not: a draw depends on its row alone)."""
    n, k = len(positives), sampling.per_positive
    if n == 0 or k == 0 or totals.grand_total <= 0:
        return Draws.concat([])
    first, second, occurrence, _ = _row_keys(positives)
    row = np.repeat(np.arange(n), k * ATTEMPTS)
    negative = np.tile(np.repeat(np.arange(k), ATTEMPTS), n)
    attempt = np.tile(np.arange(ATTEMPTS), n * k)
    state = rng.mix(np.uint64(seed), np.uint64(_DRAW_SALT), first[row], second[row],
                    occurrence[row].astype(np.uint64), negative.astype(np.uint64),
                    attempt.astype(np.uint64))
    if sampling.mode == UNIFORM:
        count = np.uint64(totals.grand_total)
        with np.errstate(over="ignore"):
            # h mod count, its bias below count / 2**64 (a few billion nodes: < 1e-9)
            value = (np.asarray(state, np.uint64) % count).astype(np.int64)
        group = np.searchsorted(totals.before + totals.totals, value, side="right")
    else:
        value = rng.unit_interval(state) * totals.grand_total
        group = np.searchsorted(totals.before + totals.totals, value, side="right")
        # Rounding can put a value at the very end: the last group with weight.
        last = int(np.flatnonzero(totals.totals > 0)[-1])
        group = np.minimum(group, last)
    offset = value - totals.before[group]
    return Draws(positives.sources[row], first[row], second[row], occurrence[row], negative,
                 attempt, group.astype(np.int64), offset)


def resolve_draws(group: DrawGroup, draws: Draws) -> Draws:
    """The target id of every draw of this group: the candidate whose weight interval
    holds the offset (side 'right': an offset on a boundary belongs to the next)."""
    if not len(draws):
        return draws
    index = np.searchsorted(group.cumulative, draws.offset, side="right")
    index = np.minimum(index, len(group.ids) - 1)  # rounding at the group's end
    resolved = draws.take(np.arange(len(draws)))
    resolved.targets = group.ids[index]
    if group.times is not None:
        resolved.target_times = group.times[index]
    return resolved


@dataclasses.dataclass
class NegativeCounts:
    positives: int = 0
    negatives: int = 0
    redrawn: int = 0     # attempts rejected: the target was the source or a known positive,
                         # or later than the cut-off
    not_found: int = 0   # negatives given up after ATTEMPTS rejected draws
    after_cutoff: int = 0  # of the redrawn: the target's node is later than the cut-off


def negative_stats(counts: NegativeCounts) -> RunStats:
    """The counts as the run report's."""
    return RunStats(positives=counts.positives, negatives=counts.negatives,
                    negatives_redrawn=counts.redrawn, negatives_not_found=counts.not_found,
                    negatives_after_cutoff=counts.after_cutoff)


def choose_negatives(positives: PairBatch, draws: Draws, sampling: NegativeSampling,
                     label_dtype: np.dtype, known: PairBatch | None = None
                     ) -> tuple[PairBatch, NegativeCounts]:
    """`positives` (every row of their sources) with label 1, and their negatives with
    label 0: per (row, j), the first attempt that is neither the source nor a known
    positive of it (a row of `positives` or `known`; nor, for timed rows and
    candidates, later than the row's cut-off). `draws` are the resolved draws of these
    rows."""
    n = len(positives)
    counts = NegativeCounts(positives=n)
    labelled = _with_label(positives, np.ones(n, label_dtype))
    if not len(draws):
        return labelled, counts
    first, second, occurrence, _ = _row_keys(positives)
    # Known positives: (source, target) of any row; a draw collides with its source too.
    known_sources, known_targets = positives.sources, positives.targets
    if known is not None:
        known_sources = np.concatenate([known_sources, known.sources])
        known_targets = np.concatenate([known_targets, known.targets])
    ids = unique(np.concatenate([known_sources, known_targets, draws.sources, draws.targets]))
    width = np.int64(len(ids))
    known = np.searchsorted(ids, known_sources) * width + np.searchsorted(ids, known_targets)
    source_code = np.searchsorted(ids, draws.sources)
    target_code = np.searchsorted(ids, draws.targets)
    rejected = np.isin(source_code * width + target_code, known) | (source_code == target_code)
    row = _rows_of_draws(first, second, occurrence, draws)
    late = np.zeros(len(draws), bool)
    if positives.timestamps is not None and draws.target_times is not None:
        late = draws.target_times > positives.timestamps[row]
        rejected |= late
    # Per (row, j): the lowest accepted attempt.
    slot = row * sampling.per_positive + draws.negative
    accepted = np.flatnonzero(~rejected)
    best = np.full(n * sampling.per_positive, ATTEMPTS, np.int64)
    np.minimum.at(best, slot[accepted], draws.attempt[accepted])
    chosen = accepted[draws.attempt[accepted] == best[slot[accepted]]]
    chosen = chosen[np.argsort(slot[chosen], kind="stable")]
    found = best < ATTEMPTS
    counts.negatives = int(found.sum())
    counts.redrawn = int(best[found].sum()) + int((~found).sum()) * ATTEMPTS
    counts.not_found = int((~found).sum())
    counts.after_cutoff = int((late & (draws.attempt < best[slot])).sum())
    from_row = row[chosen]
    negatives = PairBatch(positives.sources[from_row], draws.targets[chosen],
                          positives.rows[from_row],
                          {k: v[from_row] for k, v in positives.features.items()},
                          None if positives.timestamps is None else positives.timestamps[from_row])
    negatives = _with_label(negatives, np.zeros(len(chosen), label_dtype))
    return concat_pairs([labelled, negatives]), counts


def _rows_of_draws(first: np.ndarray, second: np.ndarray, occurrence: np.ndarray,
                   draws: Draws) -> np.ndarray:
    """The positive row each draw belongs to (rows' keys are distinct): one sort of rows
    and draws together by key, each row just before its draws."""
    n, m = len(first), len(draws)
    kind = np.r_[np.zeros(n, np.int8), np.ones(m, np.int8)]
    order = np.lexsort((kind, np.r_[occurrence, draws.occurrence], np.r_[second, draws.second],
                        np.r_[first, draws.first]))
    is_row = kind[order] == 0
    last_row = np.maximum.accumulate(np.where(is_row, np.arange(n + m), 0))
    rows = np.empty(m, np.int64)
    rows[order[~is_row] - n] = order[last_row[~is_row]]
    return rows


def _with_label(batch: PairBatch, labels: np.ndarray) -> PairBatch:
    return PairBatch(batch.sources, batch.targets, batch.rows, {**batch.features, LABEL: labels},
                     batch.timestamps)


def concat_pairs(parts: Sequence[PairBatch]) -> PairBatch:
    timed = all(p.timestamps is not None for p in parts)
    return PairBatch(np.concatenate([p.sources for p in parts]),
                     np.concatenate([p.targets for p in parts]),
                     np.concatenate([p.rows for p in parts]),
                     {k: np.concatenate([p.features[k] for p in parts])
                      for k in parts[0].features},
                     np.concatenate([p.timestamps for p in parts]) if timed else None)


@dataclasses.dataclass(eq=False)
class DrawGroups:
    """Every draw group of the paired node set and their running totals: what the draws
    of any pairs need, built once per graph (the in-memory engine, sampler.api)."""

    groups: dict[int, DrawGroup]
    totals: GroupTotals


def draw_groups_in_memory(candidate_ids: np.ndarray, degrees: np.ndarray | None,
                          sampling: NegativeSampling, node_times: Candidates | None = None
                          ) -> DrawGroups:
    """The draw groups of these candidates in one process (`node_times`: the paired set's
    nodes with their times, when negatives' targets must exist at their row's cut-off)."""
    parts: dict[int, list[Candidates]] = {}
    for g, piece in split_by_draw_group(candidate_ids, degrees):
        parts.setdefault(g, []).append(piece)
    time_dtype = None
    if node_times is not None:
        time_dtype = node_times.times.dtype.name
        for g, piece in split_by_draw_group(node_times.ids, times=node_times.times):
            parts.setdefault(g, []).append(piece)
    groups = {g: build_draw_group(g, pieces, sampling.mode, time_dtype)
              for g, pieces in parts.items()}
    return DrawGroups(groups, GroupTotals.of([(g, group.total) for g, group in groups.items()],
                                             sampling.mode))


def negatives_in_memory(positives: Sequence[PairBatch], candidate_ids: np.ndarray,
                        degrees: np.ndarray | None, sampling: NegativeSampling, seed: int,
                        label_dtype: np.dtype, node_times: Candidates | None = None
                        ) -> tuple[list[PairBatch], NegativeCounts]:
    """The whole step in one process (the in-memory engine): the same functions as the
    Beam stages, with every source in one group. `node_times`: the paired set's nodes
    with their times, when negatives' targets must exist at their row's cut-off."""
    groups = draw_groups_in_memory(candidate_ids, degrees, sampling, node_times)
    return negatives_from_groups(positives, groups, sampling, seed, label_dtype)


def negatives_from_groups(positives: Sequence[PairBatch], candidates: DrawGroups,
                          sampling: NegativeSampling, seed: int, label_dtype: np.dtype,
                          known: PairBatch | None = None
                          ) -> tuple[list[PairBatch], NegativeCounts]:
    """`negatives_in_memory` with the draw groups built already. `known`: more known
    positives, rows that get no negatives of their own (sampler.api: pairs sampled from
    a larger table)."""
    positives = [p for p in positives if len(p)]
    if not positives:
        return [], NegativeCounts()
    batch = concat_pairs(positives)
    draws = draw_negatives(batch, sampling, candidates.totals, seed)
    resolved = Draws.concat([resolve_draws(candidates.groups[g], draws.take(positions))
                             for g, positions in split_by_bucket(draws.group)])
    chosen, counts = choose_negatives(batch, resolved, sampling, label_dtype, known)
    return [chosen], counts
