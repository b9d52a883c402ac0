"""Stage Assemble (sampler.beam.assemble) on a TestPipeline: every shard written, empty too."""
import os

import apache_beam as beam
import numpy as np
from apache_beam.testing.util import assert_that

from sampler.beam.assemble import WriteShards
from sampler.core.buckets import split_by_shard
from sampler.core.pieces import EdgePiece, NodeFeatures, SeedPiece
from sampler.output.files import parse_output
from sampler.output.folder import iter_records
from sampler.plan.plan import build_plan
from sampler.plan.spec import parse_spec_text
from tests.sampler.beam.tiny import S, matches, test_pipeline
from unigraph.schema import LoadedSchema, parse_schema_text

SCHEMA = """
node_sets { key: "paper" value { features { key: "x" value { dtype: DT_FLOAT } }
                                 metadata { filename: "paper.csv" } } }
edge_sets { key: "cites" value { source: "paper" target: "paper"
                                 metadata { filename: "cites.csv" } } }
"""
SPEC = """
seed_op { op_name: "seed" node_set_name: "paper" }
sampling_ops { op_name: "cited" input_op_names: "seed" edge_set_name: "cites" sample_size: 2
               strategy: RANDOM_UNIFORM }
"""


def test_write_shards_writes_one_file_per_shard(tmp_path):
    loaded = LoadedSchema(parse_schema_text(SCHEMA, "s"), "s", ".")
    plan = build_plan(parse_spec_text(SPEC, "spec"), loaded, source="spec")
    output = parse_output(f"{tmp_path}/")
    samples = np.array([1, 2], np.int64)
    seeds = SeedPiece(samples, S("p1", "p2"))
    features = NodeFeatures("paper", S("p1", "p2", "p3"), {"x": np.array([1.0, 2.0, 3.0],
                                                                         np.float32)})
    edges = EdgePiece.from_ids("cites", samples, S("p1", "p2"), S("p3", "p3"), np.arange(2), {})
    num_shards = 3
    with test_pipeline() as p:
        pieces = {
            "seeds": p | "Seeds" >> beam.Create(list(split_by_shard(seeds, num_shards))),
            # Every shard gets all features here; the assembly keeps what its samples reach.
            "features": p | "Features" >> beam.Create([(s, features) for s in range(num_shards)]),
            "edges": p | "Edges" >> beam.Create(list(split_by_shard(edges, num_shards)))}
        stats = pieces | WriteShards(loaded, plan, output, num_shards)
        assert_that(stats | beam.Map(lambda s: s.subgraphs_written) | beam.CombineGlobally(sum),
                    matches([2]))
    files = sorted(os.listdir(tmp_path))
    assert files == [f"samples-0000{i}-of-00003.tfrecord" for i in range(3)]
    records = [r for f in files for r in iter_records(str(tmp_path / f))]
    assert len(records) == 2
