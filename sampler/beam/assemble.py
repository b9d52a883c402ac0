"""Stage: every piece of one output shard -> one TFRecord file, Assemble/<...>.

    Assemble/Join:  (shard, SeedPiece | NodeFeatures | EdgePiece), one group per shard
    Assemble/Write: output.shards.write_shard (assemble, encode, write atomically)
    -> RunStats of every shard
"""
from __future__ import annotations

import apache_beam as beam
from apache_beam.metrics import Metrics

from sampler.beam.report import METRICS_NAMESPACE
from sampler.core.assemble import ShardAssembler
from sampler.job.progress import log_shard
from sampler.output.files import OutputSpec
from sampler.output.shards import ShardChunk, write_shard
from sampler.plan.plan import Plan
from unigraph.schema import LoadedSchema
from unigraph.beam.shuffle import CoGroupByKey
from unigraph.beam.steps import DoFn


class _WriteShard(DoFn):
    def __init__(self, loaded: LoadedSchema, plan: Plan, output: OutputSpec, num_shards: int):
        self.loaded, self.plan, self.output, self.num_shards = loaded, plan, output, num_shards
        self.written = Metrics.counter(METRICS_NAMESPACE, "subgraphs_written")

    def setup(self):
        self.assembler = ShardAssembler(self.plan, self.loaded.schema)

    def process(self, element):
        shard, grouped = element
        chunk = ShardChunk(list(grouped["seeds"]), list(grouped["features"]),
                           list(grouped["edges"]), list(grouped.get("pairs", ())))
        stats, run = write_shard(self.assembler, self.output, shard, self.num_shards, [chunk])
        log_shard(shard, self.num_shards, stats.subgraphs, run.bytes_written / 1e6)
        self.written.inc(stats.subgraphs)
        for kind, counts in (("nodes", stats.nodes), ("edges", stats.edges)):
            for name, values in counts.items():
                dist = Metrics.distribution(METRICS_NAMESPACE, f"{kind}_per_subgraph/{name}")
                for v in values:
                    dist.update(v)
        yield run


class WriteShards(beam.PTransform):
    """{"seeds", "features", "edges"} (and "pairs" for link seeds), each keyed by shard
    -> RunStats per shard.
    Every shard in range(num_shards) is written, an empty one too."""

    def __init__(self, loaded: LoadedSchema, plan: Plan, output: OutputSpec, num_shards: int):
        super().__init__()
        self.num_shards = num_shards
        self.write = _WriteShard(loaded, plan, output, num_shards)

    def expand(self, pieces):
        shards = pieces["seeds"].pipeline | "Shards" >> beam.Create(
            [(i, None) for i in range(self.num_shards)], reshuffle=False)  # the Join spreads
        return ({"shard": shards, **pieces}
                | "Join" >> CoGroupByKey()
                | "Write" >> beam.ParDo(self.write))
