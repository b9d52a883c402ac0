"""The numbers of `sample-stats`: what an output folder holds, read record by record.

    stats = folder_stats("out/")      # one pass over every shard, streaming
    stats.as_dict()                   # what out/stats/stats.json holds

Per record it keeps a few integers in numpy arrays (the serialized size, nodes
per node set, edges per edge set), so count and size quantiles are exact even
for ten million records. Feature values go into mergeable summaries
(sketches.py): exact count, mean, std, min, max, NaN and inf counts; quantiles
exact for integer features with at most sketches.CAPACITY distinct values, else
within sketches.ALPHA (0.8%) of the value; top values and distinct counts of
strings (and integers) exact up to that capacity, else bounded (the JSON says
which and how much).

Records are never fully decoded: wire.feature_spans finds every key's bytes,
`#size` values are read in place, and each feature's packed data is gathered
over a chunk of records and decoded at once. Each shard is summarized on its
own and the summaries merged in file order, so the numbers do not depend on the
number of worker processes (`workers`).

The cap-hit rate per op cannot be derived from the records (two ops may sample
one edge set); it comes from the run report (sample_report.json, draws_per_op
and draws_at_cap_per_op) when the folder has one.
"""
from __future__ import annotations

import concurrent.futures
import dataclasses
import math
import multiprocessing
import os
from typing import Callable, Iterator, Optional

import numpy as np
from google.protobuf.message import DecodeError

from sampler.graph_tensor import keys as k
from sampler.graph_tensor import wire
from sampler.output.folder import (SampleFolder, SamplesError, iter_records, open_samples,
                                   read_run_report)
from sampler.output.names import SEED_ID_FEATURE
from sampler.output.sketches import (ALPHA, CAPACITY, DISTINCT_K, QUANTILE_NAMES, QUANTILES,
                                     DistinctCount, LogHistogram, Moments, TopValues)
from unigraph.protos import graph_schema_pb2 as gs
from unigraph.protos import example_pb2
from unigraph.storage import paths
from unigraph.errors import SamplerError, TableError, one_line
from unigraph.schema import NUMPY_DTYPES, dtype_name

CHUNK_RECORDS = 1024          # records whose feature values are decoded together,
CHUNK_BYTES = 32 << 20        # or fewer when they hold more bytes than this
STRING_BATCH_BYTES = 32 << 20  # bound on one fixed-width array of string values
LISTED_SEEDS = 20             # seed ids of seed-only subgraphs listed by id
TOP_SHOWN = 10                # top values listed per feature
PARALLEL_MIN_BYTES = 64 << 20  # smaller folders are read in-process

QUANTILE_METHOD = ("per-record counts and sizes: exact, numpy's default 'linear' "
                   "interpolation; feature values: the value at rank floor(q*(n-1)), exact "
                   f"for integers with at most {CAPACITY} distinct values, else within "
                   f"{ALPHA:.1%} of it (log-linear buckets)")


# --- what to read ------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class FeatureRef:
    """One feature of the folder's schema and the tf.Example key it is written under."""

    scope: str            # "context", "nodes" or "edges"
    set_name: str         # "" for context features
    name: str
    key: str
    dtype: str            # numpy dtype name of the decoded values ("object" for strings)
    schema_dtype: str     # DT_FLOAT, ...
    shape: tuple[int, ...]

    @property
    def is_string(self) -> bool:
        return self.dtype == "object"

    @property
    def ragged_dimensions(self) -> list[int]:
        return k.ragged_dimensions(self.shape)

    @property
    def label(self) -> str:
        return f"context/{self.name}" if self.scope == "context" else \
            f"{self.scope}/{self.set_name}.{self.name}"


@dataclasses.dataclass(frozen=True)
class Layout:
    """The keys sample-stats reads, from the folder's graph_schema.pbtxt."""

    node_sets: tuple[str, ...]
    edge_sets: tuple[str, ...]
    features: tuple[FeatureRef, ...]

    @staticmethod
    def of(schema: gs.GraphSchema) -> "Layout":
        features = [_feature_ref("context", "", name, feature)
                    for name, feature in sorted(schema.context.features.items())]
        for scope, sets in (("nodes", schema.node_sets), ("edges", schema.edge_sets)):
            for set_name, piece in sorted(sets.items()):
                features += [_feature_ref(scope, set_name, name, feature)
                             for name, feature in sorted(piece.features.items())]
        return Layout(tuple(sorted(schema.node_sets)), tuple(sorted(schema.edge_sets)),
                      tuple(features))


def _feature_ref(scope: str, set_name: str, name: str, feature: gs.Feature) -> FeatureRef:
    key = k.context_key(name) if scope == "context" else (
        k.node_key(set_name, name) if scope == "nodes" else k.edge_key(set_name, name))
    dtype = NUMPY_DTYPES.get(feature.dtype)
    if dtype is None:
        raise SamplesError(f"graph schema: feature {key} has dtype "
                           f"{dtype_name(feature.dtype)}, which tf.train.Example cannot hold")
    return FeatureRef(scope, set_name, name, key, dtype.name, dtype_name(feature.dtype),
                      tuple(d.size for d in feature.shape.dim))


def is_auxiliary(set_name: str) -> bool:
    """TF-GNN's auxiliary sets (`_readout`, `_readout/seed`) start with an underscore."""
    return set_name.startswith("_")


# --- per-feature summaries ---------------------------------------------------

class NumericSummary:
    """Moments, quantiles and (for integers) value counts of numeric values."""

    def __init__(self, integer: bool):
        self.moments = Moments()
        self.histogram = LogHistogram()
        self.top = TopValues() if integer else None
        self.distinct = DistinctCount() if integer else None

    def add(self, values: np.ndarray) -> None:
        if not values.size:
            return
        finite = self.moments.add(values)
        self.histogram.add(finite)
        if self.top is not None:
            self.top.add(finite)
            self.distinct.add(finite)

    def merge(self, other: "NumericSummary") -> None:
        self.moments.merge(other.moments)
        self.histogram.merge(other.histogram)
        if self.top is not None:
            self.top.merge(other.top)
            self.distinct.merge(other.distinct)

    @property
    def quantiles_exact(self) -> bool:
        return self.top is not None and self.top.exact

    def quantiles(self) -> dict:
        if self.quantiles_exact:
            values = [None if v is None else _number(v) for v in self.top.quantiles()]
        else:
            low, high = self.moments.min, self.moments.max
            values = [None if v is None else min(max(v, low), high)
                      for v in self.histogram.quantiles()]
            if self.moments.finite:   # min and max are exact
                values[0], values[-1] = low, high
        return dict(zip(QUANTILE_NAMES, values))

    def as_dict(self) -> dict:
        result = self.moments.as_dict()
        result["quantiles"] = self.quantiles()
        result["quantiles_exact"] = self.quantiles_exact
        if self.top is not None:
            result["distinct"] = self.top.distinct() if self.top.exact else \
                self.distinct.estimate()
            result["distinct_exact"] = self.top.exact or self.distinct.exact
            result["top_values"] = [[int(v), c] for v, c in self.top.top(TOP_SHOWN)]
            result["top_values_max_undercount"] = self.top.error
        return result


class StringSummary:
    """Value counts, distinct count and byte lengths of string values."""

    def __init__(self):
        self.top = TopValues()
        self.distinct = DistinctCount()
        self.lengths = NumericSummary(integer=True)
        self.count = 0

    def add(self, items: list[bytes]) -> None:
        if not items:
            return
        self.count += len(items)
        lengths = np.fromiter(map(len, items), np.int64, len(items))
        self.lengths.add(lengths)
        for batch in string_batches(items, lengths):
            self.top.add(batch)
            self.distinct.add(batch)

    def merge(self, other: "StringSummary") -> None:
        self.count += other.count
        self.top.merge(other.top)
        self.distinct.merge(other.distinct)
        self.lengths.merge(other.lengths)

    def as_dict(self) -> dict:
        exact = self.top.exact or self.distinct.exact
        distinct = self.top.distinct() if self.top.exact else self.distinct.estimate()
        return {"values": self.count, "distinct": distinct, "distinct_exact": exact,
                "top_values": [[_text(v), c] for v, c in self.top.top(TOP_SHOWN)],
                "top_values_max_undercount": self.top.error,
                "length_bytes": self.lengths.quantiles()}


def string_batches(items: list[bytes], lengths: np.ndarray) -> Iterator[np.ndarray]:
    """Fixed-width 'S' arrays of the items, each under STRING_BATCH_BYTES (one long
    string does not make every other one as wide)."""
    start = 0
    while start < len(items):
        widths = np.maximum.accumulate(np.maximum(lengths[start:], 1))
        fits = (np.arange(1, len(widths) + 1) * widths) <= STRING_BATCH_BYTES
        end = start + max(1, int(np.argmin(fits)) if not fits.all() else len(widths))
        yield np.array(items[start:end], dtype=f"S{int(widths[end - start - 1])}")
        start = end


def _text(value: bytes) -> str:
    return value.decode("utf-8", errors="backslashreplace")


class FeatureSummary:
    """The values of one feature (flattened over items and dimensions) and the row
    lengths of each of its ragged dimensions."""

    def __init__(self, ref: FeatureRef):
        self.ref = ref
        self.values = StringSummary() if ref.is_string else NumericSummary(
            integer=np.dtype(ref.dtype).kind in "biu")
        self.row_lengths = {d: NumericSummary(integer=True) for d in ref.ragged_dimensions}

    def merge(self, other: "FeatureSummary") -> None:
        self.values.merge(other.values)
        for dimension, summary in self.row_lengths.items():
            summary.merge(other.row_lengths[dimension])

    def as_dict(self) -> dict:
        result = {"dtype": self.ref.schema_dtype, "shape": list(self.ref.shape),
                  **self.values.as_dict()}
        if self.row_lengths:
            result["row_lengths"] = {f"d{d}": {**s.quantiles(), "mean": s.moments.mean}
                                     for d, s in self.row_lengths.items()}
        return result


# --- one shard ---------------------------------------------------------------

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
            tally.seed_only_ids.append(_text(seed_ids[row]) if seed_ids[row] is not None
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


# --- a folder ------------------------------------------------------------------

@dataclasses.dataclass
class FolderStats:
    """A folder's Tally merged over every shard, with the run report when there is one."""

    folder: str
    files: tuple[str, ...]
    tally: Tally
    report: dict | None

    @property
    def layout(self) -> Layout:
        return self.tally.layout

    @property
    def record_bytes(self) -> np.ndarray:
        return _joined(self.tally.record_bytes, np.int64)

    def nodes(self, name: str) -> np.ndarray:
        """Nodes of node set `name` in every record, in file order."""
        column = self.layout.node_sets.index(name)
        return _joined(self.tally.nodes, np.int32, len(self.layout.node_sets))[:, column]

    def edges(self, name: str) -> np.ndarray:
        column = self.layout.edge_sets.index(name)
        return _joined(self.tally.edges, np.int32, len(self.layout.edge_sets))[:, column]

    def ops(self) -> dict | None:
        """op -> draws, draws at the cap, their ratio and edges sampled (None: no report)."""
        if self.report is None or "draws_per_op" not in self.report:
            return None
        result = {}
        for op, sampled in self.report.get("edges_sampled_per_op", {}).items():
            draws = self.report["draws_per_op"].get(op, 0)
            at_cap = self.report.get("draws_at_cap_per_op", {}).get(op, 0)
            result[op] = {"draws": draws, "draws_at_cap": at_cap,
                          "cap_hit_rate": at_cap / draws if draws else None,
                          "edges_sampled": sampled}
        return result

    def as_dict(self) -> dict:
        """The numbers of stats.json (JSON-ready: no NaN, strings for bytes)."""
        tally = self.tally
        result = {
            "folder": self.folder,
            "files": len(self.files),
            "records": tally.records,
            "bytes": int(self.record_bytes.sum()),
            "quantile_method": QUANTILE_METHOD,
            "bytes_per_record": count_quantiles(self.record_bytes),
            "subgraphs": {"empty": tally.empty, "seed_only": tally.seed_only,
                          "seed_only_seed_ids": tally.seed_only_ids},
            "node_sets": {name: count_quantiles(self.nodes(name))
                          for name in self.layout.node_sets},
            "edge_sets": {name: count_quantiles(self.edges(name))
                          for name in self.layout.edge_sets},
            "ops": self.ops(),
            "run_report": _report_summary(self.report),
            "features": _features_dict(self),
            "summaries": {"top_values_capacity": CAPACITY, "distinct_k": DISTINCT_K,
                          "relative_error": ALPHA},
        }
        return json_safe(result)


def _joined(parts: list, dtype, columns: int | None = None) -> np.ndarray:
    if parts:
        return parts[0] if len(parts) == 1 else np.concatenate(parts)
    return np.zeros((0, columns) if columns is not None else 0, dtype)


def count_quantiles(values: np.ndarray) -> dict:
    """min, p5, p50, p95, max, mean, total and the records with 0, of per-record numbers."""
    values = np.asarray(values)
    if not values.size:
        return {**{name: None for name in QUANTILE_NAMES}, "mean": None, "total": 0,
                "zero": 0}
    q = np.percentile(values, [100 * x for x in QUANTILES])
    return {**{name: _number(v) for name, v in zip(QUANTILE_NAMES, q)},
            "mean": float(values.mean()), "total": int(values.sum()),
            "zero": int((values == 0).sum())}


def _number(value):
    value = float(value)
    return int(value) if value.is_integer() else value


def _features_dict(stats: FolderStats) -> dict:
    result: dict = {"context": {}, "node_sets": {}, "edge_sets": {}}
    for ref in stats.layout.features:
        summary = stats.tally.features[ref.key].as_dict()
        if ref.scope == "context":
            result["context"][ref.name] = summary
        else:
            scope = "node_sets" if ref.scope == "nodes" else "edge_sets"
            result[scope].setdefault(ref.set_name, {})[ref.name] = summary
    return result


_REPORT_KEYS = ("seeds_read", "subgraphs_written", "seeds_missing", "missing_seed_ids",
                "dangling_edges_dropped", "nodes_missing_from_tables", "bytes_written",
                "wall_time_s")


def _report_summary(report: dict | None) -> dict | None:
    if report is None:
        return None
    return {key: report[key] for key in _REPORT_KEYS if key in report}


def json_safe(value):
    """NaN and infinities as strings (JSON has no such numbers), numpy scalars as Python's."""
    if isinstance(value, dict):
        return {str(key): json_safe(v) for key, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    return value


Progress = Callable[[int, int, str, int], None]   # (files done, files, path, records)


def folder_stats(folder: str, *, workers: int | None = None, keep_seed_ids: bool = False,
                 progress: Optional[Progress] = None) -> FolderStats:
    """Every shard of `folder` summarized and merged in file order.

    workers: processes reading shards at once (default: one per CPU, capped by the
    number of shards; folders under PARALLEL_MIN_BYTES are read in-process). The
    numbers are the same for any count."""
    samples = open_samples(folder)
    try:
        layout = Layout.of(samples.schema)
    except SamplesError as e:
        raise SamplesError(f"{samples.schema_path}: {e}".replace(": graph schema:", ":")) \
            from None
    report = read_run_report(samples.folder)
    tallies = _shard_tallies(samples, layout, _worker_count(samples, workers), keep_seed_ids,
                             progress)
    total = Tally(layout, seed_ids=[] if keep_seed_ids else None)
    for tally in tallies:
        total.merge(tally)
    total.compact()
    return FolderStats(samples.folder, samples.files, total, report)


def _worker_count(samples: SampleFolder, workers: int | None) -> int:
    if workers is not None and workers < 1:
        raise SamplesError(f"--workers {workers}: must be at least 1")
    if paths.is_remote(samples.folder) or len(samples.files) == 1:
        return 1
    if workers is not None:
        return min(workers, len(samples.files))
    if sum(os.path.getsize(f) for f in samples.files) < PARALLEL_MIN_BYTES:
        return 1
    return max(1, min(_usable_cpus(), len(samples.files)))


def _usable_cpus() -> int:
    """CPUs this process may run on (a container's limit, not the host's count)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:   # not on Linux
        return os.cpu_count() or 1


def _shard_tallies(samples: SampleFolder, layout: Layout, workers: int, keep_seed_ids: bool,
                   progress: Optional[Progress]) -> Iterator[Tally]:
    files = samples.files
    if workers == 1:
        for done, path in enumerate(files, start=1):
            tally = summarize_shard(path, layout, keep_seed_ids)
            if progress:
                progress(done, len(files), path, tally.records)
            yield tally
        return
    # Forked workers start at once and need no `if __name__ == "__main__"` guard in a
    # notebook or script; remote folders are read in-process (a forked GCS client is
    # not safe), see _worker_count.
    context = multiprocessing.get_context("fork")
    with concurrent.futures.ProcessPoolExecutor(workers, mp_context=context) as pool:
        results = pool.map(summarize_shard, files, [layout] * len(files),
                           [keep_seed_ids] * len(files))
        for done, (path, tally) in enumerate(zip(files, results), start=1):
            if progress:
                progress(done, len(files), path, tally.records)
            yield tally


def sample_stats(folder: str, *, workers: int | None = None) -> dict:
    """The numbers of `sample-stats FOLDER` (what stats.json holds), for notebooks."""
    return folder_stats(folder, workers=workers).as_dict()
