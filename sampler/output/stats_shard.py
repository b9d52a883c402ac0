"""One shard of an output folder summarized (`summarize_shard` -> `Tally`) without decoding
whole records: `#size` values read in place, each feature's packed data gathered over a
chunk of records and decoded at once. Tallies merge in file order (stats.py)."""
from __future__ import annotations

import dataclasses

import numpy as np
from google.protobuf.message import DecodeError

from sampler.graph_tensor import keys as k
from sampler.graph_tensor import wire
from sampler.output.folder import SamplesError, iter_records
from sampler.output.names import SEED_ID_FEATURE
from sampler.output.stats_features import FeatureSummary, text_value
from sampler.output.stats_layout import FeatureRef, Layout, is_auxiliary
from unigraph.protos import example_pb2
from unigraph.errors import SamplerError, TableError, one_line

CHUNK_RECORDS = 1024          # records whose feature values are decoded together,
CHUNK_BYTES = 32 << 20        # or fewer when they hold more bytes than this
LISTED_SEEDS = 20             # seed ids of seed-only subgraphs listed by id


@dataclasses.dataclass
class Tally:
    """Everything counted over some records (a shard, or a whole folder once merged)."""

    layout: Layout
    records: int = 0
    # One entry per record, in file order.
    record_bytes: list = dataclasses.field(default_factory=list)  # int64 arrays per chunk
    nodes: list = dataclasses.field(default_factory=list)         # int32 [records, sets]
    edges: list = dataclasses.field(default_factory=list)
    seed_ids: list | None = None     # 'S' arrays per chunk, when asked for
    records_per_file: list = dataclasses.field(default_factory=list)
    empty: int = 0                   # no node in any non-auxiliary node set
    seed_only: int = 0               # nodes, but no edge in any non-auxiliary edge set
    seed_only_ids: list = dataclasses.field(default_factory=list)
    features: dict = dataclasses.field(default_factory=dict)      # key -> FeatureSummary

    def __post_init__(self):
        if not self.features:
            self.features = {ref.key: FeatureSummary(ref) for ref in self.layout.features}

    def merge(self, other: "Tally") -> "Tally":
        self.records += other.records
        self.records_per_file += other.records_per_file
        self.record_bytes += other.record_bytes
        self.nodes += other.nodes
        self.edges += other.edges
        if self.seed_ids is not None:
            self.seed_ids += other.seed_ids or []
        self.empty += other.empty
        self.seed_only += other.seed_only
        self.seed_only_ids = (self.seed_only_ids + other.seed_only_ids)[:LISTED_SEEDS]
        for key, summary in self.features.items():
            summary.merge(other.features[key])
        return self

    def compact(self) -> None:
        """Joins the per-chunk arrays (one array each)."""
        for attr in ("record_bytes", "nodes", "edges"):
            parts = getattr(self, attr)
            if len(parts) > 1:
                setattr(self, attr, [np.concatenate(parts)])
        if self.seed_ids and len(self.seed_ids) > 1:
            width = max(a.dtype.itemsize for a in self.seed_ids)
            self.seed_ids = [np.concatenate([a.astype(f"S{width}") for a in self.seed_ids])]


class _Chunk:
    """Feature bytes of up to CHUNK_RECORDS records, gathered to be decoded at once."""

    def __init__(self, layout: Layout):
        self.payloads = {ref.key: [] for ref in layout.features}   # packed data per record
        self.odd = {ref.key: [] for ref in layout.features}        # decoded, other layouts
        self.lengths = {(ref.key, d): [] for ref in layout.features
                        for d in ref.ragged_dimensions}
        self.odd_lengths = {key: [] for key in self.lengths}


def summarize_shard(path: str, layout: Layout, keep_seed_ids: bool = False) -> Tally:
    """The Tally of one shard file; SamplesError names the file and record it cannot read."""
    tally = Tally(layout, seed_ids=[] if keep_seed_ids else None)
    node_size_keys = [k.node_key(name, k.SIZE_NAME) for name in layout.node_sets]
    edge_size_keys = [k.edge_key(name, k.SIZE_NAME) for name in layout.edge_sets]
    real_nodes = np.array([not is_auxiliary(n) for n in layout.node_sets], bool)
    real_edges = np.array([not is_auxiliary(n) for n in layout.edge_sets], bool)
    seed_key = k.context_key(SEED_ID_FEATURE)

    def flush(chunk: _Chunk, sizes: list, nodes: list, edges: list, seed_ids: list) -> None:
        if not sizes:
            return
        # int32: a record (at most 2 GB) cannot hold 2**31 nodes; 4 bytes per set and record
        node_counts = np.array(nodes, np.int32).reshape(len(sizes), len(node_size_keys))
        edge_counts = np.array(edges, np.int32).reshape(len(sizes), len(edge_size_keys))
        tally.records += len(sizes)
        tally.record_bytes.append(np.array(sizes, np.int64))
        tally.nodes.append(node_counts)
        tally.edges.append(edge_counts)
        if tally.seed_ids is not None:
            tally.seed_ids.append(np.array([i or b"" for i in seed_ids], dtype="S"))
        empty = ~(node_counts[:, real_nodes] > 0).any(axis=1)
        seed_only = ~empty & ~(edge_counts[:, real_edges] > 0).any(axis=1)
        tally.empty += int(empty.sum())
        tally.seed_only += int(seed_only.sum())
        for row in np.flatnonzero(seed_only)[:LISTED_SEEDS - len(tally.seed_only_ids)]:
            tally.seed_only_ids.append(text_value(seed_ids[row]) if seed_ids[row] is not None
                                       else "?")
        _decode_chunk(chunk, layout, tally)

    chunk, sizes, nodes, edges, seed_ids = _Chunk(layout), [], [], [], []
    index, chunk_bytes, decoding = -1, 0, None
    try:
        for index, record in enumerate(iter_records(path)):
            spans = wire.feature_spans(record)
            sizes.append(len(record))
            nodes.extend(_size(record, spans, key) for key in node_size_keys)
            edges.extend(_size(record, spans, key) for key in edge_size_keys)
            seed_ids.append(_first_bytes(record, spans.get(seed_key)))
            for ref in layout.features:
                _gather(record, spans, ref, chunk)
            chunk_bytes += len(record)
            if len(sizes) == CHUNK_RECORDS or chunk_bytes >= CHUNK_BYTES:
                decoding = (index - len(sizes) + 1, index)
                flush(chunk, sizes, nodes, edges, seed_ids)
                chunk, sizes, nodes, edges, seed_ids = _Chunk(layout), [], [], [], []
                chunk_bytes, decoding = 0, None
        decoding = (index - len(sizes) + 1, index)
        flush(chunk, sizes, nodes, edges, seed_ids)
    except TableError as e:   # damaged framing: names the file and record itself
        raise SamplesError(one_line(e)) from None
    except SamplerError as e:
        where = f"records {decoding[0]}-{decoding[1]}" if decoding else f"record {index}"
        raise SamplesError(f"{path}: {where}: {one_line(e)}") from None
    tally.records_per_file = [tally.records]
    tally.compact()
    return tally


def _size(record: bytes, spans: dict, key: str) -> int:
    span = spans.get(key)
    if span is None:
        return 0   # TF-GNN's default for an absent #size
    found = wire.list_payload(record, span)
    if found is not None and found[0] == wire.INT64:
        start, end = found[1]
        if start == end:
            return 0
        if record[end - 1] < 0x80 and end - start <= 9:
            size, shift = 0, 0   # one varint (the usual case): read in place
            for pos in range(start, end):
                byte = record[pos]
                size |= (byte & 0x7F) << shift
                shift += 7
                if byte < 0x80:
                    break
            if pos == end - 1:
                return size
        return int(wire.decode_varints(record[start:end], key).sum())
    kind, values = wire.decode_feature(memoryview(record)[span[0]:span[1]], key)
    if kind not in (wire.INT64, None):
        raise SamplerError(f"tf.Example key '{key}': expected {wire.INT64}, found {kind}")
    return int(np.asarray(values, np.int64).sum())


def _first_bytes(record: bytes, span) -> bytes | None:
    """The first item of a bytes_list Feature (the seed id), read in place when usual."""
    if span is None:
        return None
    found = wire.list_payload(record, span)
    if found is not None and found[0] == wire.BYTES:
        start, end = found[1]
        if start + 1 < end and record[start] == 0x0A and record[start + 1] < 0x80 \
                and start + 2 + record[start + 1] <= end:
            return record[start + 2:start + 2 + record[start + 1]]
    kind, values = wire.decode_feature(memoryview(record)[span[0]:span[1]], "context/seed_id")
    return values[0] if kind == wire.BYTES and values else None


def _wire_kind(ref: FeatureRef) -> str:
    kind = np.dtype(ref.dtype).kind
    return wire.BYTES if kind == "O" else wire.FLOAT if kind == "f" else wire.INT64


def _gather(record: bytes, spans: dict, ref: FeatureRef, chunk: _Chunk) -> None:
    span = spans.get(ref.key)
    if span is not None:
        _gather_one(record, span, ref.key, _wire_kind(ref), chunk.payloads[ref.key],
                    chunk.odd[ref.key])
    for dimension in ref.ragged_dimensions:
        key = k.ragged_key(ref.key, dimension)
        span = spans.get(key)
        if span is not None:
            _gather_one(record, span, key, wire.INT64, chunk.lengths[(ref.key, dimension)],
                        chunk.odd_lengths[(ref.key, dimension)])


def _gather_one(record: bytes, span, key: str, kind: str, payloads: list, odd: list) -> None:
    found = wire.list_payload(record, span)
    if found is not None:
        start, end = found[1]
        if found[0] is not None and found[0] != kind:
            raise SamplerError(f"tf.Example key '{key}': expected {kind}, found {found[0]}")
        if end > start:
            payloads.append(record[start:end])
        return
    kind, values = wire.decode_feature(memoryview(record)[span[0]:span[1]], key)
    if kind is not None:
        odd.append((kind, values))


def _decode_chunk(chunk: _Chunk, layout: Layout, tally: Tally) -> None:
    for ref in layout.features:
        summary = tally.features[ref.key]
        # Integer features of every dtype are int64 on the wire, bools 0 and 1.
        summary.values.add(_decode_joined(_wire_kind(ref), chunk.payloads[ref.key],
                                          chunk.odd[ref.key], ref.key))
        for dimension in ref.ragged_dimensions:
            lengths = _decode_joined(wire.INT64, chunk.lengths[(ref.key, dimension)],
                                     chunk.odd_lengths[(ref.key, dimension)],
                                     k.ragged_key(ref.key, dimension))
            summary.row_lengths[dimension].add(lengths)


def _decode_joined(kind: str, payloads: list, odd: list, key: str):
    """The values of every record's packed data (plus those decoded one by one)."""
    data = b"".join(payloads)
    others = [values for found, values in odd if found == kind]
    if any(found != kind for found, _ in odd):
        found = next(found for found, _ in odd if found != kind)
        raise SamplerError(f"tf.Example key '{key}': expected {kind}, found {found}")
    if kind == wire.BYTES:
        try:
            items = list(example_pb2.BytesList.FromString(data).value) if data else []
        except DecodeError:
            raise SamplerError(f"tf.Example key '{key}': a bytes_list that does not "
                               f"parse") from None
        return items + [item for values in others for item in values]
    if kind == wire.FLOAT:
        if len(data) % 4:
            raise SamplerError(f"tf.Example key '{key}': packed float_list of {len(data)} "
                               f"bytes, not a multiple of 4")
        values = np.frombuffer(data, "<f4")
    else:
        values = wire.decode_varints(data, key)
    return np.concatenate([values] + [np.asarray(v, values.dtype) for v in others]) \
        if others else values
