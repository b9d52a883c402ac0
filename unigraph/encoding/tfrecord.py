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
over the length fields walks it. All checksums of a chunk, length and data,
are checked by one google_crc32c pass over the chunk's bytes in place
(unigraph.encoding.crc32c.seal: the stored checksums are overwritten so that intact
records add up to a known CRC); only when that fails are records checked one
by one, to name the first bad one. `check_crc=False` skips the data checksums
only (the length checksums: one pass over a copy of the headers).

Writing (`frame_records`) frames many records at once the same way.

Compression: TensorFlow writes GZIP- or ZLIB-compressed TFRecord files when
asked (TFRecordOptions; TF-GNN passes that through), with or without a `.gz` in
the name. `open_records` decides by the bytes, not the name: a file that starts
with a valid record header is plain; otherwise the gzip magic (1f 8b) or a
zlib header selects the decompressor (gs:// objects are read as stored, never
transcoded, so the same check applies).
"""
from __future__ import annotations

import dataclasses
import struct
import zlib
from typing import BinaryIO, Iterator

import google_crc32c
import numpy as np

from unigraph.encoding import crc32c

from unigraph.storage import paths
from unigraph.errors import TableError
from unigraph.encoding.wire import RowPieces, gather_rows, windows

_MASK_DELTA = 0xA282EAD8
_HEADER = struct.Struct("<QI")
_LENGTH = struct.Struct("<Q")
_FOOTER = struct.Struct("<I")
HEADER_BYTES, FOOTER_BYTES = 12, 4
FRAME_BYTES = HEADER_BYTES + FOOTER_BYTES
CHUNK_BYTES = 4 << 20  # bytes read at a time (a record longer than this gets its own chunk)
# A record is one protobuf message (a tf.train.Example), which protobuf caps at 2 GiB: a
# longer length field is damage, refused before anything is read or allocated for it.
MAX_RECORD_BYTES = (2 << 30) - 1
_GROW_AHEAD = 64 << 20  # how far the read buffer may grow past the bytes that have arrived
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


# ---- writing ------------------------------------------------------------------------------

def encode_record(data: bytes) -> bytes:
    length = _LENGTH.pack(len(data))
    return (length + _FOOTER.pack(masked_crc32c(length)) + data
            + _FOOTER.pack(masked_crc32c(data)))


def frame_records(bodies: RowPieces) -> np.ndarray:
    """Many records at once, record i's data being row i of `bodies` (unigraph.encoding.wire.RowPieces).

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
    framed.fixed(_mask(crc32c.of_u64(lengths.astype(np.uint64))).astype("<u4").view(
        np.uint8).reshape(n, 4))
    framed.write_into(out, offsets[:-1])  # the headers; then the data, then the checksums
    bodies.write_into(out, offsets[:-1] + HEADER_BYTES)
    crcs = crc32c.of_spans(out.tobytes(), offsets[:-1] + HEADER_BYTES,
                           offsets[1:] - FOOTER_BYTES)
    footer = RowPieces(n)
    footer.fixed(_mask(crcs).astype("<u4").view(np.uint8).reshape(n, 4))
    footer.write_into(out, offsets[1:] - FOOTER_BYTES)
    return out


# ---- chunks of records -------------------------------------------------------------------

@dataclasses.dataclass
class RecordChunk:
    """Whole records of a file, side by side in one buffer."""

    buffer: np.ndarray    # uint8: the chunk's bytes, then at least _PAD more (any values);
    #                       only the records' data are kept: the checks overwrite the
    #                       framing (lengths' and data checksums) between them
    starts: np.ndarray    # int64 offset in `buffer` of each record's data
    lengths: np.ndarray   # int64 length of each record's data
    first_index: int      # record index (in the file) of the first record here

    def __len__(self) -> int:
        return len(self.starts)

    def record(self, i: int) -> bytes:
        start = int(self.starts[i])
        return self.buffer[start:start + int(self.lengths[i])].tobytes()


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
        """Reads at least `at_least` more bytes (fewer only at the end of the stream).
        The buffer grows to what is asked, but never past twice the bytes that have
        arrived (or _GROW_AHEAD more): a length field that claims more than the file
        holds costs about the file's bytes, never the claim's."""
        goal = self.filled + at_least
        while self.filled < goal and not self.eof:
            room = len(self.buffer) - _PAD
            if goal > room and (self.filled == room or goal <= self.filled + _GROW_AHEAD):
                size = min(max(goal, 2 * room), max(2 * self.filled, self.filled + _GROW_AHEAD))
                grown = np.empty(size + _PAD, dtype=np.uint8)
                grown[:self.filled] = self.buffer[:self.filled]
                self.buffer = grown
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
    scratch = _Scratch()
    offset = 0             # file offset of pending's first byte
    index = 0              # record index of the first record in pending
    heads: list = []       # offsets in pending of the records walked so far, in runs
    count = 0              # how many
    walked = 0             # offset in pending after the last walked record
    wanted = records or (1 << 62)
    capacity = chunk_bytes
    while True:
        found, walked = _walk(pending.data, walked, wanted - count, scratch)
        heads.append(found)
        count += len(found)
        enough = count >= wanted or (records is None and count and pending.filled >= chunk_bytes)
        error = None
        if not enough and not pending.eof:
            error, need = _next_record(pending.data, walked, index + count, offset + walked,
                                       name)
            if error is None:
                more = 1 if pending.filled < capacity else chunk_bytes
                if records is not None and count:
                    # The rest of the chunk in one read, its size guessed from the records
                    # so far (not by doubling: every doubling copies what was read).
                    more = max(more, (wanted - count) * walked // count * 17 // 16
                               - (pending.filled - walked))
                pending.read(max(need, more))
                continue
        if count:
            starts = np.concatenate([np.asarray(run, dtype=np.int64) for run in heads])
            capacity = max(chunk_bytes, walked + walked // 8)  # the next chunk in one read
            buffer = pending.take(walked, capacity)
            chunk, bad = _checked_chunk(buffer, starts, walked, index, name, offset, check_crc)
            if len(chunk):  # a chunk whose first record is bad holds none: readers never
                yield chunk  # see an empty chunk, only the error
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


class _Scratch:
    """Work arrays kept from one call to the next.

    Fresh arrays of megabytes each cost page faults as the allocator hands
    them out and back to the system; reused ones don't (a third of the walk's
    time when measured).
    """

    def __init__(self):
        self._arrays: dict[str, np.ndarray] = {}

    def get(self, name: str, size: int, dtype) -> np.ndarray:
        array = self._arrays.get(name)
        if array is None or len(array) < size:
            array = np.empty(size + size // 4, dtype=dtype)
            self._arrays[name] = array
        return array[:size]


def _walk(view: np.ndarray, pos: int, limit: int,
          scratch: _Scratch | None = None) -> tuple[list[int] | np.ndarray, int]:
    """(offsets of the whole records from `pos` on, at most `limit`; the offset after them)."""
    if len(view) - pos >= 4096 and limit > 64:
        first_length = _LENGTH.unpack_from(view, pos)[0]
        # Many records in view: find them all at once (else the loop is as quick).
        if first_length < _VECTOR_WALK_RECORD and (len(view) - pos) > 16 * first_length:
            found = _walk_vectorized(view, pos, limit, scratch or _Scratch())
            if found is not None:
                return found
    return _walk_loop(view, pos, limit)


_VECTOR_WALK_RECORD = 384  # shorter records are found by their header bytes (longer: the loop is
#                          as fast, at about 0.2 µs a record against 0.5 ms a MB)


def _walk_vectorized(view: np.ndarray, pos: int, limit: int,
                     scratch: _Scratch) -> tuple[np.ndarray, int] | None:
    """_walk without a loop over records, for records under 16 KB; None when it cannot tell.

    A header of a record shorter than 2**24 bytes has its length's bytes 3 to 7
    zero, and a plain tf.train.Example record starts with the Example's tag
    0x0a right after the 12-byte header, then the varint length of the rest
    of the record. Two zero 2-byte pairs in a row followed by the tag (scans
    of 2-byte pairs: half as many elements as bytes) mark about one
    candidate per record; those whose Example length is consistent are the
    records exactly when each one's length leads to the next. Chance
    matches inside data are thrown out by the length checksums; anything else
    (an empty record, a record that is no Example) returns None and the loop
    walks instead. The checksums of what is found are checked with the chunk.

    The view is scanned a span of _WALK_SPAN bytes at a time, each span from
    the end of the last whole record found, so the work arrays stay small.
    """
    found = []
    while limit > 0 and len(view) - pos >= FRAME_BYTES:
        span = _walk_span(view[pos:pos + _WALK_SPAN], limit, scratch)
        if span is None:
            break
        heads, end = span
        found.append(heads + pos)
        limit -= len(heads)
        pos += end
    if not found:
        return None
    return np.concatenate(found) if len(found) > 1 else found[0], pos


_WALK_SPAN = 1 << 20


def _walk_span(data: np.ndarray, limit: int,
               scratch: _Scratch) -> tuple[np.ndarray, int] | None:
    """(heads, offset after them) of the whole records from the start of `data`, or None."""
    size = len(data) - len(data) % 2
    pairs = data[:size].view("<u2")
    # Pairs j and j+1 zero (bytes 2j..2j+3) and the tag in pair j+4: a head p has
    # zero bytes p+3..p+7 and the tag at p+12, so j = p/2 + 2 and the tag is the
    # pair's low byte for an even p, j = (p+3)/2 and its high byte for an odd one.
    count = len(pairs) - 5
    if count <= 0:
        return None
    zero = scratch.get("zero", len(pairs), bool)
    np.equal(pairs, 0, out=zero)
    both = scratch.get("both", count, bool)
    np.logical_and(zero[:-5], zero[1:-4], out=both)
    tags = pairs[4:-1]
    byte = scratch.get("byte", count, np.uint16)
    even = scratch.get("even", count, bool)
    np.bitwise_and(tags, 0xFF, out=byte)
    np.equal(byte, 0x0A, out=even)
    np.logical_and(even, both, out=even)
    odd = scratch.get("odd", count, bool)
    np.right_shift(tags, 8, out=byte)
    np.equal(byte, 0x0A, out=odd)
    np.logical_and(odd, both, out=odd)
    np.logical_or(even, odd, out=both)
    j = np.flatnonzero(both)
    heads = np.stack([np.where(even[j], 2 * j - 4, -1), np.where(odd[j], 2 * j - 3, -1)],
                     axis=1).reshape(-1)  # in order: both may hold for one j
    heads = heads[(heads >= 0) & (heads <= len(data) - 24)]  # 8 bytes from byte 13 on
    words = np.ndarray((len(data) - 7,), dtype="<u8", buffer=data, strides=(1,))
    lengths = words[heads]
    heads, lengths = heads[lengths < np.uint64(1 << 14)], lengths[lengths < np.uint64(1 << 14)]
    lengths = lengths.astype(np.int64)
    # The Example's varint length: the rest of the record after its tag and itself.
    inner = words[heads + HEADER_BYTES + 1] & np.uint64(0xFFFF)
    one_byte = np.where(lengths - 2 < 0x80, lengths - 2, -1)
    two_bytes = np.where(lengths - 3 >= 0x80, ((lengths - 3) & 0x7F | 0x80)
                         | ((lengths - 3) >> 7 << 8), -1)
    holds = ((inner & np.uint64(0xFF)).astype(np.int64) == one_byte) | (
        inner.astype(np.int64) == two_bytes)
    heads, lengths = heads[holds], lengths[holds]
    found = _chain(heads, lengths, len(data), limit)
    if found is None and len(heads):
        # Chance matches inside the data: keep the candidates whose length checksum holds.
        stored = words[heads + 8] & np.uint64(0xFFFFFFFF)
        holds = _mask(crc32c.of_u64(lengths.astype(np.uint64))) == stored
        found = _chain(heads[holds], lengths[holds], len(data), limit)
    return found


def _chain(heads: np.ndarray, lengths: np.ndarray, end: int,
           limit: int) -> tuple[np.ndarray, int] | None:
    """(the first records, at most `limit`, offset after them) if `heads` are exactly the
    records from offset 0 on, each one's length leading to the next; else None."""
    if not len(heads) or heads[0] != 0:
        return None
    following = heads + FRAME_BYTES + lengths
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
    if length > MAX_RECORD_BYTES:
        return TableError(f"{name}: record {index} at byte {offset}: length {length} is "
                          f"more than a record may hold ({MAX_RECORD_BYTES}, protobuf's "
                          f"limit on a message)"), 0
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
    """The chunk of the records at `heads` in buffer[:end], cut before the first bad one.

    All checksums are checked with one google_crc32c pass (unigraph.encoding.crc32c.seal):
    over buffer[:end] in place, which overwrites the stored checksums (the
    records' data stay as they are), or, without data checksums, over a copy
    of the headers side by side. Only when that fails are the records checked
    one by one, to name the first bad one.
    """
    words = windows(buffer)
    lengths = words[heads].astype(np.int64)
    length_crcs = _unmask(words[heads + 8] & np.uint64(0xFFFFFFFF))
    starts = heads + HEADER_BYTES
    n = len(heads)
    if check_crc:
        data_crcs = _unmask(words[starts + lengths] & np.uint64(0xFFFFFFFF))
        whole = buffer[:end]
        crc32c.seal(whole, heads + 8, np.full(n, 8), length_crcs)
        crc32c.seal(whole, starts + lengths, lengths, data_crcs)
    else:
        whole = gather_rows(buffer, heads, HEADER_BYTES).reshape(-1)
        crc32c.seal(whole, np.arange(n, dtype=np.int64) * HEADER_BYTES + 8, np.full(n, 8),
                    length_crcs)
    if crc32c.all_sealed(whole):
        return RecordChunk(buffer, starts, lengths, index), None
    error = None
    bad = np.flatnonzero(crc32c.of_u64(lengths.astype(np.uint64)) != length_crcs)
    if len(bad):
        first_bad = int(bad[0])
        error = TableError(f"{name}: record {index + first_bad} at byte "
                           f"{offset + int(heads[first_bad])}: bad length checksum "
                           f"(not a TFRecord file, or corrupt)")
        heads, starts, lengths = heads[:first_bad], starts[:first_bad], lengths[:first_bad]
    if check_crc:
        first_bad = crc32c.first_bad(buffer[:end], starts, lengths, data_crcs[:len(starts)])
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
