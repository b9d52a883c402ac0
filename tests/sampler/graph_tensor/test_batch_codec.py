"""The batched decoder (`parse_examples`) against `parse_example` record by record:
the same merged graph for every dtype, shape, empty set and component count
(hypothesis), for records laid out alike and for those that take the exact path, the
same errors naming the record, and the exact path logged once with its reason."""
from __future__ import annotations

import io
import logging

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sampler.graph_tensor import (encode_example, merge_batch_to_components, parse_example,
                                  parse_examples, write_example)
from sampler.graph_tensor import batch_codec, wire
from sampler.graph_tensor.batch_codec import BatchDecoder, record_buffer
from sampler.graph_tensor.example_batch import ExampleBatch, Strings
from tests.sampler.graph_tensor.fixtures import (batches_of_records, graph_of_schema,
                                                      small_graph, small_schema)
from unigraph.encoding import tfrecord
from unigraph.encoding.wire import RowPieces
from unigraph.errors import GraphTensorError
from unigraph.protos import example_pb2


def one_by_one(schema, records, validate=True):
    return merge_batch_to_components([parse_example(schema, r, validate=validate)
                                      for r in records], validate=False)


def framed(records):
    """The records as a RecordChunk, straight from TFRecord framing."""
    pieces = RowPieces(len(records))
    pieces.varying(np.frombuffer(b"".join(records), np.uint8),
                   np.array([len(r) for r in records], np.int64))
    data = tfrecord.frame_records(pieces).tobytes()
    chunks = list(tfrecord.read_chunks(io.BytesIO(data), "mem"))
    assert len(chunks) == 1
    return chunks[0]


@pytest.fixture
def fast_path_only(monkeypatch):
    """Fails a test whose records would take the exact path."""
    def refuse(*args):
        raise AssertionError("the exact path ran")
    monkeypatch.setattr(BatchDecoder, "_exact", refuse)


@given(batches_of_records())
@settings(max_examples=150, derandomize=True)
def test_same_graph_as_record_by_record(schema_and_graphs):
    schema, graphs = schema_and_graphs
    records = [encode_example(g, schema) for g in graphs]
    expected = one_by_one(schema, records)
    assert parse_examples(schema, records) == expected
    assert parse_examples(schema, framed(records)) == expected


@given(batches_of_records(components=1))
@settings(max_examples=60, derandomize=True)
def test_records_of_one_writer_never_take_the_exact_path(schema_and_graphs):
    schema, graphs = schema_and_graphs
    records = [encode_example(g, schema) for g in graphs]
    decoder = BatchDecoder(schema)
    decoder._exact = None  # would fail if called
    batch = decoder.decode(*record_buffer(records))
    assert batch.graph() == one_by_one(schema, records)
    assert batch.components.tolist() == [1] * len(records)


def test_edge_sets_with_features_and_no_edges(fast_path_only):
    schema = small_schema()
    rng = np.random.default_rng(5)
    graphs = [graph_of_schema(rng, schema, 1, empty=0.7) for _ in range(40)]
    assert any(g.edge_sets["writes"].total_size == 0 for g in graphs)
    assert any(g.node_sets["paper"].total_size == 0 for g in graphs)
    records = [encode_example(g, schema) for g in graphs]
    assert parse_examples(schema, records) == merge_batch_to_components(graphs)


def test_no_records_give_no_components():
    graph = parse_examples(small_schema(), [])
    assert graph.num_components == 0
    assert graph.node_sets["paper"]["feat"].shape == (0, 2)
    assert graph.edge_sets["writes"].adjacency.source.tolist() == []


def test_a_selection_of_records_is_their_own_batch(fast_path_only):
    schema = small_schema()
    rng = np.random.default_rng(2)
    graphs = [graph_of_schema(rng, schema, int(rng.integers(1, 3))) for _ in range(9)]
    batch = BatchDecoder(schema).decode(*record_buffer(
        [encode_example(g, schema) for g in graphs]))
    for start, stop in ((0, 9), (2, 5), (4, 4), (8, 9)):
        part = batch.select(start, stop)
        assert part.records == stop - start
        if stop > start:
            assert part.graph() == merge_batch_to_components(graphs[start:stop])
    halves = ExampleBatch.concat([batch.select(0, 4), batch.select(4, 9)])
    assert halves.graph() == batch.graph()


def test_strings_with_nul_and_control_bytes_are_exact():
    values = [b"", b"a\0", b"\0", b"\n\n", b"\x00\x01\x1f", bytes(range(200)), b"id/10",
              b"x" * 300]
    data = example_pb2.BytesList(value=values).SerializeToString()
    starts, lengths, counts = wire_items(data)
    strings = Strings.from_spans(np.frombuffer(data, np.uint8), starts, lengths)
    assert strings.objects().tolist() == values
    assert strings.lengths.tolist() == [len(v) for v in values]
    assert Strings.from_objects(np.array(values, dtype=object)).objects().tolist() == values


def wire_items(data):
    from unigraph.encoding.bytes_lists import bytes_list_items
    return bytes_list_items(np.frombuffer(data, np.uint8), np.array([0, len(data)]))


def shuffled_keys(record: bytes, seed: int) -> bytes:
    example = example_pb2.Example.FromString(record)
    keys = sorted(example.features.feature)
    np.random.default_rng(seed).shuffle(keys)
    out = example_pb2.Example()
    for key in keys:
        out.features.feature[key].CopyFrom(example.features.feature[key])
    return out.SerializeToString()


def unpacked(record: bytes, key: str) -> bytes:
    """The record with `key`'s int64 list written unpacked (one field per value)."""
    example = example_pb2.Example.FromString(record)
    values = list(example.features.feature[key].int64_list.value)
    body = b"".join(b"\x08" + wire.varint(v & (2 ** 64 - 1)) for v in values)
    entries = [(k, bytes(example.features.feature[k].SerializeToString()))
               for k in sorted(example.features.feature)]
    entries = [(k, b"\x1a" + wire.varint(len(body)) + body if k == key else v)
               for k, v in entries]
    return wire.encode_example_bytes(entries)


@pytest.mark.parametrize("change, reason", [
    (lambda records: records[:3] + [shuffled_keys(records[3], 1)] + records[4:],
     "map entries in another order"),
    (lambda records: records[:2] + [unpacked(records[2], "nodes/paper.year")] + records[3:],
     "numbers not packed in one run"),
    (lambda records: records[:1] + [records[1] + b"\x10\x01"] + records[2:],
     "a record that is not one Features message"),
])
def test_other_layouts_take_the_exact_path_logged_once(caplog, change, reason):
    schema = small_schema()
    rng = np.random.default_rng(3)
    graphs = [graph_of_schema(rng, schema, 1, empty=0.0) for _ in range(6)]
    records = change([encode_example(g, schema) for g in graphs])
    batch_codec._LOGGED.clear()
    with caplog.at_level(logging.WARNING, logger="sampler.graph_tensor"):
        for _ in range(3):
            assert parse_examples(schema, records) == merge_batch_to_components(graphs)
    logged = [r.getMessage() for r in caplog.records]
    assert len(logged) == 1 and reason in logged[0] and "one at a time" in logged[0]


def test_a_missing_key_reads_as_empty_like_parse_example():
    schema = small_schema()
    example = write_example(small_graph())
    del example.features.feature["edges/cites.#source"]
    del example.features.feature["edges/cites.#target"]
    example.features.feature["edges/cites.#size"].int64_list.value[0] = 0
    records = [encode_example(small_graph()), example.SerializeToString()]
    assert parse_examples(schema, records) == one_by_one(schema, records)


@pytest.mark.parametrize("mutate, message", [
    (lambda e: e.features.feature["nodes/paper.feat"].float_list.value.pop(),
     r"^record 2: tf.Example key 'nodes/paper.feat': 3 values, expected 4"),
    (lambda e: e.features.feature["nodes/paper.words.d1"].int64_list.value.append(0),
     r"^record 2: tf.Example key 'nodes/paper.words.d1': 3 row lengths for 2 rows"),
    (lambda e: e.features.feature["nodes/paper.feat"].int64_list.value.append(1),
     r"^record 2: tf.Example key 'nodes/paper.feat': expected float_list, found int64_list"),
    (lambda e: e.features.feature["edges/cites.#target"].int64_list.value.__setitem__(0, 2),
     r"^record 2: edge set 'cites' target: edge 0 has index 2, out of range"),
    (lambda e: e.features.feature["nodes/author.#size"].int64_list.value.append(0),
     r"^record 2: node set 'paper' sizes: 1 graph components, but node set 'author' has 2"),
    (lambda e: e.features.feature["edges/cites.#size"].int64_list.value.__setitem__(0, 3),
     r"^record 2: edge set 'cites' source: 1 indices, but its sizes \[3\] declare 3"),
    (lambda e: e.features.feature["edges/writes.#size"].int64_list.value.__setitem__(0, 3),
     r"^record 2: tf.Example key 'edges/writes.weight': 2 values, expected 3"),
])
def test_bad_records_are_named_as_parse_example_words_them(mutate, message):
    good = encode_example(small_graph())
    example = write_example(small_graph())
    mutate(example)
    bad = example.SerializeToString()
    with pytest.raises(GraphTensorError) as expected:
        parse_example(small_schema(), bad)
    with pytest.raises(GraphTensorError, match=message) as info:
        parse_examples(small_schema(), [good, good, bad, good])
    assert str(info.value) == f"record 2: {expected.value}"
    with pytest.raises(GraphTensorError, match=message):  # through the framing too
        parse_examples(small_schema(), framed([good, good, bad, good]))


def test_garbage_is_one_line_naming_the_record():
    with pytest.raises(GraphTensorError, match=r"^record 1: tf.Example") as info:
        parse_examples(small_schema(), [encode_example(small_graph()), b"\x0a\xff\xff\xff"])
    assert "\n" not in str(info.value)


def test_without_validation_index_errors_pass_as_in_parse_example():
    example = write_example(small_graph())
    example.features.feature["edges/cites.#target"].int64_list.value[0] = 7
    records = [encode_example(small_graph()), example.SerializeToString()]
    graph = parse_examples(small_schema(), records, validate=False)
    assert graph == one_by_one(small_schema(), records, validate=False)


def test_messages_are_accepted_as_records():
    graph = small_graph()
    assert parse_examples(small_schema(), [write_example(graph), encode_example(graph)]) \
        == merge_batch_to_components([graph, graph])


@given(st.lists(st.binary(max_size=60), min_size=1, max_size=4))
@settings(max_examples=200, derandomize=True)
def test_any_bytes_decode_or_raise_one_line(records):
    schema = small_schema()
    try:
        expected = one_by_one(schema, records)
    except GraphTensorError:
        expected = None
    try:
        got = parse_examples(schema, records)
    except GraphTensorError as e:
        assert expected is None and "\n" not in str(e) and str(e).startswith("record")
        return
    assert got == expected
