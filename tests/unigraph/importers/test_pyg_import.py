"""PyG Data and HeteroData imported: node and edge types, every per-node and per-edge
tensor as a feature, masks as splits, written or sampled from memory alike."""
import numpy as np
import pytest

from unigraph.errors import SamplerError
from unigraph.importers.pyg import from_pyg, is_pyg
from unigraph.schema import feature_shape, load_schema
from unigraph.tables import read_seed_set, read_set

torch = pytest.importorskip("torch", reason="the [torch] extra")
pyg_data = pytest.importorskip("torch_geometric.data", reason="the [torch] extra")


def hetero():
    data = pyg_data.HeteroData()
    data["paper"].x = torch.arange(12, dtype=torch.float32).reshape(4, 3)
    data["paper"].y = torch.tensor([0, 1, 1, 0])
    data["paper"].train_mask = torch.tensor([True, True, False, False])
    data["paper"].test_mask = torch.tensor([False, False, True, True])
    data["paper"].flag = torch.tensor([True, False, True, False])
    data["paper"].half = torch.ones(4, 2, dtype=torch.float16)
    data["author"].num_nodes = 3  # no attribute at all
    data["author", "writes", "paper"].edge_index = torch.tensor([[0, 1, 2], [0, 1, 3]])
    data["author", "writes", "paper"].edge_weight = torch.tensor([0.5, 1.5, 2.0],
                                                                 dtype=torch.float64)
    data["paper", "cites", "paper"].edge_index = torch.tensor([[0, 1], [1, 0]])  # undirected
    data["paper", "to", "author"].edge_index = torch.zeros((2, 0), dtype=torch.long)
    data["author", "to", "author"].edge_index = torch.tensor([[0], [2]])
    return data


def test_hetero_data_becomes_a_schema_with_every_tensor(tmp_path):
    import unigraph

    data = hetero()
    assert is_pyg(data) and not is_pyg({"x": 1})
    unigraph.import_pyg(data, str(tmp_path))
    loaded = load_schema(str(tmp_path))
    schema = loaded.schema
    paper = schema.node_sets["paper"]
    assert {n: (f.dtype, feature_shape(f)) for n, f in paper.features.items()} == {
        "x": (1, (3,)), "y": (9, ()), "flag": (10, ()), "half": (1, (2,))}  # masks: splits
    assert schema.node_sets["author"].metadata.cardinality == 3
    # A relation name shared by two edge types names them by their ends.
    assert {"writes", "cites", "paper__to__author", "author__to__author"} <= set(schema.edge_sets)
    assert "rev_cites" not in schema.edge_sets  # already holds both directions
    assert schema.edge_sets["rev_writes"].source == "paper"
    batch, = read_set(loaded, "nodes", "paper")
    np.testing.assert_array_equal(batch.features["x"], data["paper"].x.numpy())
    np.testing.assert_array_equal(batch.features["flag"], data["paper"].flag.numpy())
    authors, = read_set(loaded, "nodes", "author")
    assert authors.ids.tolist() == [b"0", b"1", b"2"]  # isolated nodes keep their table row
    writes, = read_set(loaded, "edges", "writes")
    np.testing.assert_array_equal(writes.features["edge_weight"], [0.5, 1.5, 2.0])
    assert [s.ids.tolist() for s in read_seed_set(str(tmp_path / "seeds-train.csv"))] == [
        [b"0", b"1"]]
    assert (tmp_path / "seeds-test.csv").exists()


def test_data_is_one_node_set_and_one_edge_set(tmp_path):
    from sampler import api

    data = pyg_data.Data(x=torch.randn(6, 2), y=torch.tensor([0, 1, 0, 1, 0, 1]),
                         edge_index=torch.tensor([[0, 1, 2, 3, 4], [1, 2, 3, 4, 5]]),
                         edge_attr=torch.randn(5, 4))
    graph = from_pyg(data)
    assert set(graph.schema.node_sets) == {"nodes"}
    assert set(graph.schema.edge_sets) == {"edges", "rev_edges"}
    assert graph.seed_set == "nodes" and graph.label == "y" and not graph.splits
    loaded = api.load_graph(data)
    subgraph, = loaded.sample([2], seed=1)
    assert subgraph.node_sets["nodes"]["#id"][0] == b"2"
    assert subgraph.edge_sets["edges"].features["edge_attr"].shape[1] == 4


def test_an_edge_naming_a_node_the_type_does_not_have_is_one_line():
    data = pyg_data.HeteroData()
    data["a"].num_nodes = 2
    data["a", "to", "a"].edge_index = torch.tensor([[0, 1], [1, 5]])
    with pytest.raises(SamplerError, match=r"edge type \('a', 'to', 'a'\): a target: names node 5 "
                                           r"of a node set of 2 nodes"):
        from_pyg(data)


def test_no_reverse_edges_on_request(tmp_path):
    graph = from_pyg(hetero(), reverse_edges=False)
    assert not any(name.startswith("rev_") for name in graph.schema.edge_sets)


def test_load_graph_of_a_folder_finds_its_spec(tmp_path):
    import unigraph
    from sampler import api

    unigraph.import_pyg(hetero(), str(tmp_path / "graph"), format="parquet", fanouts=(2,))
    graph = api.load_graph(str(tmp_path / "graph"))  # the spec beside it
    assert graph.seed_set == "paper"
    with pytest.raises(SamplerError, match="no spec given and no sampling_spec.pbtxt"):
        api.load_graph("examples/link_tiny/graph_schema.pbtxt".replace("link_tiny", "nowhere"))
