"""One shard of an output folder summarized (`summarize_shard` -> `Tally`) without turning
records into GraphTensors: chunks of records laid out alike (what `sample` writes) are
decoded a key at a time by the batched decoder's columns
(sampler.graph_tensor.batch_codec); records laid out otherwise are read one by one,
`#size` values read in place and each feature's packed data gathered over a chunk of
records and decoded at once. Tallies merge in file order (stats.py)."""
from __future__ import annotations

import dataclasses

import numpy as np
from google.protobuf.message import DecodeError

from sampler.graph_tensor import keys as k
from sampler.graph_tensor import wire
from sampler.graph_tensor.batch_codec import BatchDecoder
from sampler.graph_tensor.batch_columns import Columns
from sampler.graph_tensor.example_batch import Strings, segment_sums
from sampler.output.batches import file_chunks
from sampler.output.folder import SamplesError
from sampler.output.names import SEED_ID_FEATURE
from sampler.output.stats_features import FeatureSummary, text_value
from sampler.output.stats_layout import FeatureRef, Layout, is_auxiliary
from unigraph.protos import example_pb2
from unigraph.protos import graph_schema_pb2 as gs
from unigraph.errors import SamplerError, TableError, one_line

CHUNK_RECORDS = 1024          # records read one by one whose feature values are decoded
CHUNK_BYTES = 32 << 20        # together; records decoded together at most (one at least)
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
    """The Tally of one shard file; SamplesError names the file and record it cannot read.

    Chunks of records laid out alike (what `sample` writes) are decoded a key at a time
    by the batched decoder's columns (sampler.graph_tensor.batch_codec); any other chunk
    record by record (_ShardRecords)."""
    tally = Tally(layout, seed_ids=[] if keep_seed_ids else None)
    decoder = (BatchDecoder(gs.GraphSchema.FromString(layout.schema), indices=False)
               if layout.schema is not None else None)
    records = _ShardRecords(tally, layout, path)
    try:
        for chunk in file_chunks(path, chunk_bytes=CHUNK_BYTES):
            columns = (decoder.columns(chunk.buffer, chunk.starts, chunk.lengths)
                       if decoder is not None else None)
            if columns is not None:
                _tally_columns(tally, layout, chunk.lengths, columns)
                continue
            for i in range(len(chunk)):
                records.add(chunk.first_index + i, chunk.record(i))
            records.flush()
    except TableError as e:   # damaged framing: names the file and record itself
        raise SamplesError(one_line(e)) from None
    tally.records_per_file = [tally.records]
    tally.compact()
    return tally


def _tally_counts(tally: Tally, layout: Layout, record_bytes: np.ndarray,
                  node_counts: np.ndarray, edge_counts: np.ndarray, seed_id) -> None:
    """Adds a chunk's per-record numbers; seed_id(row) is a record's seed id (or None)."""
    tally.records += len(record_bytes)
    tally.record_bytes.append(np.asarray(record_bytes, np.int64))
    tally.nodes.append(node_counts)
    tally.edges.append(edge_counts)
    real_nodes = np.array([not is_auxiliary(n) for n in layout.node_sets], bool)
    real_edges = np.array([not is_auxiliary(n) for n in layout.edge_sets], bool)
    empty = ~(node_counts[:, real_nodes] > 0).any(axis=1)
    seed_only = ~empty & ~(edge_counts[:, real_edges] > 0).any(axis=1)
    tally.empty += int(empty.sum())
    tally.seed_only += int(seed_only.sum())
    for row in np.flatnonzero(seed_only)[:LISTED_SEEDS - len(tally.seed_only_ids)]:
        value = seed_id(row)
        tally.seed_only_ids.append(text_value(value) if value is not None else "?")


def _tally_columns(tally: Tally, layout: Layout, record_bytes: np.ndarray,
                   columns: Columns) -> None:
    """A chunk's numbers from the batched decoder's columns."""
    def per_record(key: str) -> np.ndarray:
        # int32: a record (at most 2 GB) cannot hold 2**31 nodes
        return segment_sums(columns.values(key), columns.counts(key)).astype(np.int32)

    n = len(record_bytes)
    node_counts = np.zeros((n, len(layout.node_sets)), np.int32)
    for j, name in enumerate(layout.node_sets):
        node_counts[:, j] = per_record(k.node_key(name, k.SIZE_NAME))
    edge_counts = np.zeros((n, len(layout.edge_sets)), np.int32)
    for j, name in enumerate(layout.edge_sets):
        edge_counts[:, j] = per_record(k.edge_key(name, k.SIZE_NAME))
    seed_key = k.context_key(SEED_ID_FEATURE)
    ids = columns.values(seed_key) if seed_key in columns else None
    if isinstance(ids, Strings):  # a record's seed id: its first seed_id value
        counts = columns.counts(seed_key)
        first = np.cumsum(counts) - counts

        def seed_id(row: int):
            return ids.item(int(first[row])) if counts[row] else None
    else:
        def seed_id(row: int):
            return None
    _tally_counts(tally, layout, record_bytes, node_counts, edge_counts, seed_id)
    if tally.seed_ids is not None:
        if isinstance(ids, Strings) and len(ids):
            chosen = ids.fixed.reshape(-1)[np.where(counts > 0, first, 0)]
            chosen[counts == 0] = b""
        else:
            chosen = np.zeros(n, "S1")
        tally.seed_ids.append(chosen)
    for ref in layout.features:
        summary = tally.features[ref.key]
        values = columns.values(ref.key)
        if isinstance(values, Strings):
            summary.values.add_strings(values)
        else:  # integers of every dtype are int64 on the wire, bools 0 and 1
            summary.values.add(values)
        for dimension in ref.ragged_dimensions:
            summary.row_lengths[dimension].add(columns.values(k.ragged_key(ref.key, dimension)))


class _ShardRecords:
    """Records tallied one by one (wire.feature_spans), their feature bytes gathered and
    decoded CHUNK_RECORDS at a time: records laid out otherwise than `sample` writes."""

    def __init__(self, tally: Tally, layout: Layout, path: str):
        self.tally, self.layout, self.path = tally, layout, path
        self.node_size_keys = [k.node_key(name, k.SIZE_NAME) for name in layout.node_sets]
        self.edge_size_keys = [k.edge_key(name, k.SIZE_NAME) for name in layout.edge_sets]
        self._reset()

    def _reset(self) -> None:
        self.chunk, self.sizes, self.nodes, self.edges, self.seed_ids = \
            _Chunk(self.layout), [], [], [], []
        self.first = None

    def add(self, index: int, record: bytes) -> None:
        try:
            spans = wire.feature_spans(record)
            self.nodes.extend(_size(record, spans, key) for key in self.node_size_keys)
            self.edges.extend(_size(record, spans, key) for key in self.edge_size_keys)
            self.seed_ids.append(_first_bytes(record, spans.get(
                k.context_key(SEED_ID_FEATURE))))
            for ref in self.layout.features:
                _gather(record, spans, ref, self.chunk)
        except SamplerError as e:
            raise SamplesError(f"{self.path}: record {index}: {one_line(e)}") from None
        self.first = index if self.first is None else self.first
        self.sizes.append(len(record))
        if len(self.sizes) == CHUNK_RECORDS:
            self.flush()

    def flush(self) -> None:
        if not self.sizes:
            return
        n = len(self.sizes)
        node_counts = np.array(self.nodes, np.int32).reshape(n, len(self.node_size_keys))
        edge_counts = np.array(self.edges, np.int32).reshape(n, len(self.edge_size_keys))
        seed_ids = self.seed_ids
        _tally_counts(self.tally, self.layout, np.array(self.sizes, np.int64), node_counts,
                      edge_counts, lambda row: seed_ids[row])
        if self.tally.seed_ids is not None:
            self.tally.seed_ids.append(np.array([i or b"" for i in seed_ids], dtype="S"))
        try:
            _decode_chunk(self.chunk, self.layout, self.tally)
        except SamplerError as e:
            where = (f"records {self.first}-{self.first + n - 1}" if n > 1
                     else f"record {self.first}")
            raise SamplesError(f"{self.path}: {where}: {one_line(e)}") from None
        self._reset()


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
