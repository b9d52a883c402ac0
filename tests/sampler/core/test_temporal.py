"""Time in the core: effective times, eligible prefixes, time-ordered adjacency, cut-offs
through seeds and hops (pure numpy, no Beam)."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as hs

from sampler.core.adjacency import build_adjacency
from sampler.core.hop import sample_hop
from sampler.core.pieces import Requests
from sampler.core.seeds import number_seeds
from sampler.core.temporal import (effective_times, eligible_prefix, lowest_time,
                                   with_target_times)
from sampler.plan.plan import PlannedOp
from sampler.plan.sampling_spec_pb2 import LATEST_K, RANDOM_UNIFORM, TOP_K
from unigraph.columnar.batches import EdgeBatch, SeedBatch


@settings(max_examples=200, deadline=None)
@given(hs.lists(hs.lists(hs.integers(-3, 3), max_size=9), min_size=1, max_size=6),
       hs.data(), hs.sampled_from(["int64", "float64"]))
def test_eligible_prefix_counts_times_not_after_the_cutoff(rows, data, dtype):
    times = np.array([t for r in rows for t in sorted(r)], dtype=dtype)
    splits = np.r_[0, np.cumsum([len(r) for r in rows])].astype(np.int64)
    queries = data.draw(hs.lists(hs.integers(0, len(rows) - 1), max_size=10))
    cutoffs = np.array([data.draw(hs.integers(-5, 5)) for _ in queries], dtype=dtype)
    got = eligible_prefix(splits, times, np.array(queries, np.int64), cutoffs)
    assert got.tolist() == [sum(t <= c for t in rows[r]) for r, c in zip(queries, cutoffs)]


def test_effective_times_take_the_later_and_a_missing_side_adds_nothing():
    edge = np.array([1, 5, 3])
    node = np.array([4, 2, lowest_time("int64")])
    assert effective_times(edge, node, "int64").tolist() == [4, 5, 3]
    assert effective_times(None, node, "int64").tolist() == node.tolist()
    assert effective_times(edge, None, "float64").dtype == np.float64
    assert effective_times(None, None, "int64") is None
    batch = EdgeBatch("e", np.array([b"a", b"a", b"b"]), np.array([b"x", b"zz", b"y"]),
                      np.arange(3), None, {}, edge)
    # y is absent from this bucket's node table (a dangling edge): its own time stays.
    timed = with_target_times(batch, np.array([b"x", b"zz"]), np.array([9, 0]), "int64")
    assert timed.timestamps.tolist() == [9, 5, 3]


def _edges(sources, targets, times, weights=None):
    n = len(sources)
    return EdgeBatch("e", np.array(sources, "S"), np.array(targets, "S"),
                     np.arange(n, dtype=np.int64),
                     None if weights is None else np.asarray(weights, np.float64), {},
                     None if times is None else np.asarray(times, np.int64))


def test_time_ordered_rows_sort_by_time_then_target_then_row():
    adjacency = build_adjacency("e", [_edges(["a"] * 5 + ["b"], ["q", "p", "r", "p", "s", "x"],
                                             [2, 2, 1, 2, 0, 7])])
    assert adjacency.times.tolist() == [0, 1, 2, 2, 2, 7]
    assert adjacency.targets.tolist() == [b"s", b"r", b"p", b"p", b"q", b"x"]
    assert adjacency.rows.tolist() == [4, 2, 1, 3, 0, 5]
    untimed = build_adjacency("e", [_edges(["a", "a"], ["q", "p"], None)])
    assert untimed.times is None and untimed.targets.tolist() == [b"p", b"q"]
    with pytest.raises(ValueError, match="with and without timestamps"):
        build_adjacency("e", [_edges(["a"], ["q"], [1]), _edges(["a"], ["p"], None)])


def _op(strategy, k):
    return PlannedOp("op", ("seed",), "e", "n", "n", k, strategy)


def test_a_hop_samples_only_eligible_edges_and_passes_cutoffs_on():
    adjacency = build_adjacency("e", [_edges(["a"] * 6, ["p", "q", "r", "s", "t", "u"],
                                             [1, 2, 3, 4, 5, 6], [1, 9, 1, 1, 1, 1])])
    requests = Requests.from_ids(np.array([10, 11, 12, 13]), np.array([b"a"] * 4),
                                 np.array([3, 6, 0, 4]))
    latest = sample_hop(adjacency, requests, _op(LATEST_K, 2), seed=1)
    got = sorted(zip(latest.edges.samples.tolist(), latest.edges.targets.tolist()))
    assert got == [(10, b"q"), (10, b"r"), (11, b"t"), (11, b"u"), (13, b"r"), (13, b"s")]
    reached = latest.reached()
    assert dict(zip(reached.samples.tolist(), reached.cutoffs.tolist())) == {10: 3, 11: 6,
                                                                              13: 4}
    top = sample_hop(adjacency, requests, _op(TOP_K, 1), seed=1)
    assert sorted(zip(top.edges.samples.tolist(), top.edges.targets.tolist())) == [
        (10, b"q"), (11, b"q"), (13, b"q")]
    uniform = sample_hop(adjacency, requests, _op(RANDOM_UNIFORM, 3), seed=1)
    times = dict(zip([b"p", b"q", b"r", b"s", b"t", b"u"], range(1, 7)))
    cutoff = {10: 3, 11: 6, 12: 0, 13: 4}
    assert all(times[t] <= cutoff[s] for s, t in zip(uniform.edges.samples.tolist(),
                                                     uniform.edges.targets.tolist()))
    assert np.bincount(uniform.edges.samples - 10).tolist() == [3, 3, 0, 3]
    # Without cut-offs the whole row is eligible; a timeless adjacency ignores cut-offs.
    no_cutoffs = Requests.from_ids(np.array([10]), np.array([b"a"]))
    assert sample_hop(adjacency, no_cutoffs, _op(LATEST_K, 1), 1).edges.targets.tolist() == [
        b"u"]
    timeless = build_adjacency("e", [_edges(["a", "a"], ["p", "q"], None)])
    assert len(sample_hop(timeless, requests, _op(RANDOM_UNIFORM, 2), 1).edges) == 8


def test_requests_keep_their_cutoffs_through_take_unique_and_concat():
    r = Requests.from_ids(np.array([2, 1, 2]), np.array([b"x", b"y", b"x"]),
                          np.array([7.5, 3.0, 7.5]))
    u = r.unique()
    assert u.samples.tolist() == [1, 2] and u.cutoffs.tolist() == [3.0, 7.5]
    both = Requests.concat([u, r.take(np.array([0]))])
    assert both.cutoffs.tolist() == [3.0, 7.5, 7.5]
    with pytest.raises(ValueError, match="with and without cut-offs"):
        Requests.concat([u, Requests.from_ids(np.array([5]), np.array([b"z"]))])


def test_seed_numbering_includes_the_cutoff_and_ignores_row_order():
    ids = np.array([b"a", b"a", b"b", b"c"])
    times = np.array([5, 9, 5, 1])
    numbered = number_seeds([SeedBatch(ids, np.arange(4), times)])
    shuffled = number_seeds([SeedBatch(ids[[3, 1]], np.arange(2), times[[3, 1]]),
                             SeedBatch(ids[[2, 0]], np.arange(2), times[[2, 0]])])
    for got in (numbered, shuffled):
        pairs = sorted(zip(got.samples.tolist(), got.nodes.tolist(), got.cutoffs.tolist()))
        assert pairs == sorted(zip(numbered.samples.tolist(), numbered.nodes.tolist(),
                                   numbered.cutoffs.tolist()))
    # "a" at two cut-offs: two samples; ids without cut-offs number as before.
    assert len(set(numbered.samples.tolist())) == 4
    plain = number_seeds([SeedBatch(ids[2:], np.arange(2))])
    assert plain.cutoffs is None
    assert not set(plain.samples.tolist()) & set(numbered.samples.tolist())
