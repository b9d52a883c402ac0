"""The decode benchmark's readers read every record of a folder, each in a process of
its own: TF-GNN's parser beside the decoder's route to the same GraphTensors, and
HeteroData batches; the ratios the issue sets are computed from the medians."""
import pytest

pytest.importorskip("tensorflow")
pytest.importorskip("torch")

from pipelines.bench.decode_benchmark import measure  # noqa: E402
from sampler.output.folder import iter_records, open_samples  # noqa: E402


def test_the_tensorflow_readers_and_heterodata_read_every_record(sampled_outputs):
    folder = sampled_outputs["demo"]
    records = sum(1 for path in open_samples(folder).files for _ in iter_records(path))
    result = measure(folder, ["tensorflow", "tf_decoder", "decoder", "hetero"], 1, 3,
                     log=lambda *a: None)
    assert result["records"] == records
    assert {r["records"] for runs in result["runs"].values() for r in runs} == {records}
    targets = result["targets"]
    assert targets["tf_decoder_vs_tensorflow_records_per_cpu_s"] > 0
    assert targets["hetero_vs_decoder_records_per_cpu_s"] > 0
