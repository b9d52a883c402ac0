"""TFRecord framing without TensorFlow.

A TFRecord file is a sequence of records, each
    uint64 length | uint32 masked_crc32c(length) | data | uint32 masked_crc32c(data)
little-endian. Reading checks both checksums so a truncated or corrupt file is
reported with its byte offset instead of yielding garbage.
"""
from __future__ import annotations

import struct
from typing import BinaryIO, Iterator

import google_crc32c

from unigraph.errors import TableError

_MASK_DELTA = 0xA282EAD8
_HEADER = struct.Struct("<QI")
_LENGTH = struct.Struct("<Q")
_FOOTER = struct.Struct("<I")


def masked_crc32c(data: bytes) -> int:
    crc = google_crc32c.value(data)
    return (((crc >> 15) | (crc << 17)) + _MASK_DELTA) & 0xFFFFFFFF


def encode_record(data: bytes) -> bytes:
    length = _LENGTH.pack(len(data))
    return (length + _FOOTER.pack(masked_crc32c(length)) + data
            + _FOOTER.pack(masked_crc32c(data)))


def iter_records(stream: BinaryIO, name: str) -> Iterator[bytes]:
    """Yields every record's bytes; TableError names the file and record on damage."""
    index = 0
    offset = 0
    while True:
        header = stream.read(12)
        if not header:
            return
        if len(header) < 12:
            raise TableError(f"{name}: record {index} at byte {offset}: truncated header")
        length, length_crc = _HEADER.unpack(header)
        if masked_crc32c(header[:8]) != length_crc:
            raise TableError(
                f"{name}: record {index} at byte {offset}: bad length checksum "
                f"(not a TFRecord file, or corrupt)")
        data = stream.read(length)
        footer = stream.read(4)
        if len(data) < length or len(footer) < 4:
            raise TableError(f"{name}: record {index} at byte {offset}: truncated data")
        if masked_crc32c(data) != _FOOTER.unpack(footer)[0]:
            raise TableError(f"{name}: record {index} at byte {offset}: bad data checksum")
        yield data
        index += 1
        offset += 16 + length
