"""tf.train.Example records that all share the first record's layout, parsed in one pass.

Table writers (TensorFlow's, TF-GNN's, ours) write every record of a table the
same way: the same features in the same order, each a bytes list of one value
or a packed number list. Records then differ only in the lengths of what they
hold, and every length field of a map entry is its payload's length plus a
constant. So the first record is read in Python into a layout: per entry,
its header bytes up to the payload, as constant bytes (tags, key) and varint
lengths (payload length + a constant, each with its byte count). Then each
entry of all records is checked and read at once: its header bytes in one
gather, compared 8 bytes at a time with what the layout says given the
payload length (which the header's last varint holds).

That is a handful of array operations per entry instead of several per
protobuf level (examples.py's general path, which takes any chunk this
declines: entries in another order or other features, a bytes list of more
or fewer than one value, a length field of another byte count, an empty
list...). It declines (returns None), never raises: what is wrong is named
by the exact path.
"""
from __future__ import annotations

import dataclasses

import numpy as np

from unigraph.encoding.wire import TAG_FIELD_1, TAG_FIELD_2

_MAX_VARINT = 3          # length fields of up to 3 bytes (payloads below 2 MB)
_WINDOW = 8


@dataclasses.dataclass(frozen=True)
class _Varint:
    at: int      # offset in the entry header
    size: int    # bytes
    plus: int    # its value is the payload length plus this


@dataclasses.dataclass(frozen=True)
class _Block:
    """8 header bytes from `at` on, compared at once (as one little-endian uint64)."""

    at: int
    mask: int                   # the header bytes this block checks (constants and varints)
    constant: int               # the constant bytes, in place
    varints: tuple[_Varint, ...]  # those in the block, `at` from the block's start


@dataclasses.dataclass(frozen=True)
class _Entry:
    key: str
    list_tag: int | None        # None: a feature not asked for, only skipped
    header: int                 # bytes from the entry's start to its payload
    length: _Varint             # the payload length's own varint (plus == 0)
    blocks: tuple[_Block, ...]
    low: int                    # payload lengths in [low, high) keep every varint's size
    high: int


@dataclasses.dataclass(frozen=True)
class Layout:
    features_size: int          # bytes of Example.features' length varint
    entries: tuple[_Entry, ...]


# ---- the layout of the first record ----------------------------------------------------------

def _read_varint(data: bytes, pos: int) -> tuple[int, int]:
    value, shift, start = 0, 0, pos
    while True:
        if pos >= len(data) or pos - start >= _MAX_VARINT:
            raise ValueError
        byte = data[pos]
        value |= (byte & 0x7F) << shift
        pos += 1
        if not byte & 0x80:
            return value, pos - start
        shift += 7


def _varint_bytes(value: int) -> int:
    size = 1
    while value >= 0x80:
        value >>= 7
        size += 1
    return size


def layout_of(record: bytes, wanted: dict[str, tuple[int, ...]]) -> Layout | None:
    """The layout of one Example record, or None when it is not one this module reads.

    `wanted` maps the features to read to the list tags they may have.
    """
    try:
        return _layout(record, wanted)
    except ValueError:
        return None


def _layout(record: bytes, wanted: dict[str, tuple[int, ...]]) -> Layout | None:
    if not record or record[0] != TAG_FIELD_1:
        return None
    length, features_size = _read_varint(record, 1)
    if length != len(record) - 1 - features_size or _varint_bytes(length) != features_size:
        return None
    pos, entries, seen = 1 + features_size, [], set()
    while pos < len(record):
        entry = _entry(record, pos, wanted)
        if entry is None or entry[0].key in seen:
            return None
        seen.add(entry[0].key)
        entries.append(entry[0])
        pos = entry[1]
    if pos != len(record) or not set(wanted) <= seen:
        return None
    return Layout(features_size, tuple(entries))


def _entry(record: bytes, pos: int,
           wanted: dict[str, tuple[int, ...]]) -> tuple[_Entry, int] | None:
    """(the layout of the map entry at pos, where the next one starts) or None."""
    start = pos
    constants: list[tuple[int, int]] = []    # (offset, byte)
    varints: list[tuple[int, int, int]] = []  # (offset, size, value)

    def constant(byte: int) -> None:
        nonlocal pos
        if pos >= len(record) or record[pos] != byte:
            raise ValueError
        constants.append((pos - start, byte))
        pos += 1

    def length() -> int:
        nonlocal pos
        value, size = _read_varint(record, pos)
        if _varint_bytes(value) != size:
            raise ValueError  # not the shortest form: the general path reads it
        varints.append((pos - start, size, value))
        pos += size
        return value

    constant(TAG_FIELD_1)                       # Features.feature (a map entry)
    entry_end = length() + pos
    constant(TAG_FIELD_1)                       # its key
    if pos >= len(record) or record[pos] >= 0x80:
        return None
    key_length = record[pos]
    constant(key_length)                        # the same in every record
    key = record[pos:pos + key_length]
    for byte in key:
        constant(byte)
    try:
        name = key.decode("utf-8")
    except UnicodeDecodeError:
        return None
    constant(TAG_FIELD_2)                       # its value, a Feature
    ends = [length() + pos]
    tags = wanted.get(name)
    tag = None
    if tags is not None:
        if pos >= len(record) or record[pos] not in tags:
            return None
        tag = record[pos]
        constant(tag)                           # the Feature's one list
        ends.append(length() + pos)
        constant(TAG_FIELD_1)                   # the packed values, or the one bytes value
        payload = length()
        ends.append(payload + pos)
        if not payload:
            return None                         # an empty list or value: the general path
    else:
        payload = ends[0] - pos                 # a feature not asked for: skipped whole
    if any(end != entry_end for end in ends):
        return None
    header = pos - start
    # The varints' values minus the payload length, which each is plus a constant.
    sized = [_Varint(at, size, value - payload) for at, size, value in varints]
    low, high = 0, 1 << 62
    for v in sized:
        low = max(low, (0 if v.size == 1 else 1 << (7 * (v.size - 1))) - v.plus)
        high = min(high, (1 << (7 * v.size)) - v.plus)
    blocks = _blocks(header, constants, sized)
    return _Entry(name, tag, header, sized[-1], blocks, low, high), pos + payload


def _blocks(header: int, constants: list[tuple[int, int]],
            varints: list[_Varint]) -> tuple[_Block, ...]:
    """The header as 8-byte blocks from its start: what each checks (a varint may span two)."""
    blocks = []
    for at in range(0, header, _WINDOW):
        mask = constant_bits = 0
        for offset, byte in constants:
            if at <= offset < at + _WINDOW:
                mask |= 0xFF << (8 * (offset - at))
                constant_bits |= byte << (8 * (offset - at))
        inside = []
        for v in varints:
            if v.at < at + _WINDOW and v.at + v.size > at:
                for k in range(v.size):
                    if at <= v.at + k < at + _WINDOW:
                        mask |= 0xFF << (8 * (v.at + k - at))
                inside.append(_Varint(v.at - at, v.size, v.plus))  # at < 0: starts before
        blocks.append(_Block(at, mask, constant_bits, tuple(inside)))
    return tuple(blocks)


# ---- all records at once ------------------------------------------------------------------

def _encoded(values: np.ndarray, size: int) -> np.ndarray:
    """The `size`-byte varint of each value (uint64), as a little-endian number."""
    if size == 1:
        return values
    out = np.zeros(len(values), dtype=np.uint64)
    for k in range(size):
        part = (values >> np.uint64(7 * k)) & np.uint64(0x7F)
        if k < size - 1:
            part |= np.uint64(0x80)
        out |= part << np.uint64(8 * k)
    return out


def _decoded(raw: np.ndarray, size: int) -> np.ndarray:
    """The value of the `size`-byte varint in the low bytes of each window (not validated)."""
    if size == 1:
        return raw & np.uint64(0x7F)
    out = raw & np.uint64(0x7F)
    for k in range(1, size):
        out |= ((raw >> np.uint64(8 * k)) & np.uint64(0x7F)) << np.uint64(7 * k)
    return out


def _rows(buffer: np.ndarray, at: np.ndarray, blocks: int) -> np.ndarray:
    """[n, blocks] uint64: the 8 * blocks bytes at each offset, in one gather."""
    width = _WINDOW * blocks
    items = np.ndarray((len(buffer) - width + 1,), dtype=np.dtype((np.void, width)),
                       buffer=buffer, strides=(1,))
    return items[at].view("<u8").reshape(len(at), blocks)


def _placed(value: np.ndarray, shift: int) -> np.ndarray:
    """`value`'s bytes moved `shift` bytes up (down if negative) in a uint64."""
    if shift >= 0:
        return value << np.uint64(8 * shift) if shift else value
    return value >> np.uint64(-8 * shift)


def read_entries(buffer: np.ndarray, words: np.ndarray, starts: np.ndarray,
                 lengths: np.ndarray, layout: Layout
                 ) -> dict[str, tuple[int, np.ndarray, np.ndarray]] | None:
    """feature name -> (list tag, payload start, payload length in every record) of the
    wanted features; None unless every record has exactly `layout`.

    `buffer` is padded (8 bytes after the last record), `words` its windows.
    """
    ends = starts + lengths
    # Example.features: the tag, then the rest of the record's length.
    size = layout.features_size
    rest = (lengths - 1 - size).astype(np.uint64)
    low = 0 if size == 1 else 1 << (7 * (size - 1))
    if not ((rest >= np.uint64(low)) & (rest < np.uint64(1 << (7 * size)))).all():
        return None
    mask = np.uint64((1 << (8 * (1 + size))) - 1)
    if not ((words[starts] & mask) == (_encoded(rest, size) << np.uint64(8)
                                       | np.uint64(TAG_FIELD_1))).all():
        return None
    cursor = starts + 1 + size
    found = {}
    for entry in layout.entries:
        if not (cursor + entry.header <= ends).all():
            return None
        rows = _rows(buffer, cursor, len(entry.blocks))
        # The payload length, from the block(s) holding its varint.
        block, offset = divmod(entry.length.at, _WINDOW)
        raw = _placed(rows[:, block], -offset)
        if offset + entry.length.size > _WINDOW:
            raw = raw | _placed(rows[:, block + 1], _WINDOW - offset)
        payload = _decoded(raw, entry.length.size).astype(np.int64)
        if not ((payload >= entry.low) & (payload < entry.high)).all():
            return None
        unsigned = payload.astype(np.uint64)
        for k, block in enumerate(entry.blocks):
            expected = np.full(len(cursor), block.constant, dtype=np.uint64)
            for v in block.varints:
                value = unsigned + np.uint64(v.plus) if v.plus else unsigned
                expected |= _placed(_encoded(value, v.size), v.at)
            expected &= np.uint64(block.mask)
            if not ((rows[:, k] & np.uint64(block.mask)) == expected).all():
                return None
        begin = cursor + entry.header
        cursor = begin + payload
        if not (cursor <= ends).all():
            return None
        if entry.list_tag is not None:
            found[entry.key] = (entry.list_tag, begin, payload)
    if not (cursor == ends).all():
        return None
    return found
