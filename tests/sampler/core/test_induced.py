"""core.induced: every edge among a sample's members, and none later than its cut-off."""
import numpy as np

from sampler.core.adjacency import build_adjacency
from sampler.core.induced import candidate_edges, keep_induced
from sampler.core.pieces import Requests
from unigraph.columnar.batches import EdgeBatch


def _adjacency(times):
    sources = np.array([b"a", b"a", b"a", b"b", b"c"])
    targets = np.array([b"b", b"c", b"d", b"c", b"a"])
    return build_adjacency("e", [EdgeBatch("e", sources, targets, np.arange(5), None, {},
                                           None if times is None else np.asarray(times))])


def _induced(adjacency, members):
    candidates, _ = candidate_edges(adjacency, members)
    kept = keep_induced(candidates, members)
    return sorted(zip(kept.samples.tolist(), kept.sources.tolist(), kept.targets.tolist()))


def test_induced_edges_are_those_among_members():
    members = Requests.from_ids(np.array([1, 1, 1, 2, 2]),
                                np.array([b"a", b"b", b"c", b"a", b"d"]))
    assert _induced(_adjacency(None), members) == [
        (1, b"a", b"b"), (1, b"a", b"c"), (1, b"b", b"c"), (1, b"c", b"a"), (2, b"a", b"d")]


def test_induced_edges_are_not_later_than_the_samples_cutoff():
    # a->b at 1, a->c at 5, a->d at 2, b->c at 3, c->a at 9 (time-ordered rows).
    adjacency = _adjacency([1, 5, 2, 3, 9])
    members = Requests.from_ids(np.array([1, 1, 1, 2, 2, 2]),
                                np.array([b"a", b"b", b"c", b"a", b"b", b"c"]),
                                np.array([3, 3, 3, 9, 9, 9]))
    assert _induced(adjacency, members) == [
        (1, b"a", b"b"), (1, b"b", b"c"),
        (2, b"a", b"b"), (2, b"a", b"c"), (2, b"b", b"c"), (2, b"c", b"a")]
    # Without cut-offs (LATEST_K alone orders the rows): every edge among members.
    untimed = Requests.from_ids(members.samples[:3], members.nodes[:3])
    assert len(_induced(adjacency, untimed)) == 4
