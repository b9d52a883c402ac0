"""Encoding every subgraph of a shard at once, straight from the assembly's arrays.

    encode_shard(assembled shard) -> one serialized tf.train.Example per sample


The per-graph path (build a GraphTensor, then `graph_tensor.encode_example`) pays
Python overhead per graph and per feature. Here each tf.Example key becomes one
column for the whole shard: its values are encoded once (floats by one
`tobytes`, int64 varints and framed id strings vectorized), and a graph's bytes
are slices of those buffers wrapped in their protobuf headers. The result is
byte-identical to `encode_example(graph, output_schema)` of the same graph;
tests/sampler/output/test_encoder.py checks that on every record.

Wire format (see sampler/graph_tensor/wire.py): Example{1: Features{1: entries}},
entry = {1: key, 2: Feature}, Feature = {1: BytesList | 2: FloatList | 3: Int64List},
packed lists {1: data}; every message field is tag | varint(length) | payload.
"""
from __future__ import annotations

import dataclasses
import functools
from typing import Callable, Iterator

import numpy as np

from sampler.core.assemble import AssembledShard
from sampler.graph_tensor import keys as k
from sampler.graph_tensor import wire
from sampler.graph_tensor.codec import flatten_field, flush_subnormals
from sampler.graph_tensor.readout_structure import READOUT_NODE_SET
from sampler.output.names import (ID_FEATURE, LINK_READOUT_EDGE_SETS, READOUT_KEY,
                                  SEED_ID_FEATURE, SEED_TIMESTAMP_FEATURE, SOURCE_ID_FEATURE,
                                  TARGET_ID_FEATURE)
from unigraph.protos import graph_schema_pb2 as gs
from unigraph.columnar.ragged import Ragged, take

_VARINTS = [wire.varint(i) for i in range(1 << 14)]  # lengths up to 16 KiB without a call
_TAG = {wire.BYTES: b"\x0a", wire.FLOAT: b"\x12", wire.INT64: b"\x1a"}


def _varint(n: int) -> bytes:
    return _VARINTS[n] if n < 16384 else wire.varint(n)


@dataclasses.dataclass
class Column:
    """One key for every sample. `entries(count)` gives, for samples 0..count-1, each
    sample's entry of the Example's feature map (key and tf.train.Feature, framed) as a
    head and a payload, and their byte sizes: the head depends on the payload's length
    only, so it is built once per length, and the payload is a zero-copy slice of the
    column's buffer. Whole lists at once: the per-sample work is list comprehensions."""

    key: str
    entries: Callable[[int], tuple[list, list, np.ndarray]]


_HEAD_CACHES: dict[tuple, dict[int, bytes]] = {}


class _Heads:
    """Entry heads of one key by payload length. A packed list's payload is its values
    (`tag` FloatList/Int64List, framed as field 1 when non-empty); a BytesList's is its
    strings, framed one by one already; with `tag` None the payload is a whole Feature."""

    def __init__(self, key: str, tag: bytes | None, frame_payload: bool):
        key_bytes = key.encode("utf-8")
        self.key_header = b"\x0a" + _varint(len(key_bytes)) + key_bytes + b"\x12"
        self.tag, self.frame_payload = tag, frame_payload
        # Shared by every chunk's column of this key: the sizes repeat across chunks.
        self.cache = _HEAD_CACHES.setdefault((key, tag, frame_payload), {})

    def build(self, size: int) -> bytes:
        if self.tag is None:
            feature_prefix = b""
        else:
            frame = b"\x0a" + _varint(size) if self.frame_payload and size else b""
            feature_prefix = self.tag + _varint(len(frame) + size) + frame
        body = self.key_header + _varint(len(feature_prefix) + size) + feature_prefix
        head = self.cache[size] = b"\x0a" + _varint(len(body) + size) + body
        return head

    def of(self, sizes: list[int]) -> list[bytes]:
        get, build = self.cache.get, self.build
        return [get(n) or build(n) for n in sizes]


def packed_column(key: str, kind: str, buffer: bytes, byte_offsets: np.ndarray) -> Column:
    """Float or int64 values; sample i's packed data is buffer[offsets[i]:offsets[i+1]]."""
    return _sliced(key, _Heads(key, _TAG[kind], True), buffer, byte_offsets)


def bytes_column(key: str, framed: bytes, byte_offsets: np.ndarray) -> Column:
    """Strings, already framed one by one; sample i's are framed[offsets[i]:offsets[i+1]]."""
    return _sliced(key, _Heads(key, _TAG[wire.BYTES], False), framed, byte_offsets)


def _sliced(key: str, heads: _Heads, buffer: bytes, byte_offsets: np.ndarray) -> Column:
    view = memoryview(buffer)

    def entries(count: int):
        offsets = byte_offsets[:count + 1]
        sizes = np.diff(offsets)
        head_list = heads.of(sizes.tolist())
        bounds = offsets.tolist()
        payloads = [view[lo:hi] for lo, hi in zip(bounds, bounds[1:])]
        return head_list, payloads, sizes + np.fromiter(map(len, head_list), np.int64, count)
    return Column(key, entries)


def feature_column(key: str, feature: Callable[[int], bytes]) -> Column:
    """A column whose sample i's whole serialized tf.train.Feature is `feature(i)`."""
    heads = _Heads(key, None, False)

    def entries(count: int):
        values = [feature(i) for i in range(count)]
        head_list = heads.of([len(v) for v in values])
        return head_list, values, np.fromiter(
            (len(h) + len(v) for h, v in zip(head_list, values)), np.int64, count)
    return Column(key, entries)


@functools.lru_cache(maxsize=1 << 16)
def _one_int64(value: int) -> bytes:
    """The tf.train.Feature of one int64 (set sizes repeat: encoded once per run)."""
    return wire.encode_feature(wire.INT64, np.array([value], np.int64))


def scalar_int_column(key: str, values: np.ndarray) -> Column:
    """One int64 per sample (sizes)."""
    values = values.tolist()
    return feature_column(key, lambda i: _one_int64(values[i]))


def constant_column(key: str, feature_bytes: bytes) -> Column:
    heads = _Heads(key, None, False)
    entry = heads.of([len(feature_bytes)])[0]

    def entries(count: int):
        return [entry] * count, [feature_bytes] * count, np.full(
            count, len(entry) + len(feature_bytes), np.int64)
    return Column(key, entries)


def _item_offsets(per_item: np.ndarray, item_offsets: np.ndarray) -> np.ndarray:
    """Byte offsets per sample from the byte size of every item."""
    ends = np.zeros(len(per_item) + 1, np.int64)
    np.cumsum(per_item, out=ends[1:])
    return ends[item_offsets]


def values_column(key: str, values: np.ndarray, item_offsets: np.ndarray) -> Column:
    """A dense feature (items first, any fixed inner shape) of every sample."""
    width = int(np.prod(values.shape[1:], dtype=np.int64)) if values.ndim > 1 else 1
    flat = values.reshape(-1)
    if flat.dtype.kind == "f":
        if flat.dtype == np.float64:
            with np.errstate(over="ignore"):
                flat = flush_subnormals(flat.astype(np.float32))
        buffer = np.ascontiguousarray(flat, dtype="<f4").tobytes()
        return packed_column(key, wire.FLOAT, buffer, item_offsets * (4 * width))
    if flat.dtype.kind in "biu":
        ints = flat.view(np.int64) if flat.dtype == np.uint64 else flat.astype(np.int64)
        return packed_column(key, wire.INT64, wire.encode_varints(ints),
                             _item_offsets(_varint_sizes(ints), item_offsets * width))
    return _strings_column(key, flat, item_offsets * width)


def _varint_sizes(values: np.ndarray) -> np.ndarray:
    unsigned = values.view(np.uint64)
    sizes = np.ones(len(values), np.int64)
    for shift in range(7, 64, 7):
        sizes += unsigned >= np.uint64(1 << shift)
    return sizes


def _strings_column(key: str, strings: np.ndarray, value_offsets: np.ndarray) -> Column:
    """bytes values ('S' or object arrays); each framed as field 1 of a BytesList."""
    if strings.dtype.kind == "S" and strings.dtype.itemsize < 128:
        # Vectorized framing: rows of [0x0a, length, bytes...] with the padding masked out.
        width = strings.dtype.itemsize
        raw = strings.view(np.uint8).reshape(len(strings), width)
        lengths = width - np.argmax(raw[:, ::-1] != 0, axis=1)
        lengths[~raw.any(axis=1)] = 0
        rows = np.empty((len(strings), width + 2), np.uint8)
        rows[:, 0], rows[:, 1], rows[:, 2:] = 0x0A, lengths, raw
        keep = np.arange(width + 2)[None, :] < (lengths + 2)[:, None]
        framed = rows[keep].tobytes()
        return bytes_column(key, framed, _item_offsets(lengths + 2, value_offsets))
    pieces = [b"\x0a" + _varint(len(v)) + bytes(v) for v in strings.tolist()]
    sizes = np.fromiter((len(p) for p in pieces), np.int64, len(pieces))
    return bytes_column(key, b"".join(pieces), _item_offsets(sizes, value_offsets))


def ragged_columns(key: str, values: Ragged, item_offsets: np.ndarray,
                   shape: tuple[int, ...]) -> list[Column]:
    """A ragged feature: per sample through the GraphTensor core's own flattening (one
    rule for the .d<k> keys). Each sample is flattened once for all of its keys."""
    flattened: dict[int, dict[str, bytes]] = {}

    def encoded(i: int) -> dict[str, bytes]:
        if i not in flattened:
            part = take(values, np.arange(item_offsets[i], item_offsets[i + 1]))
            flattened[i] = {key_: wire.encode_feature(kind, flat)
                            for key_, kind, flat in flatten_field(key, part, shape)}
        return flattened[i]
    keys = [key] + [k.ragged_key(key, d) for d in k.ragged_dimensions(shape)]
    return [feature_column(key_, lambda i, key_=key_: encoded(i)[key_]) for key_ in keys]


def feature_columns(key: str, values, item_offsets: np.ndarray,
                    feature: gs.Feature | None) -> list[Column]:
    if isinstance(values, Ragged):
        shape = tuple(d.size for d in feature.shape.dim) if feature is not None else None
        return ragged_columns(key, values, item_offsets, shape)
    return [values_column(key, values, item_offsets)]


def encode_examples(columns: list[Column], count: int) -> Iterator[bytes]:
    """Sample i's serialized tf.train.Example, for i in range(count), keys sorted:
    Example{1: Features{entries}}, so a record is its entries behind one header."""
    parts, sizes = [], np.zeros(count, np.int64)
    for column in sorted(columns, key=lambda c: c.key):
        heads, payloads, entry_sizes = column.entries(count)
        parts += [heads, payloads]
        sizes += entry_sizes
    headers = [b"\x0a" + _varint(n) for n in sizes.tolist()]
    for record in zip(headers, *parts):
        yield b"".join(record)


# Samples encoded at once: memory holds their feature copies (the shard's node rows, when
# gathered first, are held whole: AssembledShard.with_node_rows_gathered).
ENCODED_AT_ONCE = 256


def encode_shard(shard: AssembledShard, chunk: int = ENCODED_AT_ONCE) -> Iterator[bytes]:
    """Each sample's serialized tf.train.Example, by ascending sample id: the same bytes
    as `encode_example(graph, output schema)` of output.reference.shard_graphs. Encoded
    `chunk` samples at a time, so memory holds one chunk's feature copies, not the shard's."""
    for start in range(0, len(shard.sample_ids), chunk):
        yield from _encode_samples(shard, start, min(start + chunk, len(shard.sample_ids)))


def _one_edge(edge_set: str, source: int) -> list[Column]:
    """A readout edge set of one edge from node `source` to the `_readout` node."""
    return [constant_column(k.edge_key(edge_set, field), wire.encode_feature(
        wire.INT64, np.array([value], np.int64)))
        for field, value in ((k.SIZE_NAME, 1), (k.SOURCE_NAME, source), (k.TARGET_NAME, 0))]


def _seed_readout(shard: AssembledShard, first: int, end: int) -> list[Column]:
    """Node seeds: context/seed_id and the edge set `_readout/seed` from node 0."""
    return [values_column(k.context_key(SEED_ID_FEATURE), shard.seed_ids[first:end],
                          np.arange(end - first + 1, dtype=np.int64)),
            *_one_edge(f"{READOUT_NODE_SET}/{READOUT_KEY}", 0)]


def _link_readout(shard: AssembledShard, first: int, end: int) -> list[Column]:
    """Link seeds: context/source_id and target_id, `_readout/source` from node 0,
    `_readout/target` from node 1 (node 0 when the pair is a node and itself), and the
    pair's features on the `_readout` node."""
    count = end - first
    one_each = np.arange(count + 1, dtype=np.int64)
    sources, targets = shard.seed_ids[first:end], shard.target_ids[first:end]
    columns = [values_column(k.context_key(SOURCE_ID_FEATURE), sources, one_each),
               values_column(k.context_key(TARGET_ID_FEATURE), targets, one_each),
               *_one_edge(LINK_READOUT_EDGE_SETS[0], 0)]
    target_edge = LINK_READOUT_EDGE_SETS[1]
    columns.append(constant_column(k.edge_key(target_edge, k.SIZE_NAME),
                                   wire.encode_feature(wire.INT64, np.ones(1, np.int64))))
    columns.append(constant_column(k.edge_key(target_edge, k.TARGET_NAME),
                                   wire.encode_feature(wire.INT64, np.zeros(1, np.int64))))
    columns.append(values_column(k.edge_key(target_edge, k.SOURCE_NAME),
                                 (targets != sources).astype(np.int64), one_each))
    declared = shard.schema.node_sets[READOUT_NODE_SET].features
    for feature, values in sorted(shard.readout.items()):
        columns += feature_columns(k.node_key(READOUT_NODE_SET, feature),
                                   take(values, np.arange(first, end)), one_each,
                                   declared.get(feature))
    return columns


def _encode_samples(shard: AssembledShard, first: int, end: int) -> Iterator[bytes]:
    """The examples of samples [first, end)."""
    schema = shard.schema
    count = end - first
    columns = [constant_column(k.node_key(READOUT_NODE_SET, k.SIZE_NAME),
                               wire.encode_feature(wire.INT64, np.ones(1, np.int64)))]
    if shard.seed_timestamps is not None:
        columns.append(values_column(k.context_key(SEED_TIMESTAMP_FEATURE),
                                     shard.seed_timestamps[first:end],
                                     np.arange(count + 1, dtype=np.int64)))
    if shard.target_ids is None:
        columns += _seed_readout(shard, first, end)
    else:
        columns += _link_readout(shard, first, end)
    for kind, layouts, pieces in (("nodes", shard.nodes, schema.node_sets),
                                  ("edges", shard.edges, schema.edge_sets)):
        key = k.node_key if kind == "nodes" else k.edge_key
        for name, layout in layouts.items():
            lo, hi = int(layout.offsets[first]), int(layout.offsets[end])
            offsets = layout.offsets[first:end + 1] - lo
            columns.append(scalar_int_column(key(name, k.SIZE_NAME), np.diff(offsets)))
            if kind == "nodes":
                columns.append(values_column(key(name, ID_FEATURE), layout.ids[lo:hi],
                                             offsets))
            else:
                columns.append(values_column(key(name, k.SOURCE_NAME),
                                             layout.sources[lo:hi], offsets))
                columns.append(values_column(key(name, k.TARGET_NAME),
                                             layout.targets[lo:hi], offsets))
            declared = pieces[name].features
            for feature, values in layout.features(lo, hi).items():
                columns += feature_columns(key(name, feature), values, offsets,
                                           declared.get(feature))
    return encode_examples(columns, count)

