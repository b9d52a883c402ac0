"""SamplingSpecBuilder: the specs it writes, its names (one edge set at two hops,
tensorflow/gnn#827), its checks, and a run of a spec it wrote."""
import os

import numpy as np
import pytest

from sampler.plan import sampling_spec_pb2 as ss
from sampler.plan.builder import SamplingSpecBuilder
from sampler.plan.plan import build_plan
from sampler.plan.spec import load_spec, parse_spec_text
from tests.conftest import TESTDATA
from unigraph.errors import SpecError
from unigraph.schema import load_schema

MAG = os.path.join(TESTDATA, "mag")


def _ops(spec):
    return [(o.op_name, list(o.input_op_names), o.edge_set_name, o.sample_size,
             ss.SamplingStrategy.Name(o.strategy)) for o in spec.sampling_ops]


def test_tfgnn_mag_spec_and_the_same_edge_set_at_two_hops():
    builder = SamplingSpecBuilder(load_schema(MAG).schema)
    seed = builder.seed("paper")
    cited = seed.sample(8, "cites")
    authors = builder.join([seed, cited]).sample(4, "written")
    papers = authors.sample(4, "writes")
    authors.sample(2, "affiliated_with", strategy="TOP_K")
    seed.join([cited, papers]).sample(4, "has_topic", op_name="topics")
    # tensorflow/gnn#827: "cites" again, from the papers two hops out, and twice from seed.
    papers.sample(3, "cites", strategy=ss.LATEST_K)
    seed.sample(1, "cites")
    spec = builder.build()
    assert spec.seed_op.op_name == "seed" and spec.seed_op.node_set_name == "paper"
    assert _ops(spec) == [
        ("seed->cites", ["seed"], "cites", 8, "RANDOM_UNIFORM"),
        ("seed+seed->cites->written", ["seed", "seed->cites"], "written", 4, "RANDOM_UNIFORM"),
        ("seed+seed->cites->written->writes", ["seed+seed->cites->written"], "writes", 4,
         "RANDOM_UNIFORM"),
        ("seed+seed->cites->written->affiliated_with", ["seed+seed->cites->written"],
         "affiliated_with", 2, "TOP_K"),
        ("topics", ["seed", "seed->cites", "seed+seed->cites->written->writes"], "has_topic", 4,
         "RANDOM_UNIFORM"),
        ("seed+seed->cites->written->writes->cites", ["seed+seed->cites->written->writes"],
         "cites", 3, "LATEST_K"),
        ("seed->cites#2", ["seed"], "cites", 1, "RANDOM_UNIFORM"),
    ]
    # The text parses back to the same spec, and the plan accepts it.
    again = parse_spec_text(builder.to_text(), "built")
    assert again == spec
    plan = build_plan(again, load_schema(MAG), source="built",
                      has_weight=lambda name: True, has_timestamp=lambda name: True)
    assert [op.edge_set for op in plan.ops].count("cites") == 3


def test_builder_checks_each_call_against_the_schema():
    builder = SamplingSpecBuilder(load_schema(MAG).schema)
    with pytest.raises(SpecError, match="node set 'papers' does not exist"):
        builder.seed("papers")
    seed = builder.seed("paper")
    with pytest.raises(SpecError, match="has a seed op already"):
        builder.seed("paper")
    with pytest.raises(SpecError, match="edge set 'writes' starts at node set 'author', but "
                                        r"Step\(seed -> paper\) reaches 'paper'"):
        seed.sample(2, "writes")
    with pytest.raises(SpecError, match="edge set 'citez' does not exist"):
        seed.sample(2, "citez")
    authors = seed.sample(2, "written")
    with pytest.raises(SpecError, match="reach different node sets"):
        builder.join([seed, authors])
    with pytest.raises(SpecError, match="sample_size must be an int > 0"):
        seed.sample(0, "cites")
    with pytest.raises(SpecError, match="unknown strategy 'LATEST'"):
        seed.sample(1, "cites", strategy="LATEST")
    seed.sample(1, "cites", op_name="mine")
    with pytest.raises(SpecError, match="op name 'mine' is used twice"):
        seed.sample(1, "cites", op_name="mine")
    with pytest.raises(SpecError, match="no seed op"):
        SamplingSpecBuilder().build()


def test_without_a_schema_nothing_is_checked_until_the_plan():
    builder = SamplingSpecBuilder(default_strategy="TOP_K")
    builder.seed("anything").sample(3, "whatever")
    assert _ops(builder.build()) == [("seed->whatever", ["seed"], "whatever", 3, "TOP_K")]


def test_a_written_spec_runs_with_the_same_edge_set_at_two_hops(tmp_path):
    from pipelines import sample, synthetic, synthetic_model
    from tests.pipelines.sampled_output import read_graphs

    graph = synthetic_model.generate(0.001, seed=2)
    folder = str(tmp_path / "graph")
    synthetic.write_graph(graph, folder, "csv", timestamps=True)
    builder = SamplingSpecBuilder(folder)     # a path: build() checks the tables too
    seed = builder.seed("paper")
    cited = seed.sample(3, "cites", strategy="LATEST_K")
    cited.sample(2, "cites")                  # the papers those cite
    spec_path = str(tmp_path / "spec.pbtxt")
    builder.write(spec_path)
    assert len(load_spec(spec_path).sampling_ops) == 2
    out = tmp_path / "out"
    assert sample.main(["--graph", folder, "--spec", spec_path, "--output", f"{out}/",
                        "--seeds", os.path.join(folder, "timed_seeds.csv"), "--quiet",
                        "--engine", "memory", "--workers", "1"]) == 0
    graphs = read_graphs(str(out))
    assert len(graphs) == graph.num_nodes["paper"]
    # Two hops of cites: some subgraph has a cites edge that does not start at the seed.
    assert any((np.asarray(g.edge_sets["cites"].adjacency.indices("source")) > 0).any()
               for _, g in graphs)
