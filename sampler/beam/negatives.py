"""Stage: negatives for link seeds, drawn before the pairs are numbered (core.negatives).

    Negatives/Groups:  candidate targets by draw group (ids, degrees or node times)
                       -> DrawGroup
    Negatives/Totals:  every group's total weight (a few KB), sent to every source bucket
                       (a keyed join, not a side input: docs/architecture.md, Beam rules)
    Negatives/BySource: the pairs by source bucket (all rows of a source together)
    Negatives/Draw:    each row's draws, keyed by the draw group they land in
    Negatives/Resolve: draws ⋈ their group -> target ids, back to their source bucket
    Negatives/Choose:  rows ⋈ their resolved draws -> rows with label 1 and negatives
                       with label 0 (the first draw that is no known positive)
    -> {"pairs": PairBatch, "stats": RunStats}
"""
from __future__ import annotations

import apache_beam as beam

from sampler.core.buckets import split_batch, split_by_bucket
from sampler.core.negatives import (Draws, GroupTotals, build_draw_group, choose_negatives,
                                    concat_pairs, draw_negatives, negative_stats,
                                    resolve_draws)
from sampler.plan.plan import NegativeSampling
from unigraph.columnar.batches import PairBatch
from unigraph.beam.shuffle import CoGroupByKey, GroupByKey
from unigraph.beam.steps import FlatMap, MapTuple


def _concat(batches) -> PairBatch:
    return concat_pairs(list(batches))


class DrawNegatives(beam.PTransform):
    """{"pairs": PairBatch, "candidates": (draw group, Candidates)}
    -> {"pairs": PairBatch (positives and negatives, labelled), "stats": RunStats}.

    `time_dtype` (the job's time type): the candidates include the paired set's node
    times, and a negative's target must not be later than its row's cut-off."""

    def __init__(self, sampling: NegativeSampling, seed: int, node_buckets: int, label_dtype,
                 time_dtype: str | None = None):
        super().__init__()
        self.sampling, self.seed, self.node_buckets = sampling, seed, node_buckets
        self.label_dtype, self.time_dtype = label_dtype, time_dtype

    def expand(self, inputs):
        sampling, seed, label_dtype = self.sampling, self.seed, self.label_dtype
        node_buckets, time_dtype = self.node_buckets, self.time_dtype
        groups = (inputs["candidates"]
                  | "Groups/Gather" >> GroupByKey()
                  | "Groups/Build" >> MapTuple(
                      lambda g, parts: (g, build_draw_group(g, list(parts), sampling.mode,
                                                            time_dtype))))
        keyed_totals = groups | "Totals/Key" >> MapTuple(
            lambda g, group: (0, (g, group.total)))
        # One neutral element, so that the totals exist without any candidate.
        neutral = groups.pipeline | "Totals/None" >> beam.Create([(0, None)])
        totals = ((keyed_totals, neutral)
                  | "Totals/Flatten" >> beam.Flatten()
                  | "Totals/Gather" >> GroupByKey()
                  | "Totals/Sum" >> MapTuple(lambda _, pairs: GroupTotals.of(
                      [p for p in pairs if p is not None], sampling.mode))
                  | "Totals/ToBuckets" >> FlatMap(
                      lambda t: ((bucket, t) for bucket in range(node_buckets))))
        by_source = (inputs["pairs"]
                     | "BySource/Split" >> FlatMap(split_batch, "sources", node_buckets)
                     | "BySource/Gather" >> GroupByKey()
                     | "BySource/Join" >> MapTuple(lambda b, parts: (b, _concat(parts))))

        def draw(element):
            bucket, grouped = element
            for batch in grouped["rows"]:  # one per bucket that has rows
                draws = draw_negatives(batch, sampling, list(grouped["totals"])[0], seed)
                for group, positions in split_by_bucket(draws.group):
                    yield group, (bucket, draws.take(positions))

        def resolve(element):
            group_index, grouped = element
            built = list(grouped["group"])
            for bucket, draws in grouped["draws"]:
                yield bucket, resolve_draws(built[0], draws)

        def choose(element):
            _, grouped = element
            rows = list(grouped["rows"])
            if not rows:
                return
            chosen, counts = choose_negatives(rows[0], Draws.concat(list(grouped["draws"])),
                                              sampling, label_dtype)
            yield chosen, negative_stats(counts)

        draws = ({"rows": by_source, "totals": totals}
                 | "Draw/Join" >> CoGroupByKey()
                 | "Draw/Draws" >> FlatMap(draw))
        resolved = ({"group": groups, "draws": draws}
                    | "Resolve/Join" >> CoGroupByKey()
                    | "Resolve/Targets" >> FlatMap(resolve))
        chosen = ({"rows": by_source, "draws": resolved}
                  | "Choose/Join" >> CoGroupByKey()
                  | "Choose/Pick" >> FlatMap(choose))
        return {"pairs": chosen | "Pairs" >> MapTuple(lambda batch, _: batch),
                "stats": chosen | "Stats" >> MapTuple(lambda _, stats: stats)}
