"""A plain local TFRecord file's records read where they lie: a read-only memory map.

    for chunk in mapped_chunks(path): ...      # tfrecord.RecordChunk, as read_chunks gives

`tfrecord.read_chunks` reads a stream into fresh buffers: the kernel copies every byte
from the page cache, and every new buffer costs page faults when first written. A
local file mapped read-only costs neither: its pages are the page cache's, mapped
(many at a time) as they are first read. The records are framed as read_chunks frames
them (`tfrecord._walk`), a chunk of about `chunk_bytes` at a time, and checked on the
mapped bytes without writing them: the length checksums in one vectorized pass, each
record's data checksum by one google_crc32c call (as fast as the one-pass check for
records of a few KB and more, what `sample` writes).

A chunk whose records are smaller on average (the per-record calls would cost more
than one pass), the file's last chunk (nothing after its last record's checksum for
the 8-byte windows the decoders read, unigraph.encoding.wire.windows) and a chunk with
a bad checksum are copied into a buffer of their own and checked there by
read_chunks' own code (`tfrecord._checked_chunk`), which names the first bad record:
what a reader sees, records and errors, is what read_chunks gives for the same file.

The chunks' buffers are read-only views of the map, which stays open while any is
held. A file truncated by another program while it is read this way ends the process
with SIGBUS (the output folders this project writes are replaced by a rename, never
rewritten in place, so their readers are safe).
"""
from __future__ import annotations

import mmap
import os
from typing import Iterator, Optional

import google_crc32c
import numpy as np

from unigraph.encoding import crc32c
from unigraph.encoding.tfrecord import (_PAD, FRAME_BYTES, HEADER_BYTES,
                                        CHUNK_BYTES, RecordChunk, _checked_chunk, _damage,
                                        _next_record, _Scratch, _unmask, _walk)
from unigraph.storage import paths

IN_PLACE_RECORD_BYTES = 2048  # records at least this long on average are checked in place


def mappable(path: str) -> bool:
    """Whether `path` is a local regular file that is not empty (what can be mapped)."""
    if paths.is_remote(path):
        return False
    try:
        return os.path.isfile(path) and os.path.getsize(path) > 0
    except OSError:
        return False


def mapped_chunks(path: str, *, chunk_bytes: int = CHUNK_BYTES) -> Iterator[RecordChunk]:
    """The records of a plain local TFRecord file, a chunk of about `chunk_bytes` (at
    least one record) at a time, checked; on damage the whole records before it are
    yielded, then TableError names the file, the record and its byte offset (as
    tfrecord.read_chunks does)."""
    view = _map(path)
    size = len(view)
    heads_of = np.ndarray((size - 7,), dtype="<u8", buffer=view, strides=(1,)) \
        if size >= 8 else None
    scratch = _Scratch()
    pos, index = 0, 0
    while pos < size:
        heads, end = _walk(view[:min(size, pos + chunk_bytes)], pos, 1 << 62, scratch)
        if not len(heads):  # the next record is longer than a chunk, or damaged
            error, need = _next_record(view, pos, index, pos, path)
            if error is not None:
                raise error
            if need > 0:  # the file ends inside the record
                raise _damage(view[pos:], index, pos, path)
            heads, end = _walk(view[:size + need], pos, 1, scratch)  # it ends at size + need
        heads = np.asarray(heads, dtype=np.int64)
        chunk = _in_place(view, heads_of, heads, end, index, path)
        if chunk is None:
            chunk, bad = _copied(view, heads, pos, end, index, path)
            if len(chunk):
                yield chunk
            if bad is not None:
                raise bad
        else:
            yield chunk
        pos, index = end, index + len(heads)


def _map(path: str) -> np.ndarray:
    """The file's bytes, a read-only uint8 view of a private read-only map of it."""
    with open(path, "rb") as stream:
        mapped = mmap.mmap(stream.fileno(), 0, access=mmap.ACCESS_READ)
    return np.frombuffer(mapped, dtype=np.uint8)


def _in_place(view: np.ndarray, words: np.ndarray, heads: np.ndarray, end: int, index: int,
              path: str) -> Optional[RecordChunk]:
    """The chunk of the records at `heads` as a view of the map, every checksum checked;
    None when it is to be copied (module docstring)."""
    count = len(heads)
    if end + _PAD > len(view) or end - int(heads[0]) < count * (IN_PLACE_RECORD_BYTES
                                                               + FRAME_BYTES):
        return None
    lengths = words[heads].astype(np.int64)
    stored = words[heads + 8] & np.uint64(0xFFFFFFFF)
    if not (crc32c.of_u64(lengths.astype(np.uint64)) == _unmask(stored)).all():
        return None
    starts = heads + HEADER_BYTES
    ends = starts + lengths
    stored = words[ends] & np.uint64(0xFFFFFFFF)  # each record's data checksum (4 bytes)
    computed = np.fromiter(map(google_crc32c.value, map(view.__getitem__, map(
        slice, starts.tolist(), ends.tolist()))), dtype=np.uint64, count=count)
    if not (computed == _unmask(stored)).all():
        return None
    first = int(heads[0])
    return RecordChunk(view[first:end + _PAD], starts - first, lengths, index)


def _copied(view: np.ndarray, heads: np.ndarray, pos: int, end: int, index: int,
            path: str):
    """(chunk, error or None) of the records at `heads`, copied and checked by
    read_chunks' own code."""
    buffer = np.empty(end - pos + _PAD, dtype=np.uint8)
    buffer[:end - pos] = view[pos:end]
    buffer[end - pos:] = 0
    return _checked_chunk(buffer, heads - pos, end - pos, index, path, pos, True)

