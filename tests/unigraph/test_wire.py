"""unigraph.encoding.wire: varints read many at a time, rows of byte pieces, span gathers."""
import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from unigraph.encoding import wire


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
