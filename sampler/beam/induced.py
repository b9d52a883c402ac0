"""Stage: induced edges of one edge set (--edge-aggregation node), Induced/<edge set>.

    Induced/<e>/Candidates: source members ⋈ adjacency, by source bucket
                            -> every edge of theirs, by target bucket  (core.induced)
    Induced/<e>/Keep:       candidates ⋈ target members, by target bucket
                            -> the edges inside a subgraph, by output shard
    -> (shard, EdgePiece) to the assembly, and RunStats (tagged, split by tagged.py)
"""
from __future__ import annotations

import apache_beam as beam

from sampler.beam.report import STATS
from sampler.beam.tagged import split_tagged
from sampler.core.buckets import split_by_shard
from sampler.core.induced import by_target_bucket, candidate_edges, keep_induced
from sampler.core.pieces import Requests
from sampler.core.stats import RunStats
from unigraph.beam.shuffle import CoGroupByKey
from unigraph.beam.steps import FlatMap


class InducedEdges(beam.PTransform):
    """{"adjacency": (bucket, AdjacencyBucket), "sources": (bucket, Requests) of the source
    set's members, "targets": (bucket, Requests) of the target set's members}
    -> {"edges": (shard, EdgePiece), "stats": RunStats}."""

    def __init__(self, edge_set: str, num_shards: int, node_buckets: int,
                 exclude_pair_edges: bool):
        super().__init__()
        self.edge_set, self.num_shards, self.node_buckets = edge_set, num_shards, node_buckets
        self.exclude_pair_edges = exclude_pair_edges

    def expand(self, inputs):
        node_buckets, num_shards = self.node_buckets, self.num_shards
        exclude, edge_set = self.exclude_pair_edges, self.edge_set

        def candidates(element):
            _, grouped = element
            tables, members = list(grouped["adjacency"]), list(grouped["members"])
            if not tables or not members:
                return
            found, _ = candidate_edges(tables[0], Requests.concat(members),
                                       exclude_pair_edges=exclude)
            yield from by_target_bucket(found, node_buckets)

        def keep(element):
            _, grouped = element
            pieces, members = list(grouped["candidates"]), list(grouped["members"])
            if not pieces:
                return
            target_members = Requests.concat(members)
            count = 0
            for piece in pieces:
                kept = keep_induced(piece, target_members)
                count += len(kept)
                for shard_piece in split_by_shard(kept, num_shards):
                    yield "edges", shard_piece
            yield STATS, RunStats(induced_edges={edge_set: count})

        found = ({"adjacency": inputs["adjacency"], "members": inputs["sources"]}
                 | "Candidates/Join" >> CoGroupByKey()
                 | "Candidates/Edges" >> FlatMap(candidates))
        tagged = ({"candidates": found, "members": inputs["targets"]}
                  | "Keep/Join" >> CoGroupByKey()
                  | "Keep/Edges" >> FlatMap(keep))
        return split_tagged(tagged, ("edges", STATS))
