"""The link pipeline (pairs, negatives of both kinds) keeps the Beam rules: one output
per step, no side input (tests/test_beam_rules.py checks the node pipeline)."""
import os

import pytest

from sampler.beam.pipeline import SampleSubgraphs
from sampler.job.job import SamplingJob
from sampler.output.files import parse_output
from sampler.plan.plan import build_plan, with_negatives
from sampler.plan.spec import load_spec
from tests.conftest import TESTDATA
from tests.sampler.beam.tiny import test_pipeline
from tests.test_beam_rules import _Steps
from unigraph.schema import load_schema

LINK = os.path.join(TESTDATA, "link")


@pytest.mark.parametrize("negatives", [0, 2])
@pytest.mark.parametrize("mode", ["uniform", "degree"])
def test_link_pipeline_has_one_output_per_step_and_no_side_input(tmp_path, negatives, mode):
    loaded = load_schema(LINK)
    spec_path = os.path.join(LINK, "sampling_spec.pbtxt")
    plan = with_negatives(build_plan(load_spec(spec_path), loaded, source=spec_path),
                          negatives, mode, loaded.schema)
    job = SamplingJob(loaded, plan, os.path.join(LINK, "pairs.csv"),
                      parse_output(f"{tmp_path}/out/"), num_shards=2, node_buckets=3, seed=1,
                      stats_path=str(tmp_path / "stats.json"))
    p = test_pipeline()
    _ = p | "Sample" >> SampleSubgraphs(job)
    steps = _Steps()
    p.visit(steps)
    assert not steps.problems, steps.problems
