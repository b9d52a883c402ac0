"""FeatureEncoder: fitted once on the graph (the API's loaded graph, the tables, the
command line's memory and Beam engines all give the same files), written, read back
with every check, and the same indices in every process."""
import os
import pickle
import shutil

import numpy as np
import pytest

from sampler import api
from sampler.features import (Categorical, FeatureEncoder, FeatureError, FeatureSpec, Numeric,
                              resolve)
from sampler.features.encoder import vocabulary_name
from sampler.features.hashing import hash_buckets
from tests.conftest import TESTDATA
from tests.pipelines.sampled_output import MIXED_SPEC, run_sample
from unigraph.schema import load_schema

MIXED = os.path.join(TESTDATA, "unigraph", "mixed")


@pytest.fixture(scope="module")
def graph(tmp_path_factory):
    spec = tmp_path_factory.mktemp("encoder") / "spec.pbtxt"
    spec.write_text(MIXED_SPEC)
    return api.load_graph(MIXED, str(spec))


def files(folder):
    return {os.path.relpath(os.path.join(d, f), folder): open(os.path.join(d, f), "rb").read()
            for d, _, names in os.walk(folder) for f in names}


def test_the_api_the_tables_and_both_engines_write_the_same_files(graph, tmp_path,
                                                                   sampled_outputs):
    FeatureEncoder.fit(graph).save(str(tmp_path / "api"))
    loaded = load_schema(MIXED)
    resolved = resolve(None, graph.output_schema, strict=False)
    FeatureEncoder.from_tables(loaded, resolved).save(str(tmp_path / "tables"))
    (tmp_path / "spec.pbtxt").write_text(MIXED_SPEC)
    beam = run_sample(tmp_path / "beam", MIXED, tmp_path / "spec.pbtxt", "--engine", "beam")
    written = files(str(tmp_path / "api"))
    assert sorted(written) == ["feature_spec.pbtxt", vocabulary_name("edges", "link", "kind"),
                               vocabulary_name("edges", "linked_by", "kind"),
                               vocabulary_name("nodes", "item", "name"),
                               vocabulary_name("nodes", "item", "words")]
    # "multi\nline" cannot be a line: it is left out (index 0), the others by count.
    assert written[vocabulary_name("nodes", "item", "name")] == b"Ada, the first\nBob\n"
    assert written[vocabulary_name("nodes", "item", "words")] == b"alpha\nbeta\ngamma\n"
    assert files(str(tmp_path / "tables")) == written
    assert files(os.path.join(sampled_outputs["mixed"], "features")) == written
    assert files(os.path.join(beam, "features")) == written


def test_written_and_read_back_it_encodes_alike(graph, sampled_outputs):
    fitted = FeatureEncoder.fit(graph)
    loaded = FeatureEncoder.load(sampled_outputs["mixed"])
    shipped = pickle.loads(pickle.dumps(loaded))  # as a DataLoader worker gets it
    for subgraph in graph.sample(["i1", "i2", "i3"]):
        for set_name, node_set in subgraph.node_sets.items():
            if set_name.startswith("_"):
                continue
            features = {n: v for n, v in node_set.features.items() if n != "#id"}
            expected = fitted.encode("nodes", set_name, features)
            for encoder in (loaded, shipped):
                got = encoder.encode("nodes", set_name, features)
                assert sorted(got) == sorted(expected)
                for name in got:
                    np.testing.assert_array_equal(got[name].values, expected[name].values)
    assert loaded.num_embeddings("item", "words") == 4
    assert loaded.num_embeddings("link", "kind", "edges") == 4


def test_statistics_and_a_vocabulary_file_of_yours(graph, tmp_path):
    (tmp_path / "names.txt").write_bytes(b"Bob\nZed\n")
    (tmp_path / "feature_spec.pbtxt").write_text("""
node_sets { key: "item" value {
  features { key: "score" value { numeric { standardize: true } } }
  features { key: "vec" value { numeric { standardize: true } } }
  features { key: "name" value { categorical { vocabulary { file: "names.txt" } } } }
} }""")
    from sampler.features import read_feature_spec
    encoder = FeatureEncoder.fit(graph, read_feature_spec(str(tmp_path / "feature_spec.pbtxt")))
    kinds = encoder.spec.node_sets["item"]
    score = np.array([0.5, 1.25, -2.5])
    assert kinds["score"].mean == (pytest.approx(score.mean(), rel=1e-6),)
    assert kinds["score"].std == (pytest.approx(score.std(), rel=1e-6),)
    vec = np.array([[1, 2, 3], [0.5, -0.25, 1e3], [0, 0, 0]])
    np.testing.assert_allclose(kinds["vec"].mean, vec.mean(axis=0), rtol=1e-6)
    np.testing.assert_allclose(kinds["vec"].std, vec.std(axis=0), rtol=1e-6)
    assert encoder.vocabulary("item", "name").tokens.tolist() == [b"Bob", b"Zed"]
    encoded = encoder.encode("nodes", "item", {
        "name": np.array([b"Zed", b"Ada, the first"], object),
        "score": np.array([0.5, 1.25], np.float32)})
    assert encoded["name"].values.tolist() == [2, 0]
    assert encoded["score"].values.dtype == np.float32


def tampered(sampled_outputs, tmp_path, change):
    folder = tmp_path / "copy"
    shutil.copytree(sampled_outputs["mixed"], folder)
    change(folder)
    return str(folder)


def test_a_vocabulary_file_that_does_not_match_is_one_line(sampled_outputs, tmp_path):
    def edit(folder):
        path = folder / "features" / vocabulary_name("nodes", "item", "words")
        path.write_bytes(b"gamma\nbeta\nalpha\n")  # same tokens, other order
    with pytest.raises(FeatureError) as error:
        FeatureEncoder.load(tampered(sampled_outputs, tmp_path, edit))
    assert "node set 'item' feature 'words': vocabulary" in str(error.value)
    assert "SHA-256 differs" in str(error.value)


def test_a_spec_the_samples_schema_lacks_names_the_file(sampled_outputs, tmp_path):
    """A folder whose graph_schema.pbtxt lost the spec's sets (the fuzzer truncated it):
    one line naming features/feature_spec.pbtxt, for every reader of the folder."""
    def edit(folder):
        (folder / "graph_schema.pbtxt").write_text("")
    folder = tampered(sampled_outputs, tmp_path, edit)
    with pytest.raises(FeatureError) as error:
        FeatureEncoder.load(folder)
    message = str(error.value)
    assert message.startswith(os.path.join(folder, "features", "feature_spec.pbtxt") + ": ")
    assert "is not in the graph schema" in message and "\n" not in message


def test_a_written_spec_names_only_its_own_files(sampled_outputs, tmp_path):
    def edit(folder):
        spec = folder / "features" / "feature_spec.pbtxt"
        spec.write_text(spec.read_text().replace('file: "vocabulary/nodes/item/name.txt"',
                                                 'file: "../../../etc/passwd"'))
    with pytest.raises(FeatureError, match="names the vocabulary '../../../etc/passwd', not its "
                                           "own 'vocabulary/nodes/item/name.txt'"):
        FeatureEncoder.load(tampered(sampled_outputs, tmp_path, edit))


def test_without_a_features_folder_strings_are_left_out(sampled_outputs, tmp_path):
    folder = tampered(sampled_outputs, tmp_path, lambda f: shutil.rmtree(f / "features"))
    assert FeatureEncoder.load(folder) is None
    encoder, left_out = FeatureEncoder.for_samples(folder)
    assert left_out == ["node set 'item' feature 'name'", "node set 'item' feature 'words'",
                        "edge set 'link' feature 'kind'", "edge set 'linked_by' feature 'kind'"]
    assert sorted(encoder.encode("nodes", "item", {
        "name": np.array([b"x"], object), "count": np.array([1])})) == ["count"]
    with pytest.raises(FeatureError, match="node set 'item' feature 'name': needs values from "
                                           "the graph"):
        FeatureEncoder.from_schema(load_schema(MIXED).schema)
    hashed = FeatureSpec({"item": {"name": Categorical(hash_buckets=8),
                                   "words": Categorical(hash_buckets=8)}},
                         {"link": {"kind": Categorical(hash_buckets=2)},
                          "linked_by": {"kind": Categorical(hash_buckets=2)}})
    assert FeatureEncoder.from_schema(load_schema(MIXED).schema, hashed).num_embeddings(
        "item", "name") == 8


def test_features_the_spec_does_not_know_are_an_error(graph):
    encoder = FeatureEncoder.fit(graph, FeatureSpec({"item": {"count": Numeric(boundaries=[0])}}))
    with pytest.raises(FeatureError, match="node set 'item' feature 'colour' is not in the "
                                           "feature spec"):
        encoder.encode("nodes", "item", {"colour": np.array([1])})
    with pytest.raises(FeatureError, match="node set 'user' is not in the feature spec"):
        encoder.encode("nodes", "user", {"age": np.array([1])})
    assert encoder.num_embeddings("item", "count") == 2


def test_a_shipped_encoder_leaves_its_tables_behind_and_hashes_alike(graph):
    """A worker gets the hashers without the tables they made (remade where it runs),
    and the same buckets, batch after batch, with or without them."""
    spec = FeatureSpec({"item": {"name": Categorical(hash_buckets=8, salt=2),
                                 "count": Categorical(hash_buckets=5)}})
    encoder = FeatureEncoder.fit(graph, spec)
    batch = {"name": np.array([b"red", b"blue", b"red", b""], "S"),
             "count": np.array([[3], [0], [3], [7]])}
    first = encoder.encode("nodes", "item", batch)
    assert all(h._table is not None or h._strings is not None
               for h in encoder._hashers.values())
    shipped = pickle.loads(pickle.dumps(encoder))
    assert all(h._table is None and h._strings is None for h in shipped._hashers.values())
    for again in (encoder, shipped, encoder):
        got = again.encode("nodes", "item", batch)
        for name in ("name", "count"):
            np.testing.assert_array_equal(got[name].values, first[name].values)
            np.testing.assert_array_equal(
                got[name].values, hash_buckets(batch[name], spec.node_sets["item"][name]
                                               .hash_buckets, spec.node_sets["item"][name].salt))
