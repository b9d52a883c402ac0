"""CRC32C (the Castagnoli CRC TFRecord uses) of many byte strings at once, with numpy.

google_crc32c computes one CRC per call in C at memory speed; what costs is
calling it once per small record from Python. Three ways around that:
  of_u64          the CRC of many 8-byte values (TFRecord length fields) by
                  slicing-by-8 tables, a few array operations for all of them;
  first_mismatch  a check that many spans have the CRCs they claim, with one
                  google_crc32c pass over a copy of them in equal slots and a
                  little GF(2) arithmetic (see there);
  zeros_crc       the CRC of n zero bytes without making them.
of_spans is the plain one-call-per-span way, for writing and for naming the
span a failed check is about.
"""
from __future__ import annotations

import struct

import google_crc32c
import numpy as np

from unigraph.wire import gather_rows

_FOOTER = struct.Struct("<I")
FOOTER_BYTES = 4  # a stored CRC: what follows each span in the slots


def _crc_tables() -> np.ndarray:
    """Slicing-by-8 tables of CRC32C (reflected polynomial 0x82F63B78), [8, 256] uint64."""
    table = np.arange(256, dtype=np.uint64)
    for _ in range(8):
        table = np.where(table & 1, (table >> 1) ^ 0x82F63B78, table >> 1)
    tables = [table]
    for _ in range(7):
        previous = tables[-1]
        tables.append((previous >> 8) ^ table[previous & 0xFF])
    return np.stack(tables)


_TABLES = _crc_tables()


_HIGH_ZEROS = _TABLES[3][0] ^ _TABLES[2][0] ^ _TABLES[1][0] ^ _TABLES[0][0]


def of_u64(values: np.ndarray) -> np.ndarray:
    """CRC32C of the 8 little-endian bytes of each uint64 value."""
    x = values.astype(np.uint64) ^ np.uint64(0xFFFFFFFF)
    small = not len(x) or int(x.max()) < (1 << 32)  # lengths: the high four bytes are zero
    crc = np.full(len(x), _HIGH_ZEROS if small else 0, dtype=np.uint64)
    for k in range(4 if small else 8):
        crc ^= _TABLES[7 - k][(x >> np.uint64(8 * k)) & np.uint64(0xFF)]
    return crc ^ np.uint64(0xFFFFFFFF)


def first_mismatch(buffer: np.ndarray, starts: np.ndarray, lengths: np.ndarray,
                   expected: np.ndarray) -> int:
    """Index of the first span buffer[starts[i]:+lengths[i]] whose CRC32C is not
    expected[i] (uint64), or -1. The buffer is only read.

    Spans are checked together, with one google_crc32c pass over a copy of
    them laid in equal slots. CRC32C without its initial and final inversion
    ("raw") is linear over GF(2): raw(A || B) = shift_|B|(raw(A)) xor raw(B),
    where shift_t is the linear map of feeding t zero bytes. Slot i holds span
    i (D_i), its expected CRC c_i as 4 little-endian bytes, then zeros up to the
    slot width S. If c_i = crc(D_i), the slot's raw CRC depends only on the
    span's length m_i: E(m) = shift_{S-m}(crc(0^m)). So the raw CRC of all
    slots must equal the XOR of shift_{S*(n-1-i)}(E(m_i)), reduced pairwise in
    a tree whose shift doubles each level. A mismatch means some span is
    corrupt; then (only then) one call per span finds it. Two corruptions could
    cancel out with probability 2**-32, the odds a single corrupt span has of
    matching its own CRC.

    With few distinct lengths (fixed-size rows), each length gets its own slots
    of exactly its size, so no slot needs zeroing. With many, short spans share
    slots of the longest's size; long ones of many lengths are checked one call
    per span, which is then the cheaper way.
    """
    n = len(starts)
    if n == 0:
        return -1
    longest = int(lengths.max())
    distinct = (np.flatnonzero(np.bincount(lengths)) if longest < (1 << 20)
                else np.unique(lengths))
    expected_crc = np.asarray(expected, dtype=np.uint64)
    if len(distinct) <= _LENGTH_GROUPS:
        for length in distinct.tolist():
            chosen = np.flatnonzero(lengths == length) if len(distinct) > 1 else slice(None)
            if not _slots_hold(buffer, starts[chosen], lengths[chosen], expected_crc[chosen],
                               length + FOOTER_BYTES):
                return _first_bad(buffer, starts, lengths, expected_crc)
        return -1
    width = longest + FOOTER_BYTES
    total = int(lengths.sum())
    if total > _SLOTS_UP_TO * n or n * width > 2 * total + (1 << 16):
        return _first_bad(buffer, starts, lengths, expected_crc)
    if _slots_hold(buffer, starts, lengths, expected_crc, width):
        return -1
    return _first_bad(buffer, starts, lengths, expected_crc)


def _slots_hold(buffer: np.ndarray, starts: np.ndarray, lengths: np.ndarray,
                expected_crc: np.ndarray, width: int) -> bool:
    """Whether records laid in slots of `width` bytes all match `expected_crc` (see above)."""
    n = len(starts)
    slots = _slots(buffer, starts, lengths, width)
    at = np.arange(n, dtype=np.int64) * width + lengths
    flat = slots.reshape(-1)
    for k in range(FOOTER_BYTES):
        flat[at + k] = ((expected_crc >> np.uint64(8 * k)) & np.uint64(0xFF)).astype(np.uint8)
    raw_crc = google_crc32c.value(flat) ^ zeros_crc(n * width)  # reads the array in place
    per_length = np.zeros(width + 1, dtype=np.uint64)
    for m in np.flatnonzero(np.bincount(lengths)).tolist():
        per_length[m] = _slot_value(m, width)
    return raw_crc == _combine(per_length[lengths], width)


_LENGTH_GROUPS = 8  # up to this many distinct record lengths, a slot size per length
_SLOTS_UP_TO = 200  # mean bytes up to which shared, zero-padded slots are the cheaper way


def _slots(buffer: np.ndarray, starts: np.ndarray, lengths: np.ndarray,
           width: int) -> np.ndarray:
    """[n, width]: each record's data from the start of its row, zeros after data and CRC."""
    rows = gather_rows(buffer, starts, width)
    if int(lengths.min()) + FOOTER_BYTES < width:
        rows *= np.arange(width, dtype=np.int64)[None, :] < (lengths + FOOTER_BYTES)[:, None]
    return rows


def zeros_crc(count: int) -> int:
    """crc32c of `count` zero bytes: the part of a CRC that depends on the length only.

    That is the initial register 0xFFFFFFFF fed `count` zero bytes, then
    inverted: shift_count applied by square-and-multiply over the tables of
    shift_{2**k}, microseconds for any count (no zero bytes are made).
    """
    register = 0xFFFFFFFF
    k = 0
    while count:
        if count & 1:
            register = _apply_one(_zero_shift_tables(k), register)
        count >>= 1
        k += 1
    return register ^ 0xFFFFFFFF


_ZERO_SHIFTS: list[np.ndarray] = []


def _zero_shift_tables(k: int) -> np.ndarray:
    """Byte tables of shift_{2**k}: the raw register fed 2**k zero bytes."""
    if not _ZERO_SHIFTS:
        # One zero byte: the table-driven CRC step with a zero input byte.
        images = (_BASIS >> np.uint64(8)) ^ _TABLES[0][_BASIS & np.uint64(0xFF)]
        _ZERO_SHIFTS.append(_shift_tables(images))
    while len(_ZERO_SHIFTS) <= k:
        previous = _ZERO_SHIFTS[-1]
        _ZERO_SHIFTS.append(_shift_tables(_apply(previous, _apply(previous, _BASIS))))
    return _ZERO_SHIFTS[k]


def _apply_one(tables: np.ndarray, value: int) -> int:
    return int(tables[0][value & 0xFF] ^ tables[1][(value >> 8) & 0xFF]
               ^ tables[2][(value >> 16) & 0xFF] ^ tables[3][value >> 24])


def _slot_value(length: int, width: int) -> int:
    """Raw CRC of a slot holding intact data of `length` bytes (any data: zeros will do)."""
    row = bytes(length) + _FOOTER.pack(zeros_crc(length)) + bytes(width - length - FOOTER_BYTES)
    return google_crc32c.value(row) ^ zeros_crc(width)


def _shift_tables(images: np.ndarray) -> np.ndarray:
    """[4, 256] byte tables of the linear map with images[j] = map(1 << j)."""
    bits = (np.arange(256)[:, None] >> np.arange(8)) & 1
    tables = np.empty((4, 256), dtype=np.uint64)
    for k in range(4):
        tables[k] = np.bitwise_xor.reduce(np.where(bits == 1, images[8 * k:8 * k + 8], 0),
                                          axis=1)
    return tables


def _apply(tables: np.ndarray, values: np.ndarray) -> np.ndarray:
    out = tables[0][values & np.uint64(0xFF)]
    for k in range(1, 4):
        out ^= tables[k][(values >> np.uint64(8 * k)) & np.uint64(0xFF)]
    return out


_SHIFTS: dict[int, list[np.ndarray]] = {}
_BASIS = np.array([1 << j for j in range(32)], dtype=np.uint64)


def _shift_levels(width: int, levels: int) -> list[np.ndarray]:
    """Byte tables of shift_{width * 2**k} for k < levels (cached per width)."""
    if width not in _SHIFTS:
        if len(_SHIFTS) > 64:
            _SHIFTS.clear()
        # shift_width(1 << j): the raw CRC of the 4 bytes of 1 << j and width - 4 zeros
        images = np.array([google_crc32c.value(_FOOTER.pack(1 << j) + bytes(width - 4))
                           ^ zeros_crc(width) for j in range(32)], dtype=np.uint64)
        _SHIFTS[width] = [_shift_tables(images)]
    known = _SHIFTS[width]
    while len(known) < levels:
        # shifting twice as far is the map composed with itself
        previous = known[-1]
        known.append(_shift_tables(_apply(previous, _apply(previous, _BASIS))))
    return known


def _combine(values: np.ndarray, width: int) -> int:
    """XOR over i of shift_{width * (n-1-i)}(values[i]) (raw CRCs of consecutive slots)."""
    levels = max(int(len(values) - 1).bit_length(), 1)
    for tables in _shift_levels(width, levels):
        if len(values) == 1:
            break
        if len(values) % 2:
            values = np.concatenate([np.zeros(1, dtype=np.uint64), values])
        values = _apply(tables, values[0::2]) ^ values[1::2]
    return int(values[0])


def of_spans(raw: bytes, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """crc32c of raw[starts[i]:ends[i]] for every i (one C call each, no Python loop body)."""
    spans = map(raw.__getitem__, map(slice, starts.tolist(), ends.tolist()))
    return np.fromiter(map(google_crc32c.value, spans), dtype=np.uint64, count=len(starts))


def _first_bad(buffer: np.ndarray, starts: np.ndarray, lengths: np.ndarray,
               expected: np.ndarray) -> int:
    """first_mismatch with one google_crc32c call per span."""
    computed = of_spans(buffer.tobytes(), starts, starts + lengths)
    bad = np.flatnonzero(computed != expected)
    return int(bad[0]) if len(bad) else -1
