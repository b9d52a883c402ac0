"""sampler.torch's mini-batches: HeteroData laid out as PyG's NeighborLoader lays it out
(checked against the graph, and by PyG's own trim_to_layer: a GNN on the trimmed layers
gives the seeds what it gives them on the whole batch), and the loaders: the same
batches for any number of workers, a new order and new draws every epoch, len(),
node and link seeds, a graph store shared with the workers."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("torch_geometric")

from torch_geometric.nn import HeteroConv, SAGEConv  # noqa: E402
from torch_geometric.utils import trim_to_layer  # noqa: E402

from sampler import api  # noqa: E402
from sampler.torch import (LinkNeighborLoader, NeighborLoader,  # noqa: E402
                           merged_to_hetero_data, to_hetero_data)
from tests.conftest import REPO_ROOT  # noqa: E402

DEMO = os.path.join(REPO_ROOT, "examples", "mag_tiny")
DEMO_SPEC = os.path.join(DEMO, "sampling_spec.pbtxt")
LINK = os.path.join(REPO_ROOT, "examples", "link_tiny")


@pytest.fixture(scope="module")
def demo():
    return api.load_graph(DEMO, DEMO_SPEC)


def test_hetero_data_is_laid_out_as_neighbor_loader_lays_it_out(demo):
    ids = demo.node_ids()[[5, 1, 9, 1]]
    batch = demo.sample_merged(ids, seed=4, epoch=1)
    data = to_hetero_data(batch, label="labels", features="names")
    memory = demo._memory
    paper = data["paper"]
    assert paper.batch_size == 3 and paper.input_id.tolist() == [0, 1, 2]
    assert paper.n_id[:3].tolist() == [5, 1, 9]  # the seeds first, positions in node_ids
    table = memory.node_tables["paper"]
    rows = table.positions_of(batch.nodes["paper"].codes)
    assert paper.y.tolist() == table.features["labels"][rows].reshape(-1).tolist()
    assert np.array_equal(paper.feat.numpy(), table.features["feat"][rows])
    assert "labels" not in paper
    for name, nodes in batch.nodes.items():
        store = data[name]
        assert store.num_sampled_nodes == nodes.num_sampled_nodes
        assert len(store.num_sampled_nodes) == batch.num_hops + 1
        assert (demo.node_ids(name)[store.n_id.numpy()]
                == memory.names[name][nodes.codes]).all()
    for name, edges in batch.edges.items():
        kind = (edges.target_set, f"rev_{name}", edges.source_set)
        store = data[kind]
        # Messages flow to the seeds: from the node reached to the node sampled from.
        assert store.edge_index[0].tolist() == edges.targets.tolist()
        assert store.edge_index[1].tolist() == edges.sources.tolist()
        adjacency = memory.adjacency[name]
        assert store.e_id.tolist() == adjacency.rows[edges.positions].tolist()
        assert store.num_sampled_edges == edges.num_sampled_edges
    as_x = merged_to_hetero_data(batch, label="labels")
    assert as_x["paper"].x.shape == (len(rows), 9) and as_x["paper"].x.dtype == torch.float32
    sampled = merged_to_hetero_data(batch, reverse=False)
    edges = batch.edges["cites"]
    assert sampled["paper", "cites", "paper"].edge_index[0].tolist() == edges.sources.tolist()


class GNN(torch.nn.Module):
    """A heterogeneous GraphSAGE of `layers` layers over the batch's edge types, read
    with trim_to_layer or without."""

    def __init__(self, edge_types, layers: int, hidden: int = 8):
        super().__init__()
        self.convs = torch.nn.ModuleList(
            HeteroConv({t: SAGEConv((-1, -1), hidden) for t in edge_types}, aggr="sum")
            for _ in range(layers))

    def forward(self, data, trim: bool):
        x, edge_index = data.x_dict, data.edge_index_dict
        for i, conv in enumerate(self.convs):
            if trim:
                x, edge_index, _ = trim_to_layer(i, data.num_sampled_nodes_dict,
                                                 data.num_sampled_edges_dict, x, edge_index)
            out = conv(x, edge_index)
            x = {**x, **{k: v.tanh() for k, v in out.items()}}
        return x


@pytest.mark.parametrize("disjoint", [False, True])
def test_trim_to_layer_gives_the_seeds_what_the_whole_batch_gives(demo, disjoint):
    torch.manual_seed(0)
    batch = demo.sample_merged(demo.node_ids()[:12], seed=2, disjoint=disjoint)
    data = to_hetero_data(batch)
    for name in data.node_types:  # every node set its own input features
        data[name].x = torch.randn(data[name].num_nodes, 4)
    model = GNN(data.edge_types, batch.num_hops)
    with torch.no_grad():
        model(data, trim=False)  # lazy shapes
        whole = model(data, trim=False)["paper"][:data["paper"].batch_size]
        trimmed = model(data, trim=True)["paper"][:data["paper"].batch_size]
    assert torch.allclose(whole, trimmed, atol=1e-6)
    assert batch.num_hops == 4 and (whole.abs().sum(1) > 0).all()
    if disjoint:
        assert data["paper"].batch[:12].tolist() == list(range(12))


def tensors(data):
    """Every tensor of a HeteroData, by key, as lists (for equality)."""
    found = {}
    for store in data.stores:
        for key, value in store.items():
            found[(getattr(store, "_key", None), key)] = (
                value.tolist() if torch.is_tensor(value) else value)
    return found


def fresh_runs(graph: str, spec: str, runs: list, **load) -> list:
    """Loader runs in a fresh interpreter (tests/sampler/torch/loader_runs.py): there the
    loader forks its workers, whatever this test process has loaded."""
    config = json.dumps({"graph": graph, "spec": spec, "runs": runs, "load": load})
    done = subprocess.run([sys.executable, "-m", "tests.sampler.torch.loader_runs", config],
                          capture_output=True, text=True, cwd=REPO_ROOT, timeout=600,
                          env=dict(os.environ, PYTHONPATH=REPO_ROOT, OMP_NUM_THREADS="1"))
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_the_loader_gives_the_same_batches_for_any_number_of_workers(demo):
    runs = fresh_runs(DEMO, DEMO_SPEC, [
        dict(input=None, batch_size=7, shuffle=True, num_workers=workers, seed=5,
             label="labels", passes=2) for workers in (0, 1, 2)])
    assert runs[0] == runs[1] == runs[2]
    assert runs[0]["len"] == -(-len(demo.node_ids()) // 7)
    first, second = runs[0]["passes"]
    assert first != second  # each pass is a new epoch: a new order and new draws
    # In this process: the same batches, every seed once per epoch.
    here = [[tensors(d) for d in NeighborLoader(demo, batch_size=7, shuffle=True, seed=5,
                                                label="labels")]]
    seeds = [d[("paper", "n_id")][:d[("paper", "batch_size")]] for d in here[0]]
    assert sorted(sum(seeds, [])) == list(range(len(demo.node_ids())))
    assert len(here[0]) == len(first)


def test_persistent_workers_go_on_into_the_next_epoch_with_the_same_batches(demo):
    """Persistent workers make the next epoch's batches ahead (sampler.api.loader's
    EpochStream); a pass stopped midway, or set_epoch naming another epoch, starts them
    again: every pass is the batches of its epoch, as without workers."""
    plan = dict(input=None, batch_size=7, shuffle=True, seed=5, label="labels", passes=4,
                take=[None, 2, None, None], epochs=[None, None, None, 1])
    runs = fresh_runs(DEMO, DEMO_SPEC, [dict(plan, num_workers=0)] + [
        dict(plan, num_workers=workers, persistent_workers=True, prefetch_factor=4)
        for workers in (1, 2)])
    assert runs[0] == runs[1] == runs[2]
    whole, part, after, again = runs[0]["passes"]
    assert len(part) == 2 and again[:2] == part and len(again) == len(whole) == len(after)
    assert whole != after != again  # epochs 0, 2 and 1: new orders and new draws


def test_where_forking_is_unsafe_the_batches_are_made_here(demo, monkeypatch, caplog):
    from sampler.api import loader

    expected = [tensors(d) for d in NeighborLoader(demo, batch_size=9, seed=2)]
    monkeypatch.setattr(loader, "fork_is_safe", lambda: False)
    with caplog.at_level("WARNING", logger="sampler"):
        made = NeighborLoader(demo, batch_size=9, seed=2, num_workers=2,
                              persistent_workers=True)
    assert made.num_workers == 0 and "gRPC" in caplog.text
    assert [tensors(d) for d in made] == expected


def test_set_epoch_replays_an_epoch(demo):
    loader = NeighborLoader(demo, batch_size=16, shuffle=True, seed=1)
    assert loader.epoch == 0
    first = [tensors(d) for d in loader]
    assert loader.epoch == 1
    loader.set_epoch(0)
    assert [tensors(d) for d in loader] == first
    fresh = NeighborLoader(demo, batch_size=16, shuffle=True, seed=1, epoch=1)
    assert [tensors(d) for d in fresh] == [tensors(d) for d in loader]


def test_input_nodes_take_ids_masks_and_tables(demo, tmp_path):
    ids = demo.node_ids()
    mask = np.zeros(len(ids), bool)
    mask[[3, 8, 20]] = True
    by_mask = [tensors(d) for d in NeighborLoader(demo, ("paper", mask), batch_size=5)]
    by_ids = [tensors(d) for d in NeighborLoader(demo, ids[mask], batch_size=5)]
    table = tmp_path / "seeds.csv"
    table.write_text("id\n" + "".join(i.decode() + "\n" for i in ids[mask]))
    by_table = [tensors(d) for d in NeighborLoader(demo, str(table), batch_size=5)]
    assert by_mask == by_ids == by_table
    assert by_ids[0][("paper", "n_id")][:3] == [3, 8, 20]
    with pytest.raises(api.SamplerError, match="not nodes of 'paper'"):
        NeighborLoader(demo, ["p01", "nobody"])
    with pytest.raises(api.SamplerError, match="one value per node"):
        NeighborLoader(demo, mask[:4])


def test_a_graph_store_is_shared_with_the_workers(demo, tmp_path):
    from pipelines import convert

    store = str(tmp_path / "store")
    convert.prepare(DEMO, store, log=lambda line: None)
    options = dict(input=None, batch_size=9, shuffle=True, seed=8)
    [from_store] = fresh_runs(store, DEMO_SPEC, [dict(options, num_workers=2)])
    [from_tables] = fresh_runs(DEMO, DEMO_SPEC, [dict(options, num_workers=0)])
    assert from_store == from_tables


def test_link_loader_gives_link_neighbor_loaders_layout():
    graph = api.load_graph(LINK, os.path.join(LINK, "sampling_spec.pbtxt"), negatives=1)
    pairs = graph.read_seeds(os.path.join(LINK, "pairs.csv"))
    loader = LinkNeighborLoader(graph, pairs, batch_size=32, shuffle=True, seed=3)
    batches = [tensors(d) for d in loader]
    options = dict(batch_size=32, shuffle=True, seed=3, kind="link",
                   input=os.path.join(LINK, "pairs.csv"))
    workers, alone = fresh_runs(LINK, os.path.join(LINK, "sampling_spec.pbtxt"),
                                [dict(options, num_workers=2), dict(options, num_workers=0)],
                                negatives=1)
    assert workers == alone and len(workers["passes"][0]) == len(batches)
    assert len(loader) == -(-len(pairs) // 32)
    inputs = sorted(sum((b[(("user", "link", "user"), "input_id")] for b in batches), []))
    assert inputs == list(range(len(pairs)))
    data = next(iter(loader))
    link = data["user", "link", "user"]
    assert link.edge_label.tolist() == [1] * 32 + [0] * 32
    ends = data["user"].n_id[link.edge_label_index]
    assert ends.shape == (2, 64)
    assert (ends[0, 32:] == ends[0, :32]).all()  # a negative keeps its pair's source
    names = graph.node_ids()
    given = {(s, t) for s, t in zip(pairs.sources.tolist(), pairs.targets.tolist())}
    found = {(names[s], names[t]) for s, t in ends[:, :32].t().tolist()}
    assert found <= given
    # No edge between the ends of a pair of the batch.
    pair_keys = {tuple(e) for e in ends.t().tolist()} | {tuple(e) for e in ends.flip(0).t().tolist()}
    for kind in data.edge_types:
        if "edge_index" in data[kind]:
            n_id = data["user"].n_id
            sampled = {tuple(e) for e in n_id[data[kind].edge_index].t().tolist()}
            assert not sampled & pair_keys
