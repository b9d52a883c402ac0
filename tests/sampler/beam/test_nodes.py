"""Stage Nodes/<set> (sampler.beam.nodes) on a TestPipeline."""
import apache_beam as beam
import numpy as np
from apache_beam.testing.util import assert_that

from sampler.beam.nodes import LookupNodes
from sampler.beam.tables import BuildNodeTable
from sampler.core.buckets import sample_buckets, split_requests
from sampler.core.pieces import Requests
from tests.sampler.beam.tiny import S, matches, papers, test_pipeline


def test_lookup_sends_each_node_once_per_shard():
    samples = np.array([1, 2, 3, 4, 5, 6])
    requests = Requests.from_ids(samples, S("p1", "p1", "p3", "p3", "p3", "gone"))
    shard = {int(s): int(b) for s, b in zip(samples, sample_buckets(samples, 2))}
    expected = {(shard[s], n, float(n[1:])) for s, n in
                zip(samples.tolist(), requests.nodes.tolist()) if n != b"gone"}
    with test_pipeline() as p:
        table = p | "Papers" >> beam.Create(papers()) | BuildNodeTable("paper", 3, [])
        keyed = p | "Requests" >> beam.Create(list(split_requests(requests, 3)))
        out = {"table": table, "requests": keyed} | LookupNodes("paper", num_shards=2)
        rows = out | beam.FlatMap(lambda kv: [(kv[0], i, float(x)) for i, x in zip(
            kv[1].ids.tolist(), kv[1].features["x"])])
        assert_that(rows, matches(list(expected)))
