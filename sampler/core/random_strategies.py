"""RANDOM_UNIFORM and RANDOM_WEIGHTED: the methods that draw a row's k edges (Floyd's,
keys, hub draws), each exact for the distribution strategies.py's docstring states;
which one runs depends on the row only (strategy_tuning.py)."""
from __future__ import annotations

import numpy as np

from sampler.core import rng
from sampler.core import strategy_tuning as tuning
from sampler.core.arrays import unique_inverse
from sampler.core.selection import (chunks, degrees_of, exclusive_cumsum, expand_to_queries,
                                    first_distinct_draws, k_smallest_per_segment,
                                    merge_by_query, row_edges, sorted_by_query)

_U64 = np.uint64


def random_uniform(row_splits, query_rows, degrees, base, k):
    parts = []
    take_all = np.flatnonzero(degrees <= k)
    if take_all.size:
        seg, pos, _ = row_edges(row_splits, query_rows[take_all])
        parts.append((take_all[seg], pos))
    if k <= tuning.FLOYD_MAX_K:  # k draws per query and no sort over the row, whatever its degree
        by_floyd = np.flatnonzero(degrees > k)
        if by_floyd.size:
            parts.append(_uniform_floyd(row_splits, query_rows[by_floyd], degrees[by_floyd],
                                        base[by_floyd], by_floyd, k))
        return merge_by_query(parts)
    # Drawing costs O(k) per query, keys O(degree): draws pay off once a row is several
    # times k. Worst case (k-1 edges drawn) a draw is new with chance (d-k+1)/d >= 3/4.
    hub = (degrees > k) & (degrees >= min(tuning.HUB_DEGREE + 1, tuning.UNIFORM_DRAW_FACTOR * k))
    by_hub = np.flatnonzero(hub)
    if by_hub.size:
        parts.append(_uniform_hub(row_splits, query_rows[by_hub], degrees[by_hub],
                                  base[by_hub], by_hub, k))
    by_keys = np.flatnonzero((degrees > k) & ~hub)
    for part in _chunked_by_degree(by_keys, degrees):
        seg, pos, within = row_edges(row_splits, query_rows[part])
        keys = rng.mix_into(base[part][seg], within)
        keep = k_smallest_per_segment(seg, len(part), within, keys, keys, k)
        parts.append((part[seg[keep]], pos[keep]))
    return merge_by_query(parts)


def _chunked_by_degree(queries, degrees):
    for part in chunks(degrees[queries], tuning.MAX_PAIRS):
        yield queries[part]


def _uniform_floyd(row_splits, rows, degrees, base, query_index, k):
    """Floyd's algorithm (see module docstring), every query at once, k steps."""
    d = degrees.astype(np.int64)
    picks = np.empty((len(rows), k), np.int64)
    for i in range(k):
        top = d - k + i  # step i draws t in [0, top]: taken already -> take top itself
        t = _unbiased_below(base, top + 1, i, k)
        taken = (picks[:, :i] == t[:, None]).any(axis=1)
        picks[:, i] = np.where(taken, top, t)
    picks.sort(axis=1)
    return np.repeat(query_index, k), (row_splits[rows][:, None] + picks).reshape(-1)


def _unbiased_below(base, bound, step, stride):
    """An integer uniform in [0, bound) per query from counter `step` of its stream: "h mod
    bound", redrawn with counter step + stride, + 2 stride, ... in the rare case (chance
    < bound / 2**64) that h >= 2**64 - (2**64 mod bound), where mod would be biased."""
    bound = bound.astype(_U64)
    with np.errstate(over="ignore"):
        h = rng.mix_into(base, step)
        # The limit 2**64 - (2**64 mod bound) is above 2**64 - bound: only h at or above
        # that may be redrawn, so only those queries need the (slow, uint64) remainder.
        near_top = np.flatnonzero(h >= _U64(0) - bound)
        remainder = (_U64(0) - bound[near_top]) % bound[near_top]
        limit = _U64(0) - remainder
        redraw = (remainder != 0) & (h[near_top] >= limit)
        redraw, limit = near_top[redraw], limit[redraw]
        attempt = 1
        while redraw.size:
            h[redraw] = rng.mix_into(base[redraw], step + attempt * stride)
            again = h[redraw] >= limit
            redraw, limit = redraw[again], limit[again]
            attempt += 1
    return (h % bound).astype(np.int64)


def _uniform_hub(row_splits, rows, degrees, base, query_index, k):
    """First k distinct of i.i.d. uniform positions per query (see module docstring)."""
    d = degrees.astype(_U64)
    with np.errstate(over="ignore"):
        # Unbiased "h mod d": reject h >= 2**64 - (2**64 mod d) (chance < d / 2**64).
        remainder = (_U64(0) - d) % d
        limit = _U64(0) - remainder

    def draw(q, counter):
        h = rng.mix_into(base[q], counter)
        accepted = (remainder[q] == 0) | (h < limit[q])
        return (h % d[q]).astype(np.int64), accepted

    q, value = first_distinct_draws(len(rows), k, draw)
    return sorted_by_query(query_index[q], row_splits[rows[q]] + value)


def random_weighted(row_splits, weights, query_rows, degrees, base, k):
    rows, row_of_query = unique_inverse(query_rows)
    # Edges of positive weight per row: O(the rows' edges), which the draws below read
    # anyway (a hub row's set-up is O(degree) too).
    seg, pos, _ = row_edges(row_splits, rows)
    positive_in_row = np.bincount(seg[weights[pos] > 0], minlength=len(rows))
    del seg, pos
    parts = []

    short_rows = np.flatnonzero(positive_in_row <= k)   # every positive edge, no randomness
    take_all = np.flatnonzero(np.isin(row_of_query, short_rows))
    if take_all.size:
        seg, pos, _ = row_edges(row_splits, rows[short_rows])
        keep = weights[pos] > 0
        parts.append(expand_to_queries(take_all, row_of_query[take_all],
                                        short_rows[seg[keep]], pos[keep], len(rows)))

    by_hub = np.zeros(len(rows), dtype=bool)
    big = np.flatnonzero((positive_in_row > k) & (degrees_of(row_splits, rows) > tuning.HUB_DEGREE))
    if big.size:
        queries_by_row = np.argsort(row_of_query, kind="stable")
        first_query = exclusive_cumsum(np.bincount(row_of_query, minlength=len(rows) + 1))
    for r in big:                                       # O(degree) set-up per hub row
        drawable = np.maximum(weights[row_splits[rows[r]]:row_splits[rows[r] + 1]], 0.0)
        if not _rejection_is_cheap(drawable, k):
            continue                                    # keys instead, below
        by_hub[r] = True
        queries = queries_by_row[first_query[r]:first_query[r + 1]]
        parts.append(_weighted_hub(row_splits[rows[r]], drawable, base[queries], queries, k))

    by_keys = np.flatnonzero((positive_in_row > k)[row_of_query] & ~by_hub[row_of_query])
    for part in _chunked_by_degree(by_keys, degrees):
        seg, pos, within = row_edges(row_splits, query_rows[part])
        w = weights[pos]
        with np.errstate(divide="ignore"):
            arrival = -np.log(rng.unit_interval(rng.mix_into(base[part][seg], within))) / w
        # Never drawn: these rows have more than k drawable edges, so +inf never ranks < k.
        arrival[w <= 0] = np.inf
        # Non-negative floats order like their bit patterns; shift out the zero sign bit.
        bits = arrival.view(_U64) << _U64(1)
        keep = k_smallest_per_segment(seg, len(part), within, bits, arrival, k)
        parts.append((part[seg[keep]], pos[keep]))
    return merge_by_query(parts)


def _rejection_is_cheap(drawable, k) -> bool:
    """Whether a draw stays new with chance >= tuning.MIN_ACCEPTANCE even after the k-1 heaviest edges.

    `drawable` holds a row's weights with negatives clipped to 0.
    """
    heaviest = np.partition(drawable, len(drawable) - (k - 1))[len(drawable) - (k - 1):].sum() \
        if k > 1 else 0.0
    total = drawable.sum()
    return total - heaviest >= tuning.MIN_ACCEPTANCE * total


def _weighted_hub(row_start, drawable, base, query_index, k):
    """First k distinct of i.i.d. draws proportional to weight (see module docstring).

    `drawable` holds the row's weights with negatives clipped to 0.
    """
    cumulative = np.cumsum(drawable)      # of this row alone, so independent of the batch
    total = cumulative[-1]
    last_positive = np.searchsorted(cumulative, total, side="left")  # later edges weigh 0

    def draw(q, counter):
        x = rng.unit_interval(rng.mix_into(base[q], counter)) * total
        # side='right' picks i with cumulative[i-1] <= x < cumulative[i]: an edge of weight
        # <= 0 has an empty interval and is never hit. x rounded up to total: last drawable edge.
        value = np.minimum(np.searchsorted(cumulative, x, side="right"), last_positive)
        return value.astype(np.int64), np.ones(len(q), dtype=bool)

    q, value = first_distinct_draws(len(base), k, draw)
    return sorted_by_query(query_index[q], row_start + value)
