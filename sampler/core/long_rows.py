"""Long rows: a node with more edges than one chunk holds is sampled chunk by chunk.

Why: the Beam pipeline moves adjacency in elements of bounded size, so a hub of
10M edges cannot travel as one row. A row of more than `chunk_edges` edges is
*long*: its edges are cut into n = ceil(degree / chunk_edges) chunks, each edge by
a hash of its target's fingerprint (parallel edges share a chunk, so the adjacency
position still orders them like their table rows), and every op samples each chunk
on its own, then keeps the k best candidates of all chunks. The in-memory engine
keeps a long row's edges chunk after chunk in its CSR; the Beam pipeline ships each
chunk as its own element; both run the functions here on the same chunks, so the
output is the same. The chunk size is part of the job (`--chunk-edges`): it decides
the random streams of long rows, as the shard count decides the files.

Canonical order of a long row: by chunk, then the usual order within the chunk
(core.adjacency: target id and table row, or time first). Per strategy, exactly:
  TOP_K     each chunk's k heaviest (ties to the lower position) merged by (-weight,
            chunk, position): the row's k heaviest, ties to the lower canonical position.
  LATEST_K  each chunk's k latest eligible edges merged by (time, chunk, position),
            latest first: the row's k latest, ties to the later canonical position.
  RANDOM_UNIFORM, RANDOM_WEIGHTED: an exponential race. Every eligible edge gets an
            independent arrival time E / w (E ~ Exp(1), w = 1 for uniform; w <= 0 never
            arrives); the k earliest form a successive sample, the law of core.strategies
            (for uniform: every k-subset equally likely). A chunk reports its own k
            earliest arrivals with their times, and the k earliest of all chunks are the
            row's. A chunk finds them either by keys (one arrival per eligible edge,
            O(chunk) per query: small chunks, and queries with excluded edges) or, in big
            chunks, with O(k) draws: the order of arrival is a successive sample, drawn
            as the first k distinct of i.i.d. draws (core.strategies' hub method), and
            the times are sums of gaps: with mass M left in the race, the next arrival
            comes after Exp(1) / M, independently of which edge it is (memorylessness).
            Both give the same joint law of (which edges, when), so the merge is exact.
Cut-offs and excluded edges apply per chunk: a chunk's rows are sorted by time like
any row (its eligible edges are a prefix), and a link sample's excluded edges are
looked up in the chunk that holds them.
"""
from __future__ import annotations

import dataclasses

import numpy as np

from sampler.core import rng
from sampler.core.selection import first_distinct_draws, row_edges, sortable_bits
from sampler.core.strategies import sample_edges
from sampler.core.strategy_tuning import MIN_ACCEPTANCE, UNIFORM_DRAW_FACTOR
from sampler.plan.sampling_spec_pb2 import LATEST_K, RANDOM_UNIFORM, TOP_K

CHUNK_EDGES = 1 << 20  # default edges per chunk: ~40 MB of adjacency without features

_CHUNK_SALT = rng.name_salt("long-row chunk")      # which chunk an edge goes to
_STREAM_SALT = rng.name_salt("long-row stream")    # a (sample, node, chunk)'s draws
_GAP_SALT = rng.name_salt("long-row gap")          # ... and its arrival gaps
_U64 = np.uint64
_EMPTY = np.zeros(0, np.int64)


def chunk_counts(degrees: np.ndarray, chunk_edges: int) -> np.ndarray:
    """Chunks of each row: ceil(degree / chunk_edges), 1 for a row that is not long."""
    degrees = np.asarray(degrees, np.int64)
    return np.maximum(1, -(-degrees // chunk_edges))


def chunk_of_edges(target_fingerprints: np.ndarray, n_chunks) -> np.ndarray:
    """The chunk of each edge of a long row with `n_chunks` chunks (per edge or scalar)."""
    # One step of the mixer: fingerprints are already hashes; the salt only makes the
    # chunk independent of the other uses of a fingerprint.
    mixed = rng.mix_into(np.asarray(target_fingerprints, _U64), _CHUNK_SALT)
    return (mixed % np.asarray(n_chunks).astype(_U64)).astype(np.int64)


@dataclasses.dataclass(eq=False)
class LongRows:
    """Where the chunks of an adjacency's long rows are (positions into its edge arrays)."""

    rows: np.ndarray           # int64: the CSR rows longer than chunk_edges, ascending
    chunk_offsets: np.ndarray  # int64 [len(rows) + 1]: row i's chunks are
                               # chunk_offsets[i]:chunk_offsets[i + 1] of the arrays below
    chunk_starts: np.ndarray   # int64 per chunk: its first edge's position
    chunk_ends: np.ndarray     # int64 per chunk: one past its last edge's position

    def chunks_of(self, query_rows: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """For queries whose rows are all long: (query of each (query, chunk) pair, the
        chunk's index in its row, the chunk's index in this table), query by query."""
        which = np.searchsorted(self.rows, query_rows)
        first = self.chunk_offsets[which]
        counts = self.chunk_offsets[which + 1] - first
        query = np.repeat(np.arange(len(query_rows), dtype=np.int64), counts)
        index = np.arange(len(query), dtype=np.int64) - np.repeat(np.cumsum(counts) - counts,
                                                                  counts)
        return query, index, first[query] + index


def long_row_layout(row_splits: np.ndarray, target_fingerprints_of, chunk_edges: int | None
                    ) -> tuple[np.ndarray | None, LongRows | None]:
    """For a CSR in canonical order: the permutation of its edges that puts every long
    row chunk after chunk (the order within a chunk kept), and where the chunks are;
    (None, None) when no row is long. `target_fingerprints_of(positions)` gives the
    fingerprints of the targets of the edges at those positions."""
    degrees = np.diff(row_splits)
    long = np.flatnonzero(degrees > chunk_edges) if chunk_edges else _EMPTY
    if not long.size:
        return None, None
    lengths = degrees[long]
    seg = np.repeat(np.arange(len(long), dtype=np.int64), lengths)
    # Long rows' positions: their rows' starts, then 0, 1, ... within each.
    positions = np.arange(len(seg), dtype=np.int64)
    positions += np.repeat(row_splits[long] - (np.cumsum(lengths) - lengths), lengths)
    n_chunks = chunk_counts(lengths, chunk_edges)
    chunk = chunk_of_edges(target_fingerprints_of(positions), n_chunks[seg])
    # By row, then chunk; a stable sort keeps the old (canonical) order within a chunk.
    chunk_offsets = np.r_[0, np.cumsum(n_chunks)].astype(np.int64)
    key = chunk_offsets[seg]
    del seg
    key += chunk
    del chunk
    sizes = np.bincount(key, minlength=int(chunk_offsets[-1]))
    permutation = np.arange(int(row_splits[-1]), dtype=np.int64)
    permutation[positions] = positions[np.argsort(key, kind="stable")]
    del key, positions
    row_of_chunk = np.repeat(np.arange(len(long)), n_chunks)
    before = np.cumsum(sizes) - sizes                  # edges of earlier chunks, all rows
    offset_in_row = before - before[chunk_offsets[:-1]][row_of_chunk]
    chunk_starts = row_splits[long][row_of_chunk] + offset_in_row
    return permutation, LongRows(long.astype(np.int64), chunk_offsets,
                                 chunk_starts.astype(np.int64),
                                 (chunk_starts + sizes).astype(np.int64))


def chunk_rows(starts: np.ndarray, ends: np.ndarray, chunks: np.ndarray
               ) -> tuple[np.ndarray, np.ndarray]:
    """A CSR over the chunks the queries need (`chunks`: indices into `starts`/`ends`,
    which are in position order and disjoint), and each query's row in it: row 2 j is the
    j-th distinct chunk, rows in between are the gaps."""
    distinct, row_of = np.unique(chunks, return_inverse=True)
    splits = np.empty(2 * len(distinct), np.int64)
    splits[0::2], splits[1::2] = starts[distinct], ends[distinct]
    return splits, 2 * row_of.astype(np.int64)


@dataclasses.dataclass(eq=False)
class Candidates:
    """Per chunk, the edges that may be among a query's k: the k best of the chunk.
    Smaller (primary, secondary) is better (`best` keeps the k smallest)."""

    query: np.ndarray      # int64: the query (index into the caller's queries)
    position: np.ndarray   # int64: the edge's position in the chunk's edge arrays
    primary: np.ndarray    # uint64
    secondary: np.ndarray  # uint64


def chunk_candidates(strategy: int, *, row_splits, weights, times, query_rows, query_samples,
                     query_nodes, query_chunks, k: int, seed: int, op_salt: int, limit=None,
                     excluded_splits=None, excluded_positions=None) -> Candidates:
    """The k best edges of each (query, chunk): query_rows[i] is the chunk as a row of
    `row_splits`, query_chunks[i] the chunk's index in its long row. `limit` and the
    exclusions are per query, over the chunk's row, as in core.strategies."""
    query_chunks = np.asarray(query_chunks, np.int64)
    if k == 0 or len(query_chunks) == 0:
        return Candidates(_EMPTY, _EMPTY, _EMPTY.view(_U64), _EMPTY.view(_U64))
    if strategy in (TOP_K, LATEST_K):
        query, position = sample_edges(
            strategy, row_splits=row_splits, weights=weights, query_rows=query_rows,
            query_samples=query_samples, query_nodes=query_nodes, k=k, seed=seed,
            op_salt=op_salt, limit=limit, excluded_splits=excluded_splits,
            excluded_positions=excluded_positions)
        order_in_row = _order_in_row(query_chunks[query], position
                                     - row_splits[query_rows[query]])
        if strategy == TOP_K:  # heaviest first, then the lower canonical position
            return Candidates(query, position, sortable_bits(-weights[position] + 0.0),
                              order_in_row)
        return Candidates(query, position, ~_time_bits(times[position]), ~order_in_row)
    base = rng.mix(seed, op_salt, _STREAM_SALT, np.asarray(query_samples, np.int64),
                   np.asarray(query_nodes, _U64), query_chunks)
    starts = row_splits[query_rows]
    eligible = row_splits[query_rows + 1] - starts if limit is None else np.asarray(limit)
    has_exclusions = (np.zeros(len(starts), bool) if excluded_splits is None
                      else np.diff(excluded_splits) > 0)
    weighted = strategy != RANDOM_UNIFORM
    by_draws = (eligible >= UNIFORM_DRAW_FACTOR * k) & ~has_exclusions
    parts = []
    if weighted and by_draws.any():
        candidates = np.flatnonzero(by_draws)
        by_draws[candidates] = _rejection_is_cheap(weights, starts[candidates],
                                                   eligible[candidates], k)
    drawn = np.flatnonzero(by_draws)
    if drawn.size:
        parts.append(_race_by_draws(weights if weighted else None, starts[drawn],
                                    eligible[drawn], base[drawn], drawn, k))
    keyed = np.flatnonzero(~by_draws)
    if keyed.size:
        parts.append(_race_by_keys(weights if weighted else None, row_splits, query_rows,
                                   eligible, base, keyed, k, excluded_splits,
                                   excluded_positions))
    query = np.concatenate([p[0] for p in parts]) if parts else _EMPTY
    position = np.concatenate([p[1] for p in parts]) if parts else _EMPTY
    arrival = np.concatenate([p[2] for p in parts]) if parts else np.zeros(0)
    # Non-negative floats order like their bit patterns; ties by canonical position.
    return Candidates(query, position, arrival.view(_U64),
                      _order_in_row(query_chunks[query], position - starts[query]))


def best(query: np.ndarray, primary: np.ndarray, secondary: np.ndarray, k: int) -> np.ndarray:
    """Positions (into the candidate arrays) of the k best candidates of every query, in
    (query, best first) order."""
    order = np.lexsort((secondary, primary, query))
    ranked = query[order]
    first = np.r_[True, ranked[1:] != ranked[:-1]] if len(ranked) else np.zeros(0, bool)
    starts = np.flatnonzero(first)
    rank = np.arange(len(order)) - np.repeat(starts, np.diff(np.r_[starts, len(order)]))
    return order[rank < k]


def _order_in_row(chunks: np.ndarray, within: np.ndarray) -> np.ndarray:
    """uint64 that orders like the canonical position in a long row: (chunk, position
    in the chunk)."""
    return (chunks.astype(_U64) << _U64(32)) | within.astype(_U64)


def _time_bits(times: np.ndarray) -> np.ndarray:
    """uint64 in the order of the times (int64 or float64)."""
    if times.dtype.kind == "f":
        return sortable_bits(times.astype(np.float64) + 0.0)
    return times.astype(np.int64).view(_U64) ^ _U64(1 << 63)


def _rejection_is_cheap(weights, starts, eligible, k) -> np.ndarray:
    """Per query: whether its prefix has at least k edges of positive weight and first
    distinct weighted draws stay new with chance >= MIN_ACCEPTANCE even after k - 1 edges
    are out, bounding their mass by k - 1 times the prefix's heaviest edge (running sums
    and maxima: any prefix costs O(1) once its chunk is scanned)."""
    cheap = np.zeros(len(starts), bool)
    for start, length, queries in _by_chunk(starts, eligible):
        drawable = np.maximum(weights[start:start + int(length.max())], 0.0)
        mass, heaviest = np.cumsum(drawable), np.maximum.accumulate(drawable)
        positive = np.cumsum(drawable > 0)
        total, top = mass[length - 1], heaviest[length - 1]
        cheap[queries] = ((positive[length - 1] >= k) & (total > 0)
                          & (total - (k - 1) * top >= MIN_ACCEPTANCE * total))
    return cheap


def _by_chunk(starts, eligible):
    """(chunk start, the eligible lengths of its queries, those queries) per distinct chunk."""
    order = np.argsort(starts, kind="stable")
    bounds = np.flatnonzero(np.r_[True, starts[order][1:] != starts[order][:-1], True])
    for a, b in zip(bounds[:-1], bounds[1:]):
        queries = order[a:b]
        yield int(starts[queries[0]]), eligible[queries], queries


def _race_by_draws(weights, starts, eligible, base, query_index, k):
    """The k earliest arrivals of each query's chunk prefix in O(k): the order by first
    distinct i.i.d. draws, the times by gaps (module docstring). Every query here has
    more than k drawable edges, so finds exactly k."""
    n = len(starts)
    values = np.empty((n, k), np.int64)   # positions relative to the chunk start
    total = np.empty(n)                   # weighted: each prefix's drawable mass
    for start, lengths, queries in _by_chunk(starts, eligible):
        if weights is None:
            span = lengths.astype(_U64)
            with np.errstate(over="ignore"):
                remainder = (_U64(0) - span) % span
                limit = _U64(0) - remainder

            def draw(q, counter, span=span, remainder=remainder, limit=limit,
                     queries=queries):
                h = rng.mix_into(base[queries[q]], counter)
                return (h % span[q]).astype(np.int64), (remainder[q] == 0) | (h < limit[q])
        else:
            cumulative = np.cumsum(np.maximum(weights[start:start + int(lengths.max())], 0.0))
            totals = cumulative[lengths - 1]
            total[queries] = totals

            def draw(q, counter, cumulative=cumulative, totals=totals, lengths=lengths,
                     queries=queries):
                x = rng.unit_interval(rng.mix_into(base[queries[q]], counter)) * totals[q]
                # An edge of weight <= 0 has an empty interval; x rounded up to the total
                # lands on the last edge with mass, found by the search at the total.
                hit = np.searchsorted(cumulative, x, side="right")
                last = np.searchsorted(cumulative, totals[q], side="left")
                return np.minimum(np.minimum(hit, last), lengths[q] - 1).astype(np.int64), \
                    np.ones(len(q), bool)
        q, value = first_distinct_draws(len(queries), k, draw)
        order = np.argsort(q, kind="stable")          # per query, in order of arrival
        values[queries] = value[order].reshape(len(queries), k)
    gaps = -np.log(rng.unit_interval(rng.mix_into(
        rng.mix_into(base, _GAP_SALT)[:, None], np.arange(k, dtype=_U64)[None, :])))
    if weights is None:
        rates = eligible[:, None].astype(np.float64) - np.arange(k)[None, :]
    else:
        chosen = np.maximum(weights[starts[:, None] + values], 0.0)
        # Mass left before each arrival: the total minus the edges already out.
        rates = total[:, None] - np.cumsum(chosen, axis=1) + chosen
        rates = np.maximum(rates, np.finfo(np.float64).tiny)
    arrival = np.cumsum(gaps / rates, axis=1)   # row by row: independent of the batch
    return (np.repeat(query_index, k), (starts[:, None] + values).reshape(-1),
            arrival.reshape(-1))


def _race_by_keys(weights, row_splits, query_rows, eligible, base, queries, k,
                  excluded_splits, excluded_positions):
    """The k earliest arrivals of each query's eligible edges, one arrival per edge."""
    seg, position, within = row_edges(row_splits, query_rows[queries])
    keep = within < eligible[queries][seg]
    if excluded_splits is not None:
        excluded = np.zeros(len(seg), bool)
        width = np.int64(row_splits[-1] + 1)
        counts = np.diff(excluded_splits)
        excluded_keys = np.repeat(np.arange(len(counts), dtype=np.int64), counts) * width \
            + np.asarray(excluded_positions, np.int64)
        if len(excluded_keys):
            keys = queries[seg] * width + position
            at = np.minimum(np.searchsorted(excluded_keys, keys), len(excluded_keys) - 1)
            excluded = excluded_keys[at] == keys
        keep &= ~excluded
    with np.errstate(divide="ignore"):
        arrival = -np.log(rng.unit_interval(rng.mix_into(base[queries][seg], within)))
        if weights is not None:
            w = weights[position]
            keep &= w > 0
            arrival = arrival / np.where(w > 0, w, 1.0)
    seg, position, within, arrival = seg[keep], position[keep], within[keep], arrival[keep]
    chosen = best(seg, arrival.view(_U64), within.astype(_U64), k)
    return queries[seg[chosen]], position[chosen], arrival[chosen]
