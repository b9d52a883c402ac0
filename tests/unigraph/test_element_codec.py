"""unigraph.beam.element_codec: the element types the pipeline moves round-trip without
pickle, and equal values give equal bytes."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from sampler.core.adjacency import build_adjacency
from sampler.core.node_table import build_node_table
from sampler.core.stats import RunStats
from unigraph.columnar.batches import EdgeBatch, NodeBatch, row_ids
from unigraph.beam.coder import ElementCoder
from unigraph.beam.element_codec import (NARROW_MIN, NotEncodable, decode, encode,
                                         encoded_size, size_bound)
from unigraph.columnar.ragged import Ragged


def _same(a, b):
    assert type(a) is type(b)
    if isinstance(a, np.ndarray):
        assert a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a, b)
        # Writable and aligned, like the array encoded (a view of the decoded element's
        # one buffer, or an array of its own for narrowed integers).
        assert b.flags.writeable and b.flags.aligned
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


# Long sorted and narrow arrays too, so the bound is tested where encode shrinks most.
wide_values = st.recursive(scalars | arrays | st.builds(
    lambda n, step, dt: (np.arange(n) // step).astype(dt), st.integers(0, 300),
    st.integers(1, 9), st.sampled_from(["int32", "int64", "uint16"])),
    lambda inner: st.lists(inner, max_size=4).map(tuple), max_leaves=8)


@given(wide_values)
def test_size_bound_is_at_least_the_encoding_and_the_coder_estimates_with_it(value):
    assert size_bound(value) >= len(encode(value))
    assert ElementCoder().estimate_size(value) == size_bound(value)


def test_the_size_of_what_would_be_pickled_is_the_pickles():
    value = [1, frozenset([2]), np.float32(0.5), np.array([object()], dtype=object)]
    assert encoded_size(value) == len(encode(value))


int_dtypes = st.sampled_from(["int16", "int32", "int64", "uint16", "uint32", "uint64"])


@st.composite
def integer_arrays(draw):
    """Integer arrays long enough to be narrowed, of every span: near the dtype's limits,
    within 2**8, 2**16, 2**24 or 2**32 of their minimum, or anything."""
    dtype = np.dtype(draw(int_dtypes))
    info = np.iinfo(dtype)
    n = draw(st.integers(NARROW_MIN - 1, 3 * NARROW_MIN))
    span = draw(st.sampled_from([0, 1, 255, 256, 65535, 65536, (1 << 24) - 1, 1 << 24,
                                 (1 << 32) - 1, 1 << 32, int(info.max) - int(info.min)]))
    span = min(span, int(info.max) - int(info.min))
    lo = draw(st.integers(int(info.min), int(info.max) - span))
    values = [lo + draw(st.integers(0, span)) for _ in range(n)]
    if n:
        values[draw(st.integers(0, n - 1))] = lo + span
    shape = (n,) if n % 2 else (2, n // 2)
    return np.array(values, dtype=dtype).reshape(shape)


@settings(max_examples=60, deadline=None)
@given(integer_arrays(), st.integers(0, 7))
def test_integer_arrays_narrowed_or_not_come_back_the_same(array, offset):
    value = ("x" * offset, array, [array[..., ::2]])  # at any offset, and not contiguous
    data = encode(value, strict=True)
    _same(value, decode(data))
    assert encode(decode(data)) == data
    assert encoded_size(value) == len(data)
    narrow = array.size >= NARROW_MIN and int(array.max()) - int(array.min()) < \
        1 << (8 * array.dtype.itemsize // 2)
    if narrow:
        assert len(data) < array.nbytes + 200  # unnarrowed, it would be 1.5 times nbytes


def test_narrowing_writes_small_codes_in_fewer_bytes():
    codes = np.arange(1000, dtype=np.int32) % 200 + 70_000  # 200 values far from 0
    assert len(encode(codes)) < 1000 + 100  # one byte each
    rows = np.arange(1000, dtype=np.int64) + (3 << 40)  # one file's row ids
    assert len(encode(rows)) < 2000 + 100  # two bytes each
    positions = np.random.default_rng(0).permutation(300_000).astype(np.int32)  # in a bucket
    data = encode(positions)
    assert len(data) < 3 * 300_000 + 100  # three bytes each, not four
    np.testing.assert_array_equal(decode(data), positions)
    assert decode(data).dtype == np.int32


@settings(max_examples=60, deadline=None)
@given(integer_arrays(), st.integers(1, 12), st.integers(0, 7))
def test_never_decreasing_arrays_by_runs_or_steps_come_back_the_same(array, repeat, offset):
    """Sorted, with runs of repeats or none, at any span (steps across 0 and the dtype's
    limits): the same values and dtype, bytes that decode and re-encode the same."""
    sorted_ = np.repeat(np.sort(array.reshape(-1)), repeat)
    value = ("x" * offset, sorted_, [sorted_[::-1]])
    data = encode(value, strict=True)
    _same(value, decode(data))
    assert encode(decode(data)) == data
    assert encoded_size(value) == len(data)


def test_sorted_arrays_are_written_by_runs_or_steps_in_fewer_bytes():
    # Each sample's edges listed together: 2,000 samples of 10 edges each.
    sample_codes = np.repeat(np.arange(2000, dtype=np.int32), 10)
    assert len(encode(sample_codes)) < 2 * 2000 + 200  # not 2 bytes per edge
    rows = np.arange(100_000, dtype=np.int64) * 3 + (5 << 40)  # a file's rows, every third
    assert len(encode(rows)) < 100_000 + 200  # 1 byte per step, not 4 per row
    unsorted = sample_codes[::-1].copy()
    assert len(encode(unsorted)) > 2 * len(unsorted)  # as narrowing alone writes it
