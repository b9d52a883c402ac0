"""The link pipeline (pairs, negatives of both kinds) keeps the Beam rules: one output
per step, no side input (tests/test_beam_rules.py checks the node pipeline)."""
import os
import shutil

import pytest

from sampler.beam.pipeline import SampleSubgraphs
from sampler.job.job import SamplingJob
from sampler.output.files import parse_output
from sampler.plan.plan import build_plan, with_negatives
from sampler.plan.spec import load_spec
from sampler.plan.timing import time_plan
from tests.conftest import TESTDATA
from tests.sampler.beam.tiny import test_pipeline
from tests.test_beam_rules import _Steps
from unigraph.schema import load_schema

LINK = os.path.join(TESTDATA, "link")


def timed_link_graph(folder):
    """The link graph with node and edge times, and pairs with cut-offs."""
    shutil.copytree(LINK, folder)
    for name in ("users.csv", "follows.csv", "pairs.csv"):
        lines = (folder / name).read_text().splitlines()
        column = "#timestamp" if name != "pairs.csv" else "timestamp"
        (folder / name).write_text("\n".join(
            [lines[0] + f",{column}"] + [f"{line},{i % 4}" for i, line in enumerate(lines[1:])])
            + "\n")
    return str(folder)


@pytest.mark.parametrize("timed", [False, True])
@pytest.mark.parametrize("negatives", [0, 2])
@pytest.mark.parametrize("mode", ["uniform", "degree"])
def test_link_pipeline_has_one_output_per_step_and_no_side_input(tmp_path, negatives, mode,
                                                                  timed):
    graph = timed_link_graph(tmp_path / "graph") if timed else LINK
    loaded = load_schema(graph)
    spec_path = os.path.join(graph, "sampling_spec.pbtxt")
    plan = with_negatives(build_plan(load_spec(spec_path), loaded, source=spec_path),
                          negatives, mode, loaded.schema)
    pairs = os.path.join(graph, "pairs.csv")
    timing = time_plan(loaded, plan, pairs)
    assert (timing is not None and timing.has_cutoffs) == timed
    if timed and negatives:
        assert timing.negative_target_set == "user"
    job = SamplingJob(loaded, plan, pairs,
                      parse_output(f"{tmp_path}/out/"), num_shards=2, node_buckets=3, seed=1,
                      stats_path=str(tmp_path / "stats.json"), time=timing)
    p = test_pipeline()
    _ = p | "Sample" >> SampleSubgraphs(job)
    steps = _Steps()
    p.visit(steps)
    assert not steps.problems, steps.problems
