"""Excluded edges (link samples leave out the edge they predict): every strategy stays
exact over a query's eligible edges (its row minus its excluded positions).

Distributions are tested as in test_strategies.py: chi-square over all subsets at the
5-sigma level and per-edge inclusion within 5 sigma, against exact probabilities
enumerated over the eligible edges; fixed seeds.
"""
import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as hs

from sampler.core import strategies as st
from sampler.core import strategy_tuning as tuning
from sampler.plan.sampling_spec_pb2 import RANDOM_UNIFORM, RANDOM_WEIGHTED, TOP_K
from tests.sampler.core.test_strategies import (ALL, PATHS, HUB_EVERYWHERE, assert_subset_law,
                                                constants, csr, per_query,
                                                successive_subset_probabilities)


def run_excluding(strategy, splits, weights, rows, excluded, *, k, samples=None, seed=1):
    """`excluded`: per query, positions relative to its row."""
    rows = np.asarray(rows, np.int64)
    samples = np.zeros(len(rows), np.int64) if samples is None else np.asarray(samples, np.int64)
    counts = [len(e) for e in excluded]
    ex_splits = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    ex_positions = np.array([splits[r] + p for r, e in zip(rows, excluded) for p in sorted(e)],
                            np.int64)
    return st.sample_edges(strategy, row_splits=splits, weights=weights, query_rows=rows,
                           query_samples=samples, query_nodes=rows.astype(np.uint64) + 1000,
                           k=k, seed=seed, op_salt=2, excluded_splits=ex_splits,
                           excluded_positions=ex_positions)


def check_distribution_excluding(strategy, row_weights, excluded, k, n=20_000, seed=7):
    splits, weights = csr(row_weights)
    chosen = per_query(run_excluding(strategy, splits, weights, np.zeros(n), [excluded] * n,
                                     k=k, samples=np.arange(n), seed=seed), n)
    eligible = [i for i in range(len(row_weights)) if i not in excluded]
    if strategy == RANDOM_UNIFORM:
        size = min(k, len(eligible))
        expected = {s: 1 / math.comb(len(eligible), size)
                    for s in itertools.combinations(eligible, size)}
    else:
        masked = [0.0 if i in excluded else w for i, w in enumerate(row_weights)]
        expected = successive_subset_probabilities(masked, k)
    assert_subset_law(chosen, expected, n, len(row_weights))


@pytest.mark.parametrize("d,excluded,k", [(5, {1}, 2), (6, {0, 5}, 3), (10, {3, 4, 7}, 3),
                                          (16, {0}, 2), (4, {2}, 1), (9, {8}, 1)])
@pytest.mark.parametrize("path", sorted(PATHS))
def test_uniform_is_exact_over_eligible_edges(d, excluded, k, path):
    with constants(**PATHS[path]):
        check_distribution_excluding(RANDOM_UNIFORM, [1.0] * d, excluded, k)


@pytest.mark.parametrize("row,excluded,k", [([1.0, 2.0, 3.0, 4.0], {3}, 2),
                                            ([5.0, 1.0, 1.0, 0.0, 2.0, 0.5], {0, 4}, 2),
                                            ([2.0, 9.0, 1.0, 4.0, 3.0, 0.25], {1}, 3)])
@pytest.mark.parametrize("hub", [False, True], ids=["keys", "hub"])
def test_weighted_is_exact_over_eligible_edges(row, excluded, k, hub):
    with constants(**(HUB_EVERYWHERE if hub else {})):
        check_distribution_excluding(RANDOM_WEIGHTED, row, excluded, k)


@pytest.mark.parametrize("hub", [False, True])
def test_top_k_ranks_the_eligible_edges(hub):
    splits, weights = csr([5.0, 9.0, 1.0, 9.0, 7.0], [3.0, 3.0])
    with constants(HUB_DEGREE=0 if hub else tuning.HUB_DEGREE):
        result = run_excluding(TOP_K, splits, weights, [0, 0, 1, 1], [{1}, set(), {0}, {0, 1}],
                               k=2)
    assert per_query(result, 4, splits, [0, 0, 1, 1]) == [(3, 4), (1, 3), (1,), ()]


@pytest.mark.parametrize("strategy", ALL)
def test_queries_without_exclusions_are_unchanged(strategy):
    """An empty exclusion list changes nothing: the same stream, the same draw."""
    splits, weights = csr([1.0, 2.0, 3.0, 4.0, 5.0, 0.5], [2.0, 1.0, 3.0])
    rows = [0, 1, 0, 1, 0]
    samples = np.arange(5) * 7
    plain = st.sample_edges(strategy, row_splits=splits, weights=weights,
                            query_rows=np.array(rows), query_samples=samples,
                            query_nodes=np.array(rows, np.uint64) + 1000, k=2, seed=1, op_salt=2)
    mixed = run_excluding(strategy, splits, weights, rows, [set(), set(), {2}, set(), set()],
                          k=2, samples=samples)
    before, after = per_query(plain, 5), per_query(mixed, 5)
    assert [b for i, b in enumerate(before) if i != 2] == [a for i, a in enumerate(after) if i != 2]
    assert 2 not in after[2]


@settings(max_examples=60, deadline=None)
@given(hs.lists(hs.lists(hs.integers(0, 5).map(float), min_size=0, max_size=9), min_size=1, max_size=4),
       hs.sampled_from(ALL), hs.integers(1, 4), hs.data())
def test_excluded_edges_are_never_drawn_and_the_rest_is_as_many_as_possible(rows_w, strategy,
                                                                           k, data):
    splits, weights = csr(*rows_w)
    n_queries = data.draw(hs.integers(1, 6))
    rows = [data.draw(hs.integers(0, len(rows_w) - 1)) for _ in range(n_queries)]
    excluded = [set(data.draw(hs.lists(hs.integers(0, max(len(rows_w[r]) - 1, 0)),
                                       max_size=len(rows_w[r])))) if rows_w[r] else set()
                for r in rows]
    chosen = per_query(run_excluding(strategy, splits, weights, rows, excluded, k=k,
                                     samples=np.arange(n_queries)), n_queries, splits, rows)
    for r, ex, got in zip(rows, excluded, chosen):
        assert not set(got) & ex and list(got) == sorted(set(got))
        eligible = [i for i in range(len(rows_w[r])) if i not in ex]
        if strategy == RANDOM_WEIGHTED:
            eligible = [i for i in eligible if rows_w[r][i] > 0]
        assert len(got) == min(k, len(eligible))


def test_bad_exclusions_raise_value_error():
    splits, weights = csr([1.0, 2.0], [3.0])
    with pytest.raises(ValueError, match="outside its query's row"):
        run_excluding(RANDOM_UNIFORM, splits, weights, [1], [{1}], k=1)
    with pytest.raises(ValueError, match="CSR over the 1 queries"):
        st.sample_edges(RANDOM_UNIFORM, row_splits=splits, weights=weights,
                        query_rows=np.array([0]), query_samples=np.array([0]),
                        query_nodes=np.array([1], np.uint64), k=1, seed=1, op_salt=1,
                        excluded_splits=np.array([0, 2]), excluded_positions=np.array([0]))
