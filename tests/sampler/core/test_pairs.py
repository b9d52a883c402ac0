"""core.pairs: link seeds' numbering and requests, with and without time cut-offs."""
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as hs

from sampler.core.pairs import (number_pairs, pair_fingerprints, pair_numbering_groups,
                                pair_requests)
from sampler.core.pieces import PairPiece
from unigraph.columnar.batches import PairBatch


def batch(sources, targets, times=None, labels=None):
    n = len(sources)
    return PairBatch(np.array(sources, "S"), np.array(targets, "S"), np.arange(n),
                     {"label": np.array(labels if labels is not None else [1] * n, np.int64)},
                     None if times is None else np.asarray(times))


def numbered(parts, keys=4096):
    """All groups of `parts`, numbered as the engines do (by `keys` numbering keys):
    {sample id: (source, target, label, cut-off)}."""
    groups = {}
    for part in parts:
        for group, rows in pair_numbering_groups(part, keys):
            groups.setdefault(group, []).append(rows)
    result = {}
    for rows in groups.values():
        piece = number_pairs(rows)
        times = piece.timestamps if piece.timestamps is not None else [None] * len(piece)
        for sample, s, t, label, time in zip(piece.samples.tolist(), piece.sources.tolist(),
                                             piece.targets.tolist(),
                                             piece.features["label"].tolist(), list(times)):
            result[sample] = (s, t, label, None if time is None else time.item())
    return result


def test_a_pair_at_two_cutoffs_is_two_samples_and_the_cutoff_is_kept():
    pairs = batch(["a", "a", "a", "b"], ["b", "b", "b", "c"], np.array([5, 9, 5, 1]))
    got = numbered([pairs])
    assert sorted(got.values()) == [(b"a", b"b", 1, 5), (b"a", b"b", 1, 5),
                                    (b"a", b"b", 1, 9), (b"b", b"c", 1, 1)]


def test_the_cutoff_changes_the_sample_id_and_untimed_pairs_keep_theirs():
    plain = batch(["a"], ["b"])
    first = pair_fingerprints(plain)
    assert pair_fingerprints(batch(["a"], ["b"], np.array([3]))) != first
    assert pair_fingerprints(batch(["a"], ["b"], np.array([3]))) != pair_fingerprints(
        batch(["a"], ["b"], np.array([4])))
    # -0.0 and 0.0 are one time, so one content.
    assert pair_fingerprints(batch(["a"], ["b"], np.array([-0.0]))) == pair_fingerprints(
        batch(["a"], ["b"], np.array([0.0])))
    assert list(numbered([plain]).values()) == [(b"a", b"b", 1, None)]


@settings(max_examples=40, deadline=None)
@given(hs.lists(hs.tuples(hs.sampled_from("abc"), hs.sampled_from("abc"), hs.integers(0, 1),
                          hs.integers(-2, 2)), min_size=1, max_size=20),
       hs.randoms(use_true_random=False))
def test_numbering_does_not_depend_on_order_or_split(rows, random):
    """Ids are a function of the rows as a multiset: shuffled and split differently, every
    sample id names the same (source, target, label, cut-off)."""
    def table(part):
        return batch([r[0] for r in part], [r[1] for r in part],
                     np.array([r[3] for r in part], np.int64), [r[2] for r in part])

    whole = numbered([table(rows)])
    order = list(range(len(rows)))
    random.shuffle(order)
    cut = random.randint(0, len(rows))
    parts = [[rows[i] for i in order[:cut]], [rows[i] for i in order[cut:]]]
    split = numbered([table(p) for p in parts if p])
    assert split == whole
    for keys in (1, 2, 64):  # the Beam job's numbering keys change nothing
        assert numbered([table(p) for p in parts if p], keys) == whole
    assert len(whole) == len(rows)  # a listed pair twice is two samples


def test_both_requests_of_a_pair_carry_its_cutoff():
    piece = PairPiece(np.array([7, 3]), np.array([b"a", b"c"]), np.array([b"b", b"c"]), {},
                      np.array([1.5, 4.0]))
    requests = pair_requests(piece)
    got = sorted(zip(requests.samples.tolist(), requests.nodes.tolist(),
                     requests.cutoffs.tolist()))
    # a node paired with itself is one request
    assert got == [(3, b"c", 4.0), (7, b"a", 1.5), (7, b"b", 1.5)]
    assert requests.pairs is not None and len(requests.pairs) == 3
    untimed = pair_requests(PairPiece(piece.samples, piece.sources, piece.targets, {}))
    assert untimed.cutoffs is None


def test_pair_pieces_keep_their_cutoffs_through_take_and_concat():
    piece = PairPiece(np.array([1, 2, 3]), np.array([b"a", b"b", b"c"]),
                      np.array([b"x", b"y", b"z"]), {"label": np.array([1, 0, 1])},
                      np.array([10, 20, 30]))
    taken = piece.take(np.array([2, 0]))
    assert taken.timestamps.tolist() == [30, 10]
    both = PairPiece.concat([taken, piece.take(np.array([1]))])
    assert both.timestamps.tolist() == [30, 10, 20]
    assert both.features["label"].tolist() == [1, 1, 0]
