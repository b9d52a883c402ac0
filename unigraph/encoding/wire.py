"""Protobuf wire primitives for tf.train.Example, on whole numpy arrays.

The one home of the varint code that both the table readers and writers
(unigraph.tables.examples, unigraph.tables.writers) and the GraphTensor codec
(sampler.graph_tensor.wire) use. A varint stores 7 bits per byte, low bits
first; the top bit of a byte says another byte follows.

Two ways to read them, both vectorized:
  decode_varints   a packed run (an int64_list payload) -> int64 values; and
                   decode_varint_spans, many runs back to back (one per record) at once
  read_varints     one varint at each of many byte positions of a buffer (the
                   lengths and tags of many messages at once), through
                   `windows`: a view with one unaligned little-endian uint64 at
                   every byte offset, so any 8 bytes are one fancy-index away.
"""
from __future__ import annotations

import numpy as np

from unigraph.errors import GraphTensorError, SamplerError

# Tags of the length-delimited fields of Example, Features, FeatureEntry, Feature
# and its lists: (field number << 3) | 2.
TAG_FIELD_1 = 0x0A   # Example.features, Features.feature, FeatureEntry.key, BytesList.value,
#                      FloatList/Int64List packed values
TAG_FIELD_2 = 0x12   # FeatureEntry.value; Feature.float_list
TAG_BYTES_LIST = 0x0A
TAG_FLOAT_LIST = 0x12
TAG_INT64_LIST = 0x1A

WINDOW_BYTES = 8        # bytes a window holds; buffers read through windows carry this padding
MAX_VARINT_BYTES = 4    # read_varints: longer ones (values >= 2**28) are left to the caller


def varint(value: int) -> bytes:
    """One unsigned varint (lengths and tags)."""
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


# Smallest value needing k+2 bytes, for k = 0..8: a value's byte count is
# 1 + the number of these it reaches.
_VARINT_LIMITS = np.array([1 << (7 * k) for k in range(1, 10)], dtype=np.uint64)


def varint_sizes(values: np.ndarray) -> np.ndarray:
    """Bytes the varint of each int64 value takes (negative ones take 10)."""
    unsigned = np.ascontiguousarray(values, dtype=np.int64).view(np.uint64)
    return np.searchsorted(_VARINT_LIMITS, unsigned, side="right") + 1


def encode_varints(values: np.ndarray) -> bytes:
    """Packed varints of int64 values (negative ones take 10 bytes, as protobuf does)."""
    return encode_varints_array(values).tobytes()


def encode_varints_array(values: np.ndarray, counts: np.ndarray | None = None) -> np.ndarray:
    """encode_varints as a uint8 array; `counts` (varint_sizes) may be passed if known."""
    values = np.ascontiguousarray(values, dtype=np.int64)
    if values.size == 0:
        return np.zeros(0, dtype=np.uint8)
    unsigned = values.view(np.uint64)
    if counts is None and int(unsigned.max()) < 0x80:
        return values.astype(np.uint8)  # the usual case for sizes and small indices
    if counts is None:
        counts = varint_sizes(values)
    ends = np.cumsum(counts)
    starts = ends - counts
    out = np.empty(int(ends[-1]), dtype=np.uint8)
    # Byte k of every value that has one, scattered to its place; the top bit
    # says "more bytes follow". At most 10 passes, each over whole arrays.
    for k in range(int(counts.max())):
        chosen = np.flatnonzero(counts > k) if k else slice(None)
        group = ((unsigned[chosen] >> np.uint64(7 * k)) & np.uint64(0x7F)).astype(np.uint8)
        group |= (counts[chosen] > k + 1).view(np.uint8) << 7
        out[starts[chosen] + k] = group
    return out


def decode_varints(payload, where: str,
                   error: type[SamplerError] = GraphTensorError) -> np.ndarray:
    """int64 values of packed varints (the inverse of encode_varints)."""
    data = np.frombuffer(payload, dtype=np.uint8)
    if data.size == 0:
        return np.zeros(0, dtype=np.int64)
    if data[-1] & 0x80:
        raise error(f"{where}: truncated varint in int64_list")
    last = data < 0x80
    count = int(np.count_nonzero(last))
    if count == len(data):
        return data.astype(np.int64)
    if len(data) <= _SHORT_VARINTS * count:
        return _decode_short(data, last, where, error)
    return _decode_long(data, last, where, error)


_SHORT_VARINTS = 3  # bytes per value up to which a varint run is decoded byte-wise


def _decode_short(data: np.ndarray, last: np.ndarray, where: str,
                  error: type[SamplerError]) -> np.ndarray:
    """decode_varints for runs of mostly short varints (indices, sizes, small numbers).

    Every byte's value is built in place, Horner-like from the last byte of its varint
    back: in round k each byte whose k bytes before all say "more" takes the k-th byte
    before it as its lower 7 bits. Only whole-array operations without masks (a mask's
    unpredictable branches cost more than the arithmetic), one round per byte of the
    longest varint; the values are then those at the varints' last bytes.
    """
    n = len(data)
    more = ~last
    low = data & np.uint8(0x7F)
    value = low.astype(np.uint32)
    run = more[:-1]  # over bytes 1..n-1: the byte before says "more"
    k = 1
    while True:
        if k == 4:  # values of 4 bytes and more: 28 bits and more
            value = value.astype(np.uint64)
        on = run.view(np.uint8)
        tail = value[k:]
        np.left_shift(tail, on * np.uint8(7), out=tail, casting="unsafe")
        np.bitwise_or(tail, low[:n - k] * on, out=tail, casting="unsafe")
        k += 1
        if k >= n:
            break
        run = run[1:] & more[:n - k]
        if not run.any():
            break
        if k >= 10:
            raise error(f"{where}: varint longer than 10 bytes in int64_list")
    found = np.compress(last, value)
    return found.astype(np.int64) if found.dtype == np.uint32 else found.view(np.int64)


def _decode_long(data: np.ndarray, last: np.ndarray, where: str,
                 error: type[SamplerError]) -> np.ndarray:
    """decode_varints for runs of long varints (large or negative numbers): each
    varint's k-th byte gathered for the varints that have one."""
    ends = np.flatnonzero(last)
    starts = np.empty_like(ends)
    starts[0] = 0
    starts[1:] = ends[:-1] + 1
    if int((ends - starts).max()) >= 10:
        raise error(f"{where}: varint longer than 10 bytes in int64_list")
    lengths = ends - starts + 1
    result = (data[starts] & 0x7F).astype(np.uint64)
    for k in range(1, int(lengths.max())):
        chosen = np.flatnonzero(lengths > k)
        group = (data[starts[chosen] + k] & 0x7F).astype(np.uint64)
        result[chosen] |= group << np.uint64(7 * k)
    return result.view(np.int64)


def decode_varint_spans(data: np.ndarray, offsets: np.ndarray, where: str,
                        error: type[SamplerError] = GraphTensorError
                        ) -> tuple[np.ndarray, np.ndarray]:
    """(values, how many in each span) of packed varints written back to back, span i
    being data[offsets[i]:offsets[i + 1]] (what gather_spans returns). Every span must
    end a varint (none may run into the next span)."""
    data = np.asarray(data, dtype=np.uint8)
    last = data < 0x80
    closed = offsets[1:][offsets[1:] > offsets[:-1]] - 1
    if len(closed) and not last[closed].all():
        raise error(f"{where}: truncated varint in int64_list")
    # A span's count: the varints ending in it (their last bytes, found by position: a
    # search per span, not a running count per byte).
    ending = np.searchsorted(np.flatnonzero(last), offsets)
    return decode_varints(data, where, error), ending[1:] - ending[:-1]


# ---- reading many messages at once ---------------------------------------------------

def padded(data) -> np.ndarray:
    """`data` (bytes-like) as a uint8 array followed by WINDOW_BYTES zero bytes."""
    raw = np.frombuffer(data, dtype=np.uint8)
    out = np.empty(len(raw) + WINDOW_BYTES, dtype=np.uint8)
    out[:len(raw)] = raw
    out[len(raw):] = 0
    return out


def windows(buffer: np.ndarray) -> np.ndarray:
    """The little-endian uint64 starting at every byte of a padded buffer (a view).

    `windows(b)[p]` holds bytes p..p+7; positions up to len(b) - WINDOW_BYTES
    (the data proper) are valid.
    """
    return np.ndarray((len(buffer) - WINDOW_BYTES + 1,), dtype="<u8", buffer=buffer,
                      strides=(1,))


def read_varints(words: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(value, byte count, ok) of the varint that starts each uint64 window `words`.

    Reads up to MAX_VARINT_BYTES bytes; `ok` is False where the varint is longer
    (the caller treats such a message as unusual).
    """
    value = (words & np.uint64(0x7F)).astype(np.int64)
    size = np.ones(len(words), dtype=np.int64)
    more = (words & np.uint64(0x80)) != 0
    if not more.any():
        return value, size, np.ones(len(words), dtype=bool)
    for k in range(1, MAX_VARINT_BYTES):
        byte = (words >> np.uint64(8 * k)).astype(np.int64)
        value |= np.where(more, (byte & 0x7F) << (7 * k), 0)
        size += more
        more = more & ((byte & 0x80) != 0)
    return value, size, ~more


def byte_at(words: np.ndarray, k: int = 0) -> np.ndarray:
    """Byte k of each window, as int64."""
    return ((words >> np.uint64(8 * k)) & np.uint64(0xFF)).astype(np.int64)


def gather_rows(buffer: np.ndarray, starts: np.ndarray, width: int) -> np.ndarray:
    """The `width` bytes at each start of a padded buffer, as an [n, width] uint8 array.

    Rows that would run past the buffer's end read zeros there.
    """
    n = len(starts)
    if width == 0 or n == 0:
        return np.zeros((n, width), dtype=np.uint8)
    limit = len(buffer) - width
    items = _items(buffer, width) if limit >= 0 else None  # whole rows, not byte by byte
    if n and int(starts.max()) <= limit:
        return items[starts].view(np.uint8).reshape(n, width)
    out = np.zeros((n, width), dtype=np.uint8)
    inside = starts <= limit
    if inside.any():
        out[inside] = items[starts[inside]].view(np.uint8).reshape(-1, width)
    for i in np.flatnonzero(~inside):  # at most a few rows near the end
        tail = buffer[starts[i]:]
        out[i, :len(tail)] = tail
    return out


def gather_spans(buffer: np.ndarray, starts: np.ndarray,
                 lengths: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(bytes of every span, concatenated; offsets, len n + 1) of spans of a buffer."""
    offsets = np.zeros(len(starts) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    total = int(offsets[-1])
    if total == 0:
        return np.zeros(0, dtype=np.uint8), offsets
    if total >= _COPIED_SPAN_BYTES * len(starts):
        # Very long spans (features of many values): one copy each.
        out = np.empty(total, dtype=np.uint8)
        for start, begin, end in zip(starts.tolist(), offsets[:-1].tolist(),
                                     offsets[1:].tolist()):
            out[begin:end] = buffer[start:start + end - begin]
        return out, offsets
    if total >= _SLICED_SPAN_BYTES * len(starts):
        # Long spans: a slice of each, joined (a C loop of memcpy), costs less than an
        # index per byte.
        view = memoryview(buffer)
        ends = starts + lengths
        joined = bytearray().join(map(view.__getitem__,
                                      map(slice, starts.tolist(), ends.tolist())))
        return np.frombuffer(joined, dtype=np.uint8), offsets  # writable, as a gather's
    index = np.arange(total, dtype=np.int64)
    index += np.repeat(starts - offsets[:-1], lengths)
    return buffer[index], offsets


_SLICED_SPAN_BYTES = 24  # spans this long on average are copied by slices, not by index
_COPIED_SPAN_BYTES = 4096  # and this long, each by its own copy


# ---- writing many messages at once ---------------------------------------------------

_OWN_PIECE_BYTES = 64  # fixed pieces this wide are not merged with their neighbours


class RowPieces:
    """Byte strings of n rows, built piece by piece: row i = piece_1[i] + piece_2[i] + ...

    Each piece is one byte string per row given as a flat uint8 array plus
    per-row lengths, or as an [n, w] array when every row's piece has w bytes.
    Consecutive fixed-width pieces are merged into one [n, sum of w] array, so
    writing copies a row of many small pieces at once, never byte by byte.
    """

    def __init__(self, n: int):
        self.n = n
        self._pieces: list[tuple[np.ndarray | RowPieces, np.ndarray | int]] = []
        self._run: list[np.ndarray] = []  # fixed-width pieces not merged yet

    def _flush(self) -> None:
        if self._run:
            rows = self._run[0] if len(self._run) == 1 else np.concatenate(self._run, axis=1)
            self._pieces.append((rows, rows.shape[1]))
            self._run = []

    def lengths(self) -> np.ndarray:
        self._flush()
        total = np.zeros(self.n, dtype=np.int64)
        for _, lengths in self._pieces:
            total += lengths
        return total

    def fixed(self, rows: np.ndarray) -> None:
        """Adds an [n, w] uint8 piece (w bytes in every row); a [w] array repeats in all rows."""
        rows = np.asarray(rows, dtype=np.uint8)
        if rows.ndim == 1:
            rows = np.broadcast_to(rows, (self.n, len(rows)))
        if rows.shape[1] >= _OWN_PIECE_BYTES:  # wide: written from where it is, not merged
            self._flush()
            self._pieces.append((rows, rows.shape[1]))
        elif rows.shape[1]:
            self._run.append(rows)

    def varying(self, data: np.ndarray, lengths: np.ndarray) -> None:
        """Adds a piece of `lengths[i]` bytes per row, the rows' bytes concatenated in `data`."""
        lengths = np.asarray(lengths, dtype=np.int64)
        if len(lengths) and (lengths == lengths[0]).all():
            self.fixed(np.asarray(data, dtype=np.uint8).reshape(self.n, int(lengths[0])))
        else:
            self._flush()
            self._pieces.append((np.asarray(data, dtype=np.uint8), lengths))

    def nested(self, rows: "RowPieces") -> None:
        """Adds the rows of another RowPieces as one piece (written in place, not copied twice)."""
        self._flush()
        self._pieces.append((rows, rows.lengths()))

    def varint(self, values: np.ndarray) -> None:
        """Adds each row's value as a varint."""
        values = np.asarray(values, dtype=np.int64)
        if not len(values) or int(values.max()) < 0x80 and int(values.min()) >= 0:
            self.fixed(values.astype(np.uint8).reshape(self.n, 1))
            return
        sizes = varint_sizes(values)
        self.varying(encode_varints_array(values, sizes), sizes)

    def join(self) -> tuple[np.ndarray, np.ndarray]:
        """(all rows' bytes concatenated, row offsets of length n + 1)."""
        offsets = np.zeros(self.n + 1, dtype=np.int64)
        np.cumsum(self.lengths(), out=offsets[1:])
        out = np.empty(int(offsets[-1]), dtype=np.uint8)
        self.write_into(out, offsets[:-1])
        return out, offsets

    def write_into(self, out: np.ndarray, starts: np.ndarray) -> None:
        """Writes row i at out[starts[i]:] (rows must not overlap)."""
        self._flush()
        if self.n == 0:
            return
        at = np.array(starts, dtype=np.int64)
        for data, lengths in self._pieces:
            if isinstance(data, RowPieces):
                data.write_into(out, at)
            elif isinstance(lengths, int):
                _items(out, lengths)[at] = _as_items(data)
            else:
                _copy_spans(data, lengths, out, at)
            at += lengths


_MAX_LENGTH_GROUPS = 16  # more distinct lengths than this: copy byte by byte


def _copy_spans(data: np.ndarray, lengths: np.ndarray, out: np.ndarray, at: np.ndarray) -> None:
    """out[at[i]:at[i] + lengths[i]] = row i of `data` (rows concatenated, back to back).

    Rows of equal length are copied together, a row at a time through strided
    views; with many distinct lengths, through one index per byte.
    """
    firsts = np.zeros(len(lengths), dtype=np.int64)
    np.cumsum(lengths[:-1], out=firsts[1:])
    longest = int(lengths.max()) if len(lengths) else 0
    distinct = (np.flatnonzero(np.bincount(lengths)) if longest < (1 << 16)
                else np.unique(lengths))
    if len(distinct) > _MAX_LENGTH_GROUPS:
        index = np.arange(len(data), dtype=np.int64)
        index += np.repeat(at - firsts, lengths)
        out[index] = data
        return
    for width in distinct.tolist():
        if width == 0:
            continue
        chosen = np.flatnonzero(lengths == width)
        _items(out, width)[at[chosen]] = _items(data, width)[firsts[chosen]]


def _items(buffer: np.ndarray, width: int) -> np.ndarray:
    """An opaque item of `width` bytes at every offset of a uint8 buffer (a writable view).

    Indexing or assigning through it moves whole items, not byte after byte.
    """
    return np.ndarray((len(buffer) - width + 1,), dtype=np.dtype((np.void, width)),
                      buffer=buffer, strides=(1,))


def _as_items(rows: np.ndarray) -> np.ndarray:
    """An [n, w] uint8 array as n opaque items of w bytes."""
    rows = np.ascontiguousarray(rows)
    return rows.view(np.dtype((np.void, rows.shape[1]))).reshape(len(rows))
