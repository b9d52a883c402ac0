"""Strings held as spans of decoded bytes give the values they were made from, in every
form and after any slicing, reshaping and joining; a GraphTensor of a decoded batch makes
its string features' bytes objects when they are first read."""
import numpy as np
from hypothesis import example, given, settings
from hypothesis import strategies as st

from sampler.graph_tensor import (encode_example, merge_batch_to_components, parse_example,
                                  parse_examples)
from sampler.graph_tensor.batch_codec import BatchDecoder, record_buffer
from sampler.graph_tensor.model import Deferred, trusted_features
from sampler.graph_tensor.strings import Strings
from tests.sampler.graph_tensor.fixtures import small_graph, small_schema

value = st.one_of(st.binary(max_size=20), st.binary(max_size=3).map(lambda b: b + b"\0"),
                  st.sampled_from([b"", b"\0", b"paper/12", b"field_of_study/123"]))


def spans_of(values, gap: int = 3):
    """values laid out in a buffer with `gap` junk bytes between them (and padding)."""
    out, starts = bytearray(), []
    for v in values:
        out += b"\xff" * gap
        starts.append(len(out))
        out += v
    out += bytes(8)
    lengths = np.array([len(v) for v in values], dtype=np.int64)
    return np.frombuffer(bytes(out), np.uint8), np.array(starts, dtype=np.int64), lengths


def held(values, form: str) -> Strings:
    if form == "objects":
        objects = np.empty(len(values), dtype=object)
        objects[:] = values
        return Strings.from_objects(objects)
    strings = Strings.from_spans(*spans_of(values))
    if form == "fixed":
        strings.fixed  # noqa: B018  (made now: held as fixed from here on)
    return strings


forms = st.sampled_from(["spans", "fixed", "objects"])


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.lists(value, max_size=12), forms), min_size=1, max_size=4),
       st.data())
def test_every_form_gives_the_values(parts, data):
    pieces = []
    expected = []
    for values, form in parts:
        strings = held(values, form)
        start = data.draw(st.integers(0, len(values)))
        stop = data.draw(st.integers(start, len(values)))
        pieces.append(strings.slice(start, stop))
        expected += values[start:stop]
    joined = Strings.concat(pieces)
    assert joined.objects().tolist() == expected
    assert [joined.item(i) for i in range(len(expected))] == expected
    assert joined.lengths.tolist() == [len(v) for v in expected]
    assert joined.fixed.tolist() == [v.rstrip(b"\0") for v in expected]


def test_values_of_two_dimensions_reshape_and_slice():
    values = [b"a", b"bb\0", b"", b"dddddddddd", b"e", b"ff"]
    strings = Strings.from_spans(*spans_of(values)).reshape((3, 2))
    assert strings.shape == (3, 2)
    assert strings.slice(1, 3).objects().tolist() == [[b"", b"dddddddddd"], [b"e", b"ff"]]
    assert strings.objects().tolist() == [values[0:2], values[2:4], values[4:6]]
    assert strings.exact == {1: b"bb\0"}


def test_deferred_features_are_made_once_when_first_read():
    made = []

    def make():
        made.append(1)
        return np.array([b"x", b"y"], dtype=object)

    features = trusted_features({"#id": Deferred(make), "n": np.arange(2)})
    assert list(features) == ["#id", "n"] and len(features) == 2 and not made
    assert features["#id"].tolist() == [b"x", b"y"]
    assert features["#id"] is features["#id"] and made == [1]
    assert not features["#id"].flags.writeable
    assert set(features.copy()) == {"#id", "n"}


def test_a_decoded_graph_makes_its_strings_when_read_as_parse_example_gives_them():
    schema, graph = small_schema(), small_graph()
    records = [encode_example(graph, schema)] * 3
    batch = BatchDecoder(schema).decode(*record_buffer(records))
    merged = batch.graph()
    ids = batch.node_sets["paper"].features["#id"]
    assert ids._spans is not None  # graph() made no bytes objects of its own accord
    expected = merge_batch_to_components([parse_example(schema, r) for r in records])
    assert merged.node_sets["paper"]["#id"].tolist() == [b"p1", b"p2"] * 3
    assert merged == expected
    assert parse_examples(schema, records) == expected


@settings(max_examples=100, deadline=None)
@given(st.sampled_from([b"", b"a/", b"paper/", b"field_of_study/"]),
       st.lists(st.binary(max_size=9), min_size=1, max_size=30))
@example(b"", [b"\x01"])  # every value starts with the longer prefix: it has keys
def test_keys_read_from_spans_are_the_fixed_values_keys(prefix, tails):
    from sampler.core.arrays import byte_keys

    values = [prefix + t for t in tails]
    keys = Strings.from_spans(*spans_of(values)).keys_after(prefix)
    if max(len(t) for t in tails) > 8:
        assert keys is None  # more than a key holds (the fixed values' search decides)
        return
    narrowest = np.array(values, dtype="S")  # numpy drops trailing NULs, as `fixed` does
    assert keys.tolist() == byte_keys(narrowest, prefix).keys.tolist()
    longer = prefix + b"\x01"  # a prefix some value lacks (unless every tail starts so)
    if not all(v.startswith(longer) for v in values):
        assert Strings.from_spans(*spans_of(values)).keys_after(longer) is None
