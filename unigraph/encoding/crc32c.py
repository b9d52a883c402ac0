"""CRC32C (the Castagnoli CRC TFRecord uses) of many byte strings at once, with numpy.

google_crc32c computes one CRC per call in C at memory speed (over 10 GB/s
here); what costs is calling it once per small record from Python. So:
  of_u64           the CRC of many 8-byte values (TFRecord length fields) by
                   slicing-by-8 tables, a few array operations for all of them;
  seal, all_sealed a check that every span of a buffer has the CRC stored
                   after it, with ONE google_crc32c pass over the buffer in
                   place, no copy (see seal for the arithmetic);
  zeros_crc(s)     the CRC of n zero bytes without making them.
of_spans is the plain one-call-per-span way, for writing and for naming the
span a failed check is about (first_bad).
"""
from __future__ import annotations

import threading

import google_crc32c
import numpy as np

CRC_BYTES = 4  # a stored CRC: the 4 little-endian bytes after each span


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


# ---- checking many spans with one pass ----------------------------------------------------
#
# Write r(X) for the "raw" CRC of bytes X: CRC32C without the initial register
# 0xFFFFFFFF and the final inversion. r is linear over GF(2) and
#     r(A || B) = shift_|B|(r(A)) xor r(B),
# shift_t being the (invertible) linear map of feeding t zero bytes; r of zero
# bytes is 0. The full CRC is crc(X) = r(X) xor K_|X|, where K_m = crc(m zero
# bytes) depends on the length only. For the reflected CRC, r of the 4
# little-endian bytes of a value v is shift_4(v). So for a span D of m bytes
# followed by the 4 bytes of v:
#     r(D || v) = shift_4(r(D)) xor shift_4(v) = shift_4(crc(D) xor K_m xor v),
# which is 0 exactly when v = crc(D) xor K_m. `seal` overwrites each stored
# CRC c with c xor K_m: then every (span, stored CRC) segment whose CRC holds
# has raw CRC 0, and a buffer made of such segments side by side has raw CRC
# 0, i.e. crc(buffer) = K_len(buffer): one google_crc32c call checks them all.
# Any one corrupt segment makes it fail except with probability 2**-32, the
# odds a single corrupt span has of matching its own CRC; two could cancel with
# the same odds.

def seal(buffer: np.ndarray, crc_at: np.ndarray, span_lengths: np.ndarray,
         expected: np.ndarray) -> None:
    """Overwrites the 4 bytes at each crc_at[i] of `buffer` (uint8) with expected[i] xor
    K_span_lengths[i], so that all_sealed(buffer) tells whether every span has its CRC.

    The span of crc_at[i] is the span_lengths[i] bytes before it; `buffer` must be
    nothing but such spans, each followed by its 4 sealed bytes, in any order.
    """
    if not len(crc_at):
        return
    values = (np.asarray(expected, dtype=np.uint64) ^ zeros_crcs(span_lengths)).astype("<u4")
    slots = np.ndarray((len(buffer) - CRC_BYTES + 1,), dtype="<u4", buffer=buffer, strides=(1,))
    slots[crc_at] = values


def all_sealed(buffer: np.ndarray) -> bool:
    """Whether a buffer of sealed spans (see seal) holds every CRC: one pass, in place."""
    return google_crc32c.value(buffer) == zeros_crc(len(buffer))


# ---- the CRC of zero bytes ------------------------------------------------------------------

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


def zeros_crcs(counts: np.ndarray) -> np.ndarray:
    """zeros_crc of every count (uint64), computed once per distinct count, vectorized."""
    counts = np.asarray(counts, dtype=np.int64)
    if not len(counts):
        return np.zeros(0, dtype=np.uint64)
    first = int(counts[0])
    if (counts == first).all():
        return np.full(len(counts), zeros_crc(first), dtype=np.uint64)
    longest = int(counts.max())
    if longest < (1 << 20):
        distinct = np.flatnonzero(np.bincount(counts))
        table = np.zeros(longest + 1, dtype=np.uint64)
        table[distinct] = _zeros_crcs_distinct(distinct)
        return table[counts]
    distinct, inverse = np.unique(counts, return_inverse=True)
    return _zeros_crcs_distinct(distinct)[inverse]


def _zeros_crcs_distinct(counts: np.ndarray) -> np.ndarray:
    register = np.full(len(counts), 0xFFFFFFFF, dtype=np.uint64)
    rest = counts.astype(np.uint64)
    k = 0
    while rest.any():
        odd = np.flatnonzero(rest & np.uint64(1))
        if len(odd):
            register[odd] = _apply(_zero_shift_tables(k), register[odd])
        rest >>= np.uint64(1)
        k += 1
    return register ^ np.uint64(0xFFFFFFFF)


_ZERO_SHIFTS: list[np.ndarray] = []
_ZERO_SHIFTS_LOCK = threading.Lock()
_BASIS = np.array([1 << j for j in range(32)], dtype=np.uint64)


def _zero_shift_tables(k: int) -> np.ndarray:
    """Byte tables of shift_{2**k}: the raw register fed 2**k zero bytes."""
    if len(_ZERO_SHIFTS) > k:
        return _ZERO_SHIFTS[k]
    with _ZERO_SHIFTS_LOCK:  # readers in threads (Beam's) must not append a level twice
        if not _ZERO_SHIFTS:
            # One zero byte: the table-driven CRC step with a zero input byte.
            images = (_BASIS >> np.uint64(8)) ^ _TABLES[0][_BASIS & np.uint64(0xFF)]
            _ZERO_SHIFTS.append(_shift_tables(images))
        while len(_ZERO_SHIFTS) <= k:
            # shifting twice as far is the map composed with itself
            previous = _ZERO_SHIFTS[-1]
            _ZERO_SHIFTS.append(_shift_tables(_apply(previous, _apply(previous, _BASIS))))
    return _ZERO_SHIFTS[k]


def _shift_tables(images: np.ndarray) -> np.ndarray:
    """[4, 256] byte tables of the linear map with images[j] = map(1 << j)."""
    bits = (np.arange(256)[:, None] >> np.arange(8)) & 1
    tables = np.empty((4, 256), dtype=np.uint64)
    for k in range(4):
        tables[k] = np.bitwise_xor.reduce(np.where(bits == 1, images[8 * k:8 * k + 8], 0),
                                          axis=1)
    return tables


def _apply_one(tables: np.ndarray, value: int) -> int:
    return int(tables[0][value & 0xFF] ^ tables[1][(value >> 8) & 0xFF]
               ^ tables[2][(value >> 16) & 0xFF] ^ tables[3][value >> 24])


def _apply(tables: np.ndarray, values: np.ndarray) -> np.ndarray:
    out = tables[0][values & np.uint64(0xFF)]
    for k in range(1, 4):
        out ^= tables[k][(values >> np.uint64(8 * k)) & np.uint64(0xFF)]
    return out


# ---- one call per span --------------------------------------------------------------------

def of_spans(raw: bytes, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """crc32c of raw[starts[i]:ends[i]] for every i (one C call each, no Python loop body)."""
    spans = map(raw.__getitem__, map(slice, starts.tolist(), ends.tolist()))
    return np.fromiter(map(google_crc32c.value, spans), dtype=np.uint64, count=len(starts))


def first_bad(buffer: np.ndarray, starts: np.ndarray, lengths: np.ndarray,
              expected: np.ndarray) -> int:
    """Index of the first span buffer[starts[i]:+lengths[i]] whose crc32c is not expected[i]
    (uint64), or -1: one google_crc32c call per span (the slow way, to name a span)."""
    if not len(starts):
        return -1
    computed = of_spans(buffer.tobytes(), starts, starts + lengths)
    bad = np.flatnonzero(computed != np.asarray(expected, dtype=np.uint64))
    return int(bad[0]) if len(bad) else -1
