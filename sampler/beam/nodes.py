"""Stage: the features of the nodes the samples reached, Nodes/<set>.

The requests are those of every op that reaches the set and, for the seed set, the
seeds themselves (beam/seeds.py joins the seeds with ids alone): a node is sent once
per output shard that needs it, whether it is a seed there, a reached node, or both.

    Nodes/<set>/Distinct: each element's requests cut to one per (output shard, node)
                        (core.node_table.lookup_requests: all the lookup reads)
    Nodes/<set>/Join:   (bucket, Requests) ⋈ (bucket, NodeTableBucket)
    Nodes/<set>/Lookup: core.node_table.features_by_shard
    -> (shard, NodeFeatures): each node's features once per output shard that needs them
"""
from __future__ import annotations

import apache_beam as beam
from apache_beam.metrics import Metrics

from sampler.beam.report import METRICS_NAMESPACE
from sampler.core.node_table import features_by_shard, ids_only_table, lookup_requests
from sampler.core.pieces import Requests
from unigraph.beam.shuffle import CoGroupByKey
from unigraph.beam.steps import DoFn, MapTuple


class _Lookup(DoFn):
    def __init__(self, node_set: str, num_shards: int):
        self.node_set, self.num_shards = node_set, num_shards
        self.missing = Metrics.counter(METRICS_NAMESPACE, f"nodes_missing/{node_set}")

    def process(self, element):
        _, grouped = element
        requests = Requests.concat(list(grouped["requests"]))
        if len(requests) == 0:
            return
        tables = list(grouped["table"])
        table = tables[0] if tables else ids_only_table(self.node_set, [])
        shard_features, absent = features_by_shard(table, requests, self.num_shards)
        if len(absent):
            # Counted in the report by the assembly (nodes_missing_from_tables).
            self.missing.inc(len(absent))
        yield from shard_features


class LookupNodes(beam.PTransform):
    """{"requests": (bucket, Requests), "table": (bucket, NodeTableBucket)}
    -> (shard, NodeFeatures)."""

    def __init__(self, node_set: str, num_shards: int):
        super().__init__()
        self.num_shards = num_shards
        self.lookup = _Lookup(node_set, num_shards)

    def expand(self, inputs):
        num_shards = self.num_shards
        # Samples do not matter to the lookup, only which shards want which nodes: a
        # node reached by many samples of a shard is shuffled once, not once per sample.
        requests = inputs["requests"] | "Distinct" >> MapTuple(
            lambda bucket, r: (bucket, lookup_requests(r, num_shards)))
        return ({"table": inputs["table"], "requests": requests}
                | "Join" >> CoGroupByKey()
                | "Lookup" >> beam.ParDo(self.lookup))
