"""The shard encoder writes exactly the bytes of the GraphTensor core's encode_example."""
import numpy as np
import pytest

from sampler.core.assemble import ShardAssembler
from sampler.core.pieces import EdgePiece, NodeFeatures, PairPiece, SeedPiece
from sampler.graph_tensor import encode_example, parse_example
from sampler.output.encoder import encode_shard
from sampler.output.reference import shard_graphs
from sampler.output.schema import sampled_schema
from sampler.plan.plan import build_plan
from sampler.plan.spec import parse_spec_text
from unigraph.columnar.ragged import Ragged
from unigraph.schema import LoadedSchema, parse_schema_text

SCHEMA = """
node_sets { key: "p" value {
  features { key: "f32" value { dtype: DT_FLOAT shape { dim { size: 3 } } } }
  features { key: "f64" value { dtype: DT_DOUBLE } }
  features { key: "flag" value { dtype: DT_BOOL } }
  features { key: "u" value { dtype: DT_UINT32 shape { dim { size: 1 } } } }
  features { key: "big" value { dtype: DT_INT64 } }
  features { key: "name" value { dtype: DT_STRING } }
  features { key: "tokens" value { dtype: DT_INT64 shape { dim { size: -1 } } } }
  features { key: "grid" value { dtype: DT_FLOAT shape { dim { size: -1 } dim { size: 2 } } } }
  metadata { filename: "p.csv" } } }
node_sets { key: "t" value {} }
edge_sets { key: "pp" value { source: "p" target: "p"
  features { key: "w" value { dtype: DT_FLOAT } }
  features { key: "label" value { dtype: DT_STRING shape { dim { size: 2 } } } }
  metadata { filename: "pp.csv" } } }
edge_sets { key: "pt" value { source: "p" target: "t" metadata { filename: "pt.csv" } } }
"""
SPEC = """
seed_op { op_name: "seed" node_set_name: "p" }
sampling_ops { op_name: "h1" input_op_names: "seed" edge_set_name: "pp" sample_size: 9 strategy: RANDOM_UNIFORM }
sampling_ops { op_name: "h2" input_op_names: ["seed", "h1"] edge_set_name: "pt" sample_size: 9 strategy: RANDOM_UNIFORM }
"""


def random_shard(rng, num_samples=12, num_nodes=30, seed_times=None):
    ids = np.array([f"node/{i}".encode() * (1 + i % 3) for i in range(num_nodes)], dtype="S")
    lengths = rng.integers(0, 5, num_nodes)
    tokens = Ragged(rng.integers(-2**40, 2**40, int(lengths.sum())), lengths)
    grid_lengths = rng.integers(0, 3, num_nodes)
    grid = Ragged(rng.normal(size=(int(grid_lengths.sum()), 2)).astype(np.float32), grid_lengths)
    features = NodeFeatures("p", ids, {
        "f32": rng.normal(size=(num_nodes, 3)).astype(np.float32),
        "f64": rng.normal(size=num_nodes) * 1e-40 ** rng.integers(0, 2, num_nodes),
        "flag": rng.integers(0, 2, num_nodes).astype(bool),
        "u": rng.integers(0, 2**32, (num_nodes, 1)).astype(np.uint32),
        "big": rng.integers(-2**62, 2**62, num_nodes),
        "name": np.array([b"" if i % 4 == 0 else b"x" * (i * 7) for i in range(num_nodes)],
                         dtype=object),
        "tokens": tokens, "grid": grid})
    samples = np.arange(num_samples, dtype=np.int64) * 3 + 1
    seeds = SeedPiece(samples, ids[rng.integers(0, num_nodes, num_samples)],
                      None if seed_times is None else seed_times(rng, num_samples))
    n = 80
    edge_samples = samples[rng.integers(0, num_samples - 2, n)]  # the last two have no edges
    pp = EdgePiece.from_ids("pp", edge_samples, ids[rng.integers(0, num_nodes, n)],
                   ids[rng.integers(0, num_nodes, n)], rng.permutation(n).astype(np.int64),
                   {"w": rng.normal(size=n).astype(np.float32),
                    "label": np.array([[b"a", b"bc"]] * n, dtype=object)})
    m = 50
    pt = EdgePiece.from_ids("pt", samples[rng.integers(0, num_samples, m)],
                   ids[rng.integers(0, num_nodes, m)],
                   np.array([f"t{i}".encode() for i in rng.integers(0, 9, m)], dtype="S"),
                   rng.permutation(m).astype(np.int64), {})
    return [seeds], [features], [pp, pt]


SEED_TIMES = {None: None,  # cut-offs of the samples (context/seed_timestamp), if any
              "int64": lambda rng, n: rng.integers(-2**62, 2**62, n),
              "float64": lambda rng, n: rng.normal(size=n) * 1e6}


@pytest.mark.parametrize("times", sorted(SEED_TIMES, key=str))
@pytest.mark.parametrize("seed", range(5))
def test_examples_equal_the_core_encoder_byte_for_byte(seed, times):
    loaded = LoadedSchema(parse_schema_text(SCHEMA, "s"), "s", ".")
    plan = build_plan(parse_spec_text(SPEC, "spec"), loaded, source="spec",
                      has_weight=lambda name: False)
    out_schema = sampled_schema(loaded.schema, plan, times)
    shard, _ = ShardAssembler(plan, loaded.schema).assemble(*random_shard(
        np.random.default_rng(seed), seed_times=SEED_TIMES[times]))
    assert (shard.seed_timestamps is None) == (times is None)
    fast = list(encode_shard(shard))
    reference = [encode_example(graph, out_schema) for _, graph in shard_graphs(shard)]
    assert len(fast) == len(reference) == 12
    assert fast == reference
    assert list(encode_shard(shard, chunk=5)) == reference  # chunk boundaries change nothing
    for record, expected in zip(fast, shard.sample_ids):  # the core parses it back
        graph = parse_example(out_schema, record)
        if times is not None:
            i = int(np.searchsorted(shard.sample_ids, expected))
            value = graph.context["seed_timestamp"][0]
            assert value == (shard.seed_timestamps[i] if times == "int64"
                             else np.float32(shard.seed_timestamps[i]))


LINK_SCHEMA = SCHEMA + """
node_sets { key: "_readout" value {
  features { key: "label" value { dtype: DT_INT64 } }
  features { key: "score" value { dtype: DT_FLOAT shape { dim { size: 2 } } } }
  features { key: "tag" value { dtype: DT_STRING } } } }
edge_sets { key: "_readout/source" value { source: "p" target: "_readout" } }
edge_sets { key: "_readout/target" value { source: "p" target: "_readout" } }
"""
LINK_SPEC = SPEC.replace('seed_op { op_name: "seed" node_set_name: "p" }',
                         'symmetric_link_seed_op { op_name: "seed" }')


@pytest.mark.parametrize("times", [None, "int64", "float64"])
@pytest.mark.parametrize("seed", range(4))
def test_link_examples_equal_the_core_encoder_byte_for_byte(seed, times):
    """Pairs: source node 0, target node 1 (0 when equal), the pair's features on _readout;
    a pair whose endpoint the join did not find is left out; a pair's cut-off (if any) is
    its record's context/seed_timestamp."""
    loaded = LoadedSchema(parse_schema_text(LINK_SCHEMA, "s"), "s", ".")
    plan = build_plan(parse_spec_text(LINK_SPEC, "spec"), loaded, source="spec",
                      has_weight=lambda name: False)
    out_schema = sampled_schema(loaded.schema, plan, times)
    rng = np.random.default_rng(seed)
    [seeds], features, edges = random_shard(rng)
    n = len(seeds)
    targets = features[0].ids[rng.integers(0, len(features[0].ids), n)]
    targets[::4] = seeds.ids[::4]  # some pairs are a node and itself
    pairs = PairPiece(seeds.samples, seeds.ids, targets, {
        "label": rng.integers(0, 2, n), "score": rng.normal(size=(n, 2)).astype(np.float32),
        "tag": np.array([b"t%d" % i for i in range(n)], dtype=object)})
    if times is not None:
        pairs.timestamps = (rng.integers(-50, 50, n) if times == "int64"
                            else rng.normal(size=n) * 1e3)
    found = SeedPiece(np.concatenate([seeds.samples, seeds.samples[1:]]),
                      np.concatenate([seeds.ids, targets[1:]]))  # pair 0's target: missing
    if targets[0] == seeds.ids[0]:
        found = SeedPiece(found.samples[1:], found.ids[1:])
    shard, stats = ShardAssembler(plan, loaded.schema).assemble(
        [found], features, edges, [pairs])
    assert stats.pairs == n and stats.pairs_dropped == 1 and len(shard) == n - 1
    fast = list(encode_shard(shard))
    reference = [encode_example(graph, out_schema) for _, graph in shard_graphs(shard)]
    assert fast == reference
    assert list(encode_shard(shard, chunk=5)) == reference
    for i, record in enumerate(fast):
        graph = parse_example(out_schema, record)
        p_ids = graph.node_sets["p"]["#id"]
        assert p_ids[0] == shard.seed_ids[i] and graph.context["source_id"][0] == p_ids[0]
        target_index = graph.edge_sets["_readout/target"].adjacency.indices("source")[0]
        assert p_ids[target_index] == shard.target_ids[i]
        assert target_index == int(shard.target_ids[i] != shard.seed_ids[i])
        if times is None:
            assert "seed_timestamp" not in graph.context.features
        else:
            assert shard.seed_timestamps[i] == pairs.timestamps[
                np.searchsorted(pairs.samples, shard.sample_ids[i])]
            value = graph.context["seed_timestamp"][0]
            assert value == (shard.seed_timestamps[i] if times == "int64"
                             else np.float32(shard.seed_timestamps[i]))
    if times is not None:
        assert len(shard.seed_timestamps) == len(shard)   # the dropped pair's time went too
