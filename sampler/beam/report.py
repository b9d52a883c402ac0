"""Stage: every stage's RunStats merged into one report, written where the driver reads it.

Stages emit their counts on a side output tagged STATS, and the same counts as
Beam metrics in METRICS_NAMESPACE (they show on Dataflow's job page).
"""
from __future__ import annotations

import apache_beam as beam

from sampler.core.stats import RunStats
from sampler.output.files import write_text
from sampler.output.report import to_json

METRICS_NAMESPACE = "sampler"
STATS = "stats"  # the output tag of every stage's RunStats


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
        return (stats | "Flatten" >> beam.Flatten()
                | "Merge" >> beam.CombineGlobally(_MergeStats())
                | "Write" >> beam.Map(lambda merged: write_text(path, to_json(merged)) or merged))
