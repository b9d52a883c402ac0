"""One edge set's CSR written to a store in bounded memory: two external sorts.

    write_edge_set(out, folder, name, batches, ends=..., budget=..., ...)

The CSR (core.adjacency) orders edges by source code, so its rows come out of a sort
by source id (codes are ids' positions in the sorted names). Its per-edge target
columns need the target's code, its position among the edge set's distinct targets,
and (time order) the target node's timestamp: lookups by target, which come out of a
sort by target id. So the builder:
  A. reads the table's batches (ids as the readers give them) into an external sort
     by target id (sampler.store.external_sort: sorted runs on disk, merged);
  B. walks the edges in target order beside the target node set's files, read a page
     at a time (sampler.store.npy): each target's code, its position among the set's
     distinct targets (written as target_ids.npy as they come), its node's timestamp
     and so each edge's effective time; the edges go on, targets as positions, into a
     second external sort, by source id;
  C. walks the edges in source order beside the source set's names and fingerprints,
     and cuts them into buckets of whole rows (about budget.bucket_bytes of records; a
     row is never split); each bucket's CSR is built by core.adjacency (the function
     load_graph uses) in each layout and appended to the store's files, row and edge
     positions made global.
A bucket's CSR is a slice of the whole table's CSR (canonical order is by source first;
time order too), long rows included, so the files are byte for byte what core.adjacency
builds from the whole table. Memory holds a sort's buffer, a merge's pages and one
bucket, never the table nor an array of node-set size: a row longer than a bucket
is the one thing held whole (docs/store.md states the bound). Features of any kind
(dense, ragged, byte strings) travel through the sorts with their edges.
"""
from __future__ import annotations

import dataclasses
import os
from typing import Callable, Iterable

import numpy as np

from sampler.core.adjacency import build_adjacency
from sampler.core.arrays import argsort, run_starts
from sampler.core.temporal import lowest_time
from sampler.store.external_sort import Budget, ExternalSort
from sampler.store.layout import CANONICAL, TIMED, adjacency_arrays
from sampler.store.npy import ConcatFiles, NpyAppender, NpyPages
from sampler.store.spill import (Block, block_concat, block_len, block_nbytes, block_slice,
                                 block_take)
from unigraph.columnar.batches import EdgeBatch


@dataclasses.dataclass(frozen=True)
class NodeFiles:
    """Where one node set's arrays are (absolute paths); `timestamps`/`table_codes`
    only when the edge set's times need its nodes' timestamps."""

    names: str
    fingerprints: str
    table_codes: str | None = None
    timestamps: str | None = None


def write_edge_set(out, folder: str, name: str, batches: Iterable[EdgeBatch], *,
                   sources: NodeFiles, targets: NodeFiles, same_set: bool, timed: bool,
                   effective_times: Callable, time_dtype: str, chunk_edges: int,
                   budget: Budget, scratch: str) -> dict:
    """Writes an edge set's layouts (`folder`/{per-row arrays}, `folder`/{layout}/...);
    returns {"layouts": {layout: description}, "edges": count}."""
    by_target = ExternalSort(scratch, "by-target", key=("targets",), budget=budget)
    by_source = ExternalSort(scratch, "by-source", key=("sources",), budget=budget)
    try:
        count, has_weights = _sort_by_target(batches, by_target)
        if not count:
            return _write_empty(out, folder, name, timed)
        _walk_targets(out, folder, by_target, by_source, targets, same_set, timed,
                      effective_times, time_dtype, budget)
        return _walk_sources(out, folder, name, by_source, sources, targets, same_set,
                             timed, has_weights, chunk_edges, budget)
    finally:
        by_target.close()
        by_source.close()


def _sort_by_target(batches, by_target: ExternalSort) -> tuple[int, bool]:
    """A: every edge into the sort by target; (edges, whether every batch had weights,
    as build_adjacency keeps weights only then)."""
    count, has_weights, has_times = 0, True, None
    for batch in batches:
        if not len(batch):
            continue
        if has_times is not None and has_times != (batch.timestamps is not None):
            raise ValueError(f"edge set '{batch.edge_set}': batches with and without "
                             f"timestamps")
        has_times = batch.timestamps is not None
        has_weights &= batch.weights is not None
        block = {"targets": batch.targets, "sources": batch.sources, "rows": batch.rows,
                 # a column of every block: zeros where a batch lacks weights (then none
                 # are written)
                 "weights": batch.weights if batch.weights is not None
                 else np.zeros(len(batch))}
        if has_times:
            block["times"] = batch.timestamps
        block.update({f"feature:{k}": v for k, v in sorted(batch.features.items())})
        by_target.add(block)
        count += len(batch)
    return count, has_weights


def _lookup_page(budget: Budget) -> int:
    """Bytes per read of a node set's arrays: a merged block's lookups touch a page or two
    of them, so small pages read little more than the block needs."""
    return min(budget.page_bytes, 1 << 20)


def _walk_targets(out, folder, by_target, by_source, targets: NodeFiles, same_set, timed,
                  effective_times, time_dtype, budget) -> None:
    """B: target codes, positions and times, in target order; on into the sort by source."""
    names = NpyPages(targets.names, _lookup_page(budget))
    fingerprints = NpyPages(targets.fingerprints, _lookup_page(budget))
    table_codes = timestamps = None
    if timed and targets.timestamps is not None:
        table_codes = NpyPages(targets.table_codes, _lookup_page(budget))
        timestamps = NpyPages(targets.timestamps, _lookup_page(budget))
    target_ids = NpyAppender(os.path.join(out.folder, folder, "target_ids.npy"), np.int64)
    target_fps = (NpyAppender(os.path.join(out.folder, folder, "target_fingerprints.npy"),
                              np.uint64) if same_set else None)
    distinct, last = 0, -1
    try:
        for block in by_target.sorted_blocks():
            codes = names.positions(block.pop("targets"))
            first = run_starts(codes)
            first[0] = codes[0] != last
            last = int(codes[-1])
            new = codes[first]
            target_ids.append(new)
            if target_fps is not None:
                target_fps.append(fingerprints.gather(new))
            block["positions"] = distinct + np.cumsum(first) - 1
            distinct += len(new)
            if timed:
                node_times = None
                if table_codes is not None:
                    at = table_codes.find(codes)
                    node_times = np.full(len(codes), lowest_time(time_dtype), time_dtype)
                    node_times[at >= 0] = timestamps.gather(at[at >= 0])
                block["times"] = effective_times(block.get("times"), node_times)
            else:
                block.pop("times", None)
            by_source.add(block)
        out.register(f"{folder}/target_ids.npy", np.int64, target_ids.close())
        if target_fps is not None:
            out.register(f"{folder}/target_fingerprints.npy", np.uint64, target_fps.close())
    except BaseException:
        target_ids.abandon()
        if target_fps is not None:
            target_fps.abandon()
        raise


def _walk_sources(out, folder, name, by_source, sources: NodeFiles, targets: NodeFiles,
                  same_set, timed, has_weights, chunk_edges, budget) -> dict:
    """C: source codes in source order, cut into buckets of whole rows, each laid out."""
    names = NpyPages(sources.names, _lookup_page(budget))
    source_fps = NpyPages(sources.fingerprints, _lookup_page(budget))
    target_ids = NpyPages(os.path.join(out.folder, folder, "target_ids.npy"),
                          _lookup_page(budget))
    target_fps = NpyPages(targets.fingerprints, _lookup_page(budget))
    layout = _Layout(out, folder, name, [CANONICAL] + [TIMED] * bool(timed), has_weights,
                     same_set, chunk_edges, source_fps.gather,
                     lambda positions: target_fps.gather(target_ids.gather(positions)))
    pending: list[Block] = []
    held = 0
    try:
        for block in by_source.sorted_blocks():
            block["sources"] = names.positions(block["sources"])
            one_row = bool(pending) and block["sources"][-1] == pending[0]["sources"][0]
            pending.append(block)
            held += block_nbytes(block)
            if held >= budget.bucket_bytes and not one_row:  # a long row is held whole
                pending = [layout.bucket(block_concat(pending), keep_last_row=True)]
                held = block_nbytes(pending[0])
        if pending:
            layout.bucket(block_concat(pending), keep_last_row=False)
        return layout.close()
    except BaseException:
        layout.abandon()
        raise


class _Layout:
    """The edge set's files, appended bucket after bucket in code order."""

    def __init__(self, out, folder, name, layouts, has_weights, same_set, chunk_edges,
                 source_fingerprints, target_fingerprints):
        self.out, self.folder, self.name, self.layouts = out, folder, name, layouts
        self.has_weights, self.same_set, self.chunk_edges = has_weights, same_set, chunk_edges
        self.source_fingerprints, self.target_fingerprints = (source_fingerprints,
                                                              target_fingerprints)
        self.rows = ConcatFiles(out.folder, f"{folder}/", out.register)
        self.edges = {layout: ConcatFiles(out.folder, f"{folder}/{layout}/", out.register)
                      for layout in layouts}
        self.long_parts = {layout: [] for layout in layouts}
        self.descriptions = {}
        self.row_at = self.edge_at = 0

    def bucket(self, block: Block, keep_last_row: bool) -> Block:
        """Lays out the block's whole rows (all of them, or all but the last, which may
        go on in the next block); returns what is left."""
        n = block_len(block)
        codes = block["sources"]
        cut = n
        if keep_last_row:
            cut = int(np.searchsorted(codes, codes[-1], side="left"))
            if cut == 0:  # one row so far: it stays whole, and grows
                return block
        self._lay_out(block_slice(block, 0, cut) if cut < n else block)
        return block_slice(block, cut, n)

    def _lay_out(self, block: Block) -> None:
        n = block_len(block)
        # In table order (the order of no consequence to the result), core.adjacency sorts
        # integer codes in one pass instead of three.
        block = block_take(block, argsort(block["rows"]))
        features = {k[len("feature:"):]: v for k, v in block.items()
                    if k.startswith("feature:")}
        for layout in self.layouts:
            built = build_adjacency(
                self.name, [EdgeBatch(self.name, block["sources"], block["positions"],
                                      block["rows"],
                                      block["weights"] if self.has_weights else None,
                                      features, block["times"] if layout == TIMED else None)],
                self.source_fingerprints, self.chunk_edges, self.target_fingerprints)
            # Bucket-local target codes become positions among the set's targets.
            built.target_codes = built.target_ids[built.target_codes].astype(np.int32)
            if self.same_set:
                built.target_fingerprints = np.zeros(0, np.uint64)  # target_fingerprints.npy
            if built.long_rows is not None:
                self.long_parts[layout].append((built.long_rows, self.row_at, self.edge_at))
            per_row, per_edge, self.descriptions[layout] = adjacency_arrays(built)
            if layout == CANONICAL:
                self.rows.append({"sources": per_row["sources"],
                                  "row_splits": per_row["row_splits"][:-1] + self.edge_at,
                                  "source_fingerprints": per_row["source_fingerprints"]})
                bucket_rows = len(built.sources)
            self.edges[layout].append({k: v for k, v in per_edge.items()
                                       if not k.startswith("long_rows.")})
            del built, per_row, per_edge
        self.row_at += bucket_rows
        self.edge_at += n

    def close(self) -> dict:
        self.rows.append({"row_splits": np.array([self.edge_at], np.int64)})
        self.rows.close()
        for files in self.edges.values():
            files.close()
        for layout in self.layouts:
            description = self.descriptions[layout]
            description["long_rows"] = bool(self.long_parts[layout])
            description["target_fingerprints"] = self.same_set
            if self.long_parts[layout]:
                for key, values in _long_rows(self.long_parts[layout]).items():
                    self.out.write(f"{self.folder}/{layout}/long_rows.{key}.npy", values)
        return {"layouts": self.descriptions, "edges": self.edge_at}

    def abandon(self) -> None:
        self.rows.abandon()
        for files in self.edges.values():
            files.abandon()


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


def _write_empty(out, folder: str, name: str, timed: bool) -> dict:
    """A table without rows: the empty CSR core.adjacency builds (as load_graph)."""
    built = build_adjacency(name, [])
    per_row, per_edge, description = adjacency_arrays(built)
    for key, array in per_row.items():
        out.write(f"{folder}/{key}.npy", array)
    layouts = {}
    for layout in [CANONICAL] + [TIMED] * bool(timed):
        for key, array in per_edge.items():
            out.write(f"{folder}/{layout}/{key}.npy", array)
        layouts[layout] = dict(description)
    return {"layouts": layouts, "edges": 0}
