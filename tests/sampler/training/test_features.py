"""A TensorFlow user gets sampler.features' indices: Keras' StringLookup and
IntegerLookup read the written vocabulary files, Discretization and Normalization take
the written boundaries and statistics, SplitmixHashing hashes as numpy does (in eager
and in graph mode)."""
import os

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")

from sampler import api  # noqa: E402
from sampler.features import (Categorical, FeatureEncoder, FeatureSpec, Numeric,  # noqa: E402
                              Timestamp)
from sampler.features.hashing import hash_buckets  # noqa: E402
from sampler.features.values import as_bytes  # noqa: E402
from sampler.output.schema import schema_text  # noqa: E402
from sampler.training.features import SplitmixHashing, keras_layer  # noqa: E402
from tests.conftest import TESTDATA  # noqa: E402
from tests.pipelines.sampled_output import MIXED_SPEC  # noqa: E402
from unigraph.schema import load_schema  # noqa: E402

MIXED = os.path.join(TESTDATA, "unigraph", "mixed")
STRINGS = [b"alpha", b"beta", b"gamma", b"unseen", b"", b"multi\nline", b"Ada, the first",
           b"Bob", "é".encode(), b"a\x00b"]


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    """A folder as `sample` leaves it (schema and features/), with integer categories,
    buckets and statistics besides the defaults."""
    folder = tmp_path_factory.mktemp("features_tf")
    (folder / "spec.pbtxt").write_text(MIXED_SPEC)
    graph = api.load_graph(MIXED, str(folder / "spec.pbtxt"))
    spec = FeatureSpec({"item": {"count": Categorical(), "tags": Categorical(),
                                 "score": Numeric(boundaries=[-1, 0.75, 1.25]),
                                 "vec": Numeric(standardize=True)}},
                       {"link": {"pos": Timestamp(boundaries=[0, 3.5])}})
    encoder = FeatureEncoder.fit(graph, spec)
    encoder.save(str(folder / "features"))
    (folder / "graph_schema.pbtxt").write_text(schema_text(graph.output_schema))
    return str(folder), FeatureEncoder.load(str(folder))


def test_string_lookup_reads_the_vocabulary_file(written, sampled_outputs):
    for folder, set_kind, set_name, feature in [
            (sampled_outputs["mixed"], "nodes", "item", "words"),
            (sampled_outputs["mixed"], "nodes", "item", "name"),
            (sampled_outputs["mixed"], "edges", "link", "kind")]:
        layer = keras_layer(folder, set_name, feature, set_kind)
        assert isinstance(layer, tf.keras.layers.StringLookup)
        values = np.array(STRINGS + [b"a", b"b", b"c"], object)
        ours = FeatureEncoder.load(folder).vocabulary(set_name, feature, set_kind)
        assert layer(tf.constant(values)).numpy().tolist() == \
            ours.lookup(as_bytes(values)).tolist()
    direct = tf.keras.layers.StringLookup(vocabulary=os.path.join(
        sampled_outputs["mixed"], "features", "vocabulary", "nodes", "item", "words.txt"))
    assert direct(tf.constant([b"gamma", b"alpha", b"nope"])).numpy().tolist() == [3, 1, 0]


def test_integer_lookup_reads_the_vocabulary_file(written):
    folder, encoder = written
    values = np.array([3, -4, 0, 7, 8, 9, 12345, -1], np.int64)
    for feature in ("count", "tags"):
        layer = keras_layer(folder, "item", feature)
        assert isinstance(layer, tf.keras.layers.IntegerLookup)
        expected = encoder.vocabulary("item", feature).lookup(values)
        assert layer(tf.constant(values)).numpy().tolist() == expected.tolist()
    assert encoder.encode("nodes", "item", {"count": values})["count"].values.tolist() == \
        encoder.vocabulary("item", "count").lookup(values).tolist()


def test_discretization_and_normalization_take_the_written_numbers(written):
    folder, encoder = written
    score = np.array([-2, -1, 0.75, 1.0, 1.25, 9], np.float32)
    layer = keras_layer(folder, "item", "score")
    assert layer(tf.constant(score)).numpy().tolist() == \
        encoder.encode("nodes", "item", {"score": score})["score"].values.tolist()
    vec = np.array([[1, 2, 3], [0.5, -0.25, 1e3]], np.float32)
    normalized = keras_layer(folder, "item", "vec")(tf.constant(vec)).numpy()
    np.testing.assert_allclose(normalized, encoder.encode("nodes", "item", {"vec": vec})[
        "vec"].values, rtol=1e-5, atol=1e-5)
    pos = keras_layer(folder, "link", "pos", "edges")
    assert pos(tf.constant([[-1.0, 3.5]])).numpy().tolist() == [[0, 2]]


def test_splitmix_hashing_in_tensorflow(written):
    layer = SplitmixHashing(1000, salt=7)
    strings = as_bytes(np.array(STRINGS, object))
    expected = hash_buckets(strings, 1000, 7).tolist()
    assert layer(tf.constant(STRINGS)).numpy().tolist() == expected
    ints = np.array([0, -1, 5, 2 ** 62, -2 ** 63, 17], np.int64)
    assert layer(tf.constant(ints)).numpy().tolist() == hash_buckets(ints, 1000, 7).tolist()
    in_graph = tf.data.Dataset.from_tensor_slices(tf.constant(STRINGS)).batch(4).map(layer)
    assert [v for b in in_graph for v in b.numpy().tolist()] == expected
    ragged = layer(tf.ragged.constant([[b"alpha"], [], [b"beta", b"gamma"]]))
    assert ragged.to_list() == [[expected[0]], [], expected[1:3]]
    hashed = FeatureEncoder.from_schema(
        load_schema(MIXED).schema,
        FeatureSpec({"item": {"name": Categorical(hash_buckets=50, salt=3),
                              "words": Categorical(hash_buckets=50)}},
                    {"link": {"kind": Categorical(hash_buckets=5)},
                     "linked_by": {"kind": Categorical(hash_buckets=5)}}))
    ours = hashed.encode("nodes", "item", {"name": np.array(STRINGS, object)})
    assert SplitmixHashing(50, 3)(tf.constant(STRINGS)).numpy().tolist() == \
        ours["name"].values.tolist()
