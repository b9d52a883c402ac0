"""Stage: link seeds, the rows of a pairs table -> numbered pair samples.

    Pairs/Number:   rows grouped by content, sorted and numbered  (core.pairs.number_pairs)
    Pairs/Requests: each pair's two seed requests, by node bucket (core.pairs.pair_requests)
                    -> JoinSeeds, as node seeds' requests
    Pairs/ByShard:  each pair, by output shard                     -> the assembly
"""
from __future__ import annotations

import apache_beam as beam

from sampler.core.buckets import split_by_shard, split_requests
from sampler.core.pairs import number_pairs, pair_numbering_groups, pair_requests
from sampler.core.seeds import NUMBERING_GROUP_BITS
from unigraph.beam.shuffle import GroupByKey
from unigraph.beam.steps import FlatMap, MapTuple


class NumberPairs(beam.PTransform):
    """PCollection of PairBatch -> {"requests": (bucket, Requests), "pairs": (shard,
    PairPiece)}."""

    def __init__(self, num_shards: int, node_buckets: int,
                 numbering_keys: int = 1 << NUMBERING_GROUP_BITS):
        super().__init__()
        self.num_shards, self.node_buckets = num_shards, node_buckets
        self.numbering_keys = numbering_keys

    def expand(self, batches):
        num_shards, node_buckets = self.num_shards, self.node_buckets
        numbered = (batches
                    | "Number/Group" >> FlatMap(pair_numbering_groups, self.numbering_keys)
                    | "Number/Gather" >> GroupByKey()
                    | "Number/Rank" >> MapTuple(lambda _, parts: number_pairs(list(parts))))
        return {
            "requests": numbered | "Requests" >> FlatMap(
                lambda pairs: split_requests(pair_requests(pairs), node_buckets)),
            "pairs": numbered | "ByShard" >> FlatMap(
                lambda pairs: split_by_shard(pairs, num_shards)),
        }
