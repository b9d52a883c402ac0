"""Every feature as a tensor (sampler.features through to_hetero_data and SampleDataset):
strings as indices, ragged features as bags with offsets or padded with masks, the same
indices from the command line's folder, the API and DataLoader workers."""
import os

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

torch = pytest.importorskip("torch")
pytest.importorskip("torch_geometric")

from torch_geometric.data import Batch  # noqa: E402
from torch.utils.data import DataLoader  # noqa: E402

from sampler import api  # noqa: E402
from sampler.features import Categorical, FeatureEncoder, FeatureSpec, Numeric  # noqa: E402
from sampler.torch import SampleDataset, Vocabulary, to_hetero_data  # noqa: E402
from tests.conftest import TESTDATA  # noqa: E402
from tests.pipelines.sampled_output import MIXED_SPEC, read_graphs  # noqa: E402

MIXED = os.path.join(TESTDATA, "unigraph", "mixed")


@pytest.fixture(scope="module")
def mixed(sampled_outputs, tmp_path_factory):
    spec = tmp_path_factory.mktemp("features_torch") / "spec.pbtxt"
    spec.write_text(MIXED_SPEC)
    return sampled_outputs["mixed"], api.load_graph(MIXED, str(spec))


@pytest.fixture(scope="module")
def mixed_graph(mixed):
    _, graph = mixed
    return graph, FeatureEncoder.fit(graph), Vocabulary.from_graph(graph)


def bags(values, offsets):
    values, offsets = values.tolist(), offsets.tolist()
    return [values[a:b] for a, b in zip(offsets, offsets[1:] + [len(values)])]


def expected_bags(vocabulary_tokens, ragged):
    index = {t: i + 1 for i, t in enumerate(vocabulary_tokens)}
    return [[index.get(bytes(v), 0) for v in row] for row in ragged.to_list()]


def test_a_record_holds_every_feature_as_a_tensor(mixed):
    folder, _ = mixed
    dataset = SampleDataset(folder, vocabulary=Vocabulary.from_samples(folder))
    encoder = FeatureEncoder.load(folder)
    words_vocabulary = encoder.vocabulary("item", "words").tokens.tolist()
    names = {t: i + 1 for i, t in enumerate(encoder.vocabulary("item", "name").tokens.tolist())}
    graphs = dict(read_graphs(folder))
    for data in dataset:
        graph = graphs[data.seed_id]
        item, features = data["item"], graph.node_sets["item"].features
        assert item.name.dtype == torch.int64
        assert item.name.tolist() == [names.get(bytes(n), 0) for n in features["name"]]
        assert bags(item.words, item.words_offsets) == expected_bags(words_vocabulary,
                                                                     features["words"])
        assert bags(item.tags, item.tags_offsets) == features["tags"].to_list()
        # x: the dense numbers, as without an encoder.
        assert item.x.shape == (graph.node_sets["item"].total_size, 5)
        kind = data["item", "link", "item"].kind
        assert kind.dtype == torch.int64 and len(kind) == graph.edge_sets["link"].total_size
        assert data["item", "link", "item"].edge_attr.shape == (len(kind), 2)


def test_records_collated_by_pyg_keep_their_bags(mixed):
    folder, _ = mixed
    records = list(SampleDataset(folder, vocabulary=Vocabulary.from_samples(folder)))
    batch = Batch.from_data_list(records)
    merged = bags(batch["item"].words, batch["item"].words_offsets)
    assert merged == [bag for r in records for bag in bags(r["item"].words,
                                                          r["item"].words_offsets)]
    bag = torch.nn.EmbeddingBag(5, 3, mode="sum")
    assert bag(batch["item"].words, batch["item"].words_offsets).shape == \
        (batch["item"].num_nodes, 3)


@pytest.mark.filterwarnings("ignore:This DataLoader will create")
@pytest.mark.parametrize("workers", [0, 2])
def test_workers_give_the_same_indices(mixed, workers):
    folder, _ = mixed
    vocabulary = Vocabulary.from_samples(folder)
    alone = {d.seed_id: d for d in SampleDataset(folder, vocabulary=vocabulary)}
    loader = DataLoader(SampleDataset(folder, vocabulary=vocabulary), batch_size=None,
                        num_workers=workers)
    seen = 0
    for data in loader:
        seen += 1
        for key in ("name", "words", "words_offsets", "tags"):
            assert torch.equal(data["item"][key], alone[data.seed_id]["item"][key])
    assert seen == len(alone)


def test_the_api_gives_the_command_lines_indices(mixed):
    folder, graph = mixed
    encoder = FeatureEncoder.fit(graph)
    vocabulary = Vocabulary.from_graph(graph)
    from_files = {d.seed_id: d for d in SampleDataset(folder, vocabulary=vocabulary)}
    for seed_id, data in from_files.items():
        online = to_hetero_data(graph.sample([seed_id]), vocabulary=vocabulary, encoder=encoder)
        for key in ("name", "words", "words_offsets", "tags", "tags_offsets", "x"):
            assert torch.equal(online["item"][key], data["item"][key]), key
        assert torch.equal(online["item", "link", "item"].kind,
                           data["item", "link", "item"].kind)


def test_a_batch_pads_with_a_mask_and_puts_seeds_first(mixed):
    folder, graph = mixed
    spec = FeatureSpec({"item": {"words": Categorical(layout="padded", max_length=3),
                                 "name": Categorical(hash_buckets=16)}})
    encoder = FeatureEncoder.fit(graph, spec)
    vocabulary = Vocabulary.from_graph(graph)
    subgraphs = graph.sample(["i3", "i1", "i2"])
    data = to_hetero_data(subgraphs, vocabulary=vocabulary, encoder=encoder)
    item = data["item"]
    assert item.words.shape == (item.num_nodes, 3) and item.words_mask.dtype == torch.bool
    assert "words_offsets" not in item
    words = encoder.vocabulary("item", "words").tokens.tolist()
    for i, seed in enumerate(["i3", "i1", "i2"]):  # the seeds, first, in subgraph order
        own = [w for w, m in zip(item.words[i].tolist(), item.words_mask[i].tolist()) if m]
        row = expected_bags(words, graph.sample([seed])[0].node_sets["item"]["words"])[0]
        assert own == row[:3]
        assert (item.words[i][~item.words_mask[i]] == 0).all()
    assert item.name.max() < 16
    names = to_hetero_data(subgraphs, vocabulary=vocabulary, encoder=encoder, features="names")
    assert names["item"].score.dtype == torch.float32 and "x" not in names["item"]
    assert names["item"].count.dtype == torch.int64


def test_without_an_encoder_nothing_changes(mixed):
    folder, graph = mixed
    plain = next(iter(SampleDataset(folder, vocabulary=Vocabulary.from_samples(folder),
                                    encoder=None)))
    assert sorted(plain["item"].keys()) == ["batch_size", "input_id", "n_id", "num_nodes", "x"]


@settings(max_examples=15, deadline=None)
@given(st.lists(st.integers(0, 2), min_size=1, max_size=6))
def test_a_batch_holds_each_subgraphs_own_features(mixed_graph, picks):
    """Merged (seeds first, edges moved), each subgraph's nodes keep the bags, indices and
    numbers its own record gets alone."""
    graph, encoder, vocabulary = mixed_graph
    seeds = [["i1", "i2", "i3"][p] for p in picks]
    subgraphs = graph.sample(seeds)
    batch = to_hetero_data(subgraphs, vocabulary=vocabulary, encoder=encoder)
    item = batch["item"]
    owner = item.batch.numpy()
    merged_words = bags(item.words, item.words_offsets)
    merged_tags = bags(item.tags, item.tags_offsets)
    for b, subgraph in enumerate(subgraphs):
        alone = to_hetero_data(subgraph, vocabulary=vocabulary, encoder=encoder)["item"]
        mine = np.flatnonzero(owner == b)
        # The record's node order is kept within its subgraph (its seed first).
        assert item.n_id[mine].tolist() == alone.n_id.tolist()
        assert [merged_words[i] for i in mine] == bags(alone.words, alone.words_offsets)
        assert [merged_tags[i] for i in mine] == bags(alone.tags, alone.tags_offsets)
        assert item.name[mine].tolist() == alone.name.tolist()
        assert torch.equal(item.x[mine], alone.x)


CHAIN = """
seed_op { op_name: "seed" node_set_name: "item" }
sampling_ops { op_name: "links" input_op_names: "seed" edge_set_name: "link"
               sample_size: 2 strategy: RANDOM_UNIFORM }
sampling_ops { op_name: "back" input_op_names: "links" edge_set_name: "linked_by"
               sample_size: 2 strategy: RANDOM_UNIFORM }
"""


@pytest.fixture(scope="module")
def chain(tmp_path_factory):
    spec = tmp_path_factory.mktemp("features_chain") / "spec.pbtxt"
    spec.write_text(CHAIN)
    graph = api.load_graph(MIXED, str(spec))
    encoder = FeatureEncoder.fit(graph, FeatureSpec(
        {"item": {"name": Categorical(hash_buckets=16)}}))
    return graph, encoder


def whole_table(graph, encoder):
    """Every item's encoded features, in table order (what n_id indexes)."""
    table = graph._memory.node_tables["item"]
    return encoder.encode("nodes", "item", table.features)


@pytest.mark.parametrize("disjoint", [False, True])
def test_mini_batches_encode_every_feature(chain, disjoint):
    graph, encoder = chain
    full = whole_table(graph, encoder)
    batch = graph.sample_merged(["i3", "i1"], disjoint=disjoint)
    data = to_hetero_data(batch, encoder=encoder)
    item = data["item"]
    n_id = item.n_id.numpy()
    assert item.name.tolist() == full["name"].values[n_id].tolist()
    every = bags(torch.from_numpy(full["words"].values), torch.from_numpy(full["words"].offsets))
    assert bags(item.words, item.words_offsets) == [every[i] for i in n_id]
    assert item.x.shape == (len(n_id), 5)
    kind = data["item", "rev_link", "item"].kind
    assert kind.dtype == torch.int64 and len(kind) == data["item", "rev_link", "item"].num_edges


@pytest.mark.filterwarnings("ignore:This DataLoader will create")
def test_the_neighbor_loader_encodes_alike_in_its_workers(chain):
    from sampler.torch import NeighborLoader

    graph, encoder = chain
    batches = {}
    for workers in (0, 2):
        loader = NeighborLoader(graph, batch_size=2, num_workers=workers, encoder=encoder)
        batches[workers] = [(b["item"].n_id.tolist(), b["item"].words.tolist(),
                             b["item"].words_offsets.tolist(), b["item"].name.tolist())
                            for b in loader]
    assert batches[0] == batches[2] and len(batches[0]) == 2
    full = whole_table(graph, encoder)
    for n_id, _, _, name in batches[0]:
        assert name == full["name"].values[n_id].tolist()


def test_the_ego_graph_pads_lists_per_slot(chain):
    graph, encoder = chain
    full = whole_table(graph, encoder)
    ego = graph.sample_ego(["i1", "i2"], encoder=encoder)
    every = bags(torch.from_numpy(full["words"].values), torch.from_numpy(full["words"].offsets))
    for hop in ego.hops:
        real = np.flatnonzero(hop.mask)
        words, mask = hop.features["words"], hop.features["words_mask"]
        assert words.shape[0] == len(hop.mask) and mask.dtype == bool
        for row in real:
            assert words[row][mask[row]].tolist() == every[hop.n_id[row]]
        assert not mask[~hop.mask].any() and (hop.features["name"][~hop.mask] == 0).all()
        if hop.edge_set:
            assert "kind" in hop.edge_features


def test_a_dense_feature_named_x_goes_into_x(tmp_path):
    """A numeric feature called `x` (examples/link_tiny's users) is a column of `x` with
    an encoder as without one; indices of that name would take PyG's own: refused."""
    from tests.conftest import REPO_ROOT

    folder = os.path.join(REPO_ROOT, "examples", "link_tiny")
    graph = api.load_graph(folder, os.path.join(folder, "sampling_spec.pbtxt"))
    vocabulary = Vocabulary.from_graph(graph)
    subgraph = graph.sample_pairs(["u0000", "u0001"], ["u0002", "u0003"],
                                  features={"label": np.array([1, 0])})
    plain = to_hetero_data(subgraph, vocabulary=vocabulary)
    encoded = to_hetero_data(subgraph, vocabulary=vocabulary, encoder=FeatureEncoder.fit(graph))
    assert torch.equal(encoded["user"].x, plain["user"].x) and encoded["user"].x.shape[1] == 8
    spec = FeatureSpec({"user": {"x": Numeric(boundaries=[0.0])}})  # indices: by name
    with pytest.raises(Exception, match="feature 'x': PyG reserves that name"):
        to_hetero_data(subgraph, vocabulary=vocabulary,
                       encoder=FeatureEncoder.fit(graph, spec))


def _same_features(a, b, where):
    for set_name in ("item",):
        for key in a[set_name].keys():
            if key in ("batch_size", "input_id", "n_id", "num_nodes", "batch"):
                continue
            assert torch.equal(a[set_name][key], b[set_name][key]), (where, key)
    link = ("item", "link", "item")
    for key in ("kind", "edge_attr", "edge_index"):
        assert torch.equal(a[link][key], b[link][key]), (where, key)


@pytest.mark.filterwarnings("ignore:This DataLoader will create")
@pytest.mark.parametrize("workers", [0, 2])
def test_decoded_batches_encode_as_their_records_do(mixed, workers):
    """SampleDataset(batch_size=...) applies the folder's encoder to the batched
    decoder's columns at once (strings as fixed-width tokens, lists as Ragged of them);
    each batch is what to_hetero_data makes of its records' GraphTensors with the same
    encoder, in the main process and in DataLoader workers."""
    folder, _ = mixed
    vocabulary = Vocabulary.from_samples(folder)
    encoder = FeatureEncoder.load(folder)
    graphs = dict(read_graphs(folder))
    dataset = SampleDataset(folder, batch_size=3, vocabulary=vocabulary)
    loader = DataLoader(dataset, batch_size=None, num_workers=workers)
    seen = 0
    for batch in loader:
        seeds = batch.seed_id
        expected = to_hetero_data([graphs[s] for s in seeds], vocabulary=vocabulary,
                                  encoder=encoder)
        _same_features(batch, expected, seeds)
        assert "words_offsets" in batch["item"] and batch["item"].name.dtype == torch.int64
        seen += len(seeds)
    assert seen == len(graphs)
