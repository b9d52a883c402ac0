"""One edge set's CSR written to a store in buckets of source codes, never sorted whole.

    write_edge_set(out, meta, coded_batches, ...)

An edge set's canonical CSR (core.adjacency) orders edges by source first, so the
CSR of a range of source codes is a contiguous slice of the whole CSR, and every
long row lies in one range. The builder therefore:
  A. reads the table once (ids already coded), spilling its columns to scratch files
     in read order and counting each source's degree;
  B. cuts the source codes into ranges ("buckets") of about `bucket_edges` edges (a
     range ends once it holds that many; a row is never split, so a bucket holds at
     most bucket_edges + its largest row), and copies each edge into its bucket's
     scratch files, block by block;
  C. per bucket, in code order: reads it, builds its CSR with core.adjacency (the very
     function load_graph uses) in each layout, and appends the result to the store's
     files, turning bucket-local positions and target codes into global ones.
Memory holds one bucket and its sort, plus arrays of the two node sets' sizes (degrees,
fingerprints, target codes and times by code): the bound docs/store.md states. Every
file is written and read with plain reads and writes, not mapped, so the build's
resident memory is its own arrays, not the output's pages.

A table with ragged or byte-string edge features (their rows are not fixed-width) is
built whole in memory instead (`build_whole`): docs/store.md says so.
"""
from __future__ import annotations

import os
from typing import Callable, Iterable

import numpy as np

from sampler.core.adjacency import build_adjacency
from sampler.store.layout import CANONICAL, adjacency_arrays
from unigraph.columnar.batches import EdgeBatch

BUCKET_EDGES = 1 << 20   # default edges per bucket: about 150 MB while it is sorted
BLOCK_EDGES = 1 << 20    # edges per block when copying scratch columns into buckets


class _Columns:
    """Fixed-width columns appended to scratch files under one prefix. `keep_open`:
    one open file per column for the object's life (the table's spill); otherwise each
    append opens and closes them (a bucket: there may be more buckets than the process
    may hold files open)."""

    def __init__(self, prefix: str, keep_open: bool = True):
        self.prefix, self.keep_open = prefix, keep_open
        self.paths: dict[str, str] = {}
        self.open_files: dict[str, object] = {}
        self.kinds: dict[str, tuple[np.dtype, tuple]] = {}
        self.length = 0

    def append(self, columns: dict[str, np.ndarray]) -> None:
        for key, values in columns.items():
            values = np.ascontiguousarray(values)
            if key not in self.paths:
                self.paths[key] = f"{self.prefix}.{len(self.paths)}"
                self.kinds[key] = (values.dtype, values.shape[1:])
            if self.keep_open:
                if key not in self.open_files:
                    self.open_files[key] = open(self.paths[key], "wb")
                self.open_files[key].write(values.tobytes())
            else:
                with open(self.paths[key], "ab") as f:
                    f.write(values.tobytes())
        self.length += len(next(iter(columns.values()))) if columns else 0

    def read(self, key: str, lo: int, hi: int) -> np.ndarray:
        """Rows lo:hi of a column (a read into memory, not a mapping)."""
        dtype, inner = self.kinds[key]
        width = dtype.itemsize * int(np.prod(inner, dtype=np.int64))
        if key in self.open_files:
            self.open_files[key].flush()
        with open(self.paths[key], "rb") as f:
            f.seek(lo * width)
            return np.frombuffer(f.read((hi - lo) * width), dtype).reshape((hi - lo,) + inner)

    def close(self) -> None:
        """Deletes the files (idempotent)."""
        for f in self.open_files.values():
            f.close()
        for path in self.paths.values():
            if os.path.exists(path):
                os.remove(path)
        self.open_files, self.paths = {}, {}


def bucket_of_sources(degrees: np.ndarray, bucket_edges: int) -> np.ndarray:
    """Each source code's bucket: a source starts a new bucket once the bucket before
    it holds bucket_edges edges or more (so rows are never split, and codes in one
    bucket are contiguous)."""
    before = np.cumsum(degrees) - degrees
    return (before // bucket_edges).astype(np.int64)


def write_edge_set(out, folder: str, name: str, batches: Iterable[EdgeBatch], *,
                   n_sources: int, n_targets: int, source_fingerprints: np.ndarray,
                   target_fingerprints: np.ndarray, same_set: bool,
                   target_times: Callable[[], np.ndarray] | None, effective_times,
                   chunk_edges: int, bucket_edges: int, timed: bool) -> dict | None:
    """Writes an edge set's layouts (`folder`/{per-row arrays} and `folder`/{layout}/...)
    from its coded batches; returns {layout: description, "edges": count}, or None when
    the table must be built whole (ragged or string features, or no edges): then
    nothing has been written and the batches are untouched but consumed (the caller
    reads the table again)."""
    os.makedirs(os.path.join(out.folder, folder), exist_ok=True)
    scratch = _Columns(os.path.join(out.folder, folder, "edges.scratch"))
    try:
        degrees = np.zeros(n_sources, np.int64)
        target_seen = np.zeros(n_targets, bool)
        has_weights = has_times = None
        features = None
        for batch in batches:
            if not len(batch):
                continue
            if any(not isinstance(v, np.ndarray) or v.dtype == object
                   for v in batch.features.values()):
                return None
            # As build_adjacency: weights only when every batch has them.
            has_weights = batch.weights is not None and has_weights is not False
            has_times = batch.timestamps is not None
            features = sorted(batch.features)
            columns = {"sources": batch.sources, "targets": batch.targets, "rows": batch.rows}
            if batch.weights is not None:
                columns["weights"] = batch.weights
            if batch.timestamps is not None:
                columns["timestamps"] = batch.timestamps
            columns.update({f"feature:{f}": v for f, v in batch.features.items()})
            scratch.append(columns)
            # O(batch), not O(node set) per batch: a big node set read in many batches.
            codes, counts = np.unique(batch.sources, return_counts=True)
            degrees[codes] += counts
            target_seen[batch.targets] = True
        if scratch.length == 0:
            return None
        return _write_buckets(out, folder, name, scratch, degrees, target_seen, has_weights,
                              has_times, features, source_fingerprints, target_fingerprints,
                              same_set, target_times, effective_times, chunk_edges,
                              bucket_edges, timed)
    finally:
        scratch.close()


def _partition(scratch: _Columns, bucket_of: np.ndarray, keys: list[str], prefix: str
               ) -> dict[int, _Columns]:
    """Step B: every edge into its bucket's scratch files, in read order within a bucket."""
    buckets: dict[int, _Columns] = {}
    try:
        for lo in range(0, scratch.length, BLOCK_EDGES):
            hi = min(lo + BLOCK_EDGES, scratch.length)
            which = bucket_of[scratch.read("sources", lo, hi)]
            order = np.argsort(which, kind="stable")
            which = which[order]
            ids, starts = np.unique(which, return_index=True)
            ends = np.r_[starts[1:], len(which)]
            block = {key: scratch.read(key, lo, hi)[order] for key in keys}
            for b, a, z in zip(ids.tolist(), starts.tolist(), ends.tolist()):
                if b not in buckets:
                    buckets[b] = _Columns(f"{prefix}.b{b}", keep_open=False)
                buckets[b].append({key: values[a:z] for key, values in block.items()})
            del block, order, which
    except BaseException:
        for columns in buckets.values():
            columns.close()
        raise
    return buckets


class _Appender:
    """One store array written front to back: the .npy header for its final shape,
    then slices as they come (np.save's bytes exactly)."""

    def __init__(self, out, relative: str, dtype, shape: tuple):
        self.out, self.relative = out, relative
        self.dtype, self.shape = np.dtype(dtype), tuple(int(s) for s in shape)
        path = os.path.join(out.folder, relative)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        self.file = open(path, "wb")
        np.lib.format.write_array_header_1_0(self.file, {
            "descr": np.lib.format.dtype_to_descr(self.dtype), "fortran_order": False,
            "shape": self.shape})
        self.rows = 0

    def append(self, values: np.ndarray) -> None:
        values = np.ascontiguousarray(values, dtype=self.dtype)
        if values.shape[1:] != self.shape[1:]:
            raise AssertionError(f"{self.relative}: rows of shape {values.shape[1:]}, "
                                 f"expected {self.shape[1:]}")
        self.file.write(values.tobytes())
        self.rows += len(values)

    def close(self) -> None:
        self.file.close()
        if self.rows != self.shape[0]:
            raise AssertionError(f"{self.relative}: {self.rows} rows written, "
                                 f"{self.shape[0]} announced")
        self.out.register(self.relative, self.dtype, self.shape)


def _write_buckets(out, folder, name, scratch, degrees, target_seen, has_weights, has_times,
                   features, source_fingerprints, target_fingerprints, same_set,
                   target_times, effective_times, chunk_edges, bucket_edges, timed):
    edges = int(degrees.sum())
    n_rows = int(np.count_nonzero(degrees))
    target_ids = np.flatnonzero(target_seen).astype(np.int64)
    # A target code's position among the edge set's distinct targets (its target_codes).
    target_position = np.cumsum(target_seen, dtype=np.int64) - 1
    del target_seen
    bucket_of = bucket_of_sources(degrees, bucket_edges)
    del degrees
    keys = ["sources", "targets", "rows"] + ["weights"] * bool(has_weights) \
        + ["timestamps"] * bool(has_times) + [f"feature:{f}" for f in features]
    buckets = _partition(scratch, bucket_of, keys, os.path.join(out.folder, folder, "bucket"))
    del bucket_of
    scratch.close()
    layouts = [CANONICAL] + ["timed"] * bool(timed)
    times_by_code = target_times() if timed and target_times is not None else None
    writers: dict[str, _Appender] = {}
    long_parts = {layout: [] for layout in layouts}
    descriptions = {}
    row_at = edge_at = 0

    def write(relative, values, total):
        if relative not in writers:
            writers[relative] = _Appender(out, relative, values.dtype,
                                          (total,) + values.shape[1:])
        writers[relative].append(values)

    try:
        for b in sorted(buckets):
            columns = buckets.pop(b)
            try:
                n = columns.length
                sources = columns.read("sources", 0, n)
                targets = columns.read("targets", 0, n)
                rows = columns.read("rows", 0, n)
                weights = columns.read("weights", 0, n) if has_weights else None
                edge_times = columns.read("timestamps", 0, n) if has_times else None
                feats = {f: columns.read(f"feature:{f}", 0, n) for f in features}
            finally:
                columns.close()
            for layout in layouts:
                times = None
                if layout != CANONICAL:
                    times = effective_times(edge_times, None if times_by_code is None
                                            else times_by_code[targets])
                built = build_adjacency(name, [EdgeBatch(name, sources, targets, rows, weights,
                                                         feats, times)],
                                        source_fingerprints.__getitem__, chunk_edges,
                                        target_fingerprints.__getitem__)
                del times
                # Bucket-local target codes and positions become the edge set's.
                built.target_codes = target_position[
                    built.target_ids[built.target_codes]].astype(np.int32)
                built.target_ids = target_ids
                if same_set:
                    built.target_fingerprints = np.zeros(0, np.uint64)  # written once, below
                if built.long_rows is not None:
                    long_parts[layout].append((built.long_rows, row_at, edge_at))
                per_row, per_edge, description = adjacency_arrays(built)
                descriptions[layout] = description
                if layout == CANONICAL:
                    write(f"{folder}/sources.npy", per_row["sources"], n_rows)
                    write(f"{folder}/row_splits.npy", per_row["row_splits"][:-1] + edge_at,
                          n_rows + 1)
                    write(f"{folder}/source_fingerprints.npy",
                          per_row["source_fingerprints"], n_rows)
                for key, values in per_edge.items():
                    if not key.startswith("long_rows."):
                        write(f"{folder}/{layout}/{key}.npy", values, edges)
                bucket_rows = len(built.sources)
                del built, per_row, per_edge
            row_at += bucket_rows
            edge_at += n
            del sources, targets, rows, weights, edge_times, feats
        write(f"{folder}/row_splits.npy", np.array([edge_at], np.int64), n_rows + 1)
        for relative in list(writers):
            writers.pop(relative).close()
    finally:
        for columns in buckets.values():
            columns.close()
        for writer in writers.values():
            writer.file.close()
    out.write(f"{folder}/target_ids.npy", target_ids)
    if same_set:
        out.write(f"{folder}/target_fingerprints.npy", source_fingerprints[target_ids])
    for layout in layouts:
        description = descriptions[layout]
        description["long_rows"] = bool(long_parts[layout])
        description["target_fingerprints"] = same_set
        if long_parts[layout]:
            for key, values in _long_rows(long_parts[layout]).items():
                out.write(f"{folder}/{layout}/long_rows.{key}.npy", values)
    return {"layouts": descriptions, "edges": edge_at}


def _long_rows(parts) -> dict[str, np.ndarray]:
    """The buckets' long rows as one LongRows of the whole CSR (small arrays: one entry
    per long row or chunk)."""
    rows, offsets, starts, ends = [], [np.zeros(1, np.int64)], [], []
    chunks = 0
    for long_rows, row_at, edge_at in parts:
        rows.append(long_rows.rows + row_at)
        offsets.append(long_rows.chunk_offsets[1:] + chunks)
        chunks += int(long_rows.chunk_offsets[-1])
        starts.append(long_rows.chunk_starts + edge_at)
        ends.append(long_rows.chunk_ends + edge_at)
    return {"rows": np.concatenate(rows), "chunk_offsets": np.concatenate(offsets),
            "chunk_starts": np.concatenate(starts), "chunk_ends": np.concatenate(ends)}

