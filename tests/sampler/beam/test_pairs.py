"""Stages Pairs and Negatives (sampler.beam.pairs, sampler.beam.negatives) on a
TestPipeline, with time cut-offs: they give what the in-memory engine's calls of the
same core functions give, cut-offs included."""
import apache_beam as beam
import numpy as np
import pytest
from apache_beam.testing.util import assert_that

from sampler.beam.negatives import DrawNegatives
from sampler.beam.pairs import NumberPairs
from sampler.core.buckets import sample_buckets
from sampler.core.negatives import Candidates, negatives_in_memory, split_by_draw_group
from sampler.core.pairs import number_pairs, pair_requests
from sampler.plan.plan import DEGREE, UNIFORM, NegativeSampling
from tests.sampler.beam.tiny import S, matches, test_pipeline
from unigraph.columnar.batches import PairBatch


def timed_pairs():
    """Two batches, as two files give them: a pair listed at two cut-offs, a pair listed
    twice at one, a node paired with itself."""
    return [PairBatch(S("u0", "u0", "u2"), S("u1", "u1", "u2"), np.arange(3),
                      {"label": np.array([1, 1, 0])}, np.array([5, 9, 2])),
            PairBatch(S("u3", "u3"), S("u0", "u0"), np.arange(2), {"label": np.array([1, 1])},
                      np.array([7, 7]))]


def test_number_pairs_carries_each_pairs_cutoff_to_its_requests_and_shard():
    batches = timed_pairs()
    numbered = number_pairs(batches)   # one call: every row, whatever its group
    requests = pair_requests(numbered)
    expected_requests = sorted(zip(requests.samples.tolist(), requests.nodes.tolist(),
                                   requests.cutoffs.tolist()))
    shards = sample_buckets(numbered.samples, 2)
    expected_pairs = sorted(zip(shards.tolist(), numbered.samples.tolist(),
                                numbered.sources.tolist(), numbered.targets.tolist(),
                                numbered.timestamps.tolist()))
    assert len(expected_pairs) == 5 and len(expected_requests) == 9
    with test_pipeline() as p:
        out = p | beam.Create(batches) | NumberPairs(num_shards=2, node_buckets=3)
        got = out["requests"] | "Requests" >> beam.FlatMap(
            lambda kv: zip(kv[1].samples.tolist(), kv[1].nodes.tolist(),
                           kv[1].cutoffs.tolist()))
        assert_that(got, matches(expected_requests), label="requests")
        pieces = out["pairs"] | "Pieces" >> beam.FlatMap(
            lambda kv: [(kv[0], *row) for row in zip(
                kv[1].samples.tolist(), kv[1].sources.tolist(), kv[1].targets.tolist(),
                kv[1].timestamps.tolist())])
        assert_that(pieces, matches(expected_pairs), label="pairs")


CANDIDATES = S(*[f"u{i}" for i in range(8)])
TIMES = np.array([0, 9, 3, 1, 6, 2, 8, 4])     # u<i> was created at TIMES[i]


@pytest.mark.parametrize("mode", [UNIFORM, DEGREE])
def test_draw_negatives_at_cutoffs_equals_the_in_memory_step(mode):
    batches = timed_pairs()
    degrees = np.arange(1, 9, dtype=np.float64)
    sampling = NegativeSampling(3, mode)
    node_times = Candidates(CANDIDATES, times=TIMES)
    rows, counts = negatives_in_memory(batches, CANDIDATES,
                                       degrees if mode == DEGREE else None, sampling, 11,
                                       np.dtype(np.int64), node_times=node_times)
    expected = sorted(zip(rows[0].sources.tolist(), rows[0].targets.tolist(),
                          rows[0].features["label"].tolist(), rows[0].timestamps.tolist()))
    time_of = dict(zip(CANDIDATES.tolist(), TIMES.tolist()))
    assert all(time_of[t] <= c for _, t, label, c in expected if label == 0)
    assert counts.after_cutoff > 0
    candidates = list(split_by_draw_group(CANDIDATES, times=TIMES))
    if mode == DEGREE:   # the adjacency's sources with degrees, and the table's times
        candidates += list(split_by_draw_group(CANDIDATES[::-1], degrees[::-1]))
    with test_pipeline() as p:
        out = ({"pairs": p | "Pairs" >> beam.Create(batches),
                "candidates": p | "Candidates" >> beam.Create(candidates)}
               | DrawNegatives(sampling, 11, node_buckets=3, label_dtype=np.dtype(np.int64),
                               time_dtype="int64"))
        got = out["pairs"] | "Rows" >> beam.FlatMap(
            lambda b: zip(b.sources.tolist(), b.targets.tolist(),
                          b.features["label"].tolist(), b.timestamps.tolist()))
        assert_that(got, matches(expected), label="rows")
        late = (out["stats"] | "Late" >> beam.Map(lambda s: (0, s.negatives_after_cutoff))
                | "Sum" >> beam.CombinePerKey(sum) | beam.Values())
        assert_that(late, matches([counts.after_cutoff]), label="late")
