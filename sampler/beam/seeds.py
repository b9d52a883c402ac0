"""Stage: seeds ⋈ the seed node set, the start of every sample.

    Seeds/Number: seed rows grouped by numbering key (whole numbering groups, as many
                  keys as job.seed_numbering_keys), sorted and numbered
                                                            (core.seeds.number_seeds)
                  -> (bucket, Requests)                     (core.seeds.seed_requests)
    Seeds/IdsOnly: the seed set's table cut to its ids, where its features are looked up
                  with the reached nodes' (Nodes/<set>) instead of sent from here
    Seeds/Join:   ⋈ (bucket, NodeTableBucket) of the seed set (core.seeds.join_seeds)
    Seeds/Check:  (tag, payload) pairs, split by tag into the four outputs (beam/tagged.py)
    -> found:    (bucket, Requests)       the first hops' input
       seeds:    (shard, SeedPiece)       to the assembly
       features: (shard, NodeFeatures)    the seeds' own features, to the assembly
                                          (none with the IdsOnly cut)
       stats:    RunStats                 seeds read, missing seeds listed
"""
from __future__ import annotations

import apache_beam as beam
from apache_beam.metrics import Metrics

from sampler.beam.report import METRICS_NAMESPACE, STATS
from sampler.beam.tagged import split_tagged
from sampler.core.node_table import NodeTableBucket, ids_only_table
from sampler.core.pieces import Requests
from sampler.core.seeds import (NUMBERING_GROUP_BITS, join_seeds, number_seeds,
                                 numbering_groups, seed_requests)
from unigraph.beam.shuffle import CoGroupByKey, GroupByKey
from unigraph.beam.steps import DoFn, FlatMap, FlatMapTuple, MapTuple


class _JoinSeeds(DoFn):
    def __init__(self, seed_set: str, num_shards: int, with_features: bool):
        self.seed_set, self.num_shards, self.with_features = seed_set, num_shards, with_features
        self.read = Metrics.counter(METRICS_NAMESPACE, "seeds_read")
        self.missing = Metrics.counter(METRICS_NAMESPACE, "seeds_missing")

    def process(self, element):
        bucket, grouped = element
        requests = Requests.concat(list(grouped["requests"]))
        if len(requests) == 0:
            return
        tables = list(grouped["table"])
        table = tables[0] if tables else ids_only_table(self.seed_set, [])
        join = join_seeds(table, requests, self.num_shards, with_features=self.with_features)
        self.read.inc(join.stats.seeds_read)
        self.missing.inc(join.stats.seeds_missing)
        yield STATS, join.stats
        if len(join.found):
            yield "found", (bucket, join.found)
        for shard_piece in join.seeds_by_shard:
            yield "seeds", shard_piece
        for shard_features in join.features_by_shard:
            yield "features", shard_features


def _ids_only(bucket, table: NodeTableBucket):
    return bucket, NodeTableBucket(table.node_set, table.ids, {})


class JoinSeeds(beam.PTransform):
    """{"table": (bucket, NodeTableBucket) of the seed set, "seeds": SeedBatch}
    -> {"found", "seeds", "features", "stats"} (see the module docstring). Numbered
    requests (link seeds: beam/pairs.py) may come as "requests" instead of "seeds".
    With `with_features=False` the join takes the table's ids alone and "features" is
    empty: the seeds' features are then looked up with the other nodes of their set
    (Nodes/<set>), once per (shard, node) for seeds and reached nodes together."""

    def __init__(self, seed_set: str, num_shards: int, node_buckets: int,
                 numbering_keys: int = 1 << NUMBERING_GROUP_BITS, with_features: bool = True):
        super().__init__()
        self.seed_set, self.num_shards, self.node_buckets = seed_set, num_shards, node_buckets
        self.numbering_keys, self.with_features = numbering_keys, with_features

    def expand(self, inputs):
        node_buckets = self.node_buckets
        requests = inputs["requests"] if "requests" in inputs else (inputs["seeds"]
                    | "Number/Group" >> FlatMap(numbering_groups, self.numbering_keys)
                    | "Number/Gather" >> GroupByKey()
                    | "Number/Split" >> FlatMapTuple(
                        lambda _, parts: seed_requests(number_seeds(list(parts)),
                                                       node_buckets)))
        table = inputs["table"]
        if not self.with_features:  # the join reads ids alone; the lookup sends features
            table = table | "IdsOnly" >> MapTuple(_ids_only)
        tagged = ({"table": table, "requests": requests}
                  | "Join" >> CoGroupByKey()
                  | "Check" >> beam.ParDo(_JoinSeeds(self.seed_set, self.num_shards,
                                                     self.with_features)))
        return split_tagged(tagged, ("found", "seeds", "features", STATS))
