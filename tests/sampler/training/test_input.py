"""sampler.training: layout from the schema, tf.data parse + merge, label readout,
held-out split and padding, checked against the numpy core and hand-computed values."""
import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")

from sampler.graph_tensor import (Adjacency, Context, EdgeSet, GraphTensor, NodeSet, add_readout,
                                  encode_example, merge_batch_to_components, pad_to_total_sizes,
                                  tight_size_constraints, to_tensors)
from sampler.output.folder import SamplesError, open_samples
from sampler.training import input as training_input
from sampler.training.layout import Feature, layout_from_schema
from sampler.training.tf_padding import pad_batch
from tests.sampler.training.toy_samples import planted_graphs, write_planted_samples, write_samples
from unigraph.protos import graph_schema_pb2 as gs


@pytest.fixture(scope="module")
def toy():
    schema, graphs = planted_graphs(num_papers=60, num_classes=3, seed=1)
    return schema, graphs, [encode_example(g, schema) for g in graphs]


def _paper_graph(num_papers, cites, label_of_seed, seed_id):
    """Papers with feat = [index, 10 * index] and a label; cites as (source, target) pairs."""
    index = np.arange(num_papers, dtype=np.float32)
    labels = np.full((num_papers, 1), 99, np.int64)
    labels[0, 0] = label_of_seed
    source, target = (np.array(x, np.int64) for x in zip(*cites)) if cites else (
        np.zeros(0, np.int64), np.zeros(0, np.int64))
    graph = GraphTensor.from_pieces(
        context=Context.from_fields(features={"seed_id": np.array([seed_id], object)}),
        node_sets={"paper": NodeSet.from_fields(sizes=[num_papers], features={
            "#id": np.array([b"%s-%d" % (seed_id, i) for i in range(num_papers)], object),
            "feat": np.stack([index, 10 * index], axis=1), "labels": labels}),
            "author": NodeSet.from_fields(sizes=[1], features={"#id": np.array([b"a"], object)})},
        edge_sets={"cites": EdgeSet.from_fields(
            sizes=[len(source)],
            adjacency=Adjacency.from_indices(source=("paper", source), target=("paper", target))),
            "written": EdgeSet.from_fields(sizes=[1], adjacency=Adjacency.from_indices(
                source=("paper", [0]), target=("author", [0])))})
    return add_readout(graph, "seed", "paper", [0])


def _hand_schema(toy_schema):
    schema = gs.GraphSchema()
    schema.CopyFrom(toy_schema)
    schema.node_sets["paper"].features["feat"].shape.dim[0].size = 2
    return schema


# --- layout ------------------------------------------------------------------------

def test_layout_keeps_dense_numeric_features_and_drops_the_label(toy):
    schema, _, _ = toy
    layout = layout_from_schema(schema, "labels")
    assert layout.seed_set == "paper"
    assert layout.node_sets["paper"] == (Feature("feat", (3,), True),)
    assert layout.node_sets["author"] == () and layout.node_sets["_readout"] == ()
    assert layout.label.node_set == "paper" and not layout.label.on_readout
    assert list(layout.message_edge_sets) == ["cites", "written"]
    assert layout.graph_node_sets == ["author", "paper"]


def test_layout_lists_what_the_model_cannot_use(toy):
    schema = gs.GraphSchema()
    schema.CopyFrom(toy[0])
    schema.node_sets["author"].features["name"].dtype = gs.DT_STRING
    ragged = schema.node_sets["paper"].features["words"]
    ragged.dtype = gs.DT_INT64
    ragged.shape.dim.add().size = -1
    schema.edge_sets["cites"].features["weight"].dtype = gs.DT_FLOAT
    layout = layout_from_schema(schema, "labels")
    assert layout.unused == ("nodes/author.name (string)", "nodes/paper.words (ragged)",
                             "edges/cites.weight (edge feature)")
    # Without a label, the label feature is an ordinary input.
    assert Feature("labels", (1,), False) in layout_from_schema(schema).node_sets["paper"]


def test_label_on_readout_is_preferred(toy):
    schema = gs.GraphSchema()
    schema.CopyFrom(toy[0])
    schema.node_sets["_readout"].features["labels"].dtype = gs.DT_INT64
    layout = layout_from_schema(schema, "labels")
    assert layout.label.on_readout
    assert Feature("labels", (1,), False) in layout.node_sets["paper"]


@pytest.mark.parametrize("label, message", [
    ("venue", "--label venue: no such feature on node set '_readout' or on the seed node set "
              "'paper' (integer features there: labels)"),
    ("feat", "--label feat: node set 'paper' feature 'feat' is DT_FLOAT of shape [3]; a label "
             "must be an integer class id of shape [] or [1]"),
])
def test_bad_labels_are_one_line_errors(toy, label, message):
    with pytest.raises(SamplesError) as error:
        layout_from_schema(toy[0], label)
    assert str(error.value) == message


def test_schema_without_readout_is_refused():
    schema = gs.GraphSchema()
    schema.node_sets["paper"].SetInParent()
    with pytest.raises(SamplesError, match="not the schema of `sample` output"):
        layout_from_schema(schema, "labels")


# --- parse and merge ---------------------------------------------------------------

def test_merge_matches_the_numpy_core(toy):
    schema, graphs, records = toy
    layout = layout_from_schema(schema)  # no label: every numeric feature, incl. labels
    merged = training_input.parse_and_merge(tf.constant(records[:7]), layout)
    expected = to_tensors(merge_batch_to_components(graphs[:7]))
    expected.pop("context/seed_id")
    for name in ("paper", "author"):
        expected.pop(f"nodes/{name}.#id")
    assert sorted(merged) == sorted(expected)
    for key, value in expected.items():
        np.testing.assert_array_equal(merged[key].numpy(), value.numpy(), err_msg=key)


def _decoded(records, layout):
    from sampler.training.columns import BatchMerger

    return training_input.decode_and_merge(tf.constant(records), BatchMerger(layout))


def _shuffled_keys(record: bytes) -> bytes:
    from unigraph.protos import example_pb2

    example = example_pb2.Example.FromString(record)
    out = example_pb2.Example()
    for key in sorted(example.features.feature, reverse=True):
        out.features.feature[key].CopyFrom(example.features.feature[key])
    return out.SerializeToString()


@pytest.mark.parametrize("label", [None, "labels"])
@pytest.mark.parametrize("layouts", ["alike", "one reordered"])
def test_the_batched_decoder_merges_as_tensorflow_parses(toy, label, layouts):
    """train's batches (decode_and_merge) are TensorFlow's (parse_and_merge), value for
    value, dtype and shape, whether the records are laid out alike or not."""
    schema, _, records = toy
    layout = layout_from_schema(schema, label)
    batch = list(records[:9])
    if layouts == "one reordered":
        batch[4] = _shuffled_keys(batch[4])
    expected = training_input.parse_and_merge(tf.constant(batch), layout)
    got = _decoded(batch, layout)
    assert sorted(got) == sorted(expected)
    for key, value in expected.items():
        assert got[key].dtype == value.dtype, key
        assert got[key].shape.as_list()[1:] == value.shape.as_list()[1:], key
        np.testing.assert_array_equal(got[key].numpy(), value.numpy(), err_msg=key)


def test_the_batched_decoder_feeds_train_on_a_sampled_folder(sampled_outputs):
    folder = sampled_outputs["demo"]
    samples = open_samples(folder)
    layout = layout_from_schema(samples.schema, "labels")
    from sampler.output.folder import iter_records

    records = [r for path in samples.files for r in iter_records(path)]
    expected = training_input.parse_and_merge(tf.constant(records), layout)
    got = _decoded(records, layout)
    for key, value in expected.items():
        np.testing.assert_array_equal(got[key].numpy(), value.numpy(), err_msg=key)


def test_merge_and_seed_label_by_hand(toy):
    schema = _hand_schema(toy[0])
    first = _paper_graph(2, [(0, 1)], label_of_seed=5, seed_id=b"x")
    second = _paper_graph(3, [(0, 2), (1, 2)], label_of_seed=7, seed_id=b"y")
    records = [encode_example(g, schema) for g in (first, second)]
    layout = layout_from_schema(schema, "labels")
    graph = training_input.parse_and_merge(tf.constant(records), layout, with_seed_ids=True)
    inputs, labels = training_input.split_label(graph, layout)
    assert inputs["nodes/paper.#size"].numpy().tolist() == [2, 3]
    # The second graph's indices move past the first graph's 2 papers / 1 author.
    assert inputs["edges/cites.#source"].numpy().tolist() == [0, 2, 3]
    assert inputs["edges/cites.#target"].numpy().tolist() == [1, 4, 4]
    assert inputs["edges/written.#target"].numpy().tolist() == [0, 1]
    assert inputs["edges/_readout/seed.#source"].numpy().tolist() == [0, 2]
    assert inputs["edges/_readout/seed.#target"].numpy().tolist() == [0, 1]
    assert inputs["nodes/paper.feat"].numpy()[:, 1].tolist() == [0, 10, 0, 10, 20]
    assert labels.numpy().tolist() == [5, 7]             # the seeds' labels, not 99
    assert "nodes/paper.labels" not in inputs and "context/seed_id" not in inputs
    assert graph["context/seed_id"].numpy().tolist() == [b"x", b"y"]


def test_read_out_scatters_by_readout_target():
    graph = {"edges/_readout/seed.#source": tf.constant([4, 0, 2], tf.int64),
             "edges/_readout/seed.#target": tf.constant([2, 0, 1], tf.int64),
             "nodes/_readout.#size": tf.constant([1, 1, 1], tf.int64)}
    values = tf.constant([10, 11, 12, 13, 14])
    assert training_input.read_out(graph, values).numpy().tolist() == [10, 12, 14]


# --- held-out split ----------------------------------------------------------------

def _seed_ids(dataset):
    return sorted(s.decode() for batch in dataset for s in batch.numpy())


def _parts(files, fraction):
    records = training_input.record_dataset(files)
    seeds = {}
    for part in ("train", "held_out"):
        selected = training_input.select_part(records, part, fraction)
        seeds[part] = sorted(
            tf.io.parse_single_example(r, {"context/seed_id": tf.io.FixedLenFeature(
                [], tf.string)})["context/seed_id"].numpy().decode() for r in selected)
    return seeds


def test_held_out_split_by_seed_id_hash_ignores_sharding(tmp_path, toy):
    schema, graphs, records = toy
    two = write_samples(str(tmp_path / "two"), schema, records, num_shards=2)
    three = write_samples(str(tmp_path / "three"), schema, records[::-1], num_shards=3)
    parts = _parts(two, 0.3)
    assert parts == _parts(three, 0.3)
    assert not set(parts["train"]) & set(parts["held_out"])
    assert len(parts["train"]) + len(parts["held_out"]) == len(records)
    # 60 seeds, p = 0.3: mean 18, sd 3.5; 5 sigma is 0..36.
    assert 0 < len(parts["held_out"]) < 36


def test_held_out_fraction_is_close_to_asked():
    ids = tf.constant([b"paper/%d" % i for i in range(20_000)])
    share = float(tf.reduce_mean(tf.cast(training_input.is_held_out(ids, 0.2), tf.float32)))
    # Binomial sd for n = 20000, p = 0.2 is 0.0028; 5 sigma = 0.014.
    assert abs(share - 0.2) < 0.014


# --- the dataset and padding -------------------------------------------------------

def test_dataset_batches_cover_every_record_once(tmp_path):
    files = write_planted_samples(str(tmp_path), num_papers=50, num_classes=3, seed=2)
    layout = layout_from_schema(open_samples(str(tmp_path)).schema, "labels")
    batches = list(training_input.make_dataset(training_input.record_dataset(files), layout, batch_size=16))
    assert [int(b[1].shape[0]) for b in batches] == [16, 16, 16, 2]
    assert sum(int(b[0]["nodes/_readout.#size"].numpy().sum()) for b in batches) == 50


def test_padding_matches_the_numpy_core(tmp_path, toy):
    schema, graphs, records = toy
    files = write_samples(str(tmp_path), schema, records, num_shards=1)
    layout = layout_from_schema(schema, "labels")
    constraints = training_input.fixed_size_constraints(files, layout, batch_size=8)
    assert constraints == tight_size_constraints(graphs, 8)

    batch = graphs[:5]  # a short batch: more padding than a full one
    inputs, labels = training_input.split_label(
        training_input.parse_and_merge(tf.constant(records[:5]), layout), layout)
    padded, padded_labels, weights = pad_batch(inputs, labels, layout, constraints)
    expected_graph, mask = pad_to_total_sizes(merge_batch_to_components(batch), constraints)
    expected = to_tensors(expected_graph)
    for key, value in padded.items():
        np.testing.assert_array_equal(value.numpy(), expected[key].numpy(), err_msg=key)
        assert value.shape.is_fully_defined(), key
    assert weights.numpy().tolist() == [1.0] * 5 + [0.0] * (constraints.total_num_components - 5)
    seed_labels = [int(g.node_sets["paper"]["labels"][0, 0]) for g in batch]
    assert padded_labels.numpy().tolist()[:5] == seed_labels
    assert mask.sum() == 5


def test_padding_refuses_a_batch_that_does_not_fit(toy):
    schema, graphs, records = toy
    layout = layout_from_schema(schema, "labels")

    small = tight_size_constraints(graphs[:1], 1)
    inputs, labels = training_input.split_label(
        training_input.parse_and_merge(tf.constant(records[:3]), layout), layout)
    with pytest.raises(tf.errors.InvalidArgumentError, match="padding"):
        pad_batch(inputs, labels, layout, small)
