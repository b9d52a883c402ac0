"""core.negatives: negatives' targets follow the stated distribution, never hit a known
positive of their source, and depend on the rows and --seed alone.

Statistical tests: fixed seeds; chi-square over all candidates at the 5-sigma level
(Wilson-Hilferty bound, as in test_strategies.py)."""
import numpy as np
import pytest

from sampler.core import negatives as ng
from sampler.plan.plan import DEGREE, UNIFORM, NegativeSampling
from tests.sampler.core.test_strategies import chi_square_bound
from unigraph.columnar.batches import PairBatch


def S(*ids):
    return np.array(ids, dtype="S")


def pairs(sources, targets, **features):
    return PairBatch(S(*sources), S(*targets), np.arange(len(sources)),
                     {k: np.asarray(v) for k, v in features.items()})


CANDIDATES = S(*[f"c{i:02d}" for i in range(12)])


def drawn_targets(mode, n_rows=4000, k=3, seed=5):
    """Targets of negatives of rows whose sources are no candidates (no collisions)."""
    positives = pairs([f"s{i}" for i in range(n_rows)], ["x"] * n_rows)
    degrees = np.arange(1, len(CANDIDATES) + 1, dtype=np.float64)
    rows, counts = ng.negatives_in_memory(
        [positives], CANDIDATES, degrees if mode == DEGREE else None,
        NegativeSampling(k, mode), seed, np.dtype(np.int64))
    assert counts.negatives == n_rows * k and counts.redrawn == 0
    batch = rows[0]
    return batch.targets[batch.features["label"] == 0]


@pytest.mark.parametrize("mode", [UNIFORM, DEGREE])
def test_targets_follow_the_distribution(mode):
    targets = drawn_targets(mode)
    weights = np.ones(12) if mode == UNIFORM else np.arange(1, 13) ** 0.75
    expected = weights / weights.sum() * len(targets)
    seen = np.array([(targets == c).sum() for c in CANDIDATES])
    chi2 = ((seen - expected) ** 2 / expected).sum()
    assert chi2 < chi_square_bound(11), (seen, expected)


def test_degree_mode_never_draws_a_node_without_edges():
    positives = pairs(["s"] * 50, [f"t{i}" for i in range(50)])
    rows, _ = ng.negatives_in_memory([positives], S("a", "b", "c"), np.array([0.0, 2.0, 0.0]),
                                     NegativeSampling(2, DEGREE), 1, np.dtype(np.int64))
    batch = rows[0]
    assert set(batch.targets[batch.features["label"] == 0].tolist()) == {b"b"}


def test_known_positives_and_the_source_are_never_drawn_and_redraws_are_counted():
    # Source a's positives cover c00..c09 and a is a candidate: only c10, c11 are left.
    sources = ["a"] * 10 + ["b"]
    targets = [f"c{i:02d}" for i in range(10)] + ["c00"]
    candidates = np.concatenate([CANDIDATES, S("a")])
    rows, counts = ng.negatives_in_memory([pairs(sources, targets)], candidates, None,
                                          NegativeSampling(4, UNIFORM), 3, np.dtype(np.int64))
    batch = rows[0]
    negative = batch.features["label"] == 0
    known = set(zip(sources, targets))
    for s, t in zip(batch.sources[negative].tolist(), batch.targets[negative].tolist()):
        assert (s.decode(), t.decode()) not in known and s != t
        if s == b"a":
            assert t in (b"c10", b"c11")
    assert counts.positives == 11 and counts.redrawn > 0
    assert counts.negatives + counts.not_found == 11 * 4
    # Each (row, j) took its first accepted attempt: the redraw count is the rejected
    # attempts before it (ATTEMPTS for a negative given up).
    assert counts.redrawn >= counts.not_found * ng.ATTEMPTS


def test_every_candidate_a_positive_gives_up_and_counts():
    rows, counts = ng.negatives_in_memory([pairs(["a", "a"], ["b", "c"])], S("a", "b", "c"),
                                          None, NegativeSampling(1), 3, np.dtype(np.int64))
    assert counts.negatives == 0 and counts.not_found == 2
    assert counts.redrawn == 2 * ng.ATTEMPTS
    assert (rows[0].features["label"] == 1).all() and len(rows[0]) == 2


def test_negatives_copy_their_positives_features_and_label_them_zero():
    positives = pairs(["s1", "s2"], ["x", "y"], time=[10.0, 20.0])
    rows, _ = ng.negatives_in_memory([positives], CANDIDATES, None, NegativeSampling(2),
                                     7, np.dtype(np.float32))
    batch = rows[0]
    assert batch.features["label"].dtype == np.float32
    for s, t, label in zip(batch.sources, batch.features["time"], batch.features["label"]):
        assert t == {b"s1": 10.0, b"s2": 20.0}[s]
    assert batch.features["label"].tolist().count(0.0) == 4


def test_draws_depend_on_rows_and_seed_not_on_order_or_split():
    positives = pairs(["s1", "s2", "s2", "s3"], ["x", "y", "y", "z"])
    sampling = NegativeSampling(3)

    def negatives_of(parts, seed=1):
        rows, _ = ng.negatives_in_memory(parts, CANDIDATES, None, sampling, seed,
                                         np.dtype(np.int64))
        b = rows[0]
        return sorted(zip(b.sources.tolist(), b.targets.tolist(), b.features["label"].tolist()))

    whole = negatives_of([positives])
    assert negatives_of([positives.take(np.array([3, 1])), positives.take(np.array([2, 0]))]) \
        == whole
    assert negatives_of([positives], seed=2) != whole
    # The duplicated row (s2, y) gets two different sets of negatives.
    s2 = [t for s, t, label in whole if s == b"s2" and label == 0]
    assert len(s2) == 6 and len(set(s2)) > 3


def test_groups_built_from_parts_equal_one_group():
    """Beam builds a draw group from many buckets' parts: the same group as at once."""
    ids = CANDIDATES[::-1]
    degrees = np.arange(12, dtype=np.float64)
    whole = {g: ng.build_draw_group(g, [part], DEGREE)
             for g, part in ng.split_by_draw_group(ids, degrees)}
    halves = {}
    for half in (slice(0, 5), slice(5, 12)):
        for g, part in ng.split_by_draw_group(ids[half], degrees[half]):
            halves.setdefault(g, []).append(part)
    for g, parts in halves.items():
        built = ng.build_draw_group(g, parts, DEGREE)
        assert built.ids.tolist() == whole[g].ids.tolist()
        assert built.cumulative.tolist() == whole[g].cumulative.tolist()


# ---- time cut-offs --------------------------------------------------------------------

def timed_pairs(sources, targets, cutoffs):
    batch = pairs(sources, targets)
    batch.timestamps = np.asarray(cutoffs, np.int64)
    return batch


# Candidate c<i> was created at time i (c00 at 0 ... c11 at 11).
NODE_TIMES = ng.Candidates(CANDIDATES, times=np.arange(len(CANDIDATES), dtype=np.int64))


@pytest.mark.parametrize("mode", [UNIFORM, DEGREE])
def test_negatives_take_their_pairs_cutoff_and_no_later_target(mode):
    positives = timed_pairs([f"s{i}" for i in range(300)], ["x"] * 300,
                            np.arange(300) % 14 - 1)   # cut-offs -1 .. 12
    degrees = np.arange(1, 13, dtype=np.float64) if mode == DEGREE else None
    rows, counts = ng.negatives_in_memory([positives], CANDIDATES, degrees,
                                          NegativeSampling(2, mode), 4, np.dtype(np.int64),
                                          node_times=NODE_TIMES)
    batch = rows[0]
    cutoff_of = dict(zip(positives.sources.tolist(), positives.timestamps.tolist()))
    negative = batch.features["label"] == 0
    for s, t, cutoff in zip(batch.sources[negative].tolist(), batch.targets[negative].tolist(),
                            batch.timestamps[negative].tolist()):
        assert cutoff == cutoff_of[s]                 # the positive's cut-off
        assert int(t[1:]) <= cutoff, (s, t, cutoff)   # the target existed then
    # A cut-off before every candidate: no negative, all its draws were too late.
    assert not ((batch.timestamps == -1) & negative).any()
    assert counts.after_cutoff > 0 and counts.not_found > 0
    assert counts.redrawn >= counts.after_cutoff
    assert counts.negatives + counts.not_found == 600
    # Late draws are rejected, not moved: a row whose cut-off admits every candidate
    # gets exactly the negatives it gets without times.
    late = ng.negatives_in_memory([positives], CANDIDATES, degrees, NegativeSampling(2, mode),
                                  4, np.dtype(np.int64))[0][0]
    everything = positives.timestamps >= 11
    chosen = {s for s, ok in zip(positives.sources.tolist(), everything) if ok}

    def of_rows(b):
        keep = [s in chosen for s in b.sources.tolist()]
        return sorted(zip(b.sources[keep].tolist(), b.targets[keep].tolist()))

    assert of_rows(batch) == of_rows(late)


def test_a_cutoff_keeps_targets_uniform_among_the_nodes_that_existed():
    """Rejection keeps the draw uniform over the eligible candidates: c00..c05 for cut-off
    5 (chi-square at the 5-sigma level, fixed seed)."""
    n = 3000
    positives = timed_pairs([f"s{i}" for i in range(n)], ["x"] * n, [5] * n)
    rows, counts = ng.negatives_in_memory([positives], CANDIDATES, None, NegativeSampling(1),
                                          9, np.dtype(np.int64), node_times=NODE_TIMES)
    batch = rows[0]
    targets = batch.targets[batch.features["label"] == 0]
    seen = np.array([(targets == c).sum() for c in CANDIDATES])
    assert seen[6:].sum() == 0
    expected = np.full(6, len(targets) / 6)
    chi2 = ((seen[:6] - expected) ** 2 / expected).sum()
    assert chi2 < chi_square_bound(5), seen
    # With 6 of 12 eligible, about half the attempts are late; few negatives fail
    # (8 late draws in a row: 1/256 of them).
    assert counts.not_found < n * 0.02 and counts.after_cutoff > n * 0.5


def test_candidates_without_a_time_are_always_eligible_and_degree_groups_take_node_times():
    """Degree mode: the candidates are the nodes with degrees; the node table's parts only
    give them times (an id it lacks has the lowest time)."""
    ids = S("a", "b", "c")
    parts = [ng.Candidates(ids, degrees=np.array([1.0, 2.0, 0.0])),
             ng.Candidates(S("b", "c", "d"), times=np.array([7, 3, 1]))]
    group = ng.build_draw_group(0, parts, DEGREE, "int64")
    assert group.ids.tolist() == [b"a", b"b"]          # c has no edges, d is no candidate
    assert group.times.tolist() == [np.iinfo(np.int64).min, 7]
    uniform = ng.build_draw_group(0, parts[1:], UNIFORM, "float64")
    assert uniform.ids.tolist() == [b"b", b"c", b"d"] and uniform.times.tolist() == [7, 3, 1]
    assert ng.build_draw_group(0, parts, DEGREE).times is None   # untimed jobs: none
    empty = ng.build_draw_group(0, [], UNIFORM, "int64")
    assert len(empty.ids) == 0 and empty.times.dtype == np.int64
