"""Stage Seeds (sampler.beam.seeds) on a TestPipeline: found seeds go on, missing are counted."""
import apache_beam as beam
import numpy as np
from apache_beam.testing.util import assert_that

from sampler.beam.seeds import JoinSeeds
from sampler.beam.tables import BuildNodeTable
from sampler.core.buckets import sample_buckets
from sampler.core.seeds import number_seeds
from tests.sampler.beam.tiny import S, matches, papers, test_pipeline
from unigraph.columnar.batches import SeedBatch


def test_join_seeds_outputs():
    seeds = SeedBatch(S("p2", "nope", "p2", "p4"), np.array([10, 11, 12, 13], np.int64))
    numbered = number_seeds([seeds])
    sample_of = {}
    for sample_id, node in zip(numbered.samples.tolist(), numbered.nodes.tolist()):
        sample_of.setdefault(node, []).append(sample_id)
    (s10, s12), (s13,) = sample_of[b"p2"], sample_of[b"p4"]
    with test_pipeline() as p:
        table = p | "Papers" >> beam.Create(papers()) | BuildNodeTable("paper", 3, [])
        out = ({"table": table, "seeds": p | "Seeds" >> beam.Create([seeds])}
               | JoinSeeds("paper", num_shards=2, node_buckets=3))
        found = out["found"] | "Found" >> beam.FlatMap(
            lambda kv: zip(kv[1].samples.tolist(), kv[1].nodes.tolist()))
        assert_that(found, matches([(s10, b"p2"), (s12, b"p2"), (s13, b"p4")]), label="found")
        pieces = out["seeds"] | "Pieces" >> beam.FlatMap(
            lambda kv: [(kv[0], s, i) for s, i in zip(kv[1].samples.tolist(), kv[1].ids.tolist())])
        shard = {s: int(sample_buckets(np.array([s]), 2)[0]) for s in (s10, s12, s13)}
        assert_that(pieces, matches([(shard[s10], s10, b"p2"), (shard[s12], s12, b"p2"),
                                     (shard[s13], s13, b"p4")]), label="seeds")
        features = out["features"] | "Features" >> beam.FlatMap(
            lambda kv: [(kv[0], i, float(x)) for i, x in zip(kv[1].ids.tolist(),
                                                             kv[1].features["x"])])
        expected = {(shard[s], n, x) for s, n, x in ((s10, b"p2", 2.0), (s12, b"p2", 2.0),
                                                      (s13, b"p4", 4.0))}
        assert_that(features, matches(list(expected)), label="features")
        counts = (out["stats"] | "Counts" >> beam.Map(
            lambda s: (s.seeds_read, s.seeds_missing, s.missing_seed_ids))
                  | beam.CombineGlobally(lambda rows: (sum(r[0] for r in rows),
                                                       sum(r[1] for r in rows),
                                                       sorted(i for r in rows for i in r[2]))))
        assert_that(counts, matches([(4, 1, ["nope"])]), label="stats")
