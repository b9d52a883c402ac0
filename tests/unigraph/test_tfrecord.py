"""TFRecord framing: chunks, checksums (vectorized and combined), compression."""
import gzip
import io
import struct
import zlib

import google_crc32c
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from unigraph.encoding import crc32c, tfrecord, wire
from unigraph.errors import TableError

records_strategy = st.lists(st.binary(max_size=300), max_size=60)


def framed(records):
    return b"".join(tfrecord.encode_record(r) for r in records)


def read_all(data: bytes, **options):
    chunks = list(tfrecord.read_chunks(io.BytesIO(data), "f", **options))
    return [chunk.record(i) for chunk in chunks for i in range(len(chunk))], chunks


@given(st.lists(st.integers(0, 2 ** 64 - 1), max_size=50))
def test_crc_of_eight_bytes_matches_google_crc32c(values):
    got = crc32c.of_u64(np.array(values, dtype=np.uint64))
    assert got.tolist() == [google_crc32c.value(struct.pack("<Q", v)) for v in values]


@given(records_strategy)
def test_frame_records_matches_encode_record(records):
    pieces = wire.RowPieces(len(records))
    pieces.varying(np.frombuffer(b"".join(records), dtype=np.uint8),
                   np.array([len(r) for r in records], dtype=np.int64))
    assert tfrecord.frame_records(pieces).tobytes() == framed(records)


@settings(max_examples=60)
@given(records_strategy, st.integers(1, 400), st.one_of(st.none(), st.integers(1, 7)))
def test_chunks_return_every_record(records, chunk_bytes, per_chunk):
    got, chunks = read_all(framed(records), chunk_bytes=chunk_bytes, records=per_chunk)
    assert got == records
    if per_chunk:
        assert all(len(c) == per_chunk for c in chunks[:-1])
    assert [c.first_index for c in chunks] == list(np.cumsum([0] + [len(c) for c in chunks])[:-1])


def test_small_records_are_walked_without_the_loop():
    # Enough small Example-like records for the vectorized walk (tag 0x0a first).
    records = [b"\x0a" + bytes([i % 50]) + bytes(i % 50) for i in range(3000)]
    data = framed(records)
    found, end = tfrecord._walk(np.frombuffer(data, dtype=np.uint8), 0, 10 ** 9)
    assert isinstance(found, np.ndarray) and end == len(data)
    assert found.tolist() == tfrecord._walk_loop(np.frombuffer(data, dtype=np.uint8), 0, 10 ** 9)[0]
    assert read_all(data)[0] == records


def test_records_with_two_byte_example_lengths_are_walked_without_the_loop():
    records = [b"\x0a" + wire.varint(n) + bytes(n) for n in range(100, 900, 3)]
    data = framed(records)
    found, end = tfrecord._walk(np.frombuffer(data, dtype=np.uint8), 0, 10 ** 9)
    assert isinstance(found, np.ndarray) and end == len(data)
    assert read_all(data)[0] == records


def test_records_that_fool_the_vectorized_walk_fall_back_to_the_loop():
    # Data holding a whole framed record: a header candidate where no record starts.
    inner = framed([b"\x0a\x00" * 10])
    records = [b"\x0a" + inner + bytes(i % 7) for i in range(2000)]
    assert read_all(framed(records))[0] == records


@settings(max_examples=40)
@given(st.lists(st.binary(min_size=1, max_size=120), min_size=1, max_size=80), st.data())
def test_a_corrupt_data_byte_is_named_by_record(records, data):
    """The combined check finds any single flipped bit; the record named is the damaged one."""
    bad = data.draw(st.integers(0, len(records) - 1))
    position = data.draw(st.integers(0, len(records[bad]) - 1))
    bit = data.draw(st.integers(0, 7))
    raw = bytearray(framed(records))
    offset = len(framed(records[:bad]))
    raw[offset + tfrecord.HEADER_BYTES + position] ^= 1 << bit
    with pytest.raises(TableError) as error:
        read_all(bytes(raw))
    assert str(error.value) == f"f: record {bad} at byte {offset}: bad data checksum"
    # Without data checksums the damage goes unnoticed, by request.
    assert len(read_all(bytes(raw), check_crc=False)[0]) == len(records)


def test_records_before_damage_are_delivered_first():
    records = [bytes([i]) * 10 for i in range(20)]
    raw = bytearray(framed(records))
    raw[len(framed(records[:15])) + 13] ^= 0xFF
    delivered = []
    with pytest.raises(TableError, match="record 15 at byte"):
        for chunk in tfrecord.read_chunks(io.BytesIO(bytes(raw)), "f"):
            delivered += [chunk.record(i) for i in range(len(chunk))]
    assert delivered == records[:15]


@pytest.mark.parametrize("cut, message", [
    (5, "record 2 at byte 56: truncated header"),
    (20, "record 2 at byte 56: truncated data"),
])
def test_truncated_file(cut, message):
    records = [b"a" * 12, b"b" * 12, b"c" * 12]
    data = framed(records)[:56 + cut]
    with pytest.raises(TableError, match=message):
        read_all(data)


def test_bad_length_checksum():
    data = bytearray(framed([b"abc", b"defg"]))
    data[19 + 2] ^= 1  # the second record's length field
    with pytest.raises(TableError, match="record 1 at byte 19: bad length checksum"):
        read_all(bytes(data))


@settings(max_examples=40)
@given(st.lists(st.binary(max_size=300), min_size=1, max_size=40), st.data())
def test_sealed_check_agrees_with_one_call_per_span(spans, data):
    """seal + all_sealed: one pass over spans side by side says what one call per span says."""
    stored = [google_crc32c.value(s) for s in spans]
    wrong = data.draw(st.one_of(st.none(), st.integers(0, len(spans) - 1)))
    if wrong is not None:
        stored[wrong] ^= 1 << data.draw(st.integers(0, 31))
    buffer = np.frombuffer(b"".join(s + struct.pack("<I", c) for s, c in zip(spans, stored)),
                           dtype=np.uint8).copy()
    lengths = np.array([len(s) for s in spans], dtype=np.int64)
    crc_at = np.cumsum(lengths + 4) - 4
    # The spans in any order: the check is a sum.
    order = np.array(data.draw(st.permutations(range(len(spans)))), dtype=np.int64)
    crc32c.seal(buffer, crc_at[order], lengths[order], np.array(stored, np.uint64)[order])
    assert crc32c.all_sealed(buffer) == (wrong is None)
    starts = crc_at - lengths
    assert crc32c.first_bad(buffer, starts, lengths, np.array(stored, np.uint64)) == (
        -1 if wrong is None else wrong)


def test_a_corrupt_byte_in_a_big_chunk_is_named():
    rng = np.random.default_rng(5)
    records = [rng.bytes(int(n)) for n in rng.integers(0, 200, 5000)]
    raw = bytearray(framed(records))
    bad = 3000 + int(np.flatnonzero(np.array([len(r) for r in records[3000:]]) >= 2)[0])
    offset = len(framed(records[:bad]))
    raw[offset + tfrecord.HEADER_BYTES + 1] ^= 4
    with pytest.raises(TableError, match=f"f: record {bad} at byte {offset}: bad data checksum"):
        read_all(bytes(raw))


@settings(max_examples=20)
@given(st.lists(st.integers(0, 10 ** 7), max_size=30))
def test_crcs_of_zeros_vectorized(counts):
    assert crc32c.zeros_crcs(np.array(counts, dtype=np.int64)).tolist() == [
        crc32c.zeros_crc(c) for c in counts]


@settings(max_examples=40)
@given(st.integers(0, 10 ** 6))
def test_crc_of_zeros_without_zeros(count):
    assert crc32c.zeros_crc(count) == google_crc32c.value(bytes(count))


# ---- compression --------------------------------------------------------------------------

RECORDS = [b"\x0a\x02xy" * k for k in range(40)]


@pytest.mark.parametrize("name", ["t.tfrecord.gz", "t.tfrecord"])  # TF needs no .gz in the name
@pytest.mark.parametrize("compress", [
    gzip.compress,
    lambda data: gzip.compress(data[:100]) + gzip.compress(data[100:]),  # two gzip members
    zlib.compress,
])
def test_compressed_files_read_by_their_bytes(tmp_path, name, compress):
    path = tmp_path / name
    path.write_bytes(compress(framed(RECORDS)))
    stream = tfrecord.open_records(str(path))
    assert list(tfrecord.iter_records(stream, str(path))) == RECORDS


def test_truncated_gzip(tmp_path):
    path = tmp_path / "t.tfrecord.gz"
    path.write_bytes(gzip.compress(framed(RECORDS))[:-20])
    with pytest.raises(TableError, match=r"t.tfrecord.gz: the gzip stream ends early"):
        list(tfrecord.iter_records(tfrecord.open_records(str(path)), str(path)))


def test_plain_file_that_starts_like_gzip():
    record = b"x" * 0x8B1F  # its length field begins with the gzip magic 1f 8b
    data = framed([record])
    assert data[:2] == b"\x1f\x8b" and tfrecord.compression_of(data[:12]) is None


def test_long_records_are_checked_one_by_one():
    records = [bytes([k]) * 700 for k in range(30)]
    raw = bytearray(framed(records))
    offset = len(framed(records[:17]))
    raw[offset + tfrecord.HEADER_BYTES + 350] ^= 0x10
    with pytest.raises(TableError, match=f"f: record 17 at byte {offset}: bad data checksum"):
        read_all(bytes(raw))
    assert read_all(framed(records))[0] == records
