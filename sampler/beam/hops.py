"""Stage: one sampling op, Hop/<op>.

    Hop/<op>/Join:   (bucket, Requests) ⋈ (bucket, AdjacencyBucket) of the op's edge set
    Hop/<op>/Sample: core.hop.hop_bucket on every joined bucket, (tag, payload) pairs
    Hop/<op>/Edges, /Reached, /Stats: the pairs split by tag (beam/tagged.py)
    -> edges:   (shard, EdgePiece)   to the assembly
       reached: (bucket, Requests)   to later ops and the feature lookup (only if needed)
       stats:   RunStats             edges sampled by the op
"""
from __future__ import annotations

import apache_beam as beam
from apache_beam.metrics import Metrics

from sampler.beam.report import METRICS_NAMESPACE, STATS
from sampler.beam.tagged import split_tagged
from sampler.core.adjacency import build_adjacency
from sampler.core.hop import hop_bucket
from sampler.core.pieces import Requests
from sampler.job.progress import Progress
from sampler.plan.plan import PlannedOp


class _SampleBuckets(beam.DoFn):
    def __init__(self, op: PlannedOp, seed: int, num_shards: int, node_buckets: int,
                 emit_reached: bool):
        self.op, self.seed, self.emit_reached = op, seed, emit_reached
        self.num_shards, self.node_buckets = num_shards, node_buckets
        self.sampled = Metrics.counter(METRICS_NAMESPACE, f"edges_sampled/{op.name}")

    def setup(self):
        self.progress = Progress(f"Hop/{self.op.name}")

    def process(self, element):
        _, grouped = element
        requests = Requests.concat(list(grouped["requests"]))
        if len(requests) == 0:
            return
        # A bucket whose nodes have no edges in this set still counts its draws (of 0 edges).
        adjacency = next(iter(grouped["adjacency"]), None) or build_adjacency(self.op.edge_set,
                                                                              [])
        out = hop_bucket(adjacency, requests, self.op, self.seed, num_shards=self.num_shards,
                         node_buckets=self.node_buckets, emit_reached=self.emit_reached)
        sampled = out.stats.edges_sampled_per_op[self.op.name]
        self.sampled.inc(sampled)
        self.progress.add(buckets=1, requests=len(requests), edges=sampled)
        yield STATS, out.stats
        for shard_piece in out.edges_by_shard:
            yield "edges", shard_piece
        for bucket_piece in out.reached_by_bucket:
            yield "reached", bucket_piece


class SampleHop(beam.PTransform):
    """{"requests": (bucket, Requests), "adjacency": (bucket, AdjacencyBucket)}
    -> {"edges", "reached", "stats"} (see the module docstring)."""

    def __init__(self, op: PlannedOp, seed: int, num_shards: int, node_buckets: int,
                 emit_reached: bool):
        super().__init__()
        self.sample = _SampleBuckets(op, seed, num_shards, node_buckets, emit_reached)

    def expand(self, inputs):
        tagged = ({"adjacency": inputs["adjacency"], "requests": inputs["requests"]}
                  | "Join" >> beam.CoGroupByKey()
                  | "Sample" >> beam.ParDo(self.sample))
        return split_tagged(tagged, ("edges", "reached", STATS))
