"""SampleDataset: every record exactly once with 0, 1 and 3 DataLoader workers (records
and merged batches), PyG's Batch collation, shuffling by epoch, and gs:// through the
GCS emulator."""
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("torch_geometric")

from torch.utils.data import DataLoader  # noqa: E402
from torch_geometric.loader import DataLoader as PygLoader  # noqa: E402

from sampler.graph_tensor import parse_example  # noqa: E402
from sampler.output.folder import iter_records, open_samples  # noqa: E402
from sampler.torch import SampleDataset, Vocabulary  # noqa: E402
from sampler.torch.data import SampledHeteroData  # noqa: E402
from sampler.torch.dataset import SHARD_STRIDE  # noqa: E402
from tests.gcs_emulator import BUCKET, gcs  # noqa: E402,F401  (a fixture)
from unigraph.errors import SamplerError  # noqa: E402


def expected(folder):
    """(input_id, seed id) of every record of the folder."""
    samples = open_samples(folder)
    return sorted((shard * SHARD_STRIDE + i,
                   parse_example(samples.schema, record).context["seed_id"][0].decode())
                  for shard, path in enumerate(samples.files)
                  for i, record in enumerate(iter_records(path)))


def seen(items):
    """(input_id, seed id) of every subgraph the loader gave."""
    out = []
    for data in items:
        seed_ids = data.seed_id if isinstance(data.seed_id, list) else [data.seed_id]
        out += zip(data["paper"].input_id.tolist(), seed_ids)
    return out


@pytest.fixture(scope="module")
def demo(sampled_outputs):
    folder = sampled_outputs["demo"]
    assert len(open_samples(folder).files) >= 4  # more shards than workers, and uneven
    return folder, Vocabulary.from_samples(folder)


# More workers than the machine's 2 cores is the point: torch warns about it.
@pytest.mark.filterwarnings("ignore:This DataLoader will create")
@pytest.mark.parametrize("workers", [0, 1, 3])
@pytest.mark.parametrize("batch_size", [None, 4])
def test_every_record_once_whatever_the_workers(demo, workers, batch_size):
    folder, vocabulary = demo
    dataset = SampleDataset(folder, vocabulary=vocabulary, batch_size=batch_size)
    loader = DataLoader(dataset, batch_size=None, num_workers=workers)
    got = seen(loader)
    assert len(got) == len(set(got))  # no record twice
    assert sorted(got) == expected(folder)  # none dropped
    if batch_size:
        assert all(data["paper"].batch_size <= batch_size for data in loader)


class _FreezeCounted(SampleDataset):
    """Each batch or record with the freeze count of the process that made it."""

    def __iter__(self):
        import gc

        for data in super().__iter__():
            data.frozen = gc.get_freeze_count()
            yield data


@pytest.mark.parametrize("batch_size", [None, 4])
def test_a_worker_freezes_what_it_inherited(demo, batch_size):
    """In a DataLoader worker, the objects the process inherited are frozen before the
    first batch (sampler.api.shared_blocks.settle_worker: full collections skip them);
    without workers, the training process is left as it is."""
    import gc

    folder, vocabulary = demo
    dataset = _FreezeCounted(folder, vocabulary=vocabulary, batch_size=batch_size)
    ours = gc.get_freeze_count()
    in_worker = [d.frozen for d in DataLoader(dataset, batch_size=None, num_workers=1)]
    # (the count falls as frozen objects die: those the worker made before settling)
    assert min(in_worker) > max(ours, 10_000)
    assert {d.frozen for d in DataLoader(dataset, batch_size=None)} == {ours}


def test_records_collate_with_pyg_batch_in_workers(demo):
    folder, vocabulary = demo
    loader = PygLoader(SampleDataset(folder, vocabulary=vocabulary), batch_size=8,
                       num_workers=2)
    batches = list(loader)
    assert sum(b.num_graphs for b in batches) == len(expected(folder))
    for batch in batches:  # each record's seed is its node 0: at `ptr`
        seeds = vocabulary.ids("paper", batch["paper"].n_id[batch["paper"].ptr[:-1]])
        assert [s.decode() for s in seeds] == batch.seed_id


def test_shuffle_is_a_permutation_that_changes_by_epoch(demo):
    folder, vocabulary = demo
    dataset = SampleDataset(folder, vocabulary=vocabulary, shuffle=True, shuffle_buffer=8,
                            seed=3)
    first = seen(dataset)
    assert seen(dataset) == first  # the same epoch, the same order
    dataset.set_epoch(1)
    second = seen(dataset)
    assert second != first and sorted(second) == sorted(first) == expected(folder)
    assert first != expected(folder)


@pytest.mark.filterwarnings("ignore:This DataLoader will create")
def test_persistent_workers_follow_set_epoch(demo):
    """Persistent workers keep the dataset they were forked with: set_epoch still
    reaches them (the epoch is in shared memory), each pass as without workers."""
    folder, vocabulary = demo

    def passes(workers):
        dataset = SampleDataset(folder, vocabulary=vocabulary, shuffle=True,
                                shuffle_buffer=8, seed=3, batch_size=3)
        loader = DataLoader(dataset, batch_size=None, num_workers=workers,
                            persistent_workers=workers > 0)
        out = []
        for epoch in (0, 1, 1, 0):
            dataset.set_epoch(epoch)
            out.append([int(i) for data in loader for i in data["paper"].input_id])
        return out

    alone = passes(0)
    assert passes(1) == alone
    assert alone[0] == alone[3] != alone[1] == alone[2]
    with pytest.raises(SamplerError, match="epoch -1"):
        SampleDataset(folder, vocabulary=vocabulary).set_epoch(-1)


def test_a_growing_vocabulary_is_refused_in_workers(demo):
    folder, _ = demo
    loader = DataLoader(SampleDataset(folder, vocabulary=Vocabulary()), batch_size=None,
                        num_workers=2)
    with pytest.raises(SamplerError, match="a growing Vocabulary cannot be shared"):
        list(loader)


def test_reads_gcs(demo, gcs):
    folder, vocabulary = demo
    for name in ("graph_schema.pbtxt", "sample_report.json"):
        gcs.blob(f"torch/out/{name}").upload_from_filename(f"{folder}/{name}")
    for path in open_samples(folder).files:
        gcs.blob(f"torch/out/{path.rsplit('/', 1)[-1]}").upload_from_filename(path)
    remote = f"gs://{BUCKET}/torch/out"
    dataset = SampleDataset(remote, vocabulary=vocabulary, batch_size=5)
    assert sorted(seen(dataset)) == expected(folder)
    from_gcs = Vocabulary.from_samples(remote)
    assert {n: from_gcs.size(n) for n in from_gcs.node_sets()} == \
        {n: vocabulary.size(n) for n in vocabulary.node_sets()}


def test_refuses_a_bad_batch_size(demo):
    with pytest.raises(SamplerError, match="batch_size 0"):
        SampleDataset(demo[0], batch_size=0)


EDGE_FEATURES_SCHEMA = """
node_sets { key: "paper" value {
  features { key: "feat" value { dtype: DT_FLOAT shape { dim { size: 3 } } } }
  metadata { filename: "paper.csv" } } }
edge_sets { key: "cites" value { source: "paper" target: "paper"
  features { key: "pos" value { dtype: DT_FLOAT shape { dim { size: 2 } } } }
  features { key: "kind" value { dtype: DT_STRING } }
  features { key: "year" value { dtype: DT_INT64 } }
  metadata { filename: "cites.csv" } } }
"""
EDGE_FEATURES_SPEC = """
seed_op { op_name: "seed" node_set_name: "paper" }
sampling_ops { op_name: "cites" input_op_names: "seed" edge_set_name: "cites"
               sample_size: 3 strategy: RANDOM_UNIFORM }
"""


@pytest.fixture(scope="module")
def edge_features_folder(tmp_path_factory):
    """Papers p00..p23 of which only the even ones cite (edges with a float vector, a
    string and an int64 feature): every other record has an edge set with edge features
    and no edge."""
    from tests.pipelines.sampled_output import run_sample

    graph = tmp_path_factory.mktemp("edge_features_graph")
    (graph / "graph_schema.pbtxt").write_text(EDGE_FEATURES_SCHEMA)
    (graph / "spec.pbtxt").write_text(EDGE_FEATURES_SPEC)
    (graph / "paper.csv").write_text("id,feat\n" + "".join(
        f"p{i:02d},{i} {i / 2} {-i}\n" for i in range(24)))
    (graph / "cites.csv").write_text("source,target,pos,kind,year\n" + "".join(
        f"p{i:02d},p{(i + k) % 24:02d},{k} {i},k{k},{2000 + k}\n"
        for i in range(0, 24, 2) for k in (1, 5)))
    return run_sample(tmp_path_factory.mktemp("edge_features_out"), graph,
                      graph / "spec.pbtxt")


@pytest.mark.parametrize("workers", [0, 2])
@pytest.mark.parametrize("batch_size, features", [(None, "x"), (5, "x"), (None, "names"),
                                                  (5, "names")])
def test_edge_sets_with_edge_features_and_no_edges(edge_features_folder, workers, batch_size,
                                                   features):
    samples = open_samples(edge_features_folder)
    graphs = {parse_example(samples.schema, r).context["seed_id"][0].decode():
              parse_example(samples.schema, r)
              for path in samples.files for r in iter_records(path)}
    assert sum(g.edge_sets["cites"].total_size == 0 for g in graphs.values()) == 12
    dataset = SampleDataset(edge_features_folder, vocabulary=Vocabulary.from_samples(
        edge_features_folder), batch_size=batch_size, features=features)
    loader = DataLoader(dataset, batch_size=None, num_workers=workers)
    edges, positions, records = {}, {}, 0
    for data in loader:
        seed_ids = data.seed_id if isinstance(data.seed_id, list) else [data.seed_id]
        records += len(seed_ids)
        cites = data["paper", "cites", "paper"]
        count = cites.edge_index.shape[1]
        if features == "names":
            assert cites.year.shape == (count,)
            pos = cites.pos
        else:  # edge_attr: pos (2 columns), then year
            assert cites.edge_attr.shape == (count, 3)
            pos = cites.edge_attr[:, :2]
        owner = (data["paper"].batch[cites.edge_index[0]].tolist() if batch_size
                 else [0] * count)
        for i, seed in enumerate(seed_ids):
            mine = [e for e, o in enumerate(owner) if o == i]
            edges[seed] = len(mine)
            positions[seed] = sorted(pos[mine].tolist())
    assert records == len(graphs) == 24
    for seed, graph in graphs.items():
        assert edges[seed] == graph.edge_sets["cites"].total_size
        assert positions[seed] == sorted(graph.edge_sets["cites"]["pos"].tolist())


def test_records_laid_out_otherwise_read_the_same(demo, tmp_path):
    """A folder whose records list their keys in another order (another writer): the
    batched decoder takes its exact path, and the vocabulary and batches are the same."""
    import shutil

    from unigraph.encoding import tfrecord
    from unigraph.protos import example_pb2

    folder, vocabulary = demo
    copy = tmp_path / "reordered"
    shutil.copytree(folder, copy)
    for path in open_samples(str(copy)).files:
        records = list(iter_records(path))
        with open(path, "wb") as f:
            for i, record in enumerate(records):
                example = example_pb2.Example.FromString(record)
                keys = sorted(example.features.feature, reverse=bool(i % 2))
                out = example_pb2.Example()
                for key in keys:
                    out.features.feature[key].CopyFrom(example.features.feature[key])
                f.write(tfrecord.encode_record(out.SerializeToString()))
    reordered = Vocabulary.from_samples(str(copy))
    for name in vocabulary.node_sets():
        assert reordered.ids(name, range(reordered.size(name))).tolist() == \
            vocabulary.ids(name, range(vocabulary.size(name))).tolist()
    assert sorted(seen(SampleDataset(str(copy), vocabulary=vocabulary, batch_size=3))) == \
        expected(folder)


def _damaged_copy(folder, tmp_path):
    """A copy of the folder whose shard 1's record 1 says it has 5 papers more than it
    holds; (the copy, that shard's path)."""
    import shutil

    from unigraph.encoding import tfrecord
    from unigraph.protos import example_pb2

    copy = tmp_path / "bad"
    shutil.copytree(folder, copy)
    path = open_samples(str(copy)).files[1]
    records = list(iter_records(path))
    example = example_pb2.Example.FromString(records[1])
    example.features.feature["nodes/paper.#size"].int64_list.value[0] += 5
    records[1] = example.SerializeToString()
    with open(path, "wb") as f:
        f.write(b"".join(tfrecord.encode_record(r) for r in records))
    return copy, path


@pytest.mark.parametrize("batch_size", [None, 4])
def test_a_bad_record_is_named_by_file_and_index(demo, tmp_path, batch_size):
    folder, vocabulary = demo
    copy, path = _damaged_copy(folder, tmp_path)
    with pytest.raises(SamplerError, match=rf"^{path}: record 1: .*'nodes/paper\.") as info:
        list(SampleDataset(str(copy), vocabulary=vocabulary, batch_size=batch_size))
    assert "\n" not in str(info.value)


@pytest.mark.filterwarnings("ignore:This DataLoader will create")
def test_a_bad_record_read_in_a_worker_is_named_by_file_and_index(demo, tmp_path):
    """In a DataLoader worker the damage still comes out as its line."""
    folder, vocabulary = demo
    copy, path = _damaged_copy(folder, tmp_path)
    dataset = SampleDataset(str(copy), vocabulary=vocabulary, batch_size=2)
    with pytest.raises(SamplerError, match=rf"{path}: record 1: .*'nodes/paper\."):
        list(DataLoader(dataset, batch_size=None, num_workers=1))


def _tensors(data) -> dict:
    return {(str(getattr(store, "_key", None)), name): value
            for store in data.stores for name, value in store.items()
            if isinstance(value, torch.Tensor)}


@pytest.mark.filterwarnings("ignore:This DataLoader will create")
@pytest.mark.parametrize("batch_size", [None, 3])
def test_workers_hand_over_the_same_tensors(demo, batch_size):
    """Every tensor arrives from a worker as it left (compared by the first input_id with
    and without workers; one worker for batches, which then cut the records alike);
    batches come in blocks of shared memory the workers reuse, and
    a batch kept while the loader goes on is never overwritten (all are compared after
    the pass, none cloned)."""
    folder, vocabulary = demo

    def by_record(workers):
        out = {}
        loader = DataLoader(SampleDataset(folder, vocabulary=vocabulary, label="labels",
                                          batch_size=batch_size),
                            batch_size=None, num_workers=workers)
        for data in loader:
            assert type(data) is SampledHeteroData  # the offsets' rule kept, workers or not
            out[int(data["paper"].input_id[0])] = (_tensors(data), data.seed_id)
        return out

    alone, sent = by_record(0), by_record(2 if batch_size is None else 1)
    assert alone.keys() == sent.keys()
    for key, (tensors, seed_ids) in alone.items():
        got, got_seed_ids = sent[key]
        assert tensors.keys() == got.keys() and seed_ids == got_seed_ids
        for name, value in tensors.items():
            assert value.dtype == got[name].dtype and torch.equal(value, got[name])


def test_a_block_is_reused_only_when_no_tensor_of_its_batch_is_left(demo):
    """handoff: the main process's views of a block keep it in use, however they are
    held (a tensor taken out of the HeteroData, a view of it); the worker takes another
    block meanwhile, and the first one back when the last view is gone."""
    import gc
    import pickle

    from multiprocessing.reduction import ForkingPickler

    from sampler.api import shared_blocks
    from sampler.torch import handoff

    folder, vocabulary = demo
    first, second = list(SampleDataset(folder, vocabulary=vocabulary, batch_size=4))[:2]
    expected_x = first["paper"].x.clone()
    blocks = handoff.Blocks()
    received = pickle.loads(ForkingPickler.dumps(handoff.sent(first, blocks)))
    assert type(received) is SampledHeteroData
    assert torch.equal(received["paper"].x, expected_x)
    kept = received["paper"].x[1:]  # a view of a tensor of the batch, nothing else
    del received
    gc.collect()
    again = handoff.sent(second, blocks)  # the first block is still in use: another one
    assert len(blocks._blocks) == 2
    assert torch.equal(kept, expected_x[1:])
    del kept, again
    gc.collect()
    assert [int(block.header[0]) for block in blocks._blocks] == [shared_blocks.KNOWN,
                                                                  shared_blocks.IN_USE]


def test_tensors_changed_in_the_worker_after_the_handoff_arrive_as_changed(demo):
    """A collate_fn in the worker may replace, add or drop tensors of a batch already in
    its block: the main process gets what the batch holds when it is sent."""
    import pickle

    from multiprocessing.reduction import ForkingPickler

    from sampler.torch import handoff

    folder, vocabulary = demo
    data = next(iter(SampleDataset(folder, vocabulary=vocabulary, batch_size=4)))
    x, n_id = data["paper"].x.clone(), data["paper"].n_id.clone()
    data = handoff.sent(data, handoff.Blocks())
    data["paper"].x = data["paper"].x * 2           # replaced
    data["paper"].mask = torch.ones(3, dtype=torch.bool)   # added
    data["paper"].n_id.add_(1)                      # changed in place, in the block
    del data["paper"].batch                         # dropped
    received = pickle.loads(ForkingPickler.dumps(data))
    assert torch.equal(received["paper"].x, x * 2)
    assert torch.equal(received["paper"].mask, torch.ones(3, dtype=torch.bool))
    assert torch.equal(received["paper"].n_id, n_id + 1)
    assert "batch" not in received["paper"]


def test_every_dtype_and_shape_arrives_as_sent():
    """The main process makes a batch's tensors from numpy arrays over the block, and
    those of a dtype numpy lacks (bfloat16) from a tensor of it: values, dtypes and
    shapes as sent, empty and 0-d tensors too, in node, edge and global stores."""
    import pickle

    from multiprocessing.reduction import ForkingPickler

    from sampler.torch import handoff

    generator = torch.Generator().manual_seed(0)
    values = {dtype: (torch.randn(3, 5, generator=generator) * 100).to(dtype)
              for dtype in (torch.float64, torch.float32, torch.float16, torch.bfloat16,
                            torch.int64, torch.int32, torch.int16, torch.int8, torch.uint8,
                            torch.bool, torch.complex64)}
    data = SampledHeteroData()
    for number, (dtype, value) in enumerate(values.items()):
        data["paper"][f"v{number}"] = value
    data["paper"].empty = torch.zeros(0, 4, dtype=torch.bfloat16)
    data["paper", "cites", "paper"].edge_index = torch.tensor([[0, 1], [1, 2]])
    data["paper", "cites", "paper"].scalar = torch.tensor(7, dtype=torch.int16)
    data.total = torch.arange(3, dtype=torch.int32)
    expected = {name: value.clone() for name, value in _tensors(data).items()}
    received = pickle.loads(ForkingPickler.dumps(handoff.sent(data, handoff.Blocks())))
    got = _tensors(received)
    assert got.keys() == expected.keys()
    for name, value in expected.items():
        assert got[name].dtype == value.dtype and got[name].shape == value.shape, name
        assert torch.equal(got[name], value), name


@pytest.mark.filterwarnings("ignore:This DataLoader will create")
def test_the_main_process_lets_go_of_the_blocks_of_workers_that_ended(demo):
    """The main process maps the workers' blocks (sampler.api.shared_blocks); once the
    workers have ended and no batch is held, none of their blocks is left mapped."""
    import gc

    from sampler.api import shared_blocks

    folder, vocabulary = demo
    loader = DataLoader(SampleDataset(folder, vocabulary=vocabulary, batch_size=2),
                        batch_size=None, num_workers=2)
    batches = iter(loader)
    workers = {w.pid for w in batches._workers}
    for data in batches:
        assert {key[0] for key in shared_blocks._MAPPED} & workers  # their blocks
    del data
    gc.collect()
    assert not {key[0] for key in shared_blocks._MAPPED} & workers
