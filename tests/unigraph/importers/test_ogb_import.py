"""OGB dataset folders (as the `ogb` package stores them) imported: every file read into
the tables it belongs to, the splits as seeds or pairs tables, a spec `sample` runs."""
import os

import numpy as np
import pytest

from pipelines import sample
from pipelines.bench import ogb_layout
from unigraph.errors import SamplerError
from unigraph.importers import write_graph
from unigraph.importers.ogb import OgbOptions, from_ogb
from unigraph.schema import feature_shape, load_schema
from unigraph.tables import is_reversed, read_seed_set, read_set
from unigraph.tables.layout import pairs_layout
from unigraph.tables.read import read_pair_set

from tests.unigraph.importers.ogb_fixtures import arxiv_like, mag_like


def imported(source, out, fmt="csv", **options):
    lines = write_graph(from_ogb(str(source), OgbOptions(**options)), str(out), fmt)
    return load_schema(str(out)), lines


def table(loaded, kind, name):
    batches = list(read_set(loaded, kind, name))
    return batches


def edges_of(loaded, name):
    batches = table(loaded, "edges", name)
    if not batches:  # a table with a header and no rows
        return np.zeros((0, 2), np.int64), batches
    sources = np.concatenate([b.sources for b in batches]).astype(np.int64)
    targets = np.concatenate([b.targets for b in batches]).astype(np.int64)
    return np.stack([sources, targets], axis=1), batches


def features_of(batches, name):
    return np.concatenate([np.asarray(b.features[name]) for b in batches])


@pytest.mark.parametrize("fmt", ["csv", "parquet", "tfrecord"])
def test_a_mag_like_folder_becomes_every_table(tmp_path, fmt):
    mag = mag_like(tmp_path / "dataset")
    loaded, _ = imported(mag.folder, tmp_path / "out", fmt)
    schema = loaded.schema
    paper = schema.node_sets["paper"]
    assert {n: (f.dtype, feature_shape(f)) for n, f in paper.features.items()} == {
        "feat": (1, (4,)), "labels": (9, (1,)), "year": (9, (1,))}  # DT_FLOAT, DT_INT64
    for node_type in ("author", "institution"):  # no node files: no table, the count kept
        assert not schema.node_sets[node_type].metadata.filename
        assert schema.node_sets[node_type].metadata.cardinality == mag.num_nodes[node_type]
    papers = table(loaded, "nodes", "paper")
    ids = np.concatenate([b.ids for b in papers]).astype(np.int64)
    np.testing.assert_array_equal(ids, np.arange(20))
    np.testing.assert_array_equal(features_of(papers, "feat"), mag.feat)
    np.testing.assert_array_equal(features_of(papers, "year"), mag.year)
    np.testing.assert_array_equal(features_of(papers, "labels"), mag.labels)
    for (source, relation, target), expected in mag.relations.items():
        edge_set = schema.edge_sets[relation]
        assert (edge_set.source, edge_set.target) == (source, target)
        got, batches = edges_of(loaded, relation)
        np.testing.assert_array_equal(got, expected)
        reverse = schema.edge_sets["rev_" + relation]
        assert is_reversed(reverse) and (reverse.source, reverse.target) == (target, source)
        assert reverse.metadata.filename == edge_set.metadata.filename
    _, writes = edges_of(loaded, "writes")
    np.testing.assert_array_equal(features_of(writes, "feat"), mag.writes_feat)
    assert "reltype" not in schema.edge_sets["writes"].features  # the edge set says it
    for split, expected in mag.splits.items():
        seeds = list(read_seed_set(str(tmp_path / "out" / f"seeds-{split}.{fmt}")))
        np.testing.assert_array_equal(
            np.concatenate([s.ids for s in seeds]).astype(np.int64), expected)


def test_the_written_folder_samples_as_it_is(tmp_path):
    mag = mag_like(tmp_path / "dataset")
    out = tmp_path / "graph"
    imported(mag.folder, out)
    spec = (out / "sampling_spec.pbtxt").read_text()
    assert 'seed_op { op_name: "seed" node_set_name: "paper" }' in spec
    assert 'edge_set_name: "rev_writes"' in spec and "hop2/writes" in spec  # authors reached
    assert sample.main(["--graph", str(out), "--spec", str(out / "sampling_spec.pbtxt"),
                        "--seeds", str(out / "seeds-train.csv"), "--output",
                        str(tmp_path / "samples") + "/", "--quiet"]) == 0


def test_an_arxiv_like_folder(tmp_path):
    arxiv = arxiv_like(tmp_path)
    loaded, _ = imported(arxiv.folder, tmp_path / "out")
    assert set(loaded.schema.node_sets) == {"nodes"}
    assert set(loaded.schema.edge_sets) == {"edges", "rev_edges"}
    nodes = table(loaded, "nodes", "nodes")
    np.testing.assert_array_equal(features_of(nodes, "feat"), arxiv.feat)
    np.testing.assert_array_equal(features_of(nodes, "year"), arxiv.year)
    got, batches = edges_of(loaded, "edges")
    np.testing.assert_array_equal(got, arxiv.edges)
    np.testing.assert_array_equal(features_of(batches, "feat"), arxiv.edge_feat)


def test_a_dataset_ogb_loads_both_ways_gets_every_edge_twice(tmp_path):
    """ogbn-products is one of the datasets `ogb` reads with add_inverse_edge: each edge
    then its reverse, features repeated; no reversed edge set is needed."""
    arxiv = arxiv_like(tmp_path, name="ogbn_products")
    loaded, _ = imported(arxiv.folder, tmp_path / "out")
    assert set(loaded.schema.edge_sets) == {"edges"}
    got, batches = edges_of(loaded, "edges")
    np.testing.assert_array_equal(got[0::2], arxiv.edges)
    np.testing.assert_array_equal(got[1::2], arxiv.edges[:, ::-1])
    np.testing.assert_array_equal(features_of(batches, "feat"),
                                  np.repeat(arxiv.edge_feat, 2, axis=0))
    directed, _ = imported(arxiv.folder, tmp_path / "directed", undirected=False)
    np.testing.assert_array_equal(edges_of(directed, "edges")[0], arxiv.edges)
    assert "rev_edges" in directed.schema.edge_sets


def test_a_binary_dataset_streams_its_npz_archive(tmp_path, monkeypatch):
    """papers100M's layout (raw/data.npz, raw/node-label.npz with NaN for unlabelled
    nodes), read a few rows at a time."""
    from unigraph.importers import ogb_files

    monkeypatch.setattr(ogb_files, "NPY_ROWS", 4)
    rng = np.random.default_rng(3)
    folder = tmp_path / "ogbn_papers100M"
    (folder / "raw").mkdir(parents=True)
    edges = rng.integers(0, 10, (2, 23))
    feat = rng.normal(size=(10, 3)).astype(np.float32)
    year = rng.integers(2000, 2020, (10, 1))
    np.savez(folder / "raw" / "data.npz", edge_index=edges, num_nodes_list=np.array([10]),
             num_edges_list=np.array([23]), node_feat=feat, node_year=year)
    labels = rng.integers(0, 3, (10, 1)).astype(np.float32)
    labels[[2, 5]] = np.nan
    np.savez(folder / "raw" / "node-label.npz", node_label=labels)
    ogb_layout.write_numbers(str(folder / "split" / "time" / "train.csv.gz"), np.array([0, 1, 3]))
    loaded, _ = imported(folder, tmp_path / "out", "parquet")
    nodes = table(loaded, "nodes", "nodes")
    np.testing.assert_array_equal(features_of(nodes, "feat"), feat)
    np.testing.assert_array_equal(features_of(nodes, "year"), year)
    np.testing.assert_array_equal(features_of(nodes, "labels"), labels)  # NaN kept
    np.testing.assert_array_equal(edges_of(loaded, "edges")[0], edges.T)


def _link_dataset(tmp_path, name, splits, edge_extra=None):
    rng = np.random.default_rng(5)
    folder = str(tmp_path / name)
    edges = rng.integers(0, 12, (30, 2))
    ogb_layout.write_homogeneous(folder, num_nodes=12, edges=edges,
                                 node_feat=rng.integers(0, 9, (12, 2)).astype(np.float32),
                                 edge_extra=edge_extra or {})
    for split, value in splits.items():
        ogb_layout.write_link_split(folder, "time", split, value)
    return folder, edges


def pairs(loaded, path):
    batches = list(read_pair_set(pairs_layout(loaded.schema), path))
    sources = np.concatenate([b.sources for b in batches]).astype(np.int64)
    targets = np.concatenate([b.targets for b in batches]).astype(np.int64)
    return sources, targets, {k: np.concatenate([np.asarray(b.features[k]) for b in batches])
                              for k in batches[0].features}


def test_a_collab_like_link_dataset_writes_pairs_with_labels(tmp_path):
    positives = np.array([[0, 1], [2, 3], [4, 5]])
    negatives = np.array([[0, 7], [1, 8]])
    folder, edges = _link_dataset(
        tmp_path, "ogbl_collab",
        {"train": {"edge": positives, "weight": np.ones(3), "year": np.full(3, 2019)},
         "valid": {"edge": positives[:2], "weight": np.ones(2), "year": np.full(2, 2019),
                   "edge_neg": negatives}},
        edge_extra={"edge_weight": np.arange(30) / 2, "edge_year": np.full((30, 1), 2010)})
    graph = from_ogb(folder)
    assert any("weight, year left out" in note for note in graph.notes)
    write_graph(graph, str(tmp_path / "out"))
    loaded = load_schema(str(tmp_path / "out"))
    readout = loaded.schema.node_sets["_readout"]
    assert set(readout.features) == {"label"}
    assert loaded.schema.edge_sets["_readout/source"].source == "nodes"
    edge_set = loaded.schema.edge_sets["edges"]
    assert feature_shape(edge_set.features["weight"]) == ()  # the weight column, a scalar
    got, batches = edges_of(loaded, "edges")  # ogbl-collab is read both ways
    np.testing.assert_array_equal(got[0::2], edges)
    np.testing.assert_array_equal(np.concatenate([b.weights for b in batches])[0::2],
                                  np.arange(30) / 2)
    s, t, features = pairs(loaded, str(tmp_path / "out" / "pairs-valid.csv"))
    np.testing.assert_array_equal(np.stack([s, t], 1), np.concatenate([positives[:2], negatives]))
    np.testing.assert_array_equal(features["label"].reshape(-1), [1, 1, 0, 0])
    spec = tmp_path / "out" / "sampling_spec.pbtxt"
    assert "symmetric_link_seed_op" in spec.read_text()
    assert sample.main(["--graph", str(tmp_path / "out"), "--spec", str(spec), "--seeds",
                        str(tmp_path / "out" / "pairs-valid.csv"), "--output",
                        str(tmp_path / "samples") + "/", "--quiet"]) == 0


def test_citation2_and_wikikg2_negatives_become_label_zero_pairs(tmp_path):
    sources, targets = np.array([0, 1]), np.array([2, 3])
    folder, _ = _link_dataset(tmp_path, "ogbl_citation2", {
        "valid": {"source_node": sources, "target_node": targets,
                  "target_node_neg": np.array([[4, 5, 6], [7, 8, 9]])}})
    write_graph(from_ogb(folder), str(tmp_path / "c2"))
    loaded = load_schema(str(tmp_path / "c2"))
    assert "rev_edges" in loaded.schema.edge_sets  # citations are directed
    s, t, features = pairs(loaded, str(tmp_path / "c2" / "pairs-valid.csv"))
    assert list(zip(s, t, features["label"].reshape(-1))) == [
        (0, 2, 1), (1, 3, 1), (0, 4, 0), (0, 5, 0), (0, 6, 0), (1, 7, 0), (1, 8, 0), (1, 9, 0)]

    folder, _ = _link_dataset(tmp_path, "ogbl_wikikg2", {
        "test": {"head": sources, "relation": np.array([7, 8]), "tail": targets,
                 "head_neg": np.array([[4], [5]]), "tail_neg": np.array([[6], [9]])}})
    write_graph(from_ogb(folder), str(tmp_path / "kg"))
    loaded = load_schema(str(tmp_path / "kg"))
    s, t, features = pairs(loaded, str(tmp_path / "kg" / "pairs-test.csv"))
    assert list(zip(s, t, features["label"].reshape(-1), features["relation"].reshape(-1))) == [
        (0, 2, 1, 7), (1, 3, 1, 8), (4, 2, 0, 7), (5, 3, 0, 8), (0, 6, 0, 7), (1, 9, 0, 8)]


def test_an_empty_relation_is_an_empty_edge_set(tmp_path):
    folder = str(tmp_path / "ogbn_tiny")
    ogb_layout.write_heterogeneous(
        folder, num_nodes={"a": 3, "b": 2},
        relations={("a", "to", "b"): np.array([[0, 1], [2, 0]]),
                   ("b", "none", "a"): np.zeros((0, 2), np.int64)},
        node_feat={"a": np.ones((3, 2), np.float32)}, node_label={"a": np.zeros((3, 1))})
    loaded, lines = imported(folder, tmp_path / "out")
    assert "edge set 'none': 0 rows -> none.csv" in lines
    assert edges_of(loaded, "none")[0].shape == (0, 2)
    assert sample.main(["--graph", str(tmp_path / "out"), "--spec",
                        str(tmp_path / "out" / "sampling_spec.pbtxt"), "--output",
                        str(tmp_path / "samples") + "/", "--quiet"]) == 0


def test_graph_property_datasets_are_refused_in_one_line(tmp_path):
    arxiv = arxiv_like(tmp_path, name="ogbg_molhiv")
    with pytest.raises(SamplerError, match="graph property prediction dataset"):
        from_ogb(arxiv.folder)


def test_the_dataset_folder_is_found_from_its_root_or_raw(tmp_path):
    mag = mag_like(tmp_path / "dataset")
    for path in (tmp_path / "dataset", os.path.join(mag.folder, "raw")):
        assert from_ogb(str(path)).origin == "OGB ogbn-mag"


@pytest.mark.parametrize("isal", [True, False])
def test_gzip_is_inflated_alike_with_and_without_isal(tmp_path, monkeypatch, isal):
    from unigraph.importers import ogb_files

    if not isal:
        monkeypatch.setattr(ogb_files, "_igzip", None)  # Arrow's zlib, as without the wheel
    monkeypatch.setattr(ogb_files, "BLOCK_BYTES", 64)  # many blocks, lines cut across them
    arxiv = arxiv_like(tmp_path)
    loaded, _ = imported(arxiv.folder, tmp_path / "out")
    np.testing.assert_array_equal(features_of(table(loaded, "nodes", "nodes"), "feat"),
                                  arxiv.feat)
    np.testing.assert_array_equal(edges_of(loaded, "edges")[0], arxiv.edges)
