"""Stage: every stage's RunStats merged into one report, written where the driver reads it.

Stages emit their counts as (STATS, RunStats) pairs split off their output
(beam/tagged.py), and the same counts as Beam metrics in METRICS_NAMESPACE (they
show on Dataflow's job page).

The merge is a keyed combine on one constant key, not CombineGlobally: a global
combine's default value is a side input, which Beam's released DaskRunner computes
inside one task (the whole pipeline in one place). A RunStats() joins the inputs so
the merge has one output even when no stage emitted counts.
"""
from __future__ import annotations

import apache_beam as beam

from sampler.core.stats import RunStats
from sampler.output.files import write_text
from sampler.output.report import to_json
from unigraph.beam.steps import Map, MapTuple

METRICS_NAMESPACE = "sampler"
STATS = "stats"  # the tag of every stage's RunStats
_ONE_KEY = 0  # an int: its hash is the same in every worker process (a str's is not)


class _MergeStats(beam.CombineFn):
    def create_accumulator(self):
        return RunStats()

    def add_input(self, accumulator, stats):
        return accumulator.merge(stats)

    def merge_accumulators(self, accumulators):
        result = RunStats()
        for a in accumulators:
            result.merge(a)
        return result

    def extract_output(self, accumulator):
        return accumulator


class MergeReport(beam.PTransform):
    """A tuple of PCollections of RunStats -> one merged RunStats, also written as JSON
    to `path`."""

    def __init__(self, path: str):
        super().__init__()
        self.path = path

    def expand(self, stats):
        path = self.path
        empty = stats[0].pipeline | "Empty" >> beam.Create([(_ONE_KEY, RunStats())])
        keyed = stats | "Flatten" >> beam.Flatten() | "Key" >> Map(lambda s: (_ONE_KEY, s))
        return ((keyed, empty) | "Gather" >> beam.Flatten()
                | "Merge" >> beam.CombinePerKey(_MergeStats())
                | "Write" >> MapTuple(
                    lambda _, merged: write_text(path, to_json(merged)) or merged))
