"""Stage: the per-bucket indexes every join needs, built once per set from its table.

    NodeTable/<set>:   node batches -> (bucket, NodeTableBucket)   (core.node_table)
    Adjacency/<set>:   edge batches -> (bucket, AdjacencyBucket)   (core.adjacency)
                       with hubs apart (core.hubs): also Adjacency/<set>/Chunks/...:
                       (chunk key, [(chunk, AdjacencyBucket)]) of the hubs' long rows
    SeedIds/<set>:     a table-less set's nodes, the ids its edges name -> (bucket, ids-only table)
    EdgeTimes/<set>:   edge batches ⋈ their targets' node times -> edge batches with
                       effective times (core.temporal), before Adjacency/<set>
"""
from __future__ import annotations

import apache_beam as beam
import numpy as np

from sampler.core.adjacency import build_adjacency
from sampler.core.buckets import distinct_ids_by_bucket, split_batch
from sampler.core.long_rows import CHUNK_EDGES
from sampler.beam.tagged import split_tagged
from sampler.core.hubs import by_chunk, find_hubs, split_hub_edges
from sampler.core.node_table import NodeTableBucket, build_node_table, ids_only_table
from sampler.core.temporal import with_target_times
from unigraph.beam.shuffle import CoGroupByKey, GroupByKey
from unigraph.beam.steps import FlatMap, FlatMapTuple, MapTuple


class BuildNodeTable(beam.PTransform):
    """Node batches of one set -> (bucket, NodeTableBucket); a duplicate id fails the job
    with a TableError naming both rows (`files` are the table's, for the message)."""

    def __init__(self, node_set: str, node_buckets: int, files: list[str]):
        super().__init__()
        self.node_set, self.node_buckets, self.files = node_set, node_buckets, list(files)

    def expand(self, batches):
        node_set, files = self.node_set, self.files
        return (batches
                | "Split" >> FlatMap(split_batch, "ids", self.node_buckets)
                | "Group" >> GroupByKey()
                | "Build" >> MapTuple(
                    lambda bucket, parts: (bucket, build_node_table(node_set, list(parts), files))))


class BuildAdjacency(beam.PTransform):
    """Edge batches of one set -> (bucket of the source, AdjacencyBucket). Rows longer than
    `chunk_edges` are laid out chunk by chunk (core.long_rows). With `hubs_apart`, they
    are cut out instead (core.hubs) and the output is {"adjacency": as before, the bucket
    naming its hubs, "chunks": (chunk key, [(chunk, AdjacencyBucket)])}."""

    def __init__(self, edge_set: str, node_buckets: int, chunk_edges: int = CHUNK_EDGES,
                 hubs_apart: bool = False):
        super().__init__()
        self.edge_set, self.node_buckets, self.chunk_edges = edge_set, node_buckets, chunk_edges
        self.hubs_apart = hubs_apart

    def expand(self, batches):
        edge_set, chunk_edges = self.edge_set, self.chunk_edges
        grouped = (batches
                   | "Split" >> FlatMap(split_batch, "sources", self.node_buckets)
                   | "Group" >> GroupByKey())
        if not self.hubs_apart:
            return grouped | "Build" >> MapTuple(lambda bucket, parts: (
                bucket, build_adjacency(edge_set, list(parts), chunk_edges=chunk_edges)))
        built = split_tagged(grouped | "Build" >> FlatMapTuple(
            lambda bucket, parts: _bucket_and_hub_chunks(bucket, parts, edge_set, chunk_edges)),
            ("adjacency", "chunk"))
        chunks = (built["chunk"]
                  | "Chunks/Group" >> GroupByKey()
                  | "Chunks/Build" >> MapTuple(lambda key, values: (key, [
                      (chunk, build_adjacency(edge_set, parts))
                      for chunk, parts in by_chunk(values)])))
        return {"adjacency": built["adjacency"], "chunks": chunks}


def _bucket_and_hub_chunks(bucket, parts, edge_set: str, chunk_edges: int):
    """One bucket's edges -> ("adjacency", (bucket, its plain rows, naming its hubs)) and
    ("chunk", (chunk key, (chunk, edges))) for its hubs' edges. Two passes over the
    grouped batches: one counting edges per source, one routing them; only plain edges
    are held (a hub's edges go on batch by batch)."""
    table = find_hubs(parts, chunk_edges)
    plain = []
    for part in parts:
        kept, hub_parts = split_hub_edges(part, table)
        plain.append(kept)
        for keyed in hub_parts:
            yield "chunk", keyed
    adjacency = build_adjacency(edge_set, plain, chunk_edges=chunk_edges)
    if len(table[0]):
        adjacency.hubs = table
    yield "adjacency", (bucket, adjacency)


class IdsFromEdges(beam.PTransform):
    """A table-less node set's nodes: every id some edge sets name at some of their ends.

    `ends`: (edge set name, 'sources' or 'targets') pairs; input: {edge set name:
    PCollection of EdgeBatch}; output: (bucket, NodeTableBucket without features)."""

    def __init__(self, node_set: str, node_buckets: int, ends: list[tuple[str, str]]):
        super().__init__()
        self.node_set, self.node_buckets, self.ends = node_set, node_buckets, list(ends)

    def expand(self, edge_batches):
        node_buckets, node_set = self.node_buckets, self.node_set
        parts = tuple(edge_batches[name] | f"{name}/{field}" >> FlatMap(
                          lambda batch, f=field: distinct_ids_by_bucket(getattr(batch, f),
                                                                        node_buckets))
                      for name, field in self.ends)
        return (parts | "Flatten" >> beam.Flatten()
                | "Group" >> GroupByKey()
                | "Build" >> MapTuple(
                    lambda bucket, arrays: (bucket, ids_only_table(node_set, list(arrays)))))


def _times_only(bucket, table: NodeTableBucket):
    """A node table bucket cut down to what the join needs: ids and timestamps."""
    return bucket, NodeTableBucket(table.node_set, table.ids, {}, table.timestamps)


class EffectiveTimes(beam.PTransform):
    """{"edges": EdgeBatch, "nodes": (bucket, NodeTableBucket) of the target set, read with
    its timestamps} -> EdgeBatch with effective times (the later of the edge's and its
    target's). Edges are split by their target's bucket, so each join element is one
    bucket's edges and one bucket's node times, never a whole table."""

    def __init__(self, node_buckets: int, dtype: str):
        super().__init__()
        self.node_buckets, self.dtype = node_buckets, dtype

    def expand(self, inputs):
        dtype = self.dtype

        def join(element):
            _, grouped = element
            tables = list(grouped["nodes"])
            ids = tables[0].ids if tables else np.zeros(0, "S1")
            times = tables[0].timestamps if tables else np.zeros(0, dtype)
            for batch in grouped["edges"]:
                yield with_target_times(batch, ids, times, dtype)

        edges = inputs["edges"] | "Split" >> FlatMap(split_batch, "targets",
                                                          self.node_buckets)
        nodes = inputs["nodes"] | "TimesOnly" >> MapTuple(_times_only)
        return ({"edges": edges, "nodes": nodes} | "Join" >> CoGroupByKey()
                | "Times" >> FlatMap(join))
