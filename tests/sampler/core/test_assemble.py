"""Subgraph assembly: canonical order, each node and edge once, dangling edges counted."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as hs

from sampler.core import assemble
from sampler.core.assemble import ShardAssembler
from sampler.core.pieces import EdgePiece, NodeFeatures, SeedPiece
from sampler.output.encoder import encode_shard
from sampler.output.reference import shard_graphs
from sampler.plan.plan import build_plan
from sampler.plan.spec import parse_spec_text
from unigraph.schema import LoadedSchema, parse_schema_text

SCHEMA = """
node_sets { key: "p" value { features { key: "x" value { dtype: DT_INT64 } }
                             metadata { filename: "p.csv" } } }
node_sets { key: "a" value {} }
edge_sets { key: "pp" value { source: "p" target: "p" metadata { filename: "pp.csv" } } }
edge_sets { key: "pa" value { source: "p" target: "a" metadata { filename: "pa.csv" } } }
"""
SPEC = """
seed_op { op_name: "seed" node_set_name: "p" }
sampling_ops { op_name: "h1" input_op_names: "seed" edge_set_name: "pp" sample_size: 5 strategy: RANDOM_UNIFORM }
sampling_ops { op_name: "h2" input_op_names: ["seed", "h1"] edge_set_name: "pp" sample_size: 5 strategy: RANDOM_UNIFORM }
sampling_ops { op_name: "h3" input_op_names: ["h1"] edge_set_name: "pa" sample_size: 5 strategy: RANDOM_UNIFORM }
"""


def S(*ids):
    return np.array(ids, dtype="S")


@pytest.fixture
def assembler():
    loaded = LoadedSchema(parse_schema_text(SCHEMA, "s"), "s", ".")
    plan = build_plan(parse_spec_text(SPEC, "spec"), loaded, source="spec",
                      has_weight=lambda name: False)
    return ShardAssembler(plan, loaded.schema)


def seeds_of(samples, ids):
    return SeedPiece(np.array(samples), S(*ids))


def p_features(ids, x):
    return NodeFeatures("p", S(*ids), {"x": np.array(x)})


def edges(edge_set, samples, sources, targets, rows):
    return EdgePiece.from_ids(edge_set, np.array(samples), S(*sources), S(*targets),
                              np.array(rows), {})


def test_seed_first_then_ids_and_each_node_once(assembler):
    seeds = seeds_of([7, 3], ["m", "k"])
    # Features arrive once per node (two pieces may repeat a node: the seed join and a hop).
    features = [p_features(["m", "k"], [13, 11]), p_features(["z", "b", "m", "a"], [26, 2, 13, 1])]
    # Sample 7 reaches z, b, m (itself, via z) and z again (h2); sample 3 reaches a.
    hops = [edges("pp", [7, 7, 7, 3], ["m", "m", "z", "k"], ["z", "b", "m", "a"], [5, 1, 9, 4]),
            # h2 samples edge row 5 again for sample 7: it must appear once.
            edges("pp", [7], ["m"], ["z"], [5])]
    shard, stats = assembler.assemble([seeds], features, hops)
    graphs = list(shard_graphs(shard))
    assert [sid for sid, _ in graphs] == [3, 7]  # ascending sample id
    g = dict(graphs)[7]
    assert g.node_sets["p"]["#id"].tolist() == [b"m", b"b", b"z"]
    assert g.node_sets["p"]["x"].tolist() == [13, 2, 26]
    pp = g.edge_sets["pp"].adjacency
    # Edges by (source index, target index, row): m->b (0,1), m->z (0,2), z->m (2,0).
    assert pp.indices("source").tolist() == [0, 0, 2]
    assert pp.indices("target").tolist() == [1, 2, 0]
    assert g.context["seed_id"].tolist() == [b"m"]
    readout = g.edge_sets["_readout/seed"].adjacency
    assert readout.indices("source").tolist() == [0] and readout.indices("target").tolist() == [0]
    assert stats.subgraphs == 2 and stats.nodes["p"] == [2, 3] and stats.edges["pp"] == [1, 3]
    g.validate()


def test_unreached_sets_are_empty_and_featureless_sets_have_ids(assembler):
    seeds = seeds_of([1], ["s"])
    hops = [edges("pa", [1, 1], ["s", "s"], ["y", "x"], [0, 1])]
    (sid, g), = list(shard_graphs(assembler.assemble([seeds], [p_features(["s"], [5])], hops)[0]))
    assert g.node_sets["a"]["#id"].tolist() == [b"x", b"y"]
    assert g.edge_sets["pa"].adjacency.indices("target").tolist() == [0, 1]
    assert g.edge_sets["pp"].sizes.tolist() == [0]
    assert g.node_sets["p"]["x"].dtype == np.int64


def test_dangling_edges_are_dropped_and_counted(assembler):
    seeds = seeds_of([1], ["s"])
    # The edge s->gone was sampled, but 'gone' is absent from p's table (no features).
    hops = [edges("pp", [1], ["s"], ["gone"], [3])]
    shard, stats = assembler.assemble([seeds], [p_features(["s"], [5])], hops)
    (_, g), = list(shard_graphs(shard))
    assert g.node_sets["p"]["#id"].tolist() == [b"s"]
    assert g.edge_sets["pp"].sizes.tolist() == [0]
    assert stats.dangling_edges == {"pp": 1} and stats.nodes_missing == {"p": 1}


def test_no_seeds_gives_nothing(assembler):
    shard, stats = assembler.assemble([], [], [])
    assert list(shard_graphs(shard)) == [] and list(encode_shard(shard)) == [] and stats.subgraphs == 0


def test_pair_key_sorts_like_the_triple_both_ways():
    rng = np.random.default_rng(0)
    ranks, sources, targets = (rng.integers(-1, 4, 200) for _ in range(3))
    ranks = np.abs(ranks)
    packed = assemble._pair_key(ranks, sources, targets)
    expected = np.lexsort((targets, sources, ranks))
    assert np.array_equal(np.sort(packed[expected]), packed[expected])  # same order
    huge = ranks * 0 + 2**40  # too wide to pack: the dense-rank path
    dense = assemble._pair_key(huge + ranks, sources * 2**20, targets * 2**20)
    assert np.array_equal(np.argsort(dense, kind="stable"),
                          np.lexsort((targets, sources, ranks)))
    # Equal triples share a key, so a later sort by row still breaks their ties.
    same = (ranks[:, None] == ranks) & (sources[:, None] == sources) & (targets[:, None] == targets)
    assert np.array_equal(same, dense[:, None] == dense)


@settings(max_examples=100, deadline=None)
@given(hs.lists(hs.tuples(hs.integers(0, 5), hs.integers(0, 3)), max_size=60))
def test_sort_pairs_orders_like_lexsort(items):
    pair = np.array([p for p, _ in items], np.int64)
    positions = np.array([q for _, q in items], np.int32)
    order = assemble._sort_pairs(pair, positions)
    expected = np.lexsort((positions, pair))
    assert list(zip(pair[order], positions[order])) == list(zip(pair[expected],
                                                                positions[expected]))
