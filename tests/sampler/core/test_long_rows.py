"""Long rows (core.long_rows): a node with more than chunk_edges edges is sampled chunk by
chunk, and every strategy keeps its exact law over the row.

Statistical checks use fixed seeds; each bound is 5 standard deviations of the count
it checks (a false alarm has odds below 1e-6 per cell), or a chi-square at the same
level over whole subsets (test_strategies.assert_subset_law), and with fixed seeds
the outcome never changes from run to run.
"""
import itertools

import numpy as np
import pytest

from sampler.core import rng
from sampler.core.adjacency import build_adjacency
from sampler.core.hop import pair_edges, sample_hop
from sampler.core.long_rows import best, chunk_counts, chunk_of_edges
from sampler.core.pieces import Requests
from sampler.plan.plan import PlannedOp
from sampler.plan.sampling_spec_pb2 import LATEST_K, RANDOM_UNIFORM, RANDOM_WEIGHTED, TOP_K
from tests.sampler.core.test_strategies import assert_subset_law, successive_subset_probabilities
from unigraph.columnar.batches import EdgeBatch

HUB = b"hub"


def hub_adjacency(degree, chunk_edges, weights=None, times=None, targets=None):
    """One node with `degree` edges (row i has RowId i), and a second, short row."""
    targets = (np.array([b"t%04d" % i for i in range(degree)]) if targets is None
               else np.asarray(targets))
    sources = np.r_[np.full(degree, HUB), [b"small"]]
    targets = np.r_[targets, [b"t0000"]]
    w = None if weights is None else np.r_[np.asarray(weights, np.float64), [1.0]]
    t = None if times is None else np.r_[np.asarray(times, np.int64), [0]]
    batch = EdgeBatch("e", sources, targets, np.arange(degree + 1, dtype=np.int64), w, {}, t)
    return build_adjacency("e", [batch], chunk_edges=chunk_edges)


def draws(adjacency, strategy, k, n_samples, cutoff=None, seed=11):
    """The RowIds each of n_samples samples drew at the hub, one sorted tuple per sample."""
    op = PlannedOp("op", ("seed",), "e", "n", "n", k, strategy)
    cutoffs = None if cutoff is None else np.full(n_samples, cutoff, np.int64)
    requests = Requests.from_ids(np.arange(n_samples, dtype=np.int64),
                                 np.full(n_samples, HUB), cutoffs)
    drawn = sample_hop(adjacency, requests, op, seed)
    samples, rows = drawn.edges.samples, drawn.edges.rows
    order = np.lexsort((rows, samples))
    samples, rows = samples[order], rows[order]
    bounds = np.flatnonzero(np.r_[True, samples[1:] != samples[:-1], True])
    return [tuple(rows[a:b]) for a, b in zip(bounds[:-1], bounds[1:])], drawn


def assert_counts_match(observed: dict, expected_p: dict, n: int):
    for cell, p in expected_p.items():
        sd = np.sqrt(n * p * (1 - p))
        assert abs(observed.get(cell, 0) - n * p) <= 5 * sd + 1, (cell, observed.get(cell), n * p)
    assert set(observed) <= set(expected_p), set(observed) - set(expected_p)


# ---------------------------------------------------------------- layout

def test_a_long_row_is_laid_out_chunk_after_chunk_in_canonical_order_within_each():
    targets = [b"t%02d" % (i % 40) for i in range(100)]  # parallel edges: 60 targets twice
    adjacency = hub_adjacency(100, 30, targets=targets)
    long_rows = adjacency.long_rows
    assert list(long_rows.rows) == [0]  # "hub" < "small"
    n = int(chunk_counts(np.array([100]), 30)[0])
    assert n == 4 and list(long_rows.chunk_offsets) == [0, 4]
    assert long_rows.chunk_starts[0] == 0 and long_rows.chunk_ends[-1] == 100
    assert np.all(long_rows.chunk_starts[1:] == long_rows.chunk_ends[:-1])
    for c in range(n):
        span = slice(long_rows.chunk_starts[c], long_rows.chunk_ends[c])
        ids = adjacency.target_ids[adjacency.target_codes[span]]
        assert np.all(chunk_of_edges(rng.fingerprint(ids), n) == c)
        key = list(zip(ids.tolist(), adjacency.rows[span].tolist()))
        assert key == sorted(key)  # target id, then table row
    assert sorted(adjacency.rows[:100].tolist()) == list(range(100))
    assert adjacency.row_splits.tolist() == [0, 100, 101]


def test_rows_up_to_chunk_edges_are_untouched():
    plain = hub_adjacency(50, None)
    same = hub_adjacency(50, 50)
    assert same.long_rows is None
    assert np.array_equal(plain.rows, same.rows)
    for strategy in (RANDOM_UNIFORM, TOP_K):
        weights_needed = strategy == TOP_K
        a = hub_adjacency(50, None, weights=np.arange(50.0) if weights_needed else None)
        b = hub_adjacency(50, 50, weights=np.arange(50.0) if weights_needed else None)
        assert draws(a, strategy, 4, 20)[0] == draws(b, strategy, 4, 20)[0]


# ---------------------------------------------------------------- exact laws

def test_uniform_over_a_long_row_gives_every_subset_the_same_chance():
    # 6 edges in chunks of about 2: every chunk is sampled by keys.
    n = 30_000
    subsets, drawn = draws(hub_adjacency(6, 2), RANDOM_UNIFORM, 2, n)
    assert len(subsets) == n and drawn.at_cap == n and drawn.draws == n
    expected = {s: 1 / 15 for s in itertools.combinations(range(6), 2)}
    assert_subset_law(subsets, expected, n, 6)


def test_uniform_over_big_chunks_by_draws_has_exact_marginals_and_mixes_chunks():
    # 60 edges in chunks of about 20 >= 8 k: every chunk is sampled by draws and gaps.
    n, d, k = 30_000, 60, 2
    adjacency = hub_adjacency(d, 20)
    subsets, _ = draws(adjacency, RANDOM_UNIFORM, k, n)
    edges = np.array(subsets)
    counts = np.bincount(edges.reshape(-1), minlength=d)
    assert_counts_match(dict(enumerate(counts)), {i: k / d for i in range(d)}, n)
    # Both in one chunk: sum over chunks of C(size, 2) / C(d, 2).
    chunk_of_row = np.empty(d, np.int64)
    lr = adjacency.long_rows
    for c in range(len(lr.chunk_starts)):
        chunk_of_row[adjacency.rows[lr.chunk_starts[c]:lr.chunk_ends[c]]] = c
    sizes = lr.chunk_ends - lr.chunk_starts
    p_same = float((sizes * (sizes - 1) / 2).sum() / (d * (d - 1) / 2))
    same = int((chunk_of_row[edges[:, 0]] == chunk_of_row[edges[:, 1]]).sum())
    assert_counts_match({"same": same, "other": n - same}, {"same": p_same, "other": 1 - p_same}, n)


def test_weighted_over_a_long_row_is_successive_sampling():
    weights = [1.0, 2.0, 3.0, 0.0, 4.0]   # the edge of weight 0 is never drawn
    n = 30_000
    subsets, _ = draws(hub_adjacency(5, 2, weights=weights), RANDOM_WEIGHTED, 2, n)
    assert_subset_law(subsets, successive_subset_probabilities(weights, 2), n, len(weights))


def test_weighted_over_big_chunks_by_draws_has_the_exact_marginals():
    d, k, n = 64, 2, 40_000
    weights = np.random.default_rng(3).uniform(0.5, 2.0, d)
    subsets, _ = draws(hub_adjacency(d, 20, weights=weights), RANDOM_WEIGHTED, k, n)
    p = weights / weights.sum()
    inclusion = {i: p[i] + sum(p[j] * p[i] / (1 - p[j]) for j in range(d) if j != i)
                 for i in range(d)}
    counts = np.bincount(np.array(subsets).reshape(-1), minlength=d)
    assert_counts_match(dict(enumerate(counts)), inclusion, n)


@pytest.mark.parametrize("chunk_edges", [2, 20])   # keys, then draws
def test_a_cut_off_samples_the_eligible_edges_of_every_chunk_uniformly(chunk_edges):
    d, n = 60, 20_000
    times = np.random.default_rng(5).integers(0, 10, d)
    adjacency = hub_adjacency(d, chunk_edges, times=times)
    subsets, _ = draws(adjacency, RANDOM_UNIFORM, 1, n, cutoff=4)
    eligible = np.flatnonzero(times <= 4)
    counts = np.bincount(np.array(subsets).reshape(-1), minlength=d)
    assert counts[times > 4].sum() == 0
    assert_counts_match({int(i): counts[i] for i in eligible if counts[i]},
                        {int(i): 1 / len(eligible) for i in eligible}, n)


# ---------------------------------------------------------------- orders

def test_top_k_of_a_long_row_is_the_heaviest_with_ties_to_the_lower_canonical_position():
    weights = np.repeat([5.0, 3.0, 1.0], 10)        # ties everywhere
    adjacency = hub_adjacency(30, 4, weights=weights)
    (chosen,), _ = draws(adjacency, TOP_K, 12, 1)
    position = np.empty(30, np.int64)
    position[adjacency.rows[:30]] = np.arange(30)   # canonical position of each RowId
    expected = sorted(range(30), key=lambda r: (-weights[r], position[r]))[:12]
    assert sorted(chosen) == sorted(expected)


def test_latest_k_of_a_long_row_is_the_latest_eligible_with_ties_to_the_later_position():
    times = np.random.default_rng(2).integers(0, 6, 40)
    adjacency = hub_adjacency(40, 7, times=times)
    (chosen,), _ = draws(adjacency, LATEST_K, 5, 1, cutoff=3)
    position = np.empty(40, np.int64)
    position[adjacency.rows[:40]] = np.arange(40)
    eligible = [r for r in range(40) if times[r] <= 3]
    expected = sorted(eligible, key=lambda r: (-times[r], -position[r]))[:5]
    assert sorted(chosen) == sorted(expected)


def test_excluded_edges_of_a_link_sample_are_never_drawn_from_any_chunk():
    # The hub's pair partner "t0003" has three parallel edges: all in one chunk.
    targets = [b"t%04d" % (3 if i % 10 == 0 else i) for i in range(40)]
    adjacency = hub_adjacency(40, 8, targets=targets)
    op = PlannedOp("op", ("seed",), "e", "n", "n", 39, RANDOM_UNIFORM, exclude_pair_edges=True)
    pair = np.array([[rng.fingerprint(np.array([HUB]))[0],
                      rng.fingerprint(np.array([b"t0003"]))[0]]], np.uint64)
    requests = Requests.from_ids(np.zeros(1, np.int64), np.array([HUB]))
    requests.pairs = pair
    drawn = sample_hop(adjacency, requests, op, 3)
    excluded = {r for r in range(40) if targets[r] == b"t0003"}
    assert len(excluded) == 5 and drawn.pair_edges_excluded == 5
    assert set(drawn.edges.rows.tolist()) == set(range(40)) - excluded
    splits, positions = pair_edges(adjacency, np.array([0]), adjacency.source_fingerprints[:1],
                                   pair)
    assert splits.tolist() == [0, 5]


def test_best_keeps_the_k_smallest_keys_per_query_ties_by_the_second_key():
    query = np.array([0, 0, 0, 1, 1, 0], np.int64)
    primary = np.array([5, 1, 1, 9, 2, 0], np.uint64)
    secondary = np.array([0, 7, 3, 0, 0, 9], np.uint64)
    kept = best(query, primary, secondary, 2)
    assert kept.tolist() == [5, 2, 4, 3]
