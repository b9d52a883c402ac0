"""unigraph.beam.element_codec: the element types the pipeline moves round-trip without
pickle, and equal values give equal bytes."""
import numpy as np
import pytest
from hypothesis import given, strategies as st

from sampler.core.adjacency import build_adjacency
from sampler.core.node_table import build_node_table
from sampler.core.stats import RunStats
from unigraph.columnar.batches import EdgeBatch, NodeBatch, row_ids
from unigraph.beam.element_codec import NotEncodable, decode, encode, encoded_size
from unigraph.columnar.ragged import Ragged


def _same(a, b):
    assert type(a) is type(b)
    if isinstance(a, np.ndarray):
        assert a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a, b)
        assert b.flags.writeable and b.flags.owndata
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            _same(x, y)
    elif isinstance(a, dict):
        assert list(a) == list(b)
        for k in a:
            _same(a[k], b[k])
    elif hasattr(a, "__dataclass_fields__"):
        for name in a.__dataclass_fields__:
            _same(getattr(a, name), getattr(b, name))
    else:
        assert a == b or (a != a and b != b)  # NaN equals NaN here


def _batches():
    ids = np.array([b"p1", b"p22"], dtype="S")
    nodes = NodeBatch("paper", ids, row_ids(3, 0, 2),
                      {"x": np.arange(6, dtype=np.float32).reshape(2, 3),
                       "words": Ragged(np.array([b"a", b"b", b"c"]), np.array([2, 1]))})
    edges = EdgeBatch("cites", ids, ids[::-1], row_ids(0, 5, 2), np.array([1.0, 0.5]), {})
    return nodes, edges


def test_batches_tables_and_counts_round_trip_without_pickle():
    nodes, edges = _batches()
    stats = RunStats()
    stats.seeds_read = 3
    for value in (nodes, edges, (7, nodes), {"edges": [edges, edges]}, stats,
                  (2, build_node_table("paper", [nodes], ["p.csv"])),
                  (5, build_adjacency("cites", [edges]))):
        data = encode(value, strict=True)
        _same(value, decode(data))
        assert encode(decode(data), strict=True) == data
        assert encoded_size(value) == len(data)


def test_strict_refuses_what_the_default_would_pickle():
    with pytest.raises(NotEncodable):
        encode([1, object()], strict=True)
    with pytest.raises(NotEncodable):
        encode(np.array([object()], dtype=object), strict=True)
    assert decode(encode([1, frozenset([2])])) == [1, frozenset([2])]


def test_only_this_projects_classes_are_rebuilt_by_name():
    data = encode(_batches()[0]).replace(b"unigraph.columnar.batches:NodeBatch", b"subprocess:Popen...")
    with pytest.raises(ValueError, match="not a class of this project"):
        decode(data)


scalars = st.one_of(st.none(), st.booleans(), st.integers(-(1 << 80), 1 << 80),
                    st.floats(allow_nan=True), st.text(), st.binary())
arrays = st.builds(lambda xs, dt: np.array(xs).astype(dt),
                   st.lists(st.integers(-100, 100), max_size=20),
                   st.sampled_from(["int32", "int64", "float64", "uint8", "bool", "S3"]))
values = st.recursive(scalars | arrays, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.lists(inner, max_size=4).map(tuple),
    st.dictionaries(st.text(max_size=5), inner, max_size=4)), max_leaves=20)


@given(values)
def test_any_value_round_trips_and_encodes_the_same_twice(value):
    data = encode(value, strict=True)
    _same(value, decode(data))
    assert encode(decode(data)) == data
    assert encoded_size(value) == len(data)


def test_the_size_of_what_would_be_pickled_is_the_pickles():
    value = [1, frozenset([2]), np.float32(0.5), np.array([object()], dtype=object)]
    assert encoded_size(value) == len(encode(value))
