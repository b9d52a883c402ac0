"""Stage: the per-bucket indexes every join needs, built once per set from its table.

    NodeTable/<set>:   node batches -> (bucket, NodeTableBucket)   (core.node_table)
    Adjacency/<set>:   edge batches -> (bucket, AdjacencyBucket)   (core.adjacency)
    Hubs/<set>:        edge batches -> (hub id, chunk count) of every node with more than
                       chunk_edges edges (core.hubs); with them, Adjacency/<set> leaves
                       hubs out and HubChunks/<set> builds ((hub id, chunk), AdjacencyBucket)
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
from sampler.core.hubs import hub_chunk_edges, hub_table, hubs_of, plain_edges, source_counts
from sampler.core.node_table import NodeTableBucket, build_node_table, ids_only_table
from sampler.core.temporal import with_target_times


class BuildNodeTable(beam.PTransform):
    """Node batches of one set -> (bucket, NodeTableBucket); a duplicate id fails the job
    with a TableError naming both rows (`files` are the table's, for the message)."""

    def __init__(self, node_set: str, node_buckets: int, files: list[str]):
        super().__init__()
        self.node_set, self.node_buckets, self.files = node_set, node_buckets, list(files)

    def expand(self, batches):
        node_set, files = self.node_set, self.files
        return (batches
                | "Split" >> beam.FlatMap(split_batch, "ids", self.node_buckets)
                | "Group" >> beam.GroupByKey()
                | "Build" >> beam.MapTuple(
                    lambda bucket, parts: (bucket, build_node_table(node_set, list(parts), files))))


class BuildAdjacency(beam.PTransform):
    """Edge batches of one set -> (bucket of the source, AdjacencyBucket). Rows longer than
    `chunk_edges` are laid out chunk by chunk (core.long_rows); with `hubs` (Hubs/<set>'s
    output) the hubs' edges are left out instead, for HubChunks."""

    def __init__(self, edge_set: str, node_buckets: int, chunk_edges: int = CHUNK_EDGES,
                 hubs=None):
        super().__init__()
        self.edge_set, self.node_buckets, self.chunk_edges = edge_set, node_buckets, chunk_edges
        self.hubs = hubs

    def expand(self, batches):
        edge_set, chunk_edges = self.edge_set, self.chunk_edges
        if self.hubs is not None:
            batches = batches | "Plain" >> beam.Map(
                lambda batch, hubs: plain_edges(batch, hub_table(hubs)),
                beam.pvalue.AsList(self.hubs))
        return (batches
                | "Split" >> beam.FlatMap(split_batch, "sources", self.node_buckets)
                | "Group" >> beam.GroupByKey()
                | "Build" >> beam.MapTuple(lambda bucket, parts: (bucket, build_adjacency(
                    edge_set, list(parts), chunk_edges=chunk_edges))))


class FindHubs(beam.PTransform):
    """Edge batches of one set -> (id, chunk count) of each node with more than
    `chunk_edges` edges: counts per source, summed per bucket (an element is one bucket's
    distinct sources, never a whole table). Few elements: a side input of the hop."""

    def __init__(self, node_buckets: int, chunk_edges: int):
        super().__init__()
        self.node_buckets, self.chunk_edges = node_buckets, chunk_edges

    def expand(self, batches):
        chunk_edges = self.chunk_edges
        return (batches
                | "Count" >> beam.FlatMap(source_counts, self.node_buckets)
                | "Group" >> beam.GroupByKey()
                | "Hubs" >> beam.FlatMapTuple(lambda _, parts: hubs_of(parts, chunk_edges)))


class BuildHubChunks(beam.PTransform):
    """Edge batches of one set, and its hubs -> ((hub id, chunk), AdjacencyBucket): each
    chunk of a long row (core.long_rows) as a one-row adjacency in canonical order."""

    def __init__(self, edge_set: str, hubs):
        super().__init__()
        self.edge_set, self.hubs = edge_set, hubs

    def expand(self, batches):
        edge_set = self.edge_set
        return (batches
                | "Split" >> beam.FlatMap(lambda batch, hubs: hub_chunk_edges(
                    batch, hub_table(hubs)), beam.pvalue.AsList(self.hubs))
                | "Group" >> beam.GroupByKey()
                | "Build" >> beam.MapTuple(
                    lambda key, parts: (key, build_adjacency(edge_set, list(parts)))))


class IdsFromEdges(beam.PTransform):
    """A table-less node set's nodes: every id some edge sets name at some of their ends.

    `ends`: (edge set name, 'sources' or 'targets') pairs; input: {edge set name:
    PCollection of EdgeBatch}; output: (bucket, NodeTableBucket without features)."""

    def __init__(self, node_set: str, node_buckets: int, ends: list[tuple[str, str]]):
        super().__init__()
        self.node_set, self.node_buckets, self.ends = node_set, node_buckets, list(ends)

    def expand(self, edge_batches):
        node_buckets, node_set = self.node_buckets, self.node_set
        parts = tuple(edge_batches[name] | f"{name}/{field}" >> beam.FlatMap(
                          lambda batch, f=field: distinct_ids_by_bucket(getattr(batch, f),
                                                                        node_buckets))
                      for name, field in self.ends)
        return (parts | "Flatten" >> beam.Flatten()
                | "Group" >> beam.GroupByKey()
                | "Build" >> beam.MapTuple(
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

        edges = inputs["edges"] | "Split" >> beam.FlatMap(split_batch, "targets",
                                                          self.node_buckets)
        nodes = inputs["nodes"] | "TimesOnly" >> beam.MapTuple(_times_only)
        return ({"edges": edges, "nodes": nodes} | "Join" >> beam.CoGroupByKey()
                | "Times" >> beam.FlatMap(join))
