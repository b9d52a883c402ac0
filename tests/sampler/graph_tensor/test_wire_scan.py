"""The scanning helpers of wire.py give what split_example and decode_feature give."""
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from sampler.graph_tensor import wire
from unigraph.protos import example_pb2

keys = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=0,
               max_size=12)
features = st.one_of(
    st.builds(lambda v: ("f", v), st.lists(st.floats(width=32, allow_nan=False), max_size=6)),
    st.builds(lambda v: ("i", v), st.lists(st.integers(-2 ** 63, 2 ** 63 - 1), max_size=6)),
    st.builds(lambda v: ("b", v), st.lists(st.binary(max_size=200), max_size=4)),
    st.just(("none", None)))


def example_bytes(entries) -> bytes:
    example = example_pb2.Example()
    for key, (kind, values) in entries:
        feature = example.features.feature[key]
        if kind == "f":
            feature.float_list.value.extend(values)
        elif kind == "i":
            feature.int64_list.value.extend(values)
        elif kind == "b":
            feature.bytes_list.value.extend(values)
    return example.SerializeToString()


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(keys, features), max_size=8))
def test_spans_and_payloads_match_the_generic_decoder(entries):
    data = example_bytes(entries)
    spans = wire.feature_spans(data)
    split = wire.split_example(data)
    assert {k: data[s:e] for k, (s, e) in spans.items()} == {k: bytes(v) for k, v in split.items()}
    for key, (start, end) in spans.items():
        kind, values = wire.decode_feature(split[key], key)
        found = wire.list_payload(data, (start, end))
        assert found is not None   # protobuf's own writer: always the usual layout
        found_kind, (s, e) = found
        assert found_kind == kind
        payload = data[s:e]
        if kind == wire.FLOAT:
            assert np.array_equal(np.frombuffer(payload, "<f4"), values)
        elif kind == wire.INT64:
            assert np.array_equal(wire.decode_varints(payload, key), values)
        elif kind == wire.BYTES:
            assert list(example_pb2.BytesList.FromString(payload).value) == values


def test_other_layouts_fall_back_to_the_generic_walk():
    value = wire.encode_feature(wire.INT64, np.array([1, 2], np.int64))
    entry = b"\x12" + wire.varint(len(value)) + value + b"\x0a\x01k"   # value before key
    features = b"\x0a" + wire.varint(len(entry)) + entry
    data = b"\x0a" + wire.varint(len(features)) + features + b"\x10\x07"  # unknown field 2
    spans = wire.feature_spans(data)
    assert list(spans) == ["k"]
    assert data[slice(*spans["k"])] == value


def test_unpacked_lists_are_not_the_usual_layout():
    unpacked_ints = b"\x1a\x04\x08\x01\x08\x02"    # Int64List{1: 1, 1: 2}, unpacked
    assert wire.list_payload(unpacked_ints, (0, len(unpacked_ints))) is None
    assert wire.decode_feature(memoryview(unpacked_ints), "k")[1].tolist() == [1, 2]
    assert wire.list_payload(b"", (0, 0)) == (None, (0, 0))
