"""TF-GNN's batched GraphTensor from the batched decoder (tfgnn_batch.py) against
`tfgnn.parse_example` of the same records: the same spec and every component equal, on
folders with string ids, every kind of feature (ragged, strings, int32, ...), edge
features with empty edge sets, and link records with negatives; and
`sampler.api.to_tf_dataset`, which uses it, against TF-GNN's parser it falls back to
(said once in the log)."""
import logging
import os

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")
os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
tfgnn = pytest.importorskip("tensorflow_gnn")

from sampler import api  # noqa: E402
from sampler.graph_tensor.tfgnn_batch import TfgnnBatches  # noqa: E402
from sampler.output.folder import iter_records, open_samples  # noqa: E402
from tests.conftest import REPO_ROOT  # noqa: E402
from tests.sampler.torch.test_dataset import edge_features_folder  # noqa: E402,F401
from unigraph.errors import GraphTensorError  # noqa: E402

DEMO = os.path.join(REPO_ROOT, "examples", "mag_tiny")


def parser_spec(schema):
    return tfgnn.create_graph_spec_from_schema_pb(
        tfgnn.GraphSchema.FromString(schema.SerializeToString()))


def assert_same(actual, expected):
    assert actual.spec == expected.spec
    ours = tf.nest.flatten(actual, expand_composites=True)
    theirs = tf.nest.flatten(expected, expand_composites=True)
    assert len(ours) == len(theirs)
    for a, b in zip(ours, theirs):
        assert a.dtype == b.dtype and a.shape == b.shape
        assert a.numpy().tolist() == b.numpy().tolist()


@pytest.mark.parametrize("folder", ["demo", "mixed", "link", "edges"])
def test_the_decoders_graph_tensor_is_the_parsers(sampled_outputs, edge_features_folder,
                                                  folder):
    path = edge_features_folder if folder == "edges" else sampled_outputs[folder]
    samples = open_samples(path)
    records = [r for file in samples.files for r in iter_records(file)]
    layout, spec = TfgnnBatches(samples.schema), parser_spec(samples.schema)
    graph = tf.function(layout.graph)  # as tf.data traces it: batch size unknown
    # Every record in one batch, and the first ones in batches of 1 and 3 (TensorFlow's
    # eager parser costs about a second a call: a batch each for every record took
    # minutes on the link folder).
    for size, upto in ((1, 12), (3, 24), (len(records), len(records))):
        for at in range(0, min(upto, len(records)), size):
            batch = records[at:at + size]
            arrays = layout.arrays(batch)
            expected = tfgnn.parse_example(spec, tf.constant(batch))
            assert_same(layout.graph(*arrays), expected)
            assert graph(*arrays).spec == expected.spec
    if folder == "edges":  # what the folder is for
        sizes = tfgnn.parse_example(spec, tf.constant(records)).edge_sets["cites"].sizes
        assert (sizes.numpy() == 0).sum() == 12
        assert "pos" in samples.schema.edge_sets["cites"].features


def test_strings_that_end_in_nul_bytes_stay_exact():
    graph = api.load_graph(DEMO, os.path.join(DEMO, "sampling_spec.pbtxt"))
    records = graph.sample(["p01", "p02"], seed=1).to_examples()
    layout = TfgnnBatches(graph.output_schema)
    arrays = layout.arrays(records)
    at = [i for i, spec in enumerate(layout.signature()) if spec.dtype == tf.string][0]
    arrays[at] = np.array([v + b"\0" for v in arrays[at].reshape(-1).tolist()],
                          dtype=object).reshape(arrays[at].shape)
    assert all(v.endswith(b"\0") for v in layout.graph(*arrays).context["seed_id"]
               .numpy().reshape(-1).tolist())


def test_records_of_two_components_are_refused_as_the_parser_refuses_them():
    from sampler.graph_tensor import encode_example
    from sampler.graph_tensor.ops import merge_batch_to_components
    from sampler.graph_tensor.codec import parse_example

    graph = api.load_graph(DEMO, os.path.join(DEMO, "sampling_spec.pbtxt"))
    schema = graph.output_schema
    two = merge_batch_to_components([parse_example(schema, r) for r in
                                     graph.sample(["p01", "p02"], seed=1).to_examples()])
    with pytest.raises(GraphTensorError, match="one\\s+graph component each"):
        TfgnnBatches(schema).arrays([encode_example(two, schema)])


def test_to_tf_dataset_gives_the_parsers_graph_tensors_either_way(caplog, monkeypatch):
    """TF-GNN's parser where the decoder's route is not faster (said once), the
    decoder's where it is: the same GraphTensors."""
    from sampler.api import tf_dataset

    graph = api.load_graph(DEMO, os.path.join(DEMO, "sampling_spec.pbtxt"))
    options = dict(batch_size=3, shuffle=True, seed=5, epochs=2)
    records = [r.numpy().tolist() for r in api.to_tf_dataset(graph, parse=False, **options)]
    spec = parser_spec(graph.output_schema)
    assert len(records) > 2
    for faster in (True, False):
        monkeypatch.setattr(tf_dataset, "DECODER_BEATS_TFGNN", faster)
        monkeypatch.setattr(tf_dataset, "_LOGGED", set())
        caplog.clear()
        with caplog.at_level(logging.INFO, logger="sampler"):
            datasets = [list(api.to_tf_dataset(graph, **options)) for _ in range(2)]
        said = [r.getMessage() for r in caplog.records if "parse_example" in r.getMessage()]
        assert len(said) == (0 if faster else 1)
        assert faster or "costs more CPU" in said[0]
        for got, batch in zip(datasets[0], records):
            assert_same(got, tfgnn.parse_example(spec, tf.constant(batch)))

    # a schema the decoder's layout does not cover: TF-GNN's parser, saying why
    monkeypatch.setattr(tf_dataset, "DECODER_BEATS_TFGNN", True)
    monkeypatch.setattr(TfgnnBatches, "unsupported", staticmethod(lambda schema: "a test"))
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="sampler"):
        got = list(api.to_tf_dataset(graph, **options))
    assert any("a test" in r.getMessage() for r in caplog.records)
    assert len(got) == len(records)
