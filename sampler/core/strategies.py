"""Edge-sampling strategies: pure numpy over a CSR of adjacencies, no Beam.

A hop's DoFn holds the adjacency of a bucket of source nodes as a CSR and all
the (sample, node) queries that reached them, and calls `sample_edges` once.

Data shapes:
  row_splits   int64[n + 1]: row r's edges are positions row_splits[r]:row_splits[r+1]
               of the edge arrays, in the node's canonical order (target id, then
               table row; see sampler.core.adjacency).
  weights      float64[E] or None, per edge position.
  Query        one (sample, node) pair: query_rows[i] (CSR row), query_samples[i]
               (int64 sample id), query_nodes[i] (uint64 node fingerprint).
  Result       (query_index int64[m], edge_position int64[m]) sorted by query index,
               then edge position ascending.

Semantics, per query, without replacement and independently of every other query:
  TOP_K           the k edges of largest weight, ties to the lower edge position
                  (= canonical adjacency order). Weights <= 0 are eligible too: a
                  ranking needs no positive weights. Needs weights.
  RANDOM_UNIFORM  min(k, degree) distinct edges, every subset of that size equally likely.
  RANDOM_WEIGHTED successive sampling: k edges drawn one after another, each with
                  probability proportional to its weight among those left. Edges with
                  weight <= 0 are never drawn, so a row may yield fewer than k.
  LATEST_K        the last k edges of the row (of its eligible prefix, below). Rows of
                  an edge set a LATEST_K op samples are in time order (by timestamp,
                  then the canonical order; sampler.core.adjacency), so these are the k
                  latest; among equal timestamps the later canonical position (larger
                  target id, then later table row) wins. Needs no weights, no randomness.

Eligible prefix (`limit`, optional): query i considers only the first limit[i] edges
of its row, positions [row_start, row_start + limit[i]). With time-ordered rows, a
cut-off is a binary search giving that prefix (sampler.core.temporal), and every
strategy above is then exact over the eligible edges alone: the prefix is sampled as
if it were the whole row (same random streams: an edge's draw depends on its position
in the row, which the prefix keeps), so limit = degree gives the unlimited result.
With excluded edges too (below), a query's eligible edges are its prefix minus its
excluded positions. Cost: per distinct (row, limit) pair, what a row of that length
costs: O(k) for Floyd's uniform draws, O(limit) for keys, TOP_K and weighted hub rows.

Reproducibility: each draw is a hash (sampler.core.rng) of (seed, op_salt, sample,
node fingerprint, edge position within the row or a draw counter). Which method
runs for a query depends only on its row (degree, k, weights), so the result for
a query never depends on the other queries or rows of the batch, nor their order.

Methods (each gives the exact distribution above; random_strategies.py, with the
thresholds of strategy_tuning.py and the kernels of selection.py):
  * "floyd" (RANDOM_UNIFORM with k <= FLOYD_MAX_K and degree > k): Floyd's
    algorithm (Bentley and Floyd, "A sample of brilliance", CACM 1987): for
    i = 0 .. k-1, draw t uniform in [0, d-k+i] from counter i of the query's
    stream; take t, or d-k+i if t was taken already. By induction every k-subset
    is equally likely; it costs k draws and O(k^2) comparisons per query, with no
    sort over the row, so a row's degree does not matter.
  * "keys": every (query, edge) pair gets a random key; the k smallest win.
    Uniform: i.i.d. uniform keys, so the k smallest are a uniform k-subset.
    Weighted: Efraimidis & Spirakis (2006, "Weighted random sampling with a
    reservoir") take the k largest u**(1/w); equivalently the k smallest
    E = -log(u)/w, i.e. exponential "arrival times" with rate w. The first
    arrival is edge i with probability w_i / sum(w), and by memorylessness the
    next one is the same race among the edges left: successive sampling.
  * "hub" (degree > HUB_DEGREE, and for RANDOM_UNIFORM already from
    UNIFORM_DRAW_FACTOR * k edges): s samples reaching a node with d edges would
    need s*d keys, so draw O(k) values per query instead: i.i.d. draws with
    replacement from a counter stream, keeping the first k distinct ones.
    Uniform: the sequence of distinct values of i.i.d. uniform draws is a
    uniformly random arrangement, so its first k form a uniform k-subset.
    Weighted (draws proportional to w by searchsorted on the row's cumulative
    weights): given the distinct set S drawn so far, the next new value is a
    draw conditioned on not being in S, i.e. proportional to w outside S,
    which is exactly the successive-sampling step. Rejections are cheap only
    when the chosen edges hold little of the mass, so a hub row uses this only
    if, even after its k-1 heaviest edges are taken, a draw is new with
    probability >= MIN_ACCEPTANCE; otherwise it falls back to keys.
  * TOP_K needs no randomness: it is computed once per distinct row and copied.

Excluded edges (`excluded_splits`, `excluded_positions`: per query, a sorted CSR list
of edge positions of its row that it must not draw; link samples leave out the edge
they predict, see core.hop): a query's eligible edges are its row minus its
excluded positions, and every strategy above is exact over the eligible edges. A
query that excludes anything samples a virtual row of its d' eligible edges (their
weights, in row order) by the very methods above, and the virtual indices map back
to real positions. Its random stream is then indexed by the virtual index, so it
differs from the same query without exclusions; queries without exclusions are
untouched. Materializing the eligible edges costs O(degree) for such a query (they
are few: the pair's two endpoints, per op and sample).

Queries on the keys path are processed in chunks of about MAX_PAIRS (query,
edge) pairs; chunking never changes a result, only memory and cache use.

Bitwise reproducibility: everything is integer hashing and exactly rounded
IEEE arithmetic, except np.log in the weighted keys path. numpy may evaluate
log by different SIMD code on different CPUs; a last-bit difference can only
swap two arrival times equal to within an ulp (odds ~1e-16 per pair).
"""
from __future__ import annotations

import numpy as np

from sampler.core import rng
from sampler.core import strategy_tuning as tuning
from sampler.core.arrays import unique_inverse
from sampler.core.random_strategies import random_uniform, random_weighted
from sampler.core.selection import (EMPTY, degrees_of, expand_to_queries,
                                    k_smallest_per_segment, merge_by_query, row_edges,
                                    segments, sortable_bits)
from sampler.plan.sampling_spec_pb2 import LATEST_K, RANDOM_UNIFORM, RANDOM_WEIGHTED, TOP_K

_U64 = np.uint64

def sample_edges(strategy: int, *, row_splits, weights, query_rows, query_samples, query_nodes,
                 k: int, seed: int, op_salt: int, limit=None, excluded_splits=None,
                 excluded_positions=None) -> tuple[np.ndarray, np.ndarray]:
    """Samples up to k edges of each query's row: of its first `limit[i]` edges if given
    (an eligible prefix), leaving out each query's excluded positions (None: nothing
    excluded); see the module docstring."""
    row_splits, weights, query_rows, query_samples, query_nodes = _checked(
        strategy, row_splits, weights, query_rows, query_samples, query_nodes, k)
    if len(query_rows) == 0 or k == 0:
        return EMPTY, EMPTY
    if limit is not None:
        limit = _checked_limit(row_splits, query_rows, limit)
    if excluded_splits is not None:
        excluded_splits, excluded_positions = _checked_exclusions(
            row_splits, query_rows, excluded_splits, excluded_positions)
        if len(excluded_positions):
            return _sample_with_exclusions(
                strategy, row_splits, weights, query_rows, query_samples, query_nodes, k,
                seed, op_salt, excluded_splits, excluded_positions, limit)
    if limit is not None:
        row_splits, query_rows = _prefix_rows(row_splits, query_rows, limit)
    if strategy == LATEST_K:
        return _latest_k(row_splits, query_rows, k)
    if strategy == TOP_K:
        return _top_k(row_splits, weights, query_rows, k)
    degrees = degrees_of(row_splits, query_rows)
    base = rng.mix(seed, op_salt, query_samples, query_nodes)  # chain state per query
    if strategy == RANDOM_UNIFORM:
        return random_uniform(row_splits, query_rows, degrees, base, k)
    return random_weighted(row_splits, weights, query_rows, degrees, base, k)


# ---------------------------------------------------------------- argument checks

def _checked(strategy, row_splits, weights, query_rows, query_samples, query_nodes, k):
    if strategy not in (TOP_K, RANDOM_UNIFORM, RANDOM_WEIGHTED, LATEST_K):
        raise ValueError(f"sample_edges: unknown strategy {strategy!r}")
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 0:
        raise ValueError(f"sample_edges: k must be an int >= 0, got {k!r}")
    row_splits = _int_array("row_splits", row_splits, np.int64)
    n_rows = len(row_splits) - 1
    query_rows = _int_array("query_rows", query_rows, np.int64)
    query_samples = _int_array("query_samples", query_samples, np.int64)
    query_nodes = _int_array("query_nodes", query_nodes, np.uint64)
    if not len(query_rows) == len(query_samples) == len(query_nodes):
        raise ValueError(f"sample_edges: query arrays differ in length: {len(query_rows)} rows, "
                         f"{len(query_samples)} samples, {len(query_nodes)} nodes")
    if len(query_rows) and (query_rows.min() < 0 or query_rows.max() >= n_rows):
        raise ValueError(f"sample_edges: query_rows must lie in [0, {n_rows})")
    # Only the rows queried are checked: a whole CSR (the in-memory engine's holds every
    # edge of a set) must cost nothing per call beyond the rows it samples.
    if n_rows < 0 or row_splits[0] < 0 or (
            len(query_rows) and np.any(degrees_of(row_splits, query_rows) < 0)):
        raise ValueError("sample_edges: row_splits must be non-empty, start >= 0 and never decrease")
    if weights is None:
        if strategy not in (RANDOM_UNIFORM, LATEST_K):
            raise ValueError("sample_edges: TOP_K and RANDOM_WEIGHTED need edge weights, got None")
        return row_splits, None, query_rows, query_samples, query_nodes
    weights = np.asarray(weights)
    if weights.ndim != 1 or weights.dtype.kind not in "fiu":
        raise ValueError(f"sample_edges: weights must be a 1-D numeric array, got {weights.dtype}"
                         f" of shape {weights.shape}")
    weights = weights.astype(np.float64, copy=False)
    if len(weights) < row_splits[-1]:
        raise ValueError(f"sample_edges: {len(weights)} weights for {row_splits[-1]} edge positions")
    # Finite weights are the readers' promise (unigraph.tables.decode), checked once per
    # table, not here on every call.
    return row_splits, weights, query_rows, query_samples, query_nodes


def _checked_exclusions(row_splits, query_rows, excluded_splits, excluded_positions):
    splits = _int_array("excluded_splits", excluded_splits, np.int64)
    positions = _int_array("excluded_positions", np.asarray(
        excluded_positions if excluded_positions is not None else EMPTY), np.int64)
    if (len(splits) != len(query_rows) + 1 or splits[0] != 0 or np.any(np.diff(splits) < 0)
            or splits[-1] != len(positions)):
        raise ValueError(f"sample_edges: excluded_splits must be a CSR over the "
                         f"{len(query_rows)} queries of {len(positions)} excluded positions")
    seg = np.repeat(np.arange(len(query_rows)), np.diff(splits))
    rows = query_rows[seg]
    if np.any(positions < row_splits[rows]) or np.any(positions >= row_splits[rows + 1]):
        raise ValueError("sample_edges: an excluded position lies outside its query's row")
    if len(positions) > 1 and np.any((np.diff(positions) <= 0) & (seg[1:] == seg[:-1])):
        raise ValueError("sample_edges: each query's excluded positions must be sorted, distinct")
    return splits, positions


def _int_array(name, values, dtype) -> np.ndarray:
    array = np.asarray(values)
    if array.ndim != 1 or (array.dtype.kind not in "iu" and array.size):
        raise ValueError(f"sample_edges: {name} must be a 1-D integer array, got {array.dtype}"
                         f" of shape {array.shape}")
    return array.astype(dtype, copy=False)


# ---------------------------------------------------------------- eligible prefixes

def _checked_limit(row_splits, query_rows, limit) -> np.ndarray:
    limit = _int_array("limit", limit, np.int64)
    if len(limit) != len(query_rows):
        raise ValueError(f"sample_edges: {len(limit)} limits for {len(query_rows)} queries")
    degrees = degrees_of(row_splits, query_rows)
    if len(limit) and (limit.min() < 0 or np.any(limit > degrees)):
        raise ValueError("sample_edges: every limit must lie in [0, the degree of its row]")
    return limit


def _prefix_rows(row_splits, query_rows, limit):
    """A CSR whose rows are the queries' eligible prefixes, and each query's row in it.

    Every distinct (row, limit) pair becomes one virtual row r' = 2 j + 1 with
    splits[2 j + 1] = row start and splits[2 j + 2] = row start + limit, so the
    strategies, which only read splits[r'] and splits[r' + 1], see the prefix as a
    whole row: it starts where the row starts, so edge positions (and the random
    streams keyed by them) are the row's own. splits[0] and splits[-1] keep the
    original span, which the weighted path's cumulative counts cover. The entries
    in between are not monotone; nothing reads them as rows.
    """
    degrees = degrees_of(row_splits, query_rows)
    pairs, pair_of_query = unique_inverse(query_rows * (int(degrees.max(initial=0)) + 1)
                                          + limit)
    first = np.zeros(len(pairs), np.int64)
    first[pair_of_query] = np.arange(len(query_rows))    # any query of the pair will do
    starts = row_splits[query_rows[first]]
    splits = np.empty(2 * len(pairs) + 2, np.int64)
    splits[0], splits[-1] = row_splits[0], row_splits[-1]
    splits[1:-1:2] = starts
    splits[2:-1:2] = starts + limit[first]
    return splits, 2 * pair_of_query.astype(np.int64) + 1


# ---------------------------------------------------------------- LATEST_K

def _latest_k(row_splits, query_rows, k):
    """The last k positions of each query's row, ascending."""
    ends = row_splits[query_rows + 1]
    starts = np.maximum(row_splits[query_rows], ends - k)
    seg, within = segments(ends - starts)
    return seg, starts[seg] + within
# ---------------------------------------------------------------- excluded edges

def _sample_with_exclusions(strategy, row_splits, weights, query_rows, query_samples,
                            query_nodes, k, seed, op_salt, excluded_splits, excluded_positions,
                            limit=None):
    """Queries without exclusions as usual; the others each over a virtual row of their
    eligible edges (see the module docstring), mapped back to real positions. With
    `limit`, only a row's first limit[i] edges are eligible to begin with."""
    counts = np.diff(excluded_splits)
    plain, excluding = np.flatnonzero(counts == 0), np.flatnonzero(counts > 0)
    parts = []
    if plain.size:
        q, pos = sample_edges(strategy, row_splits=row_splits, weights=weights,
                              query_rows=query_rows[plain], query_samples=query_samples[plain],
                              query_nodes=query_nodes[plain], k=k, seed=seed, op_salt=op_salt,
                              limit=None if limit is None else limit[plain])
        parts.append((plain[q], pos))
    seg, pos, within = row_edges(row_splits, query_rows[excluding])
    if limit is not None:  # the eligible prefix first, then the exclusions within it
        in_prefix = within < limit[excluding][seg]
        seg, pos = seg[in_prefix], pos[in_prefix]
    # An edge (query j, position p) is excluded iff p is in j's sorted list: one searchsorted
    # over keys that order like (query, position).
    width = np.int64(row_splits[-1] + 1)
    excluded_query = np.repeat(np.arange(len(query_rows), dtype=np.int64), counts)
    excluded_keys = excluded_query * width + excluded_positions
    keys = excluding[seg] * width + pos
    at = np.minimum(np.searchsorted(excluded_keys, keys), len(excluded_keys) - 1)
    eligible = excluded_keys[at] != keys
    seg, pos = seg[eligible], pos[eligible]
    virtual_splits = np.zeros(len(excluding) + 1, np.int64)
    np.cumsum(np.bincount(seg, minlength=len(excluding)), out=virtual_splits[1:])
    q, virtual = sample_edges(
        strategy, row_splits=virtual_splits, weights=None if weights is None else weights[pos],
        query_rows=np.arange(len(excluding), dtype=np.int64),
        query_samples=query_samples[excluding], query_nodes=query_nodes[excluding], k=k,
        seed=seed, op_salt=op_salt)
    parts.append((excluding[q], pos[virtual]))
    return merge_by_query(parts)


# ---------------------------------------------------------------- TOP_K

def _top_k(row_splits, weights, query_rows, k):
    """The k heaviest edges per distinct row (ties: lower position first), copied to its queries."""
    rows, row_of_query = unique_inverse(query_rows)
    degrees = degrees_of(row_splits, rows)
    parts = []
    short = np.flatnonzero(degrees <= k)
    if short.size:                                     # every edge of the row
        seg, pos, _ = row_edges(row_splits, rows[short])
        parts.append((short[seg], pos))
    ranked = np.flatnonzero((degrees > k) & (degrees <= tuning.HUB_DEGREE))
    if ranked.size:                                    # one sort over all their edges
        seg, pos, within = row_edges(row_splits, rows[ranked])
        descending = -weights[pos] + 0.0               # + 0.0 turns -0.0 into 0.0: they tie
        keep = k_smallest_per_segment(seg, len(ranked), within, sortable_bits(descending),
                                       descending, k)
        parts.append((ranked[seg[keep]], pos[keep]))
    for r in np.flatnonzero(degrees > max(k, tuning.HUB_DEGREE)):  # O(degree) per hub row
        start = row_splits[rows[r]]
        chosen = _top_k_of_one_row(weights[start:row_splits[rows[r] + 1]], k)
        parts.append((np.full(k, r, dtype=np.int64), start + chosen))
    chosen_row, chosen_pos = merge_by_query(parts)
    return expand_to_queries(np.arange(len(query_rows), dtype=np.int64), row_of_query,
                              chosen_row, chosen_pos, len(rows))


def _top_k_of_one_row(row_weights, k):
    """Positions of the k largest weights, ties to the lower position, ascending."""
    cutoff = np.partition(row_weights, len(row_weights) - k)[len(row_weights) - k]
    above = np.flatnonzero(row_weights > cutoff)
    at_cutoff = np.flatnonzero(row_weights == cutoff)[:k - len(above)]
    return np.sort(np.concatenate([above, at_cutoff]))
