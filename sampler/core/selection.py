"""Small helpers over CSR rows (segments, chunks, merges) and the kernels that pick,
per query, the k smallest keys or the first k distinct draws: shared by the sampling
strategies (strategies.py, random_strategies.py) and long rows (long_rows.py)."""
from __future__ import annotations

import numpy as np

from sampler.core import strategy_tuning as tuning
from unigraph.columnar.ragged import take

_U64 = np.uint64
EMPTY = np.zeros(0, dtype=np.int64)


def degrees_of(row_splits: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """The lengths of these rows (never np.diff of the whole CSR: see _checked)."""
    return take(row_splits, rows + 1) - take(row_splits, rows)


def exclusive_cumsum(lengths: np.ndarray) -> np.ndarray:
    out = np.zeros(len(lengths), dtype=np.int64)
    np.cumsum(lengths[:-1], out=out[1:])
    return out


def segments(lengths: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(segment of each item, offset of each item within its segment) for concatenated segments."""
    seg = np.repeat(np.arange(len(lengths), dtype=np.int64), lengths)
    within = np.arange(len(seg), dtype=np.int64) - np.repeat(exclusive_cumsum(lengths), lengths)
    return seg, within


def row_edges(row_splits, rows):
    """All edges of the given rows, row after row: (segment, absolute position, position in row)."""
    starts = row_splits[rows]
    seg, within = segments(row_splits[rows + 1] - starts)
    return seg, starts[seg] + within, within


def chunks(lengths: np.ndarray, budget: int):
    """Consecutive slices of items whose lengths sum to at most `budget` (or one item)."""
    total = np.cumsum(lengths)
    start = 0
    while start < len(lengths):
        before = total[start - 1] if start else 0
        stop = max(start + 1, int(np.searchsorted(total, before + budget, side="right")))
        yield slice(start, stop)
        start = stop


def merge_by_query(parts) -> tuple[np.ndarray, np.ndarray]:
    """Joins parts that each hold distinct queries, sorted by (query, position) within the part."""
    parts = [p for p in parts if len(p[0])]
    if not parts:
        return EMPTY, EMPTY
    if len(parts) == 1:
        return parts[0]
    queries = np.concatenate([q for q, _ in parts])
    positions = np.concatenate([p for _, p in parts])
    order = np.argsort(queries, kind="stable")  # timsort: merges the few sorted runs
    return queries[order], positions[order]


def expand_to_queries(query_index, row_of_query, chosen_row, chosen_pos, n_rows):
    """Copies each row's chosen edges (sorted by row, then position) to every query of that row."""
    counts = np.bincount(chosen_row, minlength=n_rows)
    first = exclusive_cumsum(counts)
    per_query = counts[row_of_query]
    seg, within = segments(per_query)
    return query_index[seg], chosen_pos[first[row_of_query][seg] + within]



def sortable_bits(values: np.ndarray) -> np.ndarray:
    """uint64 whose unsigned order is the float64 order of `values` (no NaN)."""
    bits = values.view(_U64)
    negative = (bits >> _U64(63)).astype(bool)
    return np.where(negative, ~bits, bits | _U64(1 << 63))


def k_smallest_per_segment(seg, n_segments, within, sort_bits, full_key, k) -> np.ndarray:
    """Mask of the k items per segment with the smallest (full_key, within), items in place.

    Items are laid out segment after segment, `within` = 0, 1, ... in each. One
    argsort of a uint64 composite (segment in the high bits, the top bits of
    sort_bits, an order-preserving image of full_key, below) does the work;
    items whose composite ties are re-ordered by their exact (full_key, within),
    so the result is exact whatever the number of segments.
    """
    segment_bits = max(1, int(n_segments - 1).bit_length())
    composite = (seg.astype(_U64) << _U64(64 - segment_bits)) | (sort_bits >> _U64(segment_bits))
    order = np.argsort(composite)
    ranked = composite[order]
    tie = ranked[1:] == ranked[:-1]
    if tie.any():
        in_tie = np.zeros(len(order), dtype=bool)
        in_tie[1:] |= tie
        in_tie[:-1] |= tie
        slots = np.flatnonzero(in_tie)
        members = order[slots]
        order[slots] = members[np.lexsort((within[members], full_key[members],
                                           composite[members]))]
    keep = np.zeros(len(seg), dtype=bool)
    keep[order[within < k]] = True   # a segment's slots are where its items were: rank = within
    return keep


def first_distinct_draws(n_queries, k, draw):
    """For every query, the first k distinct accepted values of its stream draw(q, 0), draw(q, 1), ...

    `draw(q, counter)` maps int64 query indices and uint64 counters to (int64 values,
    accepted mask). Prefixes of the streams are examined, doubling in length for
    queries that have not yet shown k distinct values; the answer is a property
    of the stream alone, not of the prefix length. Returns (query, value) pairs.
    """
    out_queries, out_values = [], []
    pending = np.arange(n_queries, dtype=np.int64)
    length = k + k // 2 + 4
    while pending.size:
        unfinished = []
        for part in chunks(np.full(len(pending), length), tuning.MAX_PAIRS):
            queries = pending[part]
            seg = np.repeat(np.arange(len(queries), dtype=np.int64), length)
            counter = np.tile(np.arange(length, dtype=_U64), len(queries))
            values, accepted = draw(queries[seg], counter)
            seg, values = seg[accepted], values[accepted]     # still in (query, counter) order
            by_value = np.lexsort((values, seg))              # stable: earliest draw first
            s, v = seg[by_value], values[by_value]
            new = np.ones(len(s), dtype=bool)
            new[1:] = (s[1:] != s[:-1]) | (v[1:] != v[:-1])
            first = np.zeros(len(seg), dtype=bool)
            first[by_value[new]] = True
            distinct = np.bincount(seg[first], minlength=len(queries))
            rank = np.cumsum(first) - 1 - exclusive_cumsum(distinct)[seg]
            done = distinct >= k
            keep = first & (rank < k) & done[seg]
            out_queries.append(queries[seg[keep]])
            out_values.append(values[keep])
            unfinished.append(queries[~done])
        pending = np.concatenate(unfinished)
        length *= 2
    return np.concatenate(out_queries), np.concatenate(out_values)


def sorted_by_query(query_index, positions):
    order = np.lexsort((positions, query_index))
    return query_index[order], positions[order]
