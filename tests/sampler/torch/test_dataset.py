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
