"""The Beam transforms: reading node sets, edge sets and seeds."""
import os
import shutil

import apache_beam as beam
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from apache_beam.options.pipeline_options import PipelineOptions
from apache_beam.runners.portability.fn_api_runner import FnApiRunner
from apache_beam.testing.util import assert_that, equal_to

from tests.unigraph import graphs
from unigraph.columnar.batches import EdgeBatch, NodeBatch, SeedBatch
from unigraph.beam.read import ReadEdgeSet, ReadNodeSet, ReadSeeds
from unigraph.errors import TableError
from unigraph.schema import load_schema
from unigraph.tables import read_set

MAG_TINY = os.path.join(os.path.dirname(graphs.TESTDATA), "..", "examples", "mag_tiny")


def pipeline(multi_process=False):
    """The in-process FnApiRunner, or its multi-process mode that pickles like Dataflow."""
    options = (PipelineOptions(direct_running_mode="multi_processing", direct_num_workers=2)
               if multi_process else PipelineOptions())
    return beam.Pipeline(runner=FnApiRunner(), options=options)


def summary(batch):
    """An order-free description of a batch's rows."""
    if isinstance(batch, NodeBatch):
        return [(batch.node_set, i, int(r)) for i, r in zip(batch.ids.tolist(), batch.rows)]
    if isinstance(batch, EdgeBatch):
        return [(batch.edge_set, s, t, int(r)) for s, t, r in
                zip(batch.sources.tolist(), batch.targets.tolist(), batch.rows)]
    return [("seed", i, int(r)) for i, r in zip(batch.ids.tolist(), batch.rows)]


def expected_rows(loaded, kind, name):
    return [row for b in read_set(loaded, kind, name) for row in summary(b)]


@pytest.mark.parametrize("multi_process", [False, True])
def test_read_sets_match_pure_readers(multi_process):
    loaded = load_schema(MAG_TINY)
    with pipeline(multi_process) as p:
        for kind, name in [("nodes", "paper"), ("nodes", "author"), ("edges", "written"),
                           ("edges", "cites")]:
            read = ReadNodeSet if kind == "nodes" else ReadEdgeSet
            batches = p | f"Read/{name}" >> read(loaded, name, batch_rows=16)
            rows = batches | f"Rows/{name}" >> beam.FlatMap(summary)
            assert_that(rows, equal_to(expected_rows(loaded, kind, name)),
                        label=f"Check/{name}")
            sizes = batches | f"Sizes/{name}" >> beam.Map(len)
            assert_that(sizes, lambda s: all(0 < n <= 16 for n in s) or
                        (_ for _ in ()).throw(AssertionError(s)), label=f"Size/{name}")


def test_read_parquet_row_groups_as_units(tmp_path):
    schema = graphs.write_parquet_graph(str(tmp_path))  # item.parquet has 2 row groups
    loaded = load_schema(schema)
    with pipeline() as p:
        items = p | ReadNodeSet(loaded, "item")
        assert_that(items | beam.Map(len), equal_to([2, 1]))
        back = p | ReadEdgeSet(loaded, "linked_by")
        assert_that(back | beam.FlatMap(summary), equal_to(
            [("linked_by", t, s, r) for r, (s, t, *_) in enumerate(
                [(s.encode(), t.encode()) for s, t, *_ in graphs.LINKS])]), label="Reversed")


@pytest.mark.parametrize("name,text", [
    ("seeds.csv", "id,other\np1,x\np2,y\n"),
    ("seeds.txt", "p1\np2\n"),
])
def test_read_seeds(tmp_path, name, text):
    (tmp_path / name).write_text(text)
    with pipeline() as p:
        seeds = p | ReadSeeds(name, base_dir=str(tmp_path))
        assert_that(seeds | beam.FlatMap(summary),
                    equal_to([("seed", b"p1", 0), ("seed", b"p2", 1)]))


def test_read_sharded_parquet_seeds(tmp_path):
    for i in range(2):
        pq.write_table(pa.table({"#id": [f"s{i}a", f"s{i}b"]}),
                       str(tmp_path / f"seeds-{i:05d}-of-00002.parquet"))
    with pipeline() as p:
        seeds = p | ReadSeeds(str(tmp_path / "seeds@2.parquet"))
        assert_that(seeds | beam.FlatMap(summary), equal_to(
            [("seed", b"s0a", 0), ("seed", b"s0b", 1), ("seed", b"s1a", 1 << 40),
             ("seed", b"s1b", (1 << 40) + 1)]))


def test_seeds_glob_matching_nothing(tmp_path):
    with pytest.raises(TableError, match=r"seeds: table glob 'nope-\*.csv' matches no file"):
        ReadSeeds("nope-*.csv", base_dir=str(tmp_path))


def test_table_errors_surface_from_the_pipeline(tmp_path):
    shutil.copytree(MAG_TINY, tmp_path / "g")
    with open(tmp_path / "g" / "paper.csv", "a") as f:
        f.write("p99,1 2,0,2018\n")
    loaded = load_schema(str(tmp_path / "g"))
    with pytest.raises(TableError, match=r"paper.csv: line 42: column 'feat': expected 8 values"):
        with pipeline() as p:
            _ = p | ReadNodeSet(loaded, "paper")


def test_batches_pickle():
    import pickle
    batch = SeedBatch(np.array([b"a"]), np.array([0], dtype=np.int64))
    assert pickle.loads(pickle.dumps(batch)).ids.tolist() == [b"a"]
