"""DGL graphs imported: node and edge types, their data, masks as splits, edges in their
id order; sampled from memory as from the written folder.

DGL's wheels need their own PyTorch, so this file runs in the project's DGL virtualenv,
by `make test-dgl` (part of `make test`), and is skipped elsewhere.
"""
import numpy as np
import pytest

from unigraph.importers.dgl import from_dgl, is_dgl
from unigraph.schema import feature_shape, load_schema
from unigraph.tables import read_seed_set, read_set

dgl = pytest.importorskip("dgl", reason="DGL runs in the `make dgl` virtualenv")
torch = pytest.importorskip("torch")


def heterograph():
    g = dgl.heterograph({
        ("author", "writes", "paper"): (torch.tensor([0, 1, 2, 2]), torch.tensor([0, 1, 3, 4])),
        ("paper", "cites", "paper"): (torch.tensor([0, 1, 4]), torch.tensor([1, 2, 0]))},
        num_nodes_dict={"author": 3, "paper": 5})
    g.nodes["paper"].data["feat"] = torch.arange(10, dtype=torch.float32).reshape(5, 2)
    g.nodes["paper"].data["label"] = torch.tensor([0, 1, 0, 1, 1])
    g.nodes["paper"].data["train_mask"] = torch.tensor([True, True, False, False, True])
    g.nodes["paper"].data["val_mask"] = torch.tensor([False, False, True, False, False])
    g.edges["writes"].data["w"] = torch.tensor([0.5, 1.0, 1.5, 2.0])
    return g


def test_a_heterograph_becomes_tables_and_seeds(tmp_path):
    import unigraph

    g = heterograph()
    assert is_dgl(g) and not is_dgl(object())
    unigraph.import_dgl(g, str(tmp_path))
    loaded = load_schema(str(tmp_path))
    paper = loaded.schema.node_sets["paper"]
    assert {n: feature_shape(f) for n, f in paper.features.items()} == {"feat": (2,),
                                                                        "label": ()}
    batch, = read_set(loaded, "nodes", "paper")
    np.testing.assert_array_equal(batch.features["feat"], g.nodes["paper"].data["feat"].numpy())
    writes, = read_set(loaded, "edges", "writes")
    assert writes.sources.tolist() == [b"0", b"1", b"2", b"2"]  # in edge id order
    np.testing.assert_array_equal(writes.features["w"], [0.5, 1.0, 1.5, 2.0])
    assert "rev_writes" in loaded.schema.edge_sets
    seeds = [b.ids.tolist() for b in read_seed_set(str(tmp_path / "seeds-train.csv"))]
    assert seeds == [[b"0", b"1", b"4"]]
    assert (tmp_path / "seeds-val.csv").exists()


def test_a_homogeneous_bidirected_graph_is_one_symmetric_edge_set():
    g = dgl.to_bidirected(dgl.graph((torch.tensor([0, 1, 2]), torch.tensor([1, 2, 3]))))
    g.ndata["feat"] = torch.ones(4, 3)
    graph = from_dgl(g)
    assert set(graph.schema.node_sets) == {"nodes"} and set(graph.schema.edge_sets) == {"edges"}


def test_sampled_from_memory_as_from_the_written_folder(tmp_path):
    import unigraph
    from sampler import api

    g = heterograph()
    unigraph.import_dgl(g, str(tmp_path / "graph"))
    seeds = ["0", "1", "4"]
    in_memory = api.load_graph(g).sample(seeds, seed=3)
    from_files = api.load_graph(str(tmp_path / "graph")).sample(seeds, seed=3)
    assert [api.to_example(s) for s in in_memory] == [api.to_example(s) for s in from_files]
