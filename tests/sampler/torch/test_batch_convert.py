"""batch_to_hetero_data (a decoded batch's columns, seeds moved first in place, ids
looked up once per decoded chunk) against to_hetero_data of the same records parsed one
by one (merged as GraphTensors): the same HeteroData, tensor for tensor and dtype for
dtype, in every feature mode, with labels, on folders with string ids, every kind of
feature, edge features with empty edge sets, and link records with negatives."""
import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("torch_geometric")

from sampler.graph_tensor import parse_example  # noqa: E402
from sampler.graph_tensor.batch_codec import BatchDecoder  # noqa: E402
from sampler.output.batches import SHARD_STRIDE, read_batches  # noqa: E402
from sampler.output.folder import iter_records, open_samples  # noqa: E402
from sampler.torch import Vocabulary, to_hetero_data  # noqa: E402
from sampler.torch.convert import batch_to_hetero_data  # noqa: E402
from tests.sampler.torch.test_dataset import edge_features_folder  # noqa: E402,F401


def same(actual, expected, where="data"):
    if isinstance(expected, dict):
        assert sorted(actual, key=str) == sorted(expected, key=str), where
        for key in expected:
            same(actual[key], expected[key], f"{where}[{key!r}]")
    elif isinstance(expected, torch.Tensor):
        assert actual.dtype == expected.dtype and actual.shape == expected.shape, where
        assert torch.equal(actual, expected), where
        assert actual.is_contiguous(), where
    else:
        assert actual == expected, where


CASES = [("demo", {"label": "labels"}), ("demo", {"features": "names"}),
         ("demo", {}), ("mixed", {"features": "names"}), ("mixed", {}),
         ("link", {}), ("link", {"features": "names"}), ("edges", {}),
         ("edges", {"features": "names"})]


@pytest.mark.parametrize("batch_size", [1, 3, 1000])
@pytest.mark.parametrize("folder, options", CASES)
def test_a_decoded_batch_is_its_records_parsed_one_by_one(sampled_outputs, edge_features_folder,
                                                          folder, options, batch_size):
    path = edge_features_folder if folder == "edges" else sampled_outputs[folder]
    samples = open_samples(path)
    records = {shard * SHARD_STRIDE + i: record for shard, file in enumerate(samples.files)
               for i, record in enumerate(iter_records(file))}
    vocabulary = Vocabulary.from_samples(path)
    batches = list(read_batches(samples.files, range(len(samples.files)),
                                BatchDecoder(samples.schema), batch_size=batch_size))
    assert sum(len(ids) for ids, _ in batches) == len(records)
    for ids, batch in batches:
        graphs = [parse_example(samples.schema, records[i]) for i in ids.tolist()]
        expected = to_hetero_data(graphs, vocabulary=vocabulary, input_id=ids, **options)
        actual = batch_to_hetero_data(batch, vocabulary=vocabulary, input_id=ids, **options)
        same(actual.to_dict(), expected.to_dict())
        # the same batch again: what was derived once for its chunk is not changed
        same(batch_to_hetero_data(batch, vocabulary=vocabulary, input_id=ids,
                                  **options).to_dict(), expected.to_dict())


def test_ids_looked_up_for_a_chunk_are_each_batchs_own(sampled_outputs):
    """n_id of one batch changed in place does not change another's, nor a second
    conversion of its own batch."""
    path = sampled_outputs["demo"]
    samples = open_samples(path)
    vocabulary = Vocabulary.from_samples(path)
    batches = list(read_batches(samples.files, range(len(samples.files)),
                                BatchDecoder(samples.schema), batch_size=2))
    first = [batch_to_hetero_data(b, vocabulary=vocabulary) for _, b in batches]
    for data in first:
        data["author"].n_id.fill_(-1)
    again = [batch_to_hetero_data(b, vocabulary=vocabulary) for _, b in batches]
    assert all((data["author"].n_id >= 0).all() for data in again)
    assert np.array_equal(np.concatenate([d["author"].n_id.numpy() for d in again]),
                          vocabulary.index("author", np.concatenate([
                              b.node_sets["author"].features["#id"].fixed
                              for _, b in batches])))


def laid_out(graphs, vocabulary, label=None):
    """PyG's layout of parsed records, made here the plain way (no code of convert.py):
    nodes record after record, each record's seed moved to the front of its node set
    (in record order); `x` the dense features by name as float32; edges through it."""
    seed_set = graphs[0].edge_sets["_readout/seed"].adjacency.source_name
    out = {}
    for name in graphs[0].node_sets:
        if name.startswith("_"):
            continue
        rows = []  # (record, node) in PyG's order
        seeds = [(r, int(g.edge_sets["_readout/seed"].adjacency.source[0]))
                 for r, g in enumerate(graphs)] if name == seed_set else []
        rows = seeds + [(r, n) for r, g in enumerate(graphs)
                        for n in range(g.node_sets[name].total_size) if (r, n) not in seeds]
        features = graphs[0].node_sets[name].features
        dense = sorted(f for f, v in features.items() if f != "#id" and f != label
                       and getattr(v, "dtype", np.dtype("O")).kind in "biuf")
        store = {"n_id": vocabulary.index(name, [g.node_sets[name]["#id"][n]
                                                  for r, n in rows for g in [graphs[r]]]),
                 "batch": [r for r, _ in rows],
                 "place": {row: i for i, row in enumerate(rows)}}
        if dense:
            store["x"] = np.array([np.concatenate([np.asarray(
                graphs[r].node_sets[name][f][n], np.float32).reshape(-1) for f in dense])
                for r, n in rows], np.float32).reshape(len(rows), -1)
        if name == seed_set and label is not None:
            store["y"] = [graphs[r].node_sets[name][label][n].reshape(-1)[0] for r, n in rows]
        out[name] = store
    for name, edge_set in graphs[0].edge_sets.items():
        if name.startswith("_"):
            continue
        source, target = edge_set.adjacency.source_name, edge_set.adjacency.target_name
        out[source, name, target] = [
            (out[source]["place"][r, int(s)], out[target]["place"][r, int(t)])
            for r, g in enumerate(graphs)
            for s, t in zip(g.edge_sets[name].adjacency.source, g.edge_sets[name].adjacency.target)]
    return out


@pytest.mark.parametrize("folder, label", [("demo", None), ("demo", "labels"), ("edges", None)])
def test_a_decoded_batch_is_laid_out_as_pyg_lays_it_out(sampled_outputs, edge_features_folder,
                                                        folder, label):
    path = edge_features_folder if folder == "edges" else sampled_outputs[folder]
    samples = open_samples(path)
    records = {shard * SHARD_STRIDE + i: record for shard, file in enumerate(samples.files)
               for i, record in enumerate(iter_records(file))}
    vocabulary = Vocabulary.from_samples(path)
    for ids, batch in read_batches(samples.files, range(len(samples.files)),
                                   BatchDecoder(samples.schema), batch_size=3):
        graphs = [parse_example(samples.schema, records[i]) for i in ids.tolist()]
        expected = laid_out(graphs, vocabulary, label)
        data = batch_to_hetero_data(batch, vocabulary=vocabulary, input_id=ids, label=label)
        for key, want in expected.items():
            if isinstance(key, tuple):
                got = data[key].edge_index.numpy()
                assert sorted(zip(got[0].tolist(), got[1].tolist())) == sorted(want), key
                continue
            store = data[key]
            assert store.n_id.tolist() == want["n_id"].tolist(), key
            assert store.batch.tolist() == want["batch"], key
            if "x" in want:
                assert store.x.dtype == torch.float32 and store.x.is_contiguous()
                assert np.array_equal(store.x.numpy(), want["x"]), key
            if "y" in want:
                assert store.y.tolist() == want["y"], key
