"""to_hetero_data: records and API subgraphs as PyG HeteroData, checked against the
GraphTensors they come from (ids, edges, features, seeds first, link labels)."""
import os

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("torch_geometric")

from torch_geometric.data import Batch  # noqa: E402

from sampler import api  # noqa: E402
from sampler.graph_tensor import (Adjacency, EdgeSet, GraphTensor, NodeSet,  # noqa: E402
                                  add_readout, parse_example)
from sampler.output.folder import iter_records, open_samples  # noqa: E402
from sampler.torch import Vocabulary, to_hetero_data  # noqa: E402
from sampler.torch.vocabulary import integer_ids  # noqa: E402
from tests.conftest import REPO_ROOT  # noqa: E402
from unigraph.errors import SamplerError  # noqa: E402

DEMO = os.path.join(REPO_ROOT, "examples", "mag_tiny")
LINK = os.path.join(REPO_ROOT, "examples", "link_tiny")


def decoded(folder):
    samples = open_samples(folder)
    return samples, [parse_example(samples.schema, r) for path in samples.files
                     for r in iter_records(path)]


def ids(graph, node_set):
    return [bytes(i) for i in graph.node_sets[node_set]["#id"]]


def id_edges(data, vocabulary, edge_type, batch=None):
    """(source id, target id) of every edge, of subgraph `batch` only if given."""
    source, _, target = edge_type
    index = data[edge_type].edge_index.numpy()
    if batch is not None:
        index = index[:, data[source].batch.numpy()[index[0]] == batch]
    return sorted(zip(vocabulary.ids(source, data[source].n_id.numpy()[index[0]]).tolist(),
                      vocabulary.ids(target, data[target].n_id.numpy()[index[1]]).tolist()))


def graph_edges(graph, name):
    edge_set = graph.edge_sets[name]
    source, target = edge_set.adjacency.source_name, edge_set.adjacency.target_name
    return sorted(zip(np.array(ids(graph, source), object)[edge_set.adjacency.source].tolist(),
                      np.array(ids(graph, target), object)[edge_set.adjacency.target].tolist()))


@pytest.fixture(scope="module")
def demo(sampled_outputs):
    folder = sampled_outputs["demo"]
    samples, graphs = decoded(folder)
    return samples, graphs, Vocabulary.from_samples(folder)


def test_one_record(demo):
    samples, graphs, vocabulary = demo
    for graph in graphs[:5]:
        data = to_hetero_data(graph, vocabulary=vocabulary, label="labels")
        paper = data["paper"]
        assert paper.batch_size == 1 and paper.input_id.tolist() == [0]
        assert data.seed_id == graph.context["seed_id"][0].decode()
        assert vocabulary.ids("paper", paper.n_id[:1]).tolist() == [graph.context["seed_id"][0]]
        for name, node_set in graph.node_sets.items():
            if name == "_readout":
                assert name not in data.node_types
                continue
            assert data[name].num_nodes == node_set.total_size
            assert vocabulary.ids(name, data[name].n_id).tolist() == ids(graph, name)
        for name, edge_set in graph.edge_sets.items():
            if name.startswith("_readout"):
                continue
            edge_type = (edge_set.adjacency.source_name, name, edge_set.adjacency.target_name)
            assert data[edge_type].edge_index.dtype == torch.int64
            assert id_edges(data, vocabulary, edge_type) == graph_edges(graph, name)
        # x: the dense numeric features but the label, by name, as float32; y the label.
        features = graph.node_sets["paper"].features
        dense = [n for n in sorted(features) if n not in ("#id", "labels")]
        expected = np.concatenate([np.asarray(features[n], np.float32).reshape(len(paper.y), -1)
                                   for n in dense], axis=1)
        np.testing.assert_array_equal(paper.x.numpy(), expected)
        assert paper.y.tolist() == features["labels"].reshape(-1).tolist()


def test_a_batch_puts_the_seeds_first(demo):
    _, graphs, vocabulary = demo
    batch = graphs[:7]
    data = to_hetero_data(batch, vocabulary=vocabulary, features="names")
    paper = data["paper"]
    seeds = [g.context["seed_id"][0] for g in batch]
    assert paper.batch_size == 7 and paper.input_id.tolist() == list(range(7))
    assert vocabulary.ids("paper", paper.n_id[:7]).tolist() == seeds
    assert paper.batch[:7].tolist() == list(range(7))
    assert data.seed_id == [s.decode() for s in seeds]
    for b, graph in enumerate(batch):
        # A subgraph's nodes, picked by `batch`, are its record's in the record's order:
        # its seed (at the front) first, as in the record.
        for name in data.node_types:
            mine = data[name].batch.numpy() == b
            assert vocabulary.ids(name, data[name].n_id.numpy()[mine]).tolist() == \
                ids(graph, name)
        np.testing.assert_array_equal(paper.feat.numpy()[paper.batch.numpy() == b],
                                      graph.node_sets["paper"]["feat"])
        for edge_type in data.edge_types:
            assert id_edges(data, vocabulary, edge_type, b) == graph_edges(graph, edge_type[1])


def test_records_collate_with_pyg_batch(demo):
    _, graphs, vocabulary = demo
    records = [to_hetero_data(g, vocabulary=vocabulary, input_id=i)
               for i, g in enumerate(graphs[:6])]
    batch = Batch.from_data_list(records)
    assert batch.num_graphs == 6
    seeds = batch["paper"].n_id[batch["paper"].ptr[:-1]]
    assert vocabulary.ids("paper", seeds).tolist() == [g.context["seed_id"][0]
                                                        for g in graphs[:6]]
    assert batch["paper"].input_id.tolist() == list(range(6))


def test_api_subgraphs_and_the_graphs_vocabulary():
    graph = api.load_graph(DEMO, os.path.join(DEMO, "sampling_spec.pbtxt"))
    vocabulary = Vocabulary.from_graph(graph)
    subgraphs = graph.sample(["p03", "nope", "p01"], seed=42)
    data = to_hetero_data(subgraphs, vocabulary=vocabulary)
    assert data["paper"].input_id.tolist() == [0, 2]  # rows of the call; "nope" is missing
    # Codes are positions in the graph's own sorted ids.
    assert data["paper"].n_id[:2].tolist() == np.searchsorted(
        graph.node_ids("paper"), [b"p03", b"p01"]).tolist()
    one = to_hetero_data(subgraphs[0], vocabulary=vocabulary)
    assert torch.equal(one["paper"].x, data["paper"].x[data["paper"].batch == 0])


def test_link_samples_as_link_neighbor_loader_does():
    graph = api.load_graph(LINK, os.path.join(LINK, "sampling_spec.pbtxt"), negatives=2)
    vocabulary = Vocabulary.from_graph(graph)
    pairs = graph.sample_pairs(["u0000", "u0001"], ["u0008", "u0002"], seed=1)
    data = to_hetero_data(pairs, vocabulary=vocabulary,
                          link_edge_type=("user", "follows", "user"))
    store = data["user", "follows", "user"]
    assert store.edge_label.tolist() == pairs.labels.tolist() == [1, 1, 0, 0, 0, 0]
    assert store.input_id.tolist() == pairs.positions.tolist()
    ends = vocabulary.ids("user", data["user"].n_id[store.edge_label_index.reshape(-1)])
    assert ends.reshape(2, -1).T.tolist() == [[s.encode(), t.encode()] for s, t in
                                              zip(data.source_id, data.target_id)]
    assert "edge_index" in store  # the real edges stay beside the labels
    default = to_hetero_data(pairs, vocabulary=vocabulary)
    assert ("user", "link", "user") in default.edge_types


def test_every_kind_of_feature(sampled_outputs):
    samples, graphs = decoded(sampled_outputs["mixed"])
    vocabulary = Vocabulary.from_samples(sampled_outputs["mixed"])
    data = to_hetero_data(graphs, vocabulary=vocabulary, features="names")
    item = data["item"]
    # Dense features by name with their own dtype; strings and ragged ones left out.
    assert item.count.dtype == torch.int64 and item.score.dtype == torch.float32
    assert item.vec.shape == (item.num_nodes, 3)
    assert "name" not in item and "tags" not in item and "words" not in item
    link = data["item", "link", "item"]
    assert link.pos.dtype == torch.int32 and link.pos.shape == (link.edge_index.shape[1], 2)
    assert "kind" not in link
    as_x = to_hetero_data(graphs, vocabulary=vocabulary)
    assert as_x["item"].x.shape == (item.num_nodes, 1 + 1 + 3)  # count, score, vec
    assert as_x["item", "link", "item"].edge_attr.shape == (link.edge_index.shape[1], 2)
    assert data["tag"].num_nodes == sum(g.node_sets["tag"].total_size for g in graphs)


def _int_id_graph():
    graph = GraphTensor.from_pieces(
        node_sets={"n": NodeSet.from_fields(sizes=[3], features={
            "#id": np.array([b"10", b"-2", b"7"], object), "f": np.ones((3, 2), np.float32)})},
        edge_sets={"e": EdgeSet.from_fields(sizes=[2], adjacency=Adjacency.from_indices(
            ("n", [0, 0]), ("n", [1, 2])))})
    return add_readout(graph, "seed", "n")


def test_integer_ids_need_no_vocabulary():
    data = to_hetero_data(_int_id_graph())
    assert data["n"].n_id.tolist() == [10, -2, 7]
    assert data["n", "e", "n"].edge_index.tolist() == [[0, 0], [1, 2]]
    assert integer_ids([b"1", b"007"]) is None and integer_ids(["3", "-4"]).tolist() == [3, -4]


def test_vocabularies():
    growing = Vocabulary()
    assert growing.index("a", ["x", "y", "x"]).tolist() == [0, 1, 0]
    assert growing.index("a", [b"z", b"y"]).tolist() == [2, 1]
    assert growing.ids("a", [2, 0]).tolist() == [b"z", b"x"] and not growing.fixed
    fixed = Vocabulary({"a": ["q", "b", "q"]})
    assert fixed.fixed and fixed.size("a") == 2
    assert fixed.index("a", ["q", "b"]).tolist() == [1, 0]
    with pytest.raises(SamplerError, match="id 'c' is not in the vocabulary"):
        fixed.index("a", ["c"])
    with pytest.raises(SamplerError, match="node set 'b' is not in the vocabulary"):
        fixed.index("b", ["c"])


@pytest.mark.parametrize("call, message", [
    (lambda g: to_hetero_data(g), "its ids are strings ('"),
    (lambda g: to_hetero_data(g, vocabulary=Vocabulary(), label="nope"),
     "label 'nope': no such dense feature on node set 'paper' (it has feat, labels, year)"),
    (lambda g: to_hetero_data(g, vocabulary=Vocabulary(), features="all"),
     "features='all': give one of x, names"),
    (lambda g: to_hetero_data([g, g], vocabulary=Vocabulary(), input_id=[1]),
     "input_id: 1 ids for 2 subgraphs"),
    (lambda g: to_hetero_data([]), "no subgraph to convert"),
])
def test_errors_are_one_line(demo, call, message):
    with pytest.raises(SamplerError) as error:
        call(demo[1][0])
    assert message in str(error.value) and "\n" not in str(error.value)
