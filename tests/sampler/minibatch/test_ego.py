"""The dense EgoGraph of a chain spec: per hop batch * k_1 * ... * k_i slots, each
parent's children its op's draws (the same draws as the batch), padding masked."""
import os

import numpy as np
import pytest

from sampler import api
from tests.conftest import REPO_ROOT

DEMO = os.path.join(REPO_ROOT, "examples", "mag_tiny")
CHAIN = """
seed_op { op_name: "seed" node_set_name: "paper" }
sampling_ops { op_name: "cites" input_op_names: "seed" edge_set_name: "cites"
               sample_size: 3 strategy: RANDOM_UNIFORM }
sampling_ops { op_name: "authors" input_op_names: "cites" edge_set_name: "written"
               sample_size: 2 strategy: RANDOM_UNIFORM }
sampling_ops { op_name: "papers" input_op_names: "authors" edge_set_name: "writes"
               sample_size: 2 strategy: TOP_K }
"""


@pytest.fixture(scope="module")
def chain(tmp_path_factory):
    spec = tmp_path_factory.mktemp("ego") / "chain.pbtxt"
    spec.write_text(CHAIN)
    return api.load_graph(DEMO, str(spec))


@pytest.mark.parametrize("disjoint", [False, True])
def test_each_slot_holds_its_parents_draws(chain, disjoint):
    ids = chain.node_ids()[[3, 1, 3, 7, 12]]
    ego = chain.sample_ego(ids, seed=5, label="labels", disjoint=disjoint)
    batch = chain.sample_merged(ids, seed=5, disjoint=disjoint)
    roots = 5 if disjoint else 4  # merged: a seed given twice is one root
    sizes = [roots, roots * 3, roots * 6, roots * 12]
    assert [len(h.n_id) for h in ego.hops] == sizes
    assert [h.node_set for h in ego.hops] == ["paper", "paper", "author", "paper"]
    table = chain._memory.node_tables["paper"]
    assert ego.y.tolist() == table.features["labels"][ego.hops[0].n_id].reshape(-1).tolist()
    names = {s: chain.node_ids(s) for s in ("paper", "author")}
    for parent, child in zip(ego.hops, ego.hops[1:]):
        k = child.fanout
        assert (child.n_id[~child.mask] == -1).all() and (child.e_id[~child.mask] == -1).all()
        assert not child.mask.reshape(-1, k)[~parent.mask].any()  # padding has no children
        # Every real slot's edge is one the batch sampled, from its parent to it.
        edges = batch.edges[child.edge_set]
        rows = chain._memory.adjacency[child.edge_set].rows
        sampled = set(zip(
            names[edges.source_set][batch.nodes[edges.source_set].codes[edges.sources]].tolist(),
            names[edges.target_set][batch.nodes[edges.target_set].codes[edges.targets]].tolist(),
            rows[edges.positions].tolist()))
        parents = np.repeat(parent.n_id, k)[child.mask]
        got = set(zip(names[parent.node_set][parents].tolist(),
                      names[child.node_set][child.n_id[child.mask]].tolist(),
                      child.e_id[child.mask].tolist()))
        assert got <= sampled
        if not disjoint:  # a node in two slots has the same children in both
            children = {}
            for p, row in zip(parent.n_id, child.n_id.reshape(-1, k)):
                if p >= 0:
                    assert children.setdefault(p, row.tolist()) == row.tolist()
        features = child.features.get("feat")
        if features is not None:
            assert (features[~child.mask] == 0).all()
    assert ego.hops[1].mask.any() and ego.hops[3].mask.any()


def test_a_spec_that_is_no_chain_is_refused_in_one_line():
    graph = api.load_graph(DEMO, os.path.join(DEMO, "sampling_spec.pbtxt"))
    with pytest.raises(api.SamplerError, match="form a chain .* op 'paper->author' takes"):
        graph.sample_ego(["p01"])
