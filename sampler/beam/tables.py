"""Stage: the per-bucket indexes every join needs, built once per set from its table.

    NodeTable/<set>:   node batches -> (bucket, NodeTableBucket)   (core.node_table)
    Adjacency/<set>:   edge batches -> (bucket, AdjacencyBucket)   (core.adjacency)
    SeedIds/<set>:     a table-less set's nodes, the ids its edges name -> (bucket, ids-only table)
"""
from __future__ import annotations

import apache_beam as beam

from sampler.core.adjacency import build_adjacency
from sampler.core.buckets import distinct_ids_by_bucket, split_batch
from sampler.core.node_table import build_node_table, ids_only_table


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
    """Edge batches of one set -> (bucket of the source, AdjacencyBucket)."""

    def __init__(self, edge_set: str, node_buckets: int):
        super().__init__()
        self.edge_set, self.node_buckets = edge_set, node_buckets

    def expand(self, batches):
        edge_set = self.edge_set
        return (batches
                | "Split" >> beam.FlatMap(split_batch, "sources", self.node_buckets)
                | "Group" >> beam.GroupByKey()
                | "Build" >> beam.MapTuple(
                    lambda bucket, parts: (bucket, build_adjacency(edge_set, list(parts)))))


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
