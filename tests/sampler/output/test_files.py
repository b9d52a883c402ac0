"""sampler.output.files: what --output means, without looking at the disk."""
import pytest

from sampler.output.files import is_output_file, parse_output
from unigraph.errors import SamplerError


@pytest.mark.parametrize("output, folder, first, count", [
    ("out", "out", "samples-00000-of-00004.tfrecord", None),
    ("out/", "out", "samples-00000-of-00004.tfrecord", None),
    ("/abs/out", "/abs/out", "samples-00000-of-00004.tfrecord", None),
    ("gs://b/run", "gs://b/run", "samples-00000-of-00004.tfrecord", None),
    ("t@3", ".", "t-00000-of-00003.tfrecord", 3),
    ("/t@3", "/", "t-00000-of-00003.tfrecord", 3),
    ("gs://b/o/t@2.tfrecords", "gs://b/o", "t-00000-of-00002.tfrecords", 2),
    ("o/t.tfrecords@2", "o", "t.tfrecords-00000-of-00002", 2),
    ("o/t.tfrecord@2", "o", "t.tfrecord-00000-of-00002", 2),
    ("o/t-?????-of-00005", "o", "t-00000-of-00005.tfrecord", 5),
    ("o/t.tfrecords-?????-of-00005", "o", "t.tfrecords-00000-of-00005", 5),
    ("o/t-?????-of-00005.tfrecords", "o", "t-00000-of-00005.tfrecords", 5),
    ("o/one.tfrecords", "o", "one.tfrecords", 1),
])
def test_parse_output(output, folder, first, count):
    spec = parse_output(output)
    assert spec.folder == folder and spec.num_shards == count
    assert spec.shard_name(0, count or 4) == first


@pytest.mark.parametrize("output", ["", " out", "o/x@0", "o/@2", "o/x.tfrecord@2.tfrecord"])
def test_bad_outputs(output):
    with pytest.raises(SamplerError):
        parse_output(output)


def test_staging_keeps_the_names():
    spec = parse_output("gs://b/o/t.tfrecords@2")
    staged = spec.in_folder("gs://b/o/.sample-staging-1")
    assert staged.shard_names(2) == spec.shard_names(2)
    assert staged.shard_path(1, 2) == "gs://b/o/.sample-staging-1/t.tfrecords-00001-of-00002"


def test_is_output_file():
    assert all(map(is_output_file, ["graph_schema.pbtxt", "sample_report.json",
                                    "x-00001-of-00002.tfrecord", "x.tfrecords-00000-of-00001",
                                    "all.tfrecord"]))
    assert not any(map(is_output_file, ["notes.txt", "x.csv"]))
