"""Stage NodeTable/Adjacency/SeedIds (sampler.beam.tables) on a TestPipeline."""
import apache_beam as beam
from apache_beam.testing.util import assert_that

from sampler.beam.tables import BuildAdjacency, BuildNodeTable, IdsFromEdges
from sampler.core.buckets import node_buckets
from tests.sampler.beam.tiny import S, cites, matches, papers, test_pipeline

BUCKETS = 3


def bucket_of(node):
    return int(node_buckets(S(node), BUCKETS)[0])


def test_node_table_buckets_hold_their_nodes_with_features():
    with test_pipeline() as p:
        tables = (p | beam.Create(papers()) | BuildNodeTable("paper", BUCKETS, []))
        rows = tables | beam.FlatMap(lambda kv: [(kv[0], i, float(x)) for i, x in zip(
            kv[1].ids.tolist(), kv[1].features["x"])])
        assert_that(rows, matches([(bucket_of(f"p{i}"), f"p{i}".encode(), float(i))
                                   for i in range(1, 5)]))


def test_adjacency_is_keyed_by_the_source_bucket_in_canonical_order():
    with test_pipeline() as p:
        adjacency = p | beam.Create(cites()) | BuildAdjacency("cites", BUCKETS)
        rows = adjacency | beam.FlatMap(lambda kv: [
            (kv[0], s, t.tolist(), kv[1].rows[lo:hi].tolist())
            for s, lo, hi in zip(kv[1].sources.tolist(), kv[1].row_splits[:-1],
                                 kv[1].row_splits[1:])
            for t in [kv[1].targets[lo:hi]]])
        assert_that(rows, matches([(bucket_of("p1"), b"p1", [b"p2", b"p3"], [1, 0]),
                                   (bucket_of("p2"), b"p2", [b"p3"], [2]),
                                   (bucket_of("p3"), b"p3", [b"p4"], [3])]))


def test_ids_from_edges_are_the_distinct_ends():
    with test_pipeline() as p:
        edges = p | beam.Create(cites())
        tables = {"cites": edges} | IdsFromEdges("paper", BUCKETS, [("cites", "targets")])
        ids = tables | beam.FlatMap(lambda kv: [(kv[0], i) for i in kv[1].ids.tolist()])
        assert_that(ids, matches([(bucket_of(n), n.encode()) for n in ("p2", "p3", "p4")]))
