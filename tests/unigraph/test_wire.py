"""unigraph.encoding.wire: varints read many at a time, rows of byte pieces, span gathers."""
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from unigraph.encoding import wire
from unigraph.encoding.bytes_lists import bytes_list_items
from unigraph.errors import GraphTensorError


@given(st.lists(st.integers(0, 2 ** 28 - 1), min_size=1, max_size=40))
def test_read_varints_at_many_positions(values):
    encoded = [wire.varint(v) for v in values]
    buffer = wire.padded(b"".join(encoded))
    positions = np.cumsum([0] + [len(e) for e in encoded[:-1]])
    value, size, ok = wire.read_varints(wire.windows(buffer)[positions])
    assert ok.all()
    assert value.tolist() == values and size.tolist() == [len(e) for e in encoded]


def test_read_varints_flags_longer_ones():
    buffer = wire.padded(wire.varint(2 ** 28) + wire.varint(5))
    value, size, ok = wire.read_varints(wire.windows(buffer)[np.array([0, 5])])
    assert ok.tolist() == [False, True] and value[1] == 5


@given(st.lists(st.integers(-2 ** 63, 2 ** 63 - 1), max_size=30))
def test_varint_round_trip(values):
    values = np.array(values, dtype=np.int64)
    assert wire.decode_varints(wire.encode_varints(values), "t").tolist() == values.tolist()
    assert wire.varint_sizes(values).sum() == len(wire.encode_varints(values))


rows_of_pieces = st.integers(0, 6).flatmap(lambda n: st.tuples(st.just(n), st.lists(
    st.one_of(st.lists(st.binary(max_size=5), min_size=n, max_size=n),
              st.binary(min_size=n * 3, max_size=n * 3),
              st.lists(st.integers(0, 2 ** 40), min_size=n, max_size=n)), max_size=6)))


@given(rows_of_pieces)
def test_row_pieces_join_like_python(case):
    n, pieces = case
    rows = RowPiecesModel(n)
    built = wire.RowPieces(n)
    for piece in pieces:
        if isinstance(piece, bytes):  # three bytes a row
            built.fixed(np.frombuffer(piece, dtype=np.uint8).reshape(n, 3))
            rows.add([piece[3 * i:3 * i + 3] for i in range(n)])
        elif piece and isinstance(piece[0], int):
            built.varint(np.array(piece, dtype=np.int64))
            rows.add([wire.varint(v) for v in piece])
        else:
            built.varying(np.frombuffer(b"".join(piece), dtype=np.uint8),
                          np.array([len(p) for p in piece], dtype=np.int64))
            rows.add(piece)
    data, offsets = built.join()
    assert [data[offsets[i]:offsets[i + 1]].tobytes() for i in range(n)] == rows.rows


class RowPiecesModel:
    def __init__(self, n):
        self.rows = [b""] * n

    def add(self, piece):
        self.rows = [r + p for r, p in zip(self.rows, piece)]


@given(st.binary(max_size=60), st.data())
def test_gathers(data, draw):
    buffer = wire.padded(data)
    starts = np.array(draw.draw(st.lists(st.integers(0, len(data)), max_size=8)), np.int64)
    lengths = np.array([draw.draw(st.integers(0, len(data) - s)) for s in starts], np.int64)
    got, offsets = wire.gather_spans(buffer, starts, lengths)
    assert [got[offsets[i]:offsets[i + 1]].tobytes() for i in range(len(starts))] == [
        data[s:s + k] for s, k in zip(starts, lengths)]
    rows = wire.gather_rows(buffer, starts, 4)
    assert [r.tobytes() for r in rows] == [(data[s:s + 4] + bytes(12))[:4] for s in starts]


@given(st.lists(st.lists(st.integers(-2 ** 63, 2 ** 63 - 1), max_size=6), max_size=6))
def test_varint_spans_decode_each_run(runs):
    encoded = [wire.encode_varints(np.array(run, dtype=np.int64)) for run in runs]
    offsets = np.cumsum([0] + [len(e) for e in encoded])
    values, counts = wire.decode_varint_spans(np.frombuffer(b"".join(encoded), np.uint8),
                                              offsets, "t")
    assert values.tolist() == [v for run in runs for v in run]
    assert counts.tolist() == [len(run) for run in runs]


def test_a_varint_may_not_run_into_the_next_span():
    data = np.frombuffer(b"\x01\x82\x01", np.uint8)  # 1, then 130 split across spans
    with pytest.raises(GraphTensorError, match="truncated varint"):
        wire.decode_varint_spans(data, np.array([0, 2, 3]), "t")


@pytest.mark.parametrize("values", [[1, 127, 128, 16383, 16384, 2 ** 21, 5] * 30,
                                    [-1, 2 ** 63 - 1, -2 ** 63, 0, 1] * 10])
def test_short_and_long_varint_runs_decode_alike(values):
    values = np.array(values, dtype=np.int64)
    assert wire.decode_varints(wire.encode_varints(values), "t").tolist() == values.tolist()


@given(st.lists(st.lists(st.binary(max_size=140), max_size=5), max_size=5))
def test_bytes_list_items_of_any_bytes(lists):
    from unigraph.protos import example_pb2

    encoded = [example_pb2.BytesList(value=items).SerializeToString() for items in lists]
    offsets = np.cumsum([0] + [len(e) for e in encoded])
    data = np.frombuffer(b"".join(encoded), np.uint8)
    starts, lengths, counts = bytes_list_items(data, offsets)
    assert [data[s:s + n].tobytes() for s, n in zip(starts, lengths)] == [
        item for items in lists for item in items]
    assert counts.tolist() == [len(items) for items in lists]


@pytest.mark.parametrize("data, offsets", [
    (b"\x0a\x05abc", [0, 5]),             # an item past the data
    (b"\x0a\x01a\x12\x00", [0, 5]),       # another field
    (b"\x0a\x02ab\x0a\x01c", [0, 3, 7]),  # an item past its span
])
def test_bytes_list_items_refuse_what_is_not_items(data, offsets):
    assert bytes_list_items(np.frombuffer(data, np.uint8), np.array(offsets)) is None


def test_long_spans_are_gathered_whole():
    data = bytes(range(256)) * 40
    buffer = wire.padded(data)
    for width in (30, 5000):
        starts = np.array([0, 7, 4000], np.int64)
        lengths = np.array([width, width, 100], np.int64)
        got, offsets = wire.gather_spans(buffer, starts, lengths)
        assert got.flags.writeable
        assert [got[offsets[i]:offsets[i + 1]].tobytes() for i in range(3)] == [
            data[s:s + n] for s, n in zip(starts, lengths)]
