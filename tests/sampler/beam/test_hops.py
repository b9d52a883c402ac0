"""Stage Hop/<op> (sampler.beam.hops) on a TestPipeline."""
import apache_beam as beam
import numpy as np
from apache_beam.testing.util import assert_that

from sampler.beam.hops import SampleHop
from sampler.beam.tables import BuildAdjacency
from sampler.core.buckets import split_requests
from sampler.core.pieces import Requests
from sampler.plan import sampling_spec_pb2 as ss
from sampler.plan.plan import PlannedOp
from tests.sampler.beam.tiny import S, cites, matches, test_pipeline

OP = PlannedOp("cited", ("seed",), "cites", "paper", "paper", 1, ss.TOP_K)


def test_sample_hop_outputs_edges_reached_nodes_and_counts():
    requests = Requests.from_ids(np.array([1, 2, 3]), S("p1", "p2", "p4"))  # p4 cites nothing
    with test_pipeline() as p:
        adjacency = p | "Edges" >> beam.Create(cites()) | BuildAdjacency("cites", 3)
        keyed = p | "Requests" >> beam.Create(list(split_requests(requests, 3)))
        out = ({"adjacency": adjacency, "requests": keyed}
               | SampleHop(OP, seed=0, num_shards=2, node_buckets=3, emit_reached=True))
        edges = out["edges"] | "Edges/Rows" >> beam.FlatMap(lambda kv: zip(
            kv[1].samples.tolist(), kv[1].sources.tolist(), kv[1].targets.tolist()))
        # TOP_K 1: p1's heaviest edge is p1->p2 (weight 2); p2 has one edge.
        assert_that(edges, matches([(1, b"p1", b"p2"), (2, b"p2", b"p3")]), label="edges")
        reached = out["reached"] | "Reached" >> beam.FlatMap(
            lambda kv: zip(kv[1].samples.tolist(), kv[1].nodes.tolist()))
        assert_that(reached, matches([(1, b"p2"), (2, b"p3")]), label="reached")
        counts = (out["stats"] | beam.Map(lambda s: s.edges_sampled_per_op["cited"])
                  | beam.CombineGlobally(sum))
        assert_that(counts, matches([2]), label="stats")
