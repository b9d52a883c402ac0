"""sampler.core.pieces: (sample, node) requests and their dictionary-encoded ids."""
import numpy as np

from sampler.core.pieces import Requests


def S(*ids):
    return np.array(ids, dtype="S")


def test_requests_unique_keeps_one_pair_each():
    r = Requests.from_ids(np.array([2, 1, 2, 1]), S("x", "y", "x", "x")).unique()
    assert list(zip(r.samples.tolist(), r.nodes.tolist())) == [(1, b"x"), (1, b"y"), (2, b"x")]


def test_requests_concat_and_take_keep_the_pairs():
    a = Requests.from_ids(np.array([1, 2]), S("b", "a"))
    b = Requests.from_ids(np.array([3, 4, 5]), S("c", "a", "zz"))
    both = Requests.concat([a, b])
    assert both.ids.tolist() == [b"a", b"b", b"c", b"zz"]
    assert both.nodes.tolist() == [b"b", b"a", b"c", b"a", b"zz"]
    part = both.take(np.array([4, 1]))
    assert part.ids.tolist() == [b"a", b"zz"] and part.nodes.tolist() == [b"zz", b"a"]
