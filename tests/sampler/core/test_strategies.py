"""Tests of sampler.core.strategies: semantics, determinism and distributions.

Statistical tests use fixed seeds and state their bounds: per-edge inclusion
counts are Binomial(n, p) and must lie within 5 sigma of n*p; joint subset
counts must pass a chi-square test at the 5-sigma level (p ~ 3e-7), critical
value by the Wilson-Hilferty approximation (no scipy needed).
"""
import contextlib
import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as hs

from sampler.core import random_strategies as rs
from sampler.core import strategies as st
from sampler.core import strategy_tuning as tuning
from sampler.plan.sampling_spec_pb2 import LATEST_K, RANDOM_UNIFORM, RANDOM_WEIGHTED, TOP_K

RANDOM = (RANDOM_UNIFORM, RANDOM_WEIGHTED)
ALL = (TOP_K, RANDOM_UNIFORM, RANDOM_WEIGHTED)
FIVE_SIGMA = 5.0


# ---------------------------------------------------------------- helpers

def csr(*rows):
    """row_splits and weights from per-row weight lists."""
    splits = np.concatenate([[0], np.cumsum([len(r) for r in rows])]).astype(np.int64)
    weights = np.array([w for r in rows for w in r], dtype=np.float64)
    return splits, weights


def run(strategy, splits, weights, rows, samples=None, nodes=None, *, k, seed=1, salt=2,
        limit=None):
    rows = np.asarray(rows, dtype=np.int64)
    samples = np.zeros(len(rows), np.int64) if samples is None else np.asarray(samples, np.int64)
    nodes = rows.astype(np.uint64) + np.uint64(1000) if nodes is None else np.asarray(nodes, np.uint64)
    return st.sample_edges(strategy, row_splits=splits, weights=weights, query_rows=rows,
                           query_samples=samples, query_nodes=nodes, k=k, seed=seed, op_salt=salt,
                           limit=limit)


def per_query(result, n_queries, splits=None, rows=None):
    """Chosen edges of every query as a tuple (positions relative to the row if splits given)."""
    queries, positions = result
    out = [[] for _ in range(n_queries)]
    for q, p in zip(queries.tolist(), positions.tolist()):
        out[q].append(p - (splits[rows[q]] if splits is not None else 0))
    return [tuple(x) for x in out]


@contextlib.contextmanager
def constants(**values):
    """Temporarily overrides module constants (HUB_DEGREE, MIN_ACCEPTANCE, MAX_PAIRS)."""
    saved = {name: getattr(tuning, name) for name in values}
    for name, value in values.items():
        setattr(tuning, name, value)
    try:
        yield
    finally:
        for name, value in saved.items():
            setattr(tuning, name, value)


# Each RANDOM_UNIFORM method on every row it can take (Floyd's is the default for k <= 16).
HUB_EVERYWHERE = dict(HUB_DEGREE=0, MIN_ACCEPTANCE=0.05, FLOYD_MAX_K=0)
KEYS_ONLY = dict(FLOYD_MAX_K=0, UNIFORM_DRAW_FACTOR=10**9)
PATHS = {"keys": KEYS_ONLY, "hub": HUB_EVERYWHERE, "floyd": {}}


def chi_square_bound(dof, z=FIVE_SIGMA):
    """Wilson-Hilferty upper quantile of chi-square(dof) at the normal quantile z."""
    a = 2 / (9 * dof)
    return dof * (1 - a + z * math.sqrt(a)) ** 3


def successive_subset_probabilities(weights, k):
    """Exact {subset: probability} of successive sampling, by enumerating ordered draws."""
    drawable = [i for i, w in enumerate(weights) if w > 0]
    size = min(k, len(drawable))
    result = {}
    for sequence in itertools.permutations(drawable, size):
        p, left = 1.0, sum(weights[i] for i in drawable)
        for i in sequence:
            p *= weights[i] / left
            left -= weights[i]
        key = tuple(sorted(sequence))
        result[key] = result.get(key, 0.0) + p
    return result


def check_distribution(strategy, row_weights, k, n=20_000, seed=7, ineligible=()):
    """Samples one row n times (n samples) and tests subsets and inclusions against exact.

    `ineligible`: weights of edges appended to the row beyond every query's prefix
    (`limit` = len(row_weights)): the distribution must be the exact one of the prefix."""
    splits, weights = csr(list(row_weights) + list(ineligible))
    limit = np.full(n, len(row_weights)) if ineligible else None
    result = run(strategy, splits, weights, np.zeros(n), samples=np.arange(n), k=k, seed=seed,
                 limit=limit)
    chosen = per_query(result, n)
    if strategy == RANDOM_UNIFORM:
        d = len(row_weights)
        expected = {s: 1 / math.comb(d, min(k, d)) for s in itertools.combinations(range(d), min(k, d))}
    else:
        expected = successive_subset_probabilities(row_weights, k)
    assert_subset_law(chosen, expected, n, len(row_weights))


def assert_subset_law(chosen, expected, n, n_edges):
    """The n drawn subsets (sorted tuples) follow `expected` {subset: probability}: no
    impossible subset, a chi-square below its 5-sigma bound, and every edge's inclusion
    count within 5 sigma of n times its probability."""
    counts = {}
    for subset in chosen:
        counts[subset] = counts.get(subset, 0) + 1
    assert set(counts) <= set(expected), f"impossible subsets {set(counts) - set(expected)}"
    if len(expected) > 1:
        chi2 = sum((counts.get(s, 0) - n * p) ** 2 / (n * p) for s, p in expected.items())
        assert chi2 < chi_square_bound(len(expected) - 1), (chi2, counts, expected)
    for edge in range(n_edges):
        p = sum(prob for s, prob in expected.items() if edge in s)
        seen = sum(c for s, c in counts.items() if edge in s)
        sigma = math.sqrt(n * p * (1 - p))
        assert abs(seen - n * p) <= FIVE_SIGMA * sigma + 1e-9, (edge, seen, n * p)


# ---------------------------------------------------------------- unit tests

@pytest.mark.parametrize("strategy", ALL)
def test_degree_zero_and_empty_queries(strategy):
    splits, weights = csr([], [1.0, 2.0], [])
    q, p = run(strategy, splits, weights, [0, 2, 0], k=3)
    assert q.size == 0 and p.size == 0
    q, p = run(strategy, splits, weights, [], k=3)
    assert q.dtype == np.int64 and p.dtype == np.int64 and q.size == 0


@pytest.mark.parametrize("strategy", ALL)
def test_degree_at_most_k_takes_every_edge(strategy):
    splits, weights = csr([3.0, 1.0], [1.0, 2.0, 5.0])
    q, p = run(strategy, splits, weights, [1, 0], k=3)
    assert q.tolist() == [0, 0, 0, 1, 1] and p.tolist() == [2, 3, 4, 0, 1]


@pytest.mark.parametrize("strategy", ALL)
def test_k_zero_returns_nothing(strategy):
    splits, weights = csr([1.0, 2.0])
    assert run(strategy, splits, weights, [0], k=0)[0].size == 0


@pytest.mark.parametrize("strategy", ALL)
def test_k_one_and_output_order(strategy):
    splits, weights = csr([1.0, 4.0, 2.0, 3.0], [5.0] * 6)
    q, p = run(strategy, splits, weights, [1, 0, 1, 0], samples=[0, 0, 1, 1], k=1)
    assert q.tolist() == [0, 1, 2, 3]
    assert all(splits[r] <= x < splits[r + 1] for r, x in zip([1, 0, 1, 0], p))
    q, p = run(strategy, splits, weights, [1, 0], k=4)
    assert q.tolist() == [0] * 4 + [1] * 4
    assert p[:4].tolist() == sorted(p[:4]) and p[4:].tolist() == [0, 1, 2, 3]


def test_top_k_breaks_ties_by_position_and_keeps_non_positive_weights():
    splits, weights = csr([2.0, 5.0, 2.0, 5.0, 2.0], [-1.0, 0.0, -3.0, 0.0])
    q, p = run(TOP_K, splits, weights, [0, 1], k=3)
    assert p[q == 0].tolist() == [0, 1, 3]      # 5, 5, then the first of the 2s
    assert p[q == 1].tolist() == [5, 6, 8]      # 0, 0, then -1: weights <= 0 are eligible
    splits, weights = csr([0.0, -0.0, 0.0, -0.0])
    assert run(TOP_K, splits, weights, [0], k=3)[1].tolist() == [0, 1, 2]  # -0.0 ties 0.0


def test_top_k_is_the_same_for_every_query_of_a_row_and_needs_weights():
    splits, weights = csr(list(np.arange(10.0) % 3))
    q, p = run(TOP_K, splits, weights, [0] * 5, samples=range(5), k=4)
    assert per_query((q, p), 5) == [(1, 2, 5, 8)] * 5   # the 2s, then the first 1
    with pytest.raises(ValueError, match="need edge weights"):
        run(TOP_K, splits, None, [0], k=1)
    with pytest.raises(ValueError, match="need edge weights"):
        run(RANDOM_WEIGHTED, splits, None, [0], k=1)


def test_top_k_hub_rows_match_the_ranked_path():
    rng = np.random.default_rng(3)
    row = list(rng.integers(0, 20, size=300).astype(float))   # many ties
    splits, weights = csr(row, row[::-1])
    normal = run(TOP_K, splits, weights, [0, 1], k=25)
    with constants(HUB_DEGREE=100):
        hub = run(TOP_K, splits, weights, [0, 1], k=25)
    assert all(np.array_equal(a, b) for a, b in zip(normal, hub))
    expected = np.lexsort((np.arange(300), -np.array(row)))[:25]
    assert np.array_equal(normal[1][:25], np.sort(expected))


@pytest.mark.parametrize("hub", [False, True])
def test_weighted_never_draws_non_positive_weights(hub):
    splits, weights = csr([0.0, 0.0, 0.0], [-1.0, 2.0, 0.0, 1.0, -5.0, 3.0])
    with constants(**(HUB_EVERYWHERE if hub else {})):
        q, p = run(RANDOM_WEIGHTED, splits, weights, [0, 1, 1], samples=[0, 0, 1], k=2)
    assert q.tolist() == [1, 1, 2, 2]                    # all-zero row yields nothing
    assert set(p.tolist()) <= {4, 6, 8}
    q, p = run(RANDOM_WEIGHTED, splits, weights, [1], k=5)  # fewer than k drawable
    assert p.tolist() == [4, 6, 8]


@pytest.mark.parametrize("strategy", RANDOM)
def test_repeated_queries_repeat_and_other_samples_differ(strategy):
    splits, weights = csr([1.0] * 50)
    samples = [4, 9, 4, 9, 5]
    chosen = per_query(run(strategy, splits, weights, [0] * 5, samples=samples, k=5), 5)
    assert chosen[0] == chosen[2] and chosen[1] == chosen[3]
    assert len({chosen[0], chosen[1], chosen[4]}) == 3
    assert all(len(set(c)) == 5 for c in chosen)


@pytest.mark.parametrize("strategy", RANDOM)
def test_seed_and_op_salt_change_the_draw(strategy):
    splits, weights = csr([1.0] * 100)
    base = run(strategy, splits, weights, [0], k=5, seed=1, salt=2)[1]
    assert not np.array_equal(base, run(strategy, splits, weights, [0], k=5, seed=3, salt=2)[1])
    assert not np.array_equal(base, run(strategy, splits, weights, [0], k=5, seed=1, salt=4)[1])
    assert np.array_equal(base, run(strategy, splits, weights, [0], k=5, seed=1, salt=2)[1])


@pytest.mark.parametrize("strategy", RANDOM)
def test_different_samples_draw_independently(strategy):
    # k=1 of 4 equal edges: two independent draws agree with probability 1/4.
    n = 20_000
    splits, weights = csr([1.0] * 4)
    nodes = np.arange(n, dtype=np.uint64)
    a = run(strategy, splits, weights, np.zeros(n), samples=np.full(n, 1), nodes=nodes, k=1)[1]
    b = run(strategy, splits, weights, np.zeros(n), samples=np.full(n, 2), nodes=nodes, k=1)[1]
    agree = np.sum(a == b)
    assert abs(agree - n / 4) < FIVE_SIGMA * math.sqrt(n * 3 / 16)


def test_bad_arguments_raise_value_error():
    splits, weights = csr([1.0, 2.0])
    with pytest.raises(ValueError, match="unknown strategy"):
        run(7, splits, weights, [0], k=1)
    with pytest.raises(ValueError, match="k must be"):
        run(TOP_K, splits, weights, [0], k=-1)
    with pytest.raises(ValueError, match="query_rows must lie"):
        run(TOP_K, splits, weights, [1], k=1)
    with pytest.raises(ValueError, match="never decrease"):
        run(TOP_K, np.array([0, 2, 1]), weights, [1], k=1)  # a queried row ends before it starts
    with pytest.raises(ValueError, match="differ in length"):
        run(TOP_K, splits, weights, [0], samples=[0, 1], k=1)
    with pytest.raises(ValueError, match="integer array"):
        st.sample_edges(TOP_K, row_splits=splits, weights=weights, query_rows=np.array([0.0]),
                        query_samples=[0], query_nodes=[0], k=1, seed=0, op_salt=0)
    with pytest.raises(ValueError, match="weights for"):
        run(TOP_K, splits, weights[:1], [0], k=1)


# ---------------------------------------------------------------- paths

def test_path_choice_follows_the_row():
    calls = []
    original_uniform, original_weighted = rs._uniform_hub, rs._weighted_hub
    rs._uniform_hub = lambda *a: calls.append("uniform") or original_uniform(*a)
    rs._weighted_hub = lambda *a: calls.append("weighted") or original_weighted(*a)
    try:
        with constants(HUB_DEGREE=4, FLOYD_MAX_K=0):
            splits, weights = csr([1.0] * 5, [100.0, 1, 1, 1, 1, 1], [1.0] * 4)
            run(RANDOM_UNIFORM, splits, weights, [0, 2], k=2)
            assert calls == ["uniform"]
            run(RANDOM_UNIFORM, splits, weights, [0], k=5)     # d <= k: all edges
            run(RANDOM_WEIGHTED, splits, weights, [1], k=3)    # concentrated: keys fallback
            assert calls == ["uniform"]
            run(RANDOM_WEIGHTED, splits, weights, [0], k=3)
            assert calls == ["uniform", "weighted"]
    finally:
        rs._uniform_hub, rs._weighted_hub = original_uniform, original_weighted


def test_rejection_cost_rule():
    assert rs._rejection_is_cheap(np.array([1.0] * 8), 3)
    assert rs._rejection_is_cheap(np.array([1.0, 0.0] * 8), 3)
    assert not rs._rejection_is_cheap(np.array([100.0] + [1.0] * 8), 3)
    assert rs._rejection_is_cheap(np.array([100.0] + [1.0] * 8), 1)


# ---------------------------------------------------------------- distributions

# (16, 2) and (9, 1) are 8k or more edges: RANDOM_UNIFORM draws there even below HUB_DEGREE.
UNIFORM_CASES = [(4, 2), (5, 2), (6, 3), (6, 1), (10, 3), (16, 2), (9, 1)]
WEIGHTED_CASES = [([1.0, 2.0, 3.0, 4.0], 2), ([5.0, 1.0, 1.0, 0.0, 2.0, 0.5], 3),
                  ([1.0, 1.0, 1.0, 1.0, 1.0], 2), ([3.0, -1.0, 1.0, 2.0, 6.0, 1.5], 1),
                  ([2.0, 9.0, 1.0, 4.0, 3.0, 0.25], 4)]


@pytest.mark.parametrize("d,k", UNIFORM_CASES)
@pytest.mark.parametrize("path", sorted(PATHS))
def test_uniform_distribution(d, k, path):
    with constants(**PATHS[path]):
        check_distribution(RANDOM_UNIFORM, [1.0] * d, k)


@pytest.mark.parametrize("row,k", WEIGHTED_CASES)
@pytest.mark.parametrize("hub", [False, True], ids=["keys", "hub"])
def test_weighted_distribution(row, k, hub):
    with constants(**(HUB_EVERYWHERE if hub else {})):
        check_distribution(RANDOM_WEIGHTED, row, k)


def test_weighted_fallback_distribution_for_concentrated_hub():
    with constants(HUB_DEGREE=0):   # the 50 is too heavy for rejection: keys fallback
        check_distribution(RANDOM_WEIGHTED, [50.0, 1.0, 2.0, 1.0, 0.5], 3)


@pytest.mark.parametrize("d,k", UNIFORM_CASES[:4])
@pytest.mark.parametrize("path", sorted(PATHS))
def test_uniform_distribution_over_an_eligible_prefix(d, k, path):
    with constants(**PATHS[path]):
        check_distribution(RANDOM_UNIFORM, [1.0] * d, k, ineligible=[1.0] * 7)


@pytest.mark.parametrize("row,k", WEIGHTED_CASES[:3])
@pytest.mark.parametrize("hub", [False, True], ids=["keys", "hub"])
def test_weighted_distribution_over_an_eligible_prefix(row, k, hub):
    # Heavy ineligible edges would dominate every draw if they leaked in.
    with constants(**(HUB_EVERYWHERE if hub else {})):
        check_distribution(RANDOM_WEIGHTED, row, k, ineligible=[100.0, 50.0])


def test_uniform_inclusion_on_a_big_hub_row():
    # k/d inclusion for every edge of a row above the real HUB_DEGREE, 5 sigma.
    d, k, n = 5000, 8, 3000
    splits, weights = csr([1.0] * d)
    q, p = run(RANDOM_UNIFORM, splits, weights, np.zeros(n), samples=np.arange(n), k=k)
    counts = np.bincount(p, minlength=d)
    assert len(p) == n * k and np.all(np.bincount(q) == k)
    mean, var = n * k / d, n * (k / d) * (1 - k / d)
    # The sum of squared standardized counts is about chi-square(d); check its 5-sigma bound.
    assert ((counts - mean) ** 2 / var).sum() < chi_square_bound(d)


# ---------------------------------------------------------------- determinism

@hs.composite
def batches(draw):
    n_rows = draw(hs.integers(1, 6))
    rows = [draw(hs.lists(hs.sampled_from([-1.0, 0.0, 0.5, 1.0, 2.0, 3.0]), max_size=12))
            for _ in range(n_rows)]
    queries = draw(hs.lists(hs.tuples(hs.integers(0, n_rows - 1), hs.integers(0, 3)),
                            min_size=1, max_size=15))
    return rows, queries


@settings(max_examples=60, deadline=None)
@given(batches(), hs.sampled_from(ALL), hs.integers(1, 5), hs.randoms(use_true_random=False),
       hs.sampled_from([{}, HUB_EVERYWHERE, KEYS_ONLY, dict(MAX_PAIRS=3)]))
def test_result_of_a_query_ignores_the_rest_of_the_batch(batch, strategy, k, random, overrides):
    rows, queries = batch
    with constants(**overrides):
        def chosen(rows, queries):
            splits, weights = csr(*rows)
            query_rows = [r for r, _ in queries]
            result = run(strategy, splits, weights, query_rows, samples=[s for _, s in queries],
                         nodes=[1000 + hash(tuple(rows[r])) % 97 for r, _ in queries], k=k)
            q, p = result
            assert np.all(np.diff(q) >= 0)
            assert all(np.all(np.diff(p[q == i]) > 0) for i in range(len(queries)))
            return per_query(result, len(queries), splits, query_rows)

        everything = chosen(rows, queries)
        # Reversed and shuffled rows, an extra row, and a subset of the queries in another order.
        permutation = list(range(len(rows)))
        random.shuffle(permutation)
        moved_rows = [[4.0, 4.0, 1.0]] + [rows[i] for i in permutation]
        where = {old: new + 1 for new, old in enumerate(permutation)}
        subset = [i for i in range(len(queries)) if random.random() < 0.6]
        random.shuffle(subset)
        moved = chosen(moved_rows, [(where[queries[i][0]], queries[i][1]) for i in subset])
        assert moved == [everything[i] for i in subset]


# ---------------------------------------------------------------- exact scheme (reference)

def reference(strategy, row_weights, sample, node, k, seed, salt, path):
    """One query by the documented scheme, one draw at a time in plain Python."""
    from sampler.core import rng
    base = rng.mix(seed, salt, np.int64(sample), np.uint64(node))
    d = len(row_weights)
    drawable = [i for i in range(d) if row_weights[i] > 0] if strategy == RANDOM_WEIGHTED \
        else list(range(d))
    if len(drawable) <= k:
        return tuple(drawable)
    if path == "floyd":               # step i: t in [0, d-k+i], or d-k+i if t is taken
        chosen = []
        for i in range(k):
            top, attempt = d - k + i, 0
            while True:
                h = int(rng.mix_into(base, i + attempt * k))
                attempt += 1
                if h < 2**64 - 2**64 % (top + 1):
                    break
            t = h % (top + 1)
            chosen.append(top if t in chosen else t)
        return tuple(sorted(chosen))
    if path == "keys":                # keys: smallest hash / smallest -log(u)/w
        keys = [rng.mix_into(base, j) for j in range(d)]
        if strategy == RANDOM_WEIGHTED:
            keys = [-np.log(rng.unit_interval(keys[j])) / row_weights[j] if j in drawable
                    else np.inf for j in range(d)]
        return tuple(sorted(sorted(range(d), key=lambda j: (keys[j], j))[:k]))
    cumulative = np.cumsum(np.maximum(row_weights, 0))
    chosen, counter = [], 0
    while len(chosen) < k:            # first k distinct values of the counter stream
        h = int(rng.mix_into(base, counter))
        counter += 1
        if strategy == RANDOM_UNIFORM:
            if h >= 2**64 - 2**64 % d:
                continue
            value = h % d
        else:
            value = int(np.searchsorted(cumulative, rng.unit_interval(np.uint64(h)) * cumulative[-1],
                                        side="right"))
        if value not in chosen:
            chosen.append(value)
    return tuple(sorted(chosen))


@pytest.mark.parametrize("strategy", RANDOM)
@pytest.mark.parametrize("path", sorted(PATHS))
def test_results_follow_the_documented_scheme(strategy, path):
    generator = np.random.default_rng(5)
    rows = [list(generator.choice([0.0, 0.5, 1.0, 2.0, 7.0], size=d))
            for d in (0, 3, 9, 14, 30, 40)]
    splits, weights = csr(*rows)
    query_rows = np.repeat(np.arange(len(rows)), 4)
    samples = np.tile([0, 1, 2, 3], len(rows))
    nodes = query_rows.astype(np.uint64) * np.uint64(77) + np.uint64(5)
    with constants(**PATHS[path]):
        got = per_query(run(strategy, splits, weights, query_rows, samples, nodes, k=4, seed=9,
                            salt=11), len(query_rows), splits, query_rows)
        if strategy == RANDOM_UNIFORM:  # one method for every row the run can take it
            used = [path] * len(rows)
        else:  # Floyd's is uniform-only; a hub row draws only while rejection stays cheap
            used = ["hub" if path == "hub" and rs._rejection_is_cheap(np.maximum(row, 0), 4)
                    else "keys" for row in rows]
    if path == "hub":
        assert used[2] == used[4] == "hub"
    for i, (r, s, n) in enumerate(zip(query_rows, samples, nodes)):
        assert got[i] == reference(strategy, rows[r], s, n, 4, 9, 11, used[r]), (i, r)


def test_golden_results():
    # Pins the output for a fixed --seed: a change here changes every sampled graph,
    # so treat it as a format change. Made by running this very call once.
    splits = np.array([0, 5, 5, 12, 20], dtype=np.int64)
    weights = np.array([1, 2, 3, 0, 5, 4, 4, 1, 0, -2, 3, 9, .5, 1, 1.5, 2, 2.5, 3, 3.5, 4])
    rows, samples = [0, 2, 3, 2, 1, 3], [0, 0, 0, 1, 0, 7]
    nodes = [11, 33, 44, 33, 22, 44]
    golden = {
        TOP_K: [1, 2, 4, 5, 6, 11, 17, 18, 19, 5, 6, 11, 17, 18, 19],
        # Floyd's algorithm since k <= FLOYD_MAX_K (re-pinned when it replaced the keys).
        RANDOM_UNIFORM: [0, 1, 3, 7, 10, 11, 13, 14, 15, 6, 10, 11, 12, 15, 18],
        RANDOM_WEIGHTED: [0, 2, 4, 5, 6, 11, 13, 16, 18, 5, 6, 11, 15, 18, 19],
    }
    for strategy, positions in golden.items():
        q, p = run(strategy, splits, weights, rows, samples, nodes, k=3, seed=42, salt=7)
        assert q.tolist() == [0, 0, 0, 1, 1, 1, 2, 2, 2, 3, 3, 3, 5, 5, 5]
        assert p.tolist() == positions


# ---------------------------------------------------------------- eligible prefixes, LATEST_K

def test_latest_k_takes_the_last_k_of_the_prefix():
    splits, _ = csr([0.0] * 5, [], [0.0] * 2)
    q, p = run(LATEST_K, splits, None, [0, 0, 1, 2, 0], k=3, limit=[5, 2, 0, 2, 4])
    assert per_query((q, p), 5) == [(2, 3, 4), (0, 1), (), (5, 6), (1, 2, 3)]
    q, p = run(LATEST_K, splits, None, [0, 2], k=1)     # no limit: the whole row
    assert per_query((q, p), 2) == [(4,), (6,)]


def test_top_k_over_a_prefix_ignores_heavier_later_edges():
    splits, weights = csr([1.0, 3.0, 2.0, 9.0, 8.0])
    q, p = run(TOP_K, splits, weights, [0, 0, 0], k=2, limit=[3, 5, 1])
    assert per_query((q, p), 3) == [(1, 2), (3, 4), (0,)]


@settings(max_examples=80, deadline=None)
@given(batches(), hs.sampled_from(ALL + (LATEST_K,)), hs.integers(1, 5), hs.data(),
       hs.sampled_from([{}, HUB_EVERYWHERE, KEYS_ONLY]))
def test_a_prefix_is_sampled_as_if_it_were_the_whole_row(batch, strategy, k, data, overrides):
    """limit = degree changes nothing; a shorter limit gives what a row cut there gives."""
    rows, queries = batch
    splits, weights = csr(*rows)
    query_rows = [r for r, _ in queries]
    samples = [s for _, s in queries]
    degrees = [len(rows[r]) for r in query_rows]
    limits = [data.draw(hs.integers(0, d)) for d in degrees]
    nodes = [1000 + r for r in query_rows]
    with constants(**overrides):
        whole = run(strategy, splits, weights, query_rows, samples, nodes, k=k)
        full = run(strategy, splits, weights, query_rows, samples, nodes, k=k, limit=degrees)
        assert per_query(whole, len(queries)) == per_query(full, len(queries))
        got = per_query(run(strategy, splits, weights, query_rows, samples, nodes, k=k,
                            limit=limits), len(queries), splits, query_rows)
        for i, (r, s) in enumerate(queries):
            cut_splits, cut_weights = csr(rows[r][:limits[i]])
            alone = run(strategy, cut_splits, cut_weights, [0], [s], [nodes[i]], k=k)
            assert got[i] == per_query(alone, 1)[0], (i, rows[r], limits[i])


def test_bad_limits_raise():
    splits, weights = csr([1.0, 2.0])
    with pytest.raises(ValueError, match="limit must lie in"):
        run(RANDOM_UNIFORM, splits, weights, [0], k=1, limit=[3])
    with pytest.raises(ValueError, match="1 limits for 2 queries"):
        run(RANDOM_UNIFORM, splits, weights, [0, 0], k=1, limit=[1])


@settings(max_examples=60, deadline=None)
@given(batches(), hs.sampled_from(ALL + (LATEST_K,)), hs.integers(1, 4), hs.data())
def test_exclusions_apply_within_the_eligible_prefix(batch, strategy, k, data):
    """limit + excluded positions = the same query over the prefix with those exclusions
    (an excluded position beyond the prefix changes nothing)."""
    rows, queries = batch
    splits, weights = csr(*rows)
    query_rows = [r for r, _ in queries]
    samples = [s for _, s in queries]
    nodes = [1000 + r for r in query_rows]
    limits, excluded, counts = [], [], []
    for r in query_rows:
        d = len(rows[r])
        limits.append(data.draw(hs.integers(0, d)))
        chosen = sorted(data.draw(hs.sets(hs.integers(0, max(d - 1, 0)), max_size=d)) if d
                        else [])
        excluded += [int(splits[r]) + p for p in chosen]
        counts.append(len(chosen))
    excluded_splits = np.r_[0, np.cumsum(counts)].astype(np.int64)
    got = per_query(st.sample_edges(
        strategy, row_splits=splits, weights=weights, query_rows=np.array(query_rows, np.int64),
        query_samples=np.array(samples, np.int64), query_nodes=np.array(nodes, np.uint64), k=k,
        seed=1, op_salt=2, limit=limits, excluded_splits=excluded_splits,
        excluded_positions=np.array(excluded, np.int64)), len(queries), splits, query_rows)
    for i, r in enumerate(query_rows):
        cut_splits, cut_weights = csr(rows[r][:limits[i]])
        inside = [p - int(splits[r]) for p in excluded[excluded_splits[i]:excluded_splits[i + 1]]
                  if p - int(splits[r]) < limits[i]]
        alone = st.sample_edges(
            strategy, row_splits=cut_splits, weights=cut_weights, query_rows=np.array([0]),
            query_samples=np.array([samples[i]]), query_nodes=np.array([nodes[i]], np.uint64),
            k=k, seed=1, op_salt=2, excluded_splits=np.array([0, len(inside)]),
            excluded_positions=np.array(inside, np.int64))
        assert got[i] == per_query(alone, 1)[0], (rows[r], limits[i], inside)


def _unbiased_below_reference(h_of, base, bound, step, stride):
    """The rejection rule spelled out for every query: redraw while h >= 2**64 -
    (2**64 mod bound)."""
    out = []
    for i, (b, n) in enumerate(zip(base.tolist(), bound.tolist())):
        limit = 2**64 - (2**64 % n)
        attempt = 0
        h = h_of(b, step)
        while 2**64 % n and h >= limit:
            attempt += 1
            h = h_of(b, step + attempt * stride)
        out.append(h % n)
    return out


_TOP = 2**64 - 1


@settings(max_examples=200, deadline=None)
@given(hs.lists(hs.tuples(hs.one_of(hs.integers(1, 1000), hs.integers(1, 2**62)),  # bound
                          hs.integers(0, 2**20)), min_size=1, max_size=40),  # base
       hs.integers(0, 5), hs.integers(1, 8))
def test_unbiased_below_redraws_exactly_the_biased_top(queries, step, stride):
    """mix_into replaced by a function whose values often fall in the rejected top range
    (h near 2**64), so that the redraw rule is exercised for bounds large and small."""
    def h_of(b, counter):
        # The very top of the range for the first few counters (a number that depends on
        # the query), ordinary values after: redraws happen, and end.
        return _TOP - (b * 7919 + counter) % 5 if counter < b % 23 else b * 104729 + counter

    def fake_mix_into(base, counter):
        return np.array([h_of(b, counter) for b in base.tolist()], np.uint64)

    bound = np.array([n for n, _ in queries], np.uint64)
    base = np.array([b for _, b in queries], np.uint64)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(rs.rng, "mix_into", fake_mix_into)
        got = rs._unbiased_below(base, bound, step, stride)
    assert got.tolist() == _unbiased_below_reference(h_of, base, bound, step, stride)
