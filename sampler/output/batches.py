"""Shards of an output folder read as decoded batches (the batched decoder).

    decoder = BatchDecoder(schema)
    for ids, batch in read_batches(files, [0, 1], decoder, batch_size=64): ...

Records are framed and checked a chunk of about DECODE_BYTES at a time
(unigraph.encoding.tfrecord) and decoded a chunk at a time
(sampler.graph_tensor.batch_codec: the decoder's fixed work per call is spread over many
records), then cut into batches of `batch_size` records, in file order; a batch may span
chunks and shards (a chunk's tail is joined to the next one's head). `batch_size=None`
yields the decoded chunks as they come (for readers that take records one by one).

With a shuffle buffer (`shuffle_buffer`, `rng`) the records are shuffled before they are
decoded: each leaves a buffer of that many undecoded records from a random place, and a
batch's records are copied side by side and decoded together.

`ids` gives each record's position, its shard's index times SHARD_STRIDE plus its index
in the shard. A damaged file or record raises SamplerError naming the file and the
record ("out/samples-00001-of-00004.tfrecord: record 17: ...").
"""
from __future__ import annotations

from typing import Iterator, Optional, Sequence

import numpy as np

from sampler.graph_tensor.batch_codec import BatchDecoder
from sampler.graph_tensor.example_batch import ExampleBatch
from unigraph.encoding import tfrecord, tfrecord_map
from unigraph.encoding.wire import WINDOW_BYTES, padded
from unigraph.errors import GraphTensorError, one_line
from unigraph.storage import paths

SHARD_STRIDE = 2 ** 32      # a record's id: its shard's index times this, plus its index
DECODE_BYTES = 16 << 20     # records framed and decoded together (at least one record)
SHUFFLED_DECODE = 64        # shuffled records decoded together when batch_size is None

Batch = tuple[np.ndarray, ExampleBatch]   # (ids, records)


def read_batches(files: Sequence[str], shards: Sequence[int], decoder: BatchDecoder, *,
                 batch_size: Optional[int], drop_last: bool = False,
                 shuffle_buffer: int = 0, rng: Optional[np.random.Generator] = None
                 ) -> Iterator[Batch]:
    """The records of the shards `shards` of `files`, in that order (module docstring)."""
    if shuffle_buffer and rng is not None:
        batches = _shuffled(files, shards, decoder, batch_size or SHUFFLED_DECODE,
                            shuffle_buffer, rng)
    else:
        batches = _in_order(files, shards, decoder)
    if batch_size is None:
        yield from batches
        return
    yield from _cut(batches, batch_size, drop_last)


def decode_chunk(decoder: BatchDecoder, path: str, chunk: tfrecord.RecordChunk) -> ExampleBatch:
    """One chunk of a file's records; SamplerError names the file and the bad record."""
    try:
        return decoder.decode(chunk.buffer, chunk.starts, chunk.lengths, chunk.first_index)
    except GraphTensorError as e:
        raise GraphTensorError(f"{path}: {one_line(e)}") from None


def file_chunks(path: str, chunk_bytes: int = DECODE_BYTES) -> Iterator[tfrecord.RecordChunk]:
    """The records of one shard file, a chunk at a time (TableError names a damaged one):
    a local file read where it lies (unigraph.encoding.tfrecord_map), others streamed."""
    if tfrecord_map.mappable(path):
        yield from tfrecord_map.mapped_chunks(path, chunk_bytes=chunk_bytes)
        return
    with paths.open_binary(path) as stream:
        yield from tfrecord.read_chunks(stream, path, chunk_bytes=chunk_bytes)


def _in_order(files, shards, decoder) -> Iterator[Batch]:
    for shard in shards:
        path = files[shard]
        for chunk in file_chunks(path):
            ids = (shard * SHARD_STRIDE + chunk.first_index
                   + np.arange(len(chunk), dtype=np.int64))
            yield ids, decode_chunk(decoder, path, chunk)


def _cut(batches: Iterator[Batch], batch_size: int, drop_last: bool) -> Iterator[Batch]:
    """Batches of exactly `batch_size` records from pieces of any size (the last may be
    smaller unless `drop_last`)."""
    carried: list[Batch] = []
    count = 0
    for ids, batch in batches:
        start, n = 0, batch.records
        if count:
            take = min(batch_size - count, n)
            carried.append((ids[:take], batch.select(0, take)))
            count, start = count + take, take
            if count < batch_size:
                continue
            yield _joined(carried)
            carried, count = [], 0
        while n - start >= batch_size:
            yield ids[start:start + batch_size], batch.select(start, start + batch_size)
            start += batch_size
        if start < n:
            carried, count = [(ids[start:], batch.select(start, n))], n - start
    if count and not drop_last:
        yield _joined(carried)


def _joined(parts: list[Batch]) -> Batch:
    if len(parts) == 1:
        return parts[0]
    return (np.concatenate([ids for ids, _ in parts]),
            ExampleBatch.concat([batch for _, batch in parts]))


def decoded_records(decoder: BatchDecoder, found: Iterator[tuple[str, int, bytes]],
                    group: int = SHUFFLED_DECODE) -> Iterator[tuple[str, int, object]]:
    """(file, index, GraphTensor) of each (file, index, record) found (sample-inspect's
    matches), decoded `group` at a time; a bad record raises naming its file and index."""
    pending: list[tuple[str, int, bytes]] = []

    def decode() -> Iterator[tuple[str, int, object]]:
        lengths = np.array([len(r) for _, _, r in pending], dtype=np.int64)
        buffer = padded(b"".join(r for _, _, r in pending))
        try:
            batch = decoder.decode(buffer, np.cumsum(lengths) - lengths, lengths)
        except GraphTensorError:  # the records before the bad one, then what is wrong
            for path, index, record in pending:
                try:
                    one = decoder.decode(padded(record), np.zeros(1, np.int64),
                                         np.array([len(record)], np.int64))
                except GraphTensorError as e:
                    _, message = _record_and_message(e)
                    raise GraphTensorError(f"{path}: record {index}: {message}") from None
                yield path, index, one.graph()
            return
        for i, (path, index, _) in enumerate(pending):
            yield path, index, batch.select(i, i + 1).graph()

    for item in found:
        pending.append(item)
        if len(pending) == group:
            yield from decode()
            pending = []
    if pending:
        yield from decode()


def _record_and_message(error: GraphTensorError) -> tuple[int, str]:
    """(i, message) of the decoder's "record i: message"."""
    head, _, message = one_line(error).partition(": ")
    return int(head.split()[1]), message


# ---- shuffled ---------------------------------------------------------------------------

_Record = tuple[int, str, tfrecord.RecordChunk, int]   # (id, file, chunk, index in chunk)


def _shuffled(files, shards, decoder, group: int, buffer_size: int,
              rng: np.random.Generator) -> Iterator[Batch]:
    """Records through a shuffle buffer, decoded `group` at a time."""
    chosen: list[_Record] = []
    for record in _shuffle_buffer(_undecoded(files, shards), buffer_size, rng):
        chosen.append(record)
        if len(chosen) == group:
            yield _decode_records(decoder, chosen)
            chosen = []
    if chosen:
        yield _decode_records(decoder, chosen)


def _undecoded(files, shards) -> Iterator[_Record]:
    for shard in shards:
        path = files[shard]
        for chunk in file_chunks(path):
            for i in range(len(chunk)):
                yield shard * SHARD_STRIDE + chunk.first_index + i, path, chunk, i


def _shuffle_buffer(items, buffer_size: int, rng: np.random.Generator):
    """A shuffle buffer: each item leaves from a random place of the buffer."""
    buffer: list = []
    for item in items:
        if len(buffer) < buffer_size:
            buffer.append(item)
            continue
        i = int(rng.integers(len(buffer)))
        buffer[i], item = item, buffer[i]
        yield item
    order = rng.permutation(len(buffer))
    yield from (buffer[i] for i in order)


def _decode_records(decoder: BatchDecoder, records: list[_Record]) -> Batch:
    """Records of any chunks, copied side by side and decoded together."""
    views = [_view(record) for record in records]
    lengths = np.fromiter(map(len, views), np.int64, len(views))
    starts = np.cumsum(lengths) - lengths
    buffer = np.frombuffer(bytearray().join(views + [bytes(WINDOW_BYTES)]), np.uint8)
    ids = np.array([record[0] for record in records], dtype=np.int64)
    try:
        return ids, decoder.decode(buffer, starts, lengths)
    except GraphTensorError:
        for record, view in zip(records, views):  # which one: decoded alone, it says
            try:
                decoder.decode(padded(view), np.zeros(1, np.int64), np.array([len(view)]))
            except GraphTensorError as e:
                _, message = _record_and_message(e)  # "record 0: ..." -> its own index
                chunk, i = record[2], record[3]
                raise GraphTensorError(f"{record[1]}: record {chunk.first_index + i}: "
                                       f"{message}") from None
        raise


def _view(record: _Record) -> memoryview:
    _, _, chunk, i = record
    start = int(chunk.starts[i])
    return memoryview(chunk.buffer)[start:start + int(chunk.lengths[i])]
