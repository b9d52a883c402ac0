"""Round trips through the importers: an OGB folder -> unigraph-import -> sample ->
sampler.torch gives back the OGB arrays; a HeteroData sampled from memory gives the
records `sample` writes from its imported files, byte for byte."""
import numpy as np
import pytest

from pipelines import import_graph, sample
from sampler.output.folder import iter_records, open_samples

from tests.unigraph.importers.ogb_fixtures import mag_like

torch = pytest.importorskip("torch", reason="the [torch] extra")
pytest.importorskip("torch_geometric", reason="the [torch] extra")


def test_ogb_folder_to_hetero_data_gives_back_the_ogb_arrays(tmp_path):
    from sampler.torch import SampleDataset

    mag = mag_like(tmp_path / "dataset")
    graph, out = tmp_path / "graph", tmp_path / "samples"
    assert import_graph.main([mag.folder, "--output", str(graph)]) == 0
    assert sample.main(["--graph", str(graph), "--spec", str(graph / "sampling_spec.pbtxt"),
                        "--seeds", str(graph / "seeds-train.csv"), "--output", f"{out}/",
                        "--quiet"]) == 0
    relations = {relation: {tuple(e) for e in edges.tolist()}
                 for (_, relation, _), edges in mag.relations.items()}
    writes = {}
    for (u, v), feat in zip(mag.relations[("author", "writes", "paper")].tolist(),
                            mag.writes_feat.tolist()):
        writes.setdefault((u, v), []).append(feat)
    seen_edges = seen_seeds = 0
    for data in SampleDataset(str(out), features="names"):
        papers = data["paper"].n_id.numpy()
        seen_seeds += int(papers[0] in mag.splits["train"])
        np.testing.assert_array_equal(data["paper"].feat.numpy(), mag.feat[papers])
        np.testing.assert_array_equal(data["paper"].year.numpy(), mag.year[papers])
        np.testing.assert_array_equal(data["paper"].labels.numpy(), mag.labels[papers])
        for (source, name, target) in data.edge_types:
            store = data[source, name, target]
            ends = np.stack([data[source].n_id.numpy()[store.edge_index[0].numpy()],
                             data[target].n_id.numpy()[store.edge_index[1].numpy()]], axis=1)
            forward = name.removeprefix("rev_")
            pairs = ends if name == forward else ends[:, ::-1]
            for pair in map(tuple, pairs.tolist()):
                assert pair in relations[forward], (name, pair)
            if forward == "writes":
                for pair, feat in zip(map(tuple, pairs.tolist()), store.feat.numpy().tolist()):
                    assert feat in writes[pair]
            seen_edges += len(ends)
    assert seen_seeds == len(mag.splits["train"]) and seen_edges > 100


def _records_by_seed(folder):
    found = {}
    from sampler.graph_tensor import wire

    samples = open_samples(str(folder))
    for path in samples.files:
        for record in iter_records(path):
            raw = wire.split_example(record)
            found[wire.decode_feature(raw["context/seed_id"], "context/seed_id")[1][0]] = record
    return found


def test_hetero_data_sampled_from_memory_gives_the_imported_files_records(tmp_path):
    from torch_geometric.data import HeteroData

    import unigraph
    from sampler import api

    generator = torch.Generator().manual_seed(0)
    data = HeteroData()
    data["paper"].x = torch.randn(30, 5, generator=generator)
    data["paper"].y = torch.randint(0, 4, (30,), generator=generator)
    data["paper"].year = torch.randint(2000, 2020, (30, 1), generator=generator)
    data["paper"].train_mask = torch.arange(30) % 3 == 0
    data["author"].num_nodes = 11
    data["author", "writes", "paper"].edge_index = torch.stack(
        [torch.randint(0, 11, (60,), generator=generator),
         torch.randint(0, 30, (60,), generator=generator)])
    data["author", "writes", "paper"].edge_attr = torch.rand(60, 3, generator=generator,
                                                             dtype=torch.float64)
    data["paper", "cites", "paper"].edge_index = torch.randint(0, 30, (2, 90),
                                                               generator=generator)
    unigraph.import_pyg(data, str(tmp_path / "graph"))
    graph = tmp_path / "graph"
    assert sample.main(["--graph", str(graph), "--spec", str(graph / "sampling_spec.pbtxt"),
                        "--seeds", str(graph / "seeds-train.csv"), "--output",
                        f"{tmp_path / 'out'}/", "--seed", "7", "--quiet"]) == 0
    written = _records_by_seed(tmp_path / "out")
    seeds = [str(i) for i in range(0, 30, 3)]
    assert sorted(written) == sorted(s.encode() for s in seeds)
    in_memory = api.load_graph(data).sample(seeds, seed=7)
    for seed, subgraph in zip(seeds, in_memory):
        assert api.to_example(subgraph) == written[seed.encode()], seed
    from_files = api.load_graph(str(graph)).sample(seeds, seed=7)
    assert [api.to_example(s) for s in from_files] == [api.to_example(s) for s in in_memory]
