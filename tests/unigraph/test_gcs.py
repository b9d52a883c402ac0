"""gs:// for real: a local GCS emulator, the real google-cloud-storage client, Beam's gcsio.

The emulator (gcp-storage-emulator, in memory) listens on a free 127.0.0.1
port; STORAGE_EMULATOR_HOST points both the storage client and, through
unigraph.storage.paths, Beam's GCS filesystem at it. Nothing is mocked.
"""
import apache_beam as beam
import pytest
from apache_beam.runners.portability.fn_api_runner import FnApiRunner
from apache_beam.testing.util import assert_that, equal_to

from tests.gcs_emulator import BUCKET, gcs, upload_folder  # noqa: F401  (a fixture)
from tests.unigraph import graphs
from tests.unigraph.test_formats import SETS, WRITERS
from unigraph.storage import paths
from unigraph.beam.read import ReadEdgeSet, ReadNodeSet
from unigraph.errors import TableError
from unigraph.schema import load_schema, table_files
from unigraph.tables import read_set

@pytest.mark.parametrize("fmt", sorted(WRITERS))
def test_graph_on_gcs_reads_like_local(gcs, tmp_path, fmt):
    local = WRITERS[fmt](str(tmp_path))
    remote = upload_folder(gcs, str(tmp_path), f"mixed-{fmt}")
    loaded = load_schema(remote)
    assert loaded.folder == f"gs://{BUCKET}/mixed-{fmt}"
    for kind, name in SETS:
        assert table_files(loaded, kind, name)[0].startswith(f"gs://{BUCKET}/mixed-{fmt}/")
        graphs.assert_same_batch(graphs.merged(read_set(load_schema(local), kind, name)),
                                 graphs.merged(read_set(loaded, kind, name)))


def test_shards_and_globs_on_gcs(gcs):
    for i in range(2):
        gcs.blob(f"sharded/n-{i:05d}-of-00002.csv").upload_from_string(f"id\nn{i}\n")
        gcs.blob(f"sharded/e-{i}.csv").upload_from_string(f"source,target\nn{i},n0\n")
    gcs.blob("sharded/graph_schema.pbtxt").upload_from_string(
        'node_sets { key: "n" value { metadata { filename: "n@2.csv" } } }\n'
        'edge_sets { key: "e" value { source: "n" target: "n" '
        'metadata { filename: "e-*.csv" } } }\n')
    loaded = load_schema(f"gs://{BUCKET}/sharded")
    assert table_files(loaded, "edges", "e") == [f"gs://{BUCKET}/sharded/e-0.csv",
                                                 f"gs://{BUCKET}/sharded/e-1.csv"]
    with beam.Pipeline(runner=FnApiRunner()) as p:
        nodes = p | "ReadNodes" >> ReadNodeSet(loaded, "n")
        edges = p | "ReadEdges" >> ReadEdgeSet(loaded, "e")
        assert_that(nodes | beam.FlatMap(lambda b: b.ids.tolist()),
                    equal_to([b"n0", b"n1"]), label="Nodes")
        assert_that(edges | beam.FlatMap(lambda b: b.sources.tolist()),
                    equal_to([b"n0", b"n1"]), label="Edges")


def test_glob_matching_nothing_on_gcs(gcs):
    with pytest.raises(TableError, match=r"table glob 'nothing-\*.csv' matches no file"):
        paths.expand("nothing-*.csv", f"gs://{BUCKET}/sharded", what="test")


def test_convert_to_gcs(gcs, tmp_path):
    from pipelines import convert
    out = f"gs://{BUCKET}/converted"
    assert convert.main(["--graph", graphs.MIXED, "--output", out, "--format", "parquet",
                         "--shards", "2"]) == 0
    loaded = load_schema(out)
    local = load_schema(graphs.MIXED)
    item = graphs.merged(read_set(loaded, "nodes", "item"))
    graphs.assert_same_batch(graphs.merged(read_set(local, "nodes", "item")), item)
