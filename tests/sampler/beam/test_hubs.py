"""Hubs as chunk elements (beam/tables.py FindHubs, BuildHubChunks; beam/hops.py
Hop/<op>/Hubs) on a TestPipeline: the same edges and counts as the in-memory engine's
chunked rows (core.hop.sample_hop over one adjacency with long rows)."""
import apache_beam as beam
import numpy as np
import pytest
from apache_beam.testing.util import assert_that

from sampler.beam.hops import SampleHop
from sampler.beam.tables import BuildAdjacency
from sampler.core.adjacency import build_adjacency
from sampler.core.buckets import split_requests
from sampler.core.hop import sample_hop
from sampler.core.pieces import Requests
from sampler.plan import sampling_spec_pb2 as ss
from sampler.plan.plan import PlannedOp
from tests.sampler.beam.tiny import S, matches, test_pipeline
from unigraph.columnar.batches import EdgeBatch, row_ids

BUCKETS, SHARDS, CHUNK = 3, 2, 4


def graph() -> list[EdgeBatch]:
    """Two hubs (h1: 30 edges, h2: 9, two of them parallel) and small nodes, in 2 batches."""
    rs = np.random.default_rng(4)
    sources = np.r_[np.full(30, b"h1"), np.full(9, b"h2"), [b"a", b"a", b"b"]].astype("S")
    targets = np.array([b"n%02d" % i for i in rs.integers(0, 25, len(sources))])
    targets[30:32] = b"n07"
    weights = rs.uniform(0.1, 2.0, len(sources))
    half = len(sources) // 2
    return [EdgeBatch("e", sources[:half], targets[:half], row_ids(0, 0, half), weights[:half], {}),
            EdgeBatch("e", sources[half:], targets[half:], row_ids(1, 0, len(sources) - half),
                      weights[half:], {})]


def test_adjacency_with_hubs_apart_names_them_and_ships_their_chunks():
    expected = build_adjacency("e", graph(), chunk_edges=CHUNK)
    lr = expected.long_rows
    want = []
    for i, row in enumerate(lr.rows):
        for c in range(lr.chunk_offsets[i + 1] - lr.chunk_offsets[i]):
            chunk = lr.chunk_offsets[i] + c
            span = slice(lr.chunk_starts[chunk], lr.chunk_ends[chunk])
            want.append((bytes(expected.sources[row]), c, tuple(expected.rows[span].tolist())))
    with test_pipeline() as p:
        built = p | beam.Create(graph()) | BuildAdjacency("e", BUCKETS, CHUNK, hubs_apart=True)
        chunks = built["chunks"] | "Chunks" >> beam.FlatMapTuple(lambda key, listed: [
            (bytes(adj.sources[0]), chunk, tuple(adj.rows.tolist())) for chunk, adj in listed])
        assert_that(chunks, matches(want), label="chunks")
        named = built["adjacency"] | "Hubs" >> beam.FlatMapTuple(
            lambda _, adj: [] if adj.hubs is None else list(zip(adj.hubs[0].tolist(),
                                                                adj.hubs[1].tolist())))
        assert_that(named, matches([(b"h1", 8), (b"h2", 3)]), label="hubs")
        plain = built["adjacency"] | "Plain" >> beam.FlatMapTuple(
            lambda _, adj: adj.sources.tolist())
        assert_that(plain, matches([b"a", b"b"]), label="plain")


@pytest.mark.parametrize("strategy", [ss.RANDOM_UNIFORM, ss.RANDOM_WEIGHTED, ss.TOP_K])
def test_a_hop_over_hub_chunks_draws_what_one_chunked_adjacency_draws(strategy):
    op = PlannedOp("op", ("seed",), "e", "n", "n", 3, strategy)
    samples = np.repeat(np.arange(6, dtype=np.int64), 3)
    nodes = np.tile(S("h1", "h2", "a"), 6)
    requests = Requests.from_ids(samples, nodes)
    drawn = sample_hop(build_adjacency("e", graph(), chunk_edges=CHUNK), requests, op, 9)
    want = list(zip(drawn.edges.samples.tolist(), drawn.edges.sources.tolist(),
                    drawn.edges.rows.tolist()))
    assert len(want) == 6 * (3 + 3 + 2)
    with test_pipeline() as p:
        built = (p | "Edges" >> beam.Create(graph())
                 | BuildAdjacency("e", BUCKETS, CHUNK, hubs_apart=True))
        inputs = {"adjacency": built["adjacency"], "chunks": built["chunks"],
                  "requests": p | "Requests" >> beam.Create(
                      list(split_requests(requests, BUCKETS)))}
        out = inputs | SampleHop(op, seed=9, num_shards=SHARDS, node_buckets=BUCKETS,
                                 emit_reached=True)
        assert_that(out["edges"] | "Rows" >> beam.FlatMap(lambda kv: zip(
            kv[1].samples.tolist(), kv[1].sources.tolist(), kv[1].rows.tolist())),
            matches(want), label="edges")
        assert_that(out["reached"] | "Reached" >> beam.FlatMap(
            lambda kv: zip(kv[1].samples.tolist(), kv[1].nodes.tolist())),
            matches(list(zip(drawn.edges.samples.tolist(), drawn.edges.targets.tolist()))),
            label="reached")
        counts = (out["stats"] | beam.Map(lambda s: (s.draws_per_op.get("op", 0),
                                                     s.draws_at_cap_per_op.get("op", 0),
                                                     s.edges_sampled_per_op.get("op", 0)))
                  | beam.CombineGlobally(lambda rows: tuple(map(sum, zip(*rows)))))
        assert_that(counts, matches([(drawn.draws, drawn.at_cap, len(drawn.edges))]),
                    label="stats")
