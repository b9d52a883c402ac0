"""sampler.job.sizing: node buckets from the input's size, shards from the output's."""
import os
import shutil

import pytest

from sampler.job.options import load_and_check
from sampler.job import sizing
from tests.conftest import REPO_ROOT

DEMO = os.path.join(REPO_ROOT, "examples", "mag_tiny")


@pytest.fixture
def demo(tmp_path):
    folder = tmp_path / "mag"
    shutil.copytree(DEMO, folder)
    return folder


def _job(folder):
    return load_and_check(str(folder / "graph_schema.pbtxt"),
                          str(folder / "sampling_spec.pbtxt"))


def _seeds(folder, n):
    path = folder / f"seeds_{n}.csv"
    path.write_text("id\n" + "".join(f"p{i % 40:02d}\n" for i in range(n)))
    return str(path)


def test_a_small_job_keeps_the_defaults(demo):
    loaded, plan = _job(demo)
    assert sizing.output_shards(loaded, plan, [str(demo / "seeds.csv")]) == 4
    assert sizing.node_buckets(loaded, plan) == 4


def test_the_output_estimate_grows_with_the_seeds_and_sets_the_shards(demo, monkeypatch):
    loaded, plan = _job(demo)
    small = sizing.estimated_output_bytes(loaded, plan, [_seeds(demo, 1000)])
    large = sizing.estimated_output_bytes(loaded, plan, [_seeds(demo, 4000)])
    assert 3.5 < large / small < 4.5  # the rows of the seeds file, estimated from its bytes
    # Each subgraph: the seed paper plus its sampled neighbourhood, a few hundred bytes to
    # a few kB here (rows of 20-80 bytes, up to 60 nodes).
    assert 200 < small / 1000 < 20_000
    monkeypatch.setattr(sizing, "SHARD_TARGET", int(large / 10))
    assert sizing.output_shards(loaded, plan, [_seeds(demo, 4000)]) in (10, 11)
    monkeypatch.setattr(sizing, "SHARD_TARGET", 1)
    assert sizing.output_shards(loaded, plan, [_seeds(demo, 4000)]) == sizing.MAX_SHARDS


def test_no_seeds_table_means_every_node_of_the_seed_set(demo):
    loaded, plan = _job(demo)
    every = sizing.estimated_output_bytes(loaded, plan, [])
    listed = sizing.estimated_output_bytes(loaded, plan, [_seeds(demo, 40)])
    assert 0.8 < every / listed < 1.25  # paper.csv holds 40 papers


def test_node_buckets_keep_the_largest_set_under_the_element_budget(demo, monkeypatch):
    loaded, plan = _job(demo)
    largest = max(os.path.getsize(demo / f) for f in os.listdir(demo) if f.endswith(".csv"))
    budget = largest * 2 / 50  # CSV grows 2x in memory
    monkeypatch.setattr(sizing, "ELEMENT_BUDGET", budget)
    buckets = sizing.node_buckets(loaded, plan)
    assert buckets == 50 and largest * 2 / buckets <= budget


def test_tfrecord_rows_are_counted_from_the_framing(tmp_path):
    from unigraph.encoding import tfrecord

    path = tmp_path / "t.tfrecord"
    with open(path, "wb") as f:
        for i in range(100):
            f.write(tfrecord.encode_record(b"x" * (10 + i % 5)))
    rows, per_row = sizing._file_rows(str(path))
    assert rows == pytest.approx(100) and per_row == pytest.approx(28)


def test_a_seed_set_without_a_table_is_estimated_from_its_edges(tmp_path):
    # 'tag' has no table: its nodes are the ids the 'tagged' edges name.
    topk = os.path.join(REPO_ROOT, "tests", "testdata", "topk")
    spec = tmp_path / "spec.pbtxt"
    spec.write_text('seed_op { op_name: "seed" node_set_name: "tag" }')
    loaded, plan = load_and_check(os.path.join(topk, "graph_schema.pbtxt"), str(spec))
    assert sizing.estimated_output_bytes(loaded, plan, []) > 0
    assert sizing.output_shards(loaded, plan, []) == sizing.DEFAULT_SHARDS
