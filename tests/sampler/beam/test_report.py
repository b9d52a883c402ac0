"""Stage Report (sampler.beam.report) on a TestPipeline: counts merged and written."""
import json

import apache_beam as beam
from apache_beam.testing.util import assert_that

from sampler.beam.report import MergeReport
from sampler.core.stats import Distribution, RunStats
from tests.sampler.beam.tiny import matches, test_pipeline


def create(label, values):
    """The values as a PCollection, made the way stages make them (by a DoFn, untyped):
    beam.Create would infer a schema coder from the dataclass."""
    return label >> (beam.Create(range(len(values))) | beam.Map(lambda i: values[i]))


def test_merge_report_sums_every_stage_and_writes_json(tmp_path):
    path = str(tmp_path / "stats.json")
    dist = Distribution()
    dist.add_all([1, 3])
    with test_pipeline() as p:
        seeds = p | create("Seeds", [RunStats(seeds_read=2, seeds_missing=1,
                                              missing_seed_ids=["b"]), RunStats(seeds_read=3)])
        hops = p | create("Hops", [RunStats(edges_sampled_per_op={"h": 4}),
                                   RunStats(edges_sampled_per_op={"h": 5})])
        shards = p | create("Shards", [RunStats(subgraphs_written=4,
                                                nodes_per_subgraph={"n": dist})])
        merged = (seeds, hops, shards) | MergeReport(path)
        assert_that(merged | beam.Map(lambda s: (s.seeds_read, s.edges_sampled_per_op,
                                                 s.subgraphs_written)),
                    matches([(5, {"h": 9}, 4)]))
    with open(path) as f:
        report = json.load(f)
    assert report["missing_seed_ids"] == ["b"] and report["seeds_missing"] == 1
    assert report["nodes_per_subgraph"]["n"] == {"min": 1, "mean": 2.0, "max": 3, "total": 4}
