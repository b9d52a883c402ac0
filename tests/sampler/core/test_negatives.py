"""core.negatives: negatives' targets follow the stated distribution, never hit a known
positive of their source, and depend on the rows and --seed alone.

Statistical tests: fixed seeds; chi-square over all candidates at the 5-sigma level
(Wilson-Hilferty bound, as in test_strategies.py)."""
import numpy as np
import pytest

from sampler.core import negatives as ng
from sampler.plan.plan import DEGREE, UNIFORM, NegativeSampling
from tests.sampler.core.test_strategies import chi_square_bound
from unigraph.batches import PairBatch


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
