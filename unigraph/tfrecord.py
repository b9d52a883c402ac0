"""TFRecord framing without TensorFlow, a chunk of records at a time.

A TFRecord file is a sequence of records, each
    uint64 length | uint32 masked_crc32c(length) | data | uint32 masked_crc32c(data)
little-endian. Reading checks both checksums so a truncated or corrupt file is
reported with its record index and byte offset instead of yielding garbage.

Readers take records in chunks (`read_chunks`): a few MB of the file in one
buffer with the data offsets of every whole record in it, so decoding can work
on many records at once. Finding the records is a chain (each length says where
the next record starts): for small records it is found without a loop, from
the bytes every header of a tf.train.Example record has, and verified link by
link (`_walk_vectorized`); otherwise, or when that cannot tell, a tight loop
over the length fields walks it. The length checksums are computed for all
records at once with numpy tables (slicing-by-8 CRC32C); the data checksums in
one pass of google_crc32c over all records laid side by side
(`_check_data_crcs`, see there), or, for long records of many different
lengths, one C call per record. `check_crc=False` skips the data checksums only.

Writing (`frame_records`) frames many records at once the same way.

Compression: TensorFlow writes GZIP- or ZLIB-compressed TFRecord files when
asked (TFRecordOptions; TF-GNN passes that through), with or without a `.gz` in
the name. `open_records` decides by the bytes, not the name: a file that starts
with a valid record header is plain; otherwise the gzip magic (1f 8b) or a
zlib header selects the decompressor. Beam's FileSystems already decompress a
remote `*.gz` on open; the magic check then sees plain records.
"""
from __future__ import annotations

import dataclasses
import struct
import zlib
from typing import BinaryIO, Iterator

import google_crc32c
import numpy as np

from unigraph import paths
from unigraph.errors import TableError
from unigraph.wire import RowPieces, gather_rows, windows

_MASK_DELTA = 0xA282EAD8
_HEADER = struct.Struct("<QI")
_LENGTH = struct.Struct("<Q")
_FOOTER = struct.Struct("<I")
HEADER_BYTES, FOOTER_BYTES = 12, 4
FRAME_BYTES = HEADER_BYTES + FOOTER_BYTES
CHUNK_BYTES = 4 << 20  # bytes read at a time (a record longer than this gets its own chunk)
_PAD = 8  # spare bytes after a chunk's data, so 8-byte windows can be read at any offset


def masked_crc32c(data: bytes) -> int:
    crc = google_crc32c.value(data)
    return (((crc >> 15) | (crc << 17)) + _MASK_DELTA) & 0xFFFFFFFF


def _unmask(masked: np.ndarray) -> np.ndarray:
    rotated = (masked.astype(np.uint64) - _MASK_DELTA) & 0xFFFFFFFF
    return ((rotated >> 17) | (rotated << 15)) & 0xFFFFFFFF


def _mask(crc: np.ndarray) -> np.ndarray:
    crc = crc.astype(np.uint64)
    return (((crc >> 15) | (crc << 17)) + _MASK_DELTA) & 0xFFFFFFFF


# ---- CRC32C of many 8-byte values at once (the length fields) ---------------------------

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


def crc32c_u64(values: np.ndarray) -> np.ndarray:
    """CRC32C of the 8 little-endian bytes of each uint64 value."""
    x = values.astype(np.uint64) ^ np.uint64(0xFFFFFFFF)
    small = not len(x) or int(x.max()) < (1 << 32)  # lengths: the high four bytes are zero
    crc = np.full(len(x), _HIGH_ZEROS if small else 0, dtype=np.uint64)
    for k in range(4 if small else 8):
        crc ^= _TABLES[7 - k][(x >> np.uint64(8 * k)) & np.uint64(0xFF)]
    return crc ^ np.uint64(0xFFFFFFFF)


# ---- writing ------------------------------------------------------------------------------

def encode_record(data: bytes) -> bytes:
    length = _LENGTH.pack(len(data))
    return (length + _FOOTER.pack(masked_crc32c(length)) + data
            + _FOOTER.pack(masked_crc32c(data)))


def frame_records(bodies: RowPieces) -> np.ndarray:
    """Many records at once, record i's data being row i of `bodies` (unigraph.wire.RowPieces).

    Returns the framed bytes as a uint8 array: lengths and their checksums
    vectorized, one google_crc32c call per record for the data checksums.
    """
    n = bodies.n
    lengths = bodies.lengths()
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(lengths + FRAME_BYTES, out=offsets[1:])
    out = np.empty(int(offsets[-1]), dtype=np.uint8)
    framed = RowPieces(n)
    framed.fixed(lengths.astype("<u8").view(np.uint8).reshape(n, 8))
    framed.fixed(_mask(crc32c_u64(lengths.astype(np.uint64))).astype("<u4").view(
        np.uint8).reshape(n, 4))
    framed.write_into(out, offsets[:-1])  # the headers; then the data, then the checksums
    bodies.write_into(out, offsets[:-1] + HEADER_BYTES)
    crcs = _crcs(out.tobytes(), offsets[:-1] + HEADER_BYTES, offsets[1:] - FOOTER_BYTES)
    footer = RowPieces(n)
    footer.fixed(_mask(crcs).astype("<u4").view(np.uint8).reshape(n, 4))
    footer.write_into(out, offsets[1:] - FOOTER_BYTES)
    return out


# ---- chunks of records -------------------------------------------------------------------

@dataclasses.dataclass
class RecordChunk:
    """Whole records of a file, side by side in one buffer."""

    buffer: np.ndarray    # uint8: the chunk's bytes, then at least _PAD more (any values)
    starts: np.ndarray    # int64 offset in `buffer` of each record's data
    lengths: np.ndarray   # int64 length of each record's data
    first_index: int      # record index (in the file) of the first record here

    def __len__(self) -> int:
        return len(self.starts)

    def record(self, i: int) -> bytes:
        start = int(self.starts[i])
        return self.buffer[start:start + int(self.lengths[i])].tobytes()


def _check_data_crcs(buffer: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> int:
    """Index of the first record whose data checksum is wrong, or -1.

    Records are checked together, with one google_crc32c pass over a copy of
    them laid in equal slots. CRC32C without its initial and final inversion
    ("raw") is linear over GF(2): raw(A || B) = shift_|B|(raw(A)) xor raw(B),
    where shift_t is the linear map of feeding t zero bytes. Slot i holds record
    i's data, its true CRC unmasked (c_i), then zeros up to the slot width S. If
    the data is intact, c_i = crc(D_i) and the slot's raw CRC depends only on
    the data's length m_i: E(m) = shift_{S-m}(crc(0^m)). So the raw CRC of all
    slots must equal the XOR of shift_{S*(n-1-i)}(E(m_i)), reduced pairwise in
    a tree whose shift doubles each level. A mismatch means some record is
    corrupt; then (only then) one call per record finds it. Two corruptions
    could cancel out with probability 2**-32, the odds a single corrupt record
    has of matching its own CRC.

    With few distinct lengths (fixed-size rows), each length gets its own slots
    of exactly its size, so no slot needs zeroing. With many, short records
    share slots of the longest's size; long ones of many lengths are checked
    one call per record, which is then the cheaper way.
    """
    n = len(starts)
    if n == 0:
        return -1
    longest = int(lengths.max())
    distinct = (np.flatnonzero(np.bincount(lengths)) if longest < (1 << 20)
                else np.unique(lengths))
    footers = gather_rows(buffer, starts + lengths, FOOTER_BYTES)
    expected_crc = _unmask(footers.view("<u4").reshape(n).astype(np.uint64))
    if len(distinct) <= _LENGTH_GROUPS:
        for length in distinct.tolist():
            chosen = np.flatnonzero(lengths == length) if len(distinct) > 1 else slice(None)
            if not _slots_hold(buffer, starts[chosen], lengths[chosen], expected_crc[chosen],
                               length + FOOTER_BYTES):
                return _first_bad_crc(buffer, starts, lengths)
        return -1
    width = longest + FOOTER_BYTES
    total = int(lengths.sum())
    if total > _SLOTS_UP_TO * n or n * width > 2 * total + (1 << 16):
        return _first_bad_crc(buffer, starts, lengths)
    if _slots_hold(buffer, starts, lengths, expected_crc, width):
        return -1
    return _first_bad_crc(buffer, starts, lengths)


def _slots_hold(buffer: np.ndarray, starts: np.ndarray, lengths: np.ndarray,
                expected_crc: np.ndarray, width: int) -> bool:
    """Whether records laid in slots of `width` bytes all match `expected_crc` (see above)."""
    n = len(starts)
    slots = _slots(buffer, starts, lengths, width)
    at = np.arange(n, dtype=np.int64) * width + lengths
    flat = slots.reshape(-1)
    for k in range(FOOTER_BYTES):
        flat[at + k] = ((expected_crc >> np.uint64(8 * k)) & np.uint64(0xFF)).astype(np.uint8)
    raw_crc = google_crc32c.value(flat) ^ _zeros_crc(n * width)  # reads the array in place
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


def _zeros_crc(count: int) -> int:
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
    row = bytes(length) + _FOOTER.pack(_zeros_crc(length)) + bytes(width - length - FOOTER_BYTES)
    return google_crc32c.value(row) ^ _zeros_crc(width)


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
                           ^ _zeros_crc(width) for j in range(32)], dtype=np.uint64)
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


def _crcs(raw: bytes, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """crc32c of raw[starts[i]:ends[i]] for every i (one C call each, no Python loop body)."""
    spans = map(raw.__getitem__, map(slice, starts.tolist(), ends.tolist()))
    return np.fromiter(map(google_crc32c.value, spans), dtype=np.uint64, count=len(starts))


def _first_bad_crc(buffer: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> int:
    """Index of the first record whose data checksum is wrong, or -1 (one call each)."""
    computed = _mask(_crcs(buffer.tobytes(), starts, starts + lengths))
    stored = gather_rows(buffer, starts + lengths, FOOTER_BYTES).view("<u4").reshape(-1)
    bad = np.flatnonzero(computed != stored)
    return int(bad[0]) if len(bad) else -1


# ---- compressed files --------------------------------------------------------------------

class _Prepended:
    """A stream with bytes already read from it put back in front."""

    def __init__(self, head: bytes, stream: BinaryIO):
        self._head, self._stream = head, stream

    def read(self, size: int) -> bytes:
        if not self._head:
            return self._stream.read(size)
        head, self._head = self._head[:size], self._head[size:]
        return head + self._stream.read(size - len(head)) if len(head) < size else head

    def readinto(self, target) -> int:
        if self._head or not hasattr(self._stream, "readinto"):
            data = self.read(len(target))
            target[:len(data)] = data
            return len(data)
        return self._stream.readinto(target)

    def close(self) -> None:
        self._stream.close()


class _Inflating:
    """A compressed stream's plain bytes (gzip, possibly several members, or zlib)."""

    def __init__(self, stream, name: str, kind: str):
        self._stream, self._name, self._kind = stream, name, kind
        self._wbits = 31 if kind == "gzip" else 15
        self._inflate = zlib.decompressobj(self._wbits)
        self._input = b""
        self._finished = False

    def read(self, size: int) -> bytes:
        out, got = [], 0
        while got < size and not self._finished:
            if not self._input:
                self._input = self._stream.read(1 << 20)
                if not self._input:
                    if not self._inflate.eof:
                        raise TableError(f"{self._name}: the {self._kind} stream ends early "
                                         f"(truncated file)")
                    self._finished = True
                    break
            if self._inflate.eof:  # another gzip member follows the one just finished
                self._inflate = zlib.decompressobj(self._wbits)
            try:
                data = self._inflate.decompress(self._input, size - got)
            except zlib.error as e:
                raise TableError(f"{self._name}: cannot decompress ({self._kind}): "
                                 f"{e}") from None
            self._input = self._inflate.unconsumed_tail or self._inflate.unused_data
            if data:
                out.append(data)
                got += len(data)
        return b"".join(out)

    def close(self) -> None:
        self._stream.close()


def compression_of(head: bytes) -> str | None:
    """'gzip', 'zlib' or None (plain TFRecord) from a file's first bytes."""
    if len(head) >= HEADER_BYTES:
        if masked_crc32c(head[:8]) == _FOOTER.unpack_from(head, 8)[0]:
            return None  # a valid record header: plain, whatever the name says
    if head[:2] == b"\x1f\x8b":
        return "gzip"
    if len(head) >= 2 and head[0] & 0x0F == 8 and (head[0] << 8 | head[1]) % 31 == 0:
        return "zlib"
    return None


def open_records(path: str):
    """A read()-able stream of a TFRecord file's records, decompressed if it is compressed."""
    stream = paths.open_binary(path)
    head = stream.read(HEADER_BYTES)
    kind = compression_of(head)
    stream = _Prepended(head, stream)
    return stream if kind is None else _Inflating(stream, path, kind)


# ---- reading ------------------------------------------------------------------------------

class _Pending:
    """Bytes read from a stream and not yet handed out, in a numpy buffer read into directly.

    A chunk takes the whole buffer (its records' bytes need no copy); the bytes
    after its last record move to a fresh buffer for the next chunk.
    """

    def __init__(self, stream, capacity: int):
        self._stream = stream
        self._readinto = getattr(stream, "readinto", None)
        self.buffer = np.empty(capacity + _PAD, dtype=np.uint8)
        self.filled = 0
        self.eof = False

    @property
    def data(self) -> np.ndarray:
        return self.buffer[:self.filled]

    def read(self, at_least: int) -> None:
        """Reads at least `at_least` more bytes (fewer only at the end of the stream)."""
        goal = self.filled + at_least
        if goal + _PAD > len(self.buffer):
            grown = np.empty(max(goal, 2 * (len(self.buffer) - _PAD)) + _PAD, dtype=np.uint8)
            grown[:self.filled] = self.buffer[:self.filled]
            self.buffer = grown
        while self.filled < goal and not self.eof:
            target = self.buffer[self.filled:len(self.buffer) - _PAD]
            if self._readinto is not None:
                count = self._readinto(memoryview(target))
            else:
                data = self._stream.read(len(target))
                count = len(data)
                target[:count] = np.frombuffer(data, dtype=np.uint8)
            self.eof = not count
            self.filled += count or 0

    def take(self, end: int, capacity: int) -> np.ndarray:
        """The buffer, its first `end` bytes now a chunk's; the rest moves to a new buffer."""
        taken = self.buffer
        rest = self.filled - end
        self.buffer = np.empty(max(capacity, rest) + _PAD, dtype=np.uint8)
        self.buffer[:rest] = taken[end:self.filled]
        self.filled = rest
        return taken


def read_chunks(stream, name: str, *, check_crc: bool = True,
                chunk_bytes: int = CHUNK_BYTES, records: int | None = None
                ) -> Iterator[RecordChunk]:
    """The records of a stream, a chunk at a time, checked.

    With `records`, every chunk holds exactly that many records (the last may
    hold fewer); without, a chunk holds the whole records within about
    `chunk_bytes` of the stream (at least one). On damage (truncation, a bad
    length or data checksum) the whole records before it are yielded first,
    then TableError names the file, the record index and its byte offset.
    """
    pending = _Pending(stream, chunk_bytes)
    offset = 0             # file offset of pending's first byte
    index = 0              # record index of the first record in pending
    heads: list = []       # offsets in pending of the records walked so far, in runs
    count = 0              # how many
    walked = 0             # offset in pending after the last walked record
    wanted = records or (1 << 62)
    capacity = chunk_bytes
    while True:
        found, walked = _walk(pending.data, walked, wanted - count)
        heads.append(found)
        count += len(found)
        enough = count >= wanted or (records is None and count and pending.filled >= chunk_bytes)
        error = None
        if not enough and not pending.eof:
            error, need = _next_record(pending.data, walked, index + count, offset + walked,
                                       name)
            if error is None:
                pending.read(max(need, 1 if pending.filled < capacity else chunk_bytes))
                continue
        if count:
            starts = np.concatenate([np.asarray(run, dtype=np.int64) for run in heads])
            capacity = max(chunk_bytes, walked + walked // 8)  # the next chunk in one read
            buffer = pending.take(walked, capacity)
            chunk, bad = _checked_chunk(buffer, starts, walked, index, name, offset, check_crc)
            yield chunk
            if bad is not None:
                raise bad
            if error is not None:
                raise error
            index, offset = index + count, offset + walked
            heads, count, walked = [], 0, 0
            continue
        if error is not None:
            raise error
        if not pending.filled:
            return
        raise _damage(pending.data, index, offset, name)


def _walk(view: np.ndarray, pos: int, limit: int) -> tuple[list[int] | np.ndarray, int]:
    """(offsets of the whole records from `pos` on, at most `limit`; the offset after them)."""
    if len(view) - pos >= 4096 and limit > 64:
        first_length = _LENGTH.unpack_from(view, pos)[0]
        if first_length < _SMALL_RECORD:
            found = _walk_vectorized(view, pos, limit)
            if found is not None:
                return found
    return _walk_loop(view, pos, limit)


_SMALL_RECORD = 240  # below this many bytes a record, finding headers by their bytes is faster


def _walk_vectorized(view: np.ndarray, pos: int, limit: int) -> tuple[np.ndarray, int] | None:
    """_walk for small records, without a loop over them; None when it cannot tell.

    Every plain tf.train.Example record starts with the Example's tag 0x0a
    right after its 12-byte header, and a length below 2**24 leaves the high 5
    bytes of the length field zero. Positions with both, whose length checksum
    holds, are header candidates; they are the records exactly when each one's
    length leads to the next. Anything else (an empty record, a record that is
    no Example, a chance match) returns None and the loop walks instead.
    """
    data = view
    end = len(data)
    # The Example tag 12 bytes after the header's start, and the length's top
    # two bytes zero: about one candidate per record instead of every 0x0a.
    # (Byte compares: faster here than one unaligned uint32 view.)
    zero = data[pos:] == 0
    marks = data[pos + HEADER_BYTES:] == 0x0A
    marks &= zero[6:len(zero) - 6]
    marks &= zero[7:len(zero) - 5]
    heads = np.flatnonzero(marks).astype(np.int64) + pos
    heads = heads[heads <= end - FRAME_BYTES]
    words = np.ndarray((end - 7,), dtype="<u8", buffer=view, strides=(1,))
    fields = words[heads]
    heads, fields = heads[(fields >> np.uint64(24)) == 0], fields[(fields >> np.uint64(24)) == 0]
    stored = words[heads + 8] & np.uint64(0xFFFFFFFF)
    holds = _mask(crc32c_u64(fields)) == stored
    heads, fields = heads[holds], fields[holds]
    if not len(heads) or heads[0] != pos:
        return None
    following = heads + FRAME_BYTES + fields.astype(np.int64)
    if not (following[:-1] == heads[1:]).all():
        return None
    whole = int(np.searchsorted(following, end, side="right"))
    count = min(whole, limit)
    if count == 0:
        return None
    return heads[:count], int(following[count - 1])


def _walk_loop(view: np.ndarray, pos: int, limit: int) -> tuple[list[int], int]:
    unpack = _LENGTH.unpack_from
    starts: list[int] = []
    add = starts.append
    end = len(view)
    last = end - FRAME_BYTES
    while pos <= last and limit > 0:
        next_pos = pos + FRAME_BYTES + unpack(view, pos)[0]
        if next_pos > end:
            break
        add(pos)
        pos = next_pos
        limit -= 1
    return starts, pos


def _next_record(view: np.ndarray, pos: int, index: int, offset: int,
                 name: str) -> tuple[TableError | None, int]:
    """(bad length checksum error or None, bytes still missing) of the partial record at pos."""
    rest = len(view) - pos
    if rest < HEADER_BYTES:
        return None, HEADER_BYTES - rest
    length, length_crc = _HEADER.unpack_from(view, pos)
    if masked_crc32c(bytes(view[pos:pos + 8])) != length_crc:
        return TableError(f"{name}: record {index} at byte {offset}: bad length checksum "
                          f"(not a TFRecord file, or corrupt)"), 0
    return None, FRAME_BYTES + length - rest


def _damage(view: np.ndarray, index: int, offset: int, name: str) -> TableError:
    """What is wrong with the partial record that ends the file."""
    where = f"{name}: record {index} at byte {offset}"
    if len(view) < HEADER_BYTES:
        return TableError(f"{where}: truncated header")
    length, length_crc = _HEADER.unpack_from(view)
    if masked_crc32c(bytes(view[:8])) != length_crc:
        return TableError(f"{where}: bad length checksum (not a TFRecord file, or corrupt)")
    return TableError(f"{where}: truncated data")


def _checked_chunk(buffer: np.ndarray, heads: np.ndarray, end: int, index: int, name: str,
                   offset: int, check_crc: bool) -> tuple[RecordChunk, TableError | None]:
    """The chunk of the records at `heads` in buffer[:end], cut before the first bad one."""
    error = None
    words = windows(buffer)
    lengths = words[heads].astype(np.int64)
    stored = words[heads + 8] & np.uint64(0xFFFFFFFF)
    bad = np.flatnonzero(_mask(crc32c_u64(lengths.astype(np.uint64))) != stored)
    if len(bad):
        first_bad = int(bad[0])
        error = TableError(f"{name}: record {index + first_bad} at byte "
                           f"{offset + int(heads[first_bad])}: bad length checksum "
                           f"(not a TFRecord file, or corrupt)")
        heads, lengths = heads[:first_bad], lengths[:first_bad]
    starts = heads + HEADER_BYTES
    if check_crc and len(heads):
        first_bad = _check_data_crcs(buffer[:end], starts, lengths)
        if first_bad >= 0:
            error = TableError(f"{name}: record {index + first_bad} at byte "
                               f"{offset + int(heads[first_bad])}: bad data checksum")
            starts, lengths = starts[:first_bad], lengths[:first_bad]
    return RecordChunk(buffer, starts, lengths, index), error


def iter_records(stream: BinaryIO, name: str) -> Iterator[bytes]:
    """Yields every record's bytes; TableError names the file and record on damage."""
    for chunk in read_chunks(stream, name):
        for i in range(len(chunk)):
            yield chunk.record(i)
