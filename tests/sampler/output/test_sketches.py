"""The mergeable summaries hold their stated bounds for any values and any split."""
import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from sampler.output.sketches import (ALPHA, QUANTILES, DistinctCount, LogHistogram, Moments,
                                     TopValues)

finite_floats = st.floats(-2.0 ** 100, 2.0 ** 100, allow_nan=False, width=32)
any_floats = st.one_of(finite_floats, st.sampled_from([math.nan, math.inf, -math.inf, 0.0,
                                                       -0.0, 1e-40]))


def split(values, cuts):
    """values cut at the given positions (a stream arriving in pieces)."""
    points = sorted({min(c, len(values)) for c in cuts})
    return np.split(values, points)


@settings(max_examples=60, deadline=None)
@given(st.lists(any_floats, min_size=0, max_size=300), st.lists(st.integers(0, 300), max_size=4))
def test_moments_are_exact_for_any_split(values, cuts):
    values = np.array(values, np.float32)
    merged = Moments()
    for piece in split(values, cuts):
        part = Moments()
        part.add(piece)
        merged.merge(part)
    finite = values[np.isfinite(values)].astype(np.float64)
    assert merged.count == len(values)
    assert merged.nan == np.isnan(values).sum()
    assert merged.posinf + merged.neginf == np.isinf(values).sum()
    assert merged.finite == len(finite)
    if len(finite):
        assert merged.mean == np.float64(finite.mean()) or math.isclose(
            merged.mean, finite.mean(), rel_tol=1e-9, abs_tol=1e-20 * np.abs(finite).max())
        assert math.isclose(merged.std, finite.std(), rel_tol=1e-6,
                            abs_tol=1e-9 * np.abs(finite).max())
        assert (merged.min, merged.max) == (finite.min(), finite.max())


@settings(max_examples=80, deadline=None)
@given(st.lists(finite_floats, min_size=1, max_size=400), st.lists(st.integers(0, 400), max_size=3))
def test_log_histogram_quantiles_are_within_alpha(values, cuts):
    values = np.array(values, np.float32)
    merged = LogHistogram()
    for piece in split(values, cuts):
        part = LogHistogram()
        part.add(piece)
        merged.merge(part)
    exact = np.quantile(values.astype(np.float64), QUANTILES, method="lower")
    for got, want in zip(merged.quantiles(), exact):
        tiny = np.finfo(np.float32).tiny  # subnormals share one bucket per 2**17 bit patterns
        assert abs(got - want) <= ALPHA * abs(want) + tiny, (got, want)


def test_log_histogram_of_zero_and_signs():
    h = LogHistogram()
    h.add(np.array([-3.0, 0.0, -0.0, 5.0]))
    q = h.quantiles((0.0, 1 / 3, 2 / 3, 1.0))
    assert q[1] == 0.0 and q[2] == 0.0
    assert abs(q[0] + 3) <= 3 * ALPHA and abs(q[3] - 5) <= 5 * ALPHA
    values, counts = h.bins()
    assert counts.sum() == 4 and list(values) == sorted(values)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 30), max_size=300), st.integers(1, 12),
       st.lists(st.integers(0, 300), max_size=4))
def test_top_values_undercount_is_bounded(values, capacity, cuts):
    values = np.array(values, np.int64)
    merged = TopValues(capacity)
    for piece in split(values, cuts):
        part = TopValues(capacity)
        part.add(piece)
        merged.merge(part)
    truth = dict(zip(*np.unique(values, return_counts=True)))
    assert merged.total == len(values)
    assert merged.error <= len(values) / (capacity + 1)
    for value, count in merged.top(capacity):
        assert truth[value] - merged.error <= count <= truth[value]
    if len(truth) <= capacity and len(split(values, cuts)) == 1:
        assert merged.exact
    if merged.exact and len(values):
        assert dict(merged.top(len(truth) + 1)) == {v: int(c) for v, c in truth.items()}
        assert merged.quantiles() == list(np.quantile(values, QUANTILES, method="lower"))


def test_top_values_of_strings_of_several_widths():
    top = TopValues()
    top.add(np.array([b"a", b"bb"], "S2"))
    other = TopValues()
    other.add(np.array([b"bb", b"cccccc"], "S6"))
    top.merge(other)
    assert top.top(3) == [(b"bb", 2), (b"a", 1), (b"cccccc", 1)] and top.distinct() == 3


def test_distinct_count_exact_then_estimated():
    small = DistinctCount(k=64)
    small.add(np.arange(50) % 40)
    assert small.exact and small.estimate() == 40
    big = DistinctCount(k=1024)
    for start in range(0, 60000, 7000):   # overlapping pieces: duplicates do not count
        big.add(np.arange(start, start + 10000).clip(max=49999))
    assert not big.exact
    assert abs(big.estimate() - 50000) <= 50000 * 5 / math.sqrt(1024 - 2)  # 5 standard errors
    strings = DistinctCount()
    strings.add(np.array([b"x", b"y", b"x"]))
    assert strings.estimate() == 2
