"""Stage: one sampling op, Hop/<op>.

    Hop/<op>/Join:   (bucket, Requests) ⋈ (bucket, AdjacencyBucket) of the op's edge set
    Hop/<op>/Sample: core.hop.hop_bucket on every joined bucket, (tag, payload) pairs
    Hop/<op>/Edges, /Reached, /Stats: the pairs split by tag (beam/tagged.py)
    -> edges:   (shard, EdgePiece)   to the assembly
       reached: (bucket, Requests)   to later ops and the feature lookup (only if needed)
       stats:   RunStats             edges sampled by the op
  With hubs apart (an edge set whose long rows travel as chunks, core.hubs), Sample also
  sends a hub's requests on (tags "chunked", "merged"), and:
    Hop/<op>/Hubs/Chunks/Join, /Sample: (chunk key, (chunk, Requests)) ⋈ (chunk key,
        [(chunk, AdjacencyBucket)]) -> (shard, ChunkDraws): each chunk's k best
        (core.hop.sample_chunk)
    Hop/<op>/Hubs/Merge/Join, /Merge: (shard, hub Requests) ⋈ (shard, ChunkDraws) -> the
        k best of all chunks per request (core.hop.merge_chunks), flattened with Sample's
"""
from __future__ import annotations

import apache_beam as beam
from apache_beam.metrics import Metrics

from sampler.beam.report import METRICS_NAMESPACE, STATS
from sampler.beam.tagged import split_tagged
from sampler.core.adjacency import build_adjacency
from sampler.core.hop import hop_bucket, merge_chunks, sample_chunk
from sampler.core.hubs import by_chunk, route_requests
from sampler.core.pieces import Requests
from sampler.job.progress import Progress
from sampler.plan.plan import PlannedOp
from unigraph.beam.shuffle import CoGroupByKey
from unigraph.beam.steps import DoFn, FlatMap


class _SampleBuckets(DoFn):
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
        if adjacency.hubs is not None:  # requests of hubs go to the hubs' chunks
            requests, to_chunks, to_merge = route_requests(requests, adjacency.hubs,
                                                           self.num_shards)
            for keyed in to_chunks:
                yield "chunked", keyed
            for keyed in to_merge:
                yield "merged", keyed
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


class _SampleChunks(DoFn):
    def __init__(self, op: PlannedOp, seed: int, num_shards: int):
        self.op, self.seed, self.num_shards = op, seed, num_shards

    def process(self, element):
        _, grouped = element
        chunks = dict(chunk for listed in grouped["adjacency"] for chunk in listed)
        for chunk_index, parts in by_chunk(grouped["requests"]):
            if chunk_index not in chunks:  # no edge of the hub fell in this chunk
                continue
            pieces, stats = sample_chunk(chunks[chunk_index], chunk_index,
                                         Requests.concat(parts), self.op, self.seed,
                                         self.num_shards)
            yield STATS, stats
            for shard_piece in pieces:
                yield "candidates", shard_piece


class _MergeChunks(DoFn):
    def __init__(self, op: PlannedOp, num_shards: int, node_buckets: int, emit_reached: bool):
        self.op, self.emit_reached = op, emit_reached
        self.num_shards, self.node_buckets = num_shards, node_buckets

    def process(self, element):
        _, grouped = element
        out = merge_chunks(list(grouped["requests"]), list(grouped["candidates"]), self.op,
                           num_shards=self.num_shards, node_buckets=self.node_buckets,
                           emit_reached=self.emit_reached)
        yield STATS, out.stats
        for shard_piece in out.edges_by_shard:
            yield "edges", shard_piece
        for bucket_piece in out.reached_by_bucket:
            yield "reached", bucket_piece


class SampleHop(beam.PTransform):
    """{"requests": (bucket, Requests), "adjacency": (bucket, AdjacencyBucket)}, and for
    an edge set with hubs apart also "chunks": (chunk key, [(chunk, AdjacencyBucket)])
    -> {"edges", "reached", "stats"} (see the module docstring)."""

    def __init__(self, op: PlannedOp, seed: int, num_shards: int, node_buckets: int,
                 emit_reached: bool):
        super().__init__()
        self.op, self.seed, self.num_shards = op, seed, num_shards
        self.node_buckets, self.emit_reached = node_buckets, emit_reached

    def expand(self, inputs):
        tagged = ({"adjacency": inputs["adjacency"], "requests": inputs["requests"]}
                  | "Join" >> CoGroupByKey()
                  | "Sample" >> beam.ParDo(_SampleBuckets(self.op, self.seed, self.num_shards,
                                                          self.node_buckets,
                                                          self.emit_reached)))
        if "chunks" not in inputs:
            return split_tagged(tagged, ("edges", "reached", STATS))
        routed = split_tagged(tagged, ("chunked", "merged"))
        both = (tagged, self._sample_hubs(inputs["chunks"], **routed)) | "Flatten" >> \
            beam.Flatten()
        return split_tagged(both, ("edges", "reached", STATS))

    def _sample_hubs(self, chunks, chunked, merged):
        """Hubs/Chunks/Join, /Sample, Hubs/Merge/Join, /Merge: (tag, payload) pairs as
        _SampleBuckets yields them, for the requests that reached hubs."""
        drawn = ({"adjacency": chunks, "requests": chunked}
                 | "Hubs/Chunks/Join" >> CoGroupByKey()
                 | "Hubs/Chunks/Sample" >> beam.ParDo(_SampleChunks(self.op, self.seed,
                                                                    self.num_shards)))
        candidates = split_tagged(drawn, ("candidates",))["candidates"]
        best = ({"requests": merged, "candidates": candidates}
                | "Hubs/Merge/Join" >> CoGroupByKey()
                | "Hubs/Merge" >> beam.ParDo(_MergeChunks(self.op, self.num_shards,
                                                          self.node_buckets,
                                                          self.emit_reached)))
        # The chunks' counts (edges they left out for link samples) go on with the merge's.
        chunk_stats = drawn | "Hubs/ChunkStats" >> FlatMap(
            lambda element: [element] if element[0] == STATS else [])
        return (best, chunk_stats) | "Hubs/Flatten" >> beam.Flatten()
