"""TFRecord files read through a memory map give what read_chunks gives: the same records,
in order, and on damage the same records first and the same error."""
import io

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from unigraph.encoding import tfrecord, tfrecord_map
from unigraph.errors import TableError


def framed(records):
    return b"".join(tfrecord.encode_record(r) for r in records)


def outcome(chunks):
    """(records delivered, error message or None, chunks) of a chunk iterator."""
    got, error, seen = [], None, []
    try:
        for chunk in chunks:
            seen.append(chunk)
            got += [chunk.record(i) for i in range(len(chunk))]
    except TableError as e:
        error = str(e)
    return got, error, seen


def both(tmp_path, data: bytes, chunk_bytes: int):
    path = tmp_path / "f.tfrecord"
    path.write_bytes(data)
    streamed = outcome(tfrecord.read_chunks(io.BytesIO(data), str(path)))
    mapped = outcome(tfrecord_map.mapped_chunks(str(path), chunk_bytes=chunk_bytes))
    return streamed, mapped


record = st.one_of(st.binary(max_size=40), st.binary(min_size=60, max_size=400))


@settings(max_examples=80, deadline=None)
@given(st.lists(record, max_size=40), st.integers(1, 3000), st.data())
def test_mapped_chunks_read_as_read_chunks(tmp_path_factory, records, chunk_bytes, data):
    raw = bytearray(framed(records))
    damage = data.draw(st.sampled_from(["none", "flip", "cut"])) if raw else "none"
    if damage == "flip":
        raw[data.draw(st.integers(0, len(raw) - 1))] ^= 1 << data.draw(st.integers(0, 7))
    elif damage == "cut":
        raw = raw[:data.draw(st.integers(1, len(raw)))]
    if not raw:
        return  # an empty file is never mapped (mappable says so)
    # Records of 32 bytes and more are checked in place (the copy path stays in use for
    # the rest and for the file's last chunk).
    tfrecord_map.IN_PLACE_RECORD_BYTES, saved = 32, tfrecord_map.IN_PLACE_RECORD_BYTES
    try:
        (got, error, _), (got_mapped, error_mapped, chunks) = both(
            tmp_path_factory.mktemp("m"), bytes(raw), chunk_bytes)
    finally:
        tfrecord_map.IN_PLACE_RECORD_BYTES = saved
    assert got_mapped == got
    assert error_mapped == error
    assert [c.first_index for c in chunks] == list(
        np.cumsum([0] + [len(c) for c in chunks])[:-1])
    assert all(len(c) for c in chunks)


def test_large_records_are_read_in_place_and_the_last_chunk_is_padded(tmp_path):
    records = [bytes([i]) * 5000 for i in range(30)]
    path = tmp_path / "f.tfrecord"
    path.write_bytes(framed(records))
    chunks = list(tfrecord_map.mapped_chunks(str(path), chunk_bytes=20000))
    assert [c.record(i) for c in chunks for i in range(len(c))] == records
    assert not chunks[0].buffer.flags.writeable  # a view of the map, not a copy
    last = chunks[-1]
    assert last.buffer.flags.writeable  # copied: room for 8-byte windows after the end
    assert len(last.buffer) >= int(last.starts[-1] + last.lengths[-1]) + 8
    for chunk in chunks:
        assert len(chunk.buffer) >= int(chunk.starts[-1] + chunk.lengths[-1]) + 8


def test_a_bad_data_checksum_in_a_chunk_read_in_place_names_the_record(tmp_path):
    records = [bytes([i]) * 3000 for i in range(12)]
    raw = bytearray(framed(records))
    offset = len(framed(records[:5]))
    raw[offset + tfrecord.HEADER_BYTES + 100] ^= 4
    path = tmp_path / "f.tfrecord"
    path.write_bytes(bytes(raw))
    got, error, _ = outcome(tfrecord_map.mapped_chunks(str(path), chunk_bytes=1 << 20))
    assert got == records[:5]
    assert error == f"{path}: record 5 at byte {offset}: bad data checksum"


def test_what_is_mapped(tmp_path):
    (tmp_path / "empty").write_bytes(b"")
    (tmp_path / "one").write_bytes(framed([b"x"]))
    assert tfrecord_map.mappable(str(tmp_path / "one"))
    assert not tfrecord_map.mappable(str(tmp_path / "empty"))
    assert not tfrecord_map.mappable(str(tmp_path))
    assert not tfrecord_map.mappable("gs://bucket/file.tfrecord")


def test_a_record_longer_than_a_chunk_is_a_chunk_of_its_own(tmp_path):
    records = [b"a" * 10, b"b" * 100000, b"c" * 10]
    path = tmp_path / "f.tfrecord"
    path.write_bytes(framed(records))
    chunks = list(tfrecord_map.mapped_chunks(str(path), chunk_bytes=64))
    assert [c.record(i) for c in chunks for i in range(len(c))] == records
    with pytest.raises(TableError, match="record 1 at byte 26: truncated data"):
        path.write_bytes(framed(records)[:5000])
        list(tfrecord_map.mapped_chunks(str(path), chunk_bytes=64))
