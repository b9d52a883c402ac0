"""sampler.dgl, in DGL's own virtualenv (`make dgl`; `make test` runs these there with
--noconftest: they need DGL, torch, numpy, pyarrow and protobuf, nothing more): blocks
laid out as dgl.dataloading's (destinations first among the sources, NID, EID, features
on the first block, labels on the last), a GNN on the blocks gives the seeds what it
gives them on the whole batch, and the loader gives the same batches for any number of
workers. Skipped where DGL is not installed (the project's own virtualenv)."""
import os

import numpy as np
import pytest

dgl = pytest.importorskip("dgl")
torch = pytest.importorskip("torch")

from sampler import api  # noqa: E402
from sampler.dgl import DataLoader, to_blocks  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DEMO = os.path.join(ROOT, "examples", "mag_tiny")
DEMO_SPEC = os.path.join(DEMO, "sampling_spec.pbtxt")
LINK = os.path.join(ROOT, "examples", "link_tiny")


@pytest.fixture(scope="module")
def demo():
    return api.load_graph(DEMO, DEMO_SPEC)


def test_blocks_are_laid_out_as_dgl_dataloading_makes_them(demo):
    batch = demo.sample_merged(demo.node_ids()[[4, 0, 7]], seed=2, epoch=1)
    blocks = to_blocks(batch, label="labels")
    layers = batch.layers()
    assert len(blocks) == batch.num_hops == len(layers)
    memory = demo._memory
    for block, layer in zip(blocks, layers):
        assert block.is_block
        for name in batch.nodes:
            src = block.srcnodes[name].data[dgl.NID]
            dst = block.dstnodes[name].data[dgl.NID]
            assert len(src) == layer.src[name] and len(dst) == layer.dst[name]
            assert torch.equal(src[:len(dst)], dst)  # destinations first among the sources
        for name, edges in batch.edges.items():
            kind = (edges.target_set, f"rev_{name}", edges.source_set)
            count = layer.edges[name]
            assert block.num_edges(kind) == count
            u, v = block.edges(etype=kind, order="eid")
            assert u.tolist() == edges.targets[:count].tolist()
            assert v.tolist() == edges.sources[:count].tolist()
            assert block.edges[kind].data[dgl.EID].tolist() == \
                memory.adjacency[name].rows[edges.positions[:count]].tolist()
    assert blocks[-1].dstnodes["paper"].data[dgl.NID].tolist() == [4, 0, 7]
    table = memory.node_tables["paper"]
    rows = table.positions_of(batch.nodes["paper"].codes)
    assert np.array_equal(blocks[0].srcnodes["paper"].data["feat"].numpy(),
                          table.features["feat"][rows])
    assert blocks[-1].dstnodes["paper"].data["labels"].tolist() == \
        table.features["labels"][rows[:3]].reshape(-1).tolist()


def test_a_gnn_on_the_blocks_gives_the_seeds_what_the_whole_batch_gives(demo):
    from dgl.nn import HeteroGraphConv, SAGEConv

    torch.manual_seed(0)
    batch = demo.sample_merged(demo.node_ids()[:10], seed=3)
    blocks = to_blocks(batch)
    kinds = blocks[0].canonical_etypes
    whole = dgl.heterograph(
        {kind: blocks[0].edges(etype=kind, order="eid") for kind in kinds},
        num_nodes_dict={name: len(n) for name, n in batch.nodes.items()})
    layers = torch.nn.ModuleList(
        HeteroGraphConv({kind[1]: SAGEConv(4, 4, "mean") for kind in kinds}, aggregate="sum")
        for _ in range(batch.num_hops))
    x = {name: torch.randn(len(n), 4) for name, n in batch.nodes.items()}
    with torch.no_grad():
        h = dict(x)
        for layer in layers:  # every layer over every edge of the batch
            out = layer(whole, h)
            h = {**h, **{k: v.tanh() for k, v in out.items()}}
        on_blocks = dict(x)
        for layer, block in zip(layers, blocks):
            src = {k: v[:block.num_src_nodes(k)] for k, v in on_blocks.items()}
            dst = {k: v[:block.num_dst_nodes(k)] for k, v in on_blocks.items()}
            out = layer(block, (src, dst))
            on_blocks = {**dst, **{k: v.tanh() for k, v in out.items()}}
    assert torch.allclose(h["paper"][:10], on_blocks["paper"][:10], atol=1e-6)


def batches(loader):
    found = []
    for input_nodes, output_nodes, blocks in loader:
        found.append(([v.tolist() for v in input_nodes.values()],
                      [v.tolist() for v in output_nodes.values()],
                      [[b.edges(etype=k, order="eid")[0].tolist() for k in b.canonical_etypes]
                       for b in blocks]))
    return found


def test_the_loader_gives_the_same_batches_for_any_number_of_workers(demo):
    alone = DataLoader(demo, batch_size=6, shuffle=True, seed=4, label="labels")
    assert len(alone) == -(-len(demo.node_ids()) // 6)
    first = batches(alone)
    assert batches(DataLoader(demo, batch_size=6, shuffle=True, seed=4, num_workers=2,
                              label="labels")) == first
    assert batches(alone) != first  # the next pass is the next epoch
    seeds = sorted(sum((b[1][0] for b in first), []))
    assert seeds == list(range(len(demo.node_ids())))


def test_link_batches_give_pair_graphs():
    graph = api.load_graph(LINK, os.path.join(LINK, "sampling_spec.pbtxt"), negatives=2)
    loader = DataLoader(graph, os.path.join(LINK, "pairs.csv"), batch_size=16,
                        num_workers=1, seed=1)
    input_nodes, pairs, negatives, blocks = next(iter(loader))
    assert pairs.num_edges() == 16 and negatives.num_edges() == 32
    assert pairs.edata["label"].tolist() == [1] * 16
    assert pairs.num_nodes("user") == blocks[-1].num_dst_nodes("user")
    source, _ = pairs.edges()
    negative_source, _ = negatives.edges()
    assert sorted(negative_source.tolist()) == sorted(source.tolist() * 2)


MIXED = os.path.join(ROOT, "tests", "testdata", "unigraph", "mixed")
CHAIN = """
seed_op { op_name: "seed" node_set_name: "item" }
sampling_ops { op_name: "links" input_op_names: "seed" edge_set_name: "link"
               sample_size: 2 strategy: RANDOM_UNIFORM }
"""


def test_a_feature_spec_gives_every_feature_lists_padded(tmp_path):
    """Categories as indices, lists padded with a mask (node data has a row per node)."""
    from sampler.features import FeatureEncoder

    (tmp_path / "spec.pbtxt").write_text(CHAIN)
    graph = api.load_graph(MIXED, str(tmp_path / "spec.pbtxt"))
    encoder = FeatureEncoder.fit(graph)
    batch = graph.sample_merged(["i1", "i3"])
    blocks = to_blocks(batch, encoder=encoder)
    table = graph._memory.node_tables["item"]
    full = encoder.encode("nodes", "item", table.features)
    lengths = np.diff(np.append(full["words"].offsets, len(full["words"].values)))
    data = blocks[0].srcnodes["item"].data
    n_id = data[dgl.NID].numpy()
    words, mask = data["words"].numpy(), data["words_mask"].numpy()
    assert words.shape[0] == len(n_id) and mask.sum(axis=1).tolist() == lengths[n_id].tolist()
    for row, node in enumerate(n_id):
        start = full["words"].offsets[node]
        assert words[row][mask[row]].tolist() == \
            full["words"].values[start:start + lengths[node]].tolist()
    assert data["name"].tolist() == full["name"].values[n_id].tolist()
    kind = ("item", "rev_link", "item")
    assert blocks[0].edges[kind].data["kind"].dtype == torch.int64
