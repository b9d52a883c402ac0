"""SampleSubgraphs (sampler.beam.pipeline), the whole job, on a TestPipeline.

The CLI tests cover the job through `sample`; this one applies the transform itself
to the hand-made TOP_K graph and checks the stage names a user sees on Dataflow."""
import os

import apache_beam as beam
from apache_beam.pipeline import PipelineVisitor
from apache_beam.testing.util import assert_that

from sampler.beam.pipeline import SampleSubgraphs
from sampler.job.job import SamplingJob
from sampler.output.files import parse_output
from sampler.output.folder import find_shards, iter_records
from sampler.plan.plan import build_plan
from sampler.plan.spec import load_spec
from tests.conftest import TESTDATA
from tests.sampler.beam.tiny import matches, test_pipeline
from unigraph.schema import load_schema

TOPK = os.path.join(TESTDATA, "topk")


class _Labels(PipelineVisitor):
    def __init__(self):
        self.labels = set()

    def enter_composite_transform(self, node):
        self.labels.add(node.full_label)


def test_sample_subgraphs_on_a_test_pipeline(tmp_path):
    loaded = load_schema(TOPK)
    spec_path = os.path.join(TOPK, "sampling_spec.pbtxt")
    plan = build_plan(load_spec(spec_path), loaded, source=spec_path)
    # seeds.csv: u1, u9 (absent), u3, u2, u1 again.
    job = SamplingJob(loaded, plan, os.path.join(TOPK, "seeds.csv"),
                      parse_output(f"{tmp_path}/out/"), num_shards=2, node_buckets=3, seed=42,
                      stats_path=str(tmp_path / "stats.json"))
    os.makedirs(tmp_path / "out")  # the driver (sampler/run.py) prepares it
    p = test_pipeline()
    stats = p | "Sample" >> SampleSubgraphs(job)
    assert_that(stats | "Counts" >> beam.Map(
        lambda s: (s.seeds_read, s.seeds_missing, s.subgraphs_written)), matches([(5, 1, 4)]))
    visitor = _Labels()
    p.visit(visitor)
    assert {"Sample/Seeds", "Sample/Hop/bought", "Sample/Hop/similar", "Sample/Hop/tagged",
            "Sample/Assemble", "Sample/Report"} <= visitor.labels
    p.run().wait_until_finish()
    files = find_shards(str(tmp_path / "out"))
    assert [os.path.basename(f) for f in files] == ["samples-00000-of-00002.tfrecord",
                                                    "samples-00001-of-00002.tfrecord"]
    assert sum(1 for f in files for _ in iter_records(f)) == 4
    assert os.path.exists(tmp_path / "stats.json")
