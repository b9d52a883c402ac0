"""The tf.train.Example wire format, written and read straight from numpy buffers.

Protobuf encoding of the messages involved (field numbers as in TensorFlow's
example.proto and our unigraph/protos/example_pb2.py):
  Example      { 1: Features }
  Features     { 1: repeated FeatureEntry }          a map<string, Feature>
  FeatureEntry { 1: key (string), 2: value (Feature) }
  Feature      { oneof: 1 BytesList | 2 FloatList | 3 Int64List }
  BytesList    { 1: repeated bytes }
  FloatList    { 1: packed float }   tag, byte length, little-endian float32s
  Int64List    { 1: packed int64 }   tag, byte length, varints
Every length-delimited field is `tag | varint(length) | payload`. Packing float
lists is one `tobytes()`; int64 varints are computed for whole arrays at once
(the varint code itself lives in unigraph.encoding.wire, shared with the table readers).
Decoding keeps numpy views of the payload (floats are zero-copy) and also
accepts what any other protobuf writer may produce: any map order, unpacked
repeated scalars, split packed runs, unknown fields.
"""
from __future__ import annotations

from typing import Iterable, Union

import numpy as np

from unigraph.errors import GraphTensorError
from unigraph.encoding.wire import decode_varints, encode_varints, varint  # the shared varint code

# Tags: (field number << 3) | wire type; 2 = length-delimited, 0 = varint, 5 = 32-bit.
_LEN1 = b"\x0a"            # field 1, length-delimited
_LEN2 = b"\x12"            # field 2, length-delimited
_TAG_BYTES_LIST = b"\x0a"
_TAG_FLOAT_LIST = b"\x12"
_TAG_INT64_LIST = b"\x1a"

BYTES, FLOAT, INT64 = "bytes_list", "float_list", "int64_list"
_KIND_BY_FIELD = {1: BYTES, 2: FLOAT, 3: INT64}

FlatValues = Union[np.ndarray, list]   # float32 / int64 arrays, or a list of bytes


def _length_delimited(tag: bytes, payload: bytes) -> bytes:
    return tag + varint(len(payload)) + payload


def encode_feature(kind: str, values: FlatValues) -> bytes:
    """A serialized tf.train.Feature holding `values` (kind set even when empty)."""
    if kind == FLOAT:
        with np.errstate(over="ignore"):  # float64 beyond float32 range becomes inf, as in TF
            data = np.ascontiguousarray(values, dtype="<f4").tobytes()
        inner = _length_delimited(_LEN1, data) if data else b""
        return _length_delimited(_TAG_FLOAT_LIST, inner)
    if kind == INT64:
        data = encode_varints(values)
        inner = _length_delimited(_LEN1, data) if data else b""
        return _length_delimited(_TAG_INT64_LIST, inner)
    if kind == BYTES:
        inner = b"".join([_LEN1 + varint(len(item)) + item for item in values])
        return _length_delimited(_TAG_BYTES_LIST, inner)
    raise ValueError(f"unknown Feature kind {kind!r}")


def encode_example_bytes(features: Iterable[tuple[str, bytes]]) -> bytes:
    """A serialized tf.train.Example from (key, serialized Feature) pairs, in that order."""
    entries = []
    for key, feature in features:
        entry = _length_delimited(_LEN1, key.encode("utf-8")) + _length_delimited(_LEN2, feature)
        entries.append(_length_delimited(_LEN1, entry))
    return _length_delimited(_LEN1, b"".join(entries))


# --- decoding ----------------------------------------------------------------

def _read_varint(buf: memoryview, pos: int, end: int, where: str) -> tuple[int, int]:
    result = shift = 0
    while True:
        if pos >= end:
            raise GraphTensorError(f"{where}: truncated protobuf varint at byte {pos}")
        byte = buf[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if byte < 0x80:
            return result, pos
        shift += 7
        if shift >= 70:
            raise GraphTensorError(f"{where}: malformed protobuf varint at byte {pos}")


def _fields(buf: memoryview, start: int, end: int, where: str):
    """Yields (field number, wire type, value or (payload start, payload end))."""
    pos = start
    while pos < end:
        tag, pos = _read_varint(buf, pos, end, where)
        number, wire_type = tag >> 3, tag & 7
        if wire_type == 2:
            length, pos = _read_varint(buf, pos, end, where)
            if pos + length > end:
                raise GraphTensorError(f"{where}: field {number} runs past the end of its "
                                       f"message (byte {pos}, length {length})")
            yield number, wire_type, (pos, pos + length)
            pos += length
        elif wire_type == 0:
            value, pos = _read_varint(buf, pos, end, where)
            yield number, wire_type, value
        elif wire_type == 5:
            if pos + 4 > end:
                raise GraphTensorError(f"{where}: truncated 32-bit field at byte {pos}")
            yield number, wire_type, (pos, pos + 4)
            pos += 4
        elif wire_type == 1:
            if pos + 8 > end:
                raise GraphTensorError(f"{where}: truncated 64-bit field at byte {pos}")
            yield number, wire_type, (pos, pos + 8)
            pos += 8
        else:
            raise GraphTensorError(f"{where}: unsupported protobuf wire type {wire_type} "
                                   f"at byte {pos} (not a tf.train.Example?)")


def split_example(serialized: bytes) -> dict[str, memoryview]:
    """Feature key -> the bytes of its serialized Feature, for any key order.

    Values are not decoded here, so keys the caller does not need cost nothing.
    A key that appears twice keeps its last value, as protobuf maps do."""
    buf = memoryview(serialized)
    where = "tf.Example"
    result: dict[str, memoryview] = {}
    for number, wire_type, span in _fields(buf, 0, len(buf), where):
        if number != 1 or wire_type != 2:
            continue  # unknown fields are allowed and ignored
        for entry_number, entry_type, entry_span in _fields(buf, *span, where):
            if entry_number != 1 or entry_type != 2:
                continue
            key, value = b"", buf[0:0]
            for item_number, item_type, item_span in _fields(buf, *entry_span, where):
                if item_type != 2:
                    continue
                if item_number == 1:
                    key = bytes(buf[item_span[0]:item_span[1]])
                elif item_number == 2:
                    value = buf[item_span[0]:item_span[1]]
            try:
                result[key.decode("utf-8")] = value
            except UnicodeDecodeError:
                raise GraphTensorError(f"{where}: a feature key is not UTF-8: {key!r}") from None
    return result


def decode_feature(feature: memoryview, where: str) -> tuple[str | None, FlatValues]:
    """(kind, values) of a serialized Feature; kind None when no list is set."""
    kind, chunks = None, []
    for number, wire_type, span in _fields(feature, 0, len(feature), where):
        if wire_type != 2 or number not in _KIND_BY_FIELD:
            continue
        new_kind = _KIND_BY_FIELD[number]
        if new_kind != kind:
            chunks = []  # a later member of the oneof replaces an earlier one
        kind = new_kind
        chunks.append(_decode_list(kind, feature, span, where))
    if kind is None:
        return None, []
    if kind == BYTES:
        return kind, [item for chunk in chunks for item in chunk]
    return kind, chunks[0] if len(chunks) == 1 else np.concatenate(chunks)


def _decode_list(kind: str, buf: memoryview, span: tuple[int, int], where: str) -> FlatValues:
    if kind == BYTES:
        return [bytes(buf[s:e]) for number, wire_type, (s, e) in _fields(buf, *span, where)
                if number == 1 and wire_type == 2]
    parts = []
    for number, wire_type, value in _fields(buf, *span, where):
        if number != 1:
            continue
        if kind == FLOAT:
            if wire_type == 2:    # packed
                start, end = value
                if (end - start) % 4:
                    raise GraphTensorError(f"{where}: packed float_list of {end - start} "
                                           f"bytes, not a multiple of 4")
                parts.append(np.frombuffer(buf[start:end], dtype="<f4"))
            elif wire_type == 5:  # one unpacked float
                parts.append(np.frombuffer(buf[value[0]:value[1]], dtype="<f4"))
        else:
            if wire_type == 2:    # packed
                parts.append(decode_varints(buf[value[0]:value[1]], where))
            elif wire_type == 0:  # one unpacked varint
                parts.append(np.array([value & 0xFFFFFFFFFFFFFFFF], dtype=np.uint64).view(np.int64))
    dtype = np.float32 if kind == FLOAT else np.int64
    if not parts:
        return np.zeros(0, dtype=dtype)
    return parts[0].astype(dtype, copy=False) if len(parts) == 1 else np.concatenate(
        parts).astype(dtype, copy=False)


# --- scanning many records ---------------------------------------------------
# split_example and decode_feature accept any writer's layout through generic
# field walks. Tools that look at millions of records (sample-stats,
# sample-inspect --seed-id) use the spans below instead: the same answers,
# found by walks specialized for the layout every protobuf writer produces for
# these messages (each field written once, lists packed), with a generic
# fallback for anything else.

Span = tuple[int, int]  # [start, end) of a serialized Feature within its record


def feature_spans(serialized: bytes) -> dict[str, Span]:
    """Feature key -> span of its serialized Feature in `serialized`.

    The spans of what split_example returns, about three times faster: a
    record is walked once with its bytes indexed as ints."""
    data = serialized if isinstance(serialized, bytes) else bytes(serialized)
    spans = _canonical_spans(data)
    return spans if spans is not None else _generic_spans(data)


def _varint_at(data: bytes, pos: int, end: int) -> tuple[int, int]:
    if pos < end and data[pos] < 0x80:
        return data[pos], pos + 1
    return _read_varint(data, pos, end, "tf.Example")


def _canonical_spans(data: bytes) -> dict[str, Span] | None:
    """Spans when the record is Example{1: Features{1: entry...}} with entries
    {1: key, 2: value} in that order; None for any other layout."""
    entries = canonical_entries(data)
    return None if entries is None else dict(entries)


def canonical_entries(data: bytes) -> list[tuple[str, Span]] | None:
    """(key, span of its Feature) of every map entry in the order written, when the record
    is Example{1: Features{1: entry...}} with entries {1: key, 2: value} in that order;
    None for any other layout (the same key twice is kept twice)."""
    end = len(data)
    entries: list[tuple[str, Span]] = []
    pos = 0
    while pos < end:
        if data[pos] != 0x0A:
            return None
        length, pos = _varint_at(data, pos + 1, end)
        stop = pos + length
        if stop > end:
            return None
        while pos < stop:
            if data[pos] != 0x0A:
                return None
            length, pos = _varint_at(data, pos + 1, stop)
            entry_end = pos + length
            if entry_end > stop or pos >= entry_end or data[pos] != 0x0A:
                return None
            key_length, pos = _varint_at(data, pos + 1, entry_end)
            key_end = pos + key_length
            if key_end > entry_end:
                return None
            key = data[pos:key_end]
            if key_end == entry_end:
                value = (key_end, key_end)   # an entry without a value: an empty Feature
            else:
                if data[key_end] != 0x12:
                    return None
                value_length, value_start = _varint_at(data, key_end + 1, entry_end)
                if value_start + value_length != entry_end:
                    return None
                value = (value_start, entry_end)
            try:
                entries.append((key.decode("utf-8"), value))
            except UnicodeDecodeError:
                return None  # the generic walk names the bad key
            pos = entry_end
    return entries


def _generic_spans(data: bytes) -> dict[str, Span]:
    """split_example's walk, keeping spans (any field order, unknown fields, repeats)."""
    buf = memoryview(data)
    where = "tf.Example"
    spans: dict[str, Span] = {}
    for number, wire_type, span in _fields(buf, 0, len(buf), where):
        if number != 1 or wire_type != 2:
            continue
        for entry_number, entry_type, entry_span in _fields(buf, *span, where):
            if entry_number != 1 or entry_type != 2:
                continue
            key, value = b"", (entry_span[0], entry_span[0])
            for item_number, item_type, item_span in _fields(buf, *entry_span, where):
                if item_type != 2:
                    continue
                if item_number == 1:
                    key = bytes(buf[item_span[0]:item_span[1]])
                elif item_number == 2:
                    value = item_span
            try:
                spans[key.decode("utf-8")] = value
            except UnicodeDecodeError:
                raise GraphTensorError(f"{where}: a feature key is not UTF-8: {key!r}") from None
    return spans


def list_payload(data: bytes, span: Span) -> tuple[str | None, Span] | None:
    """(kind, span of the list's data) of a serialized Feature in the usual layout.

    For float_list and int64_list the data is the packed values; for
    bytes_list it is the list's items, each framed (1: bytes). Both can be
    concatenated across records and decoded at once (packed varints and framed
    items are self-delimiting). Kind None: no list set. None: another layout
    (unpacked or split lists, extra fields): use decode_feature."""
    start, end = span
    if start == end:
        return None, (start, start)
    kind = _KIND_BY_TAG.get(data[start])
    if kind is None:
        return None
    length, pos = _varint_at(data, start + 1, end)
    if pos + length != end:
        return None
    if kind == BYTES or pos == end:
        return kind, (pos, end)
    if data[pos] != 0x0A:
        return None
    length, inner = _varint_at(data, pos + 1, end)
    if inner + length != end:
        return None
    return kind, (inner, end)


_KIND_BY_TAG = {0x0A: BYTES, 0x12: FLOAT, 0x1A: INT64}
