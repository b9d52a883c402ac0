"""sample-stats' numbers against a brute-force computation over every decoded record."""
import json
import os
import shutil

import numpy as np
import pytest

from sampler.graph_tensor import parse_example
from sampler.output import stats_shard
from sampler.output.folder import SamplesError
from sampler.output.sketches import ALPHA
from sampler.output.stats import count_quantiles, folder_stats, sample_stats
from sampler.output.stats_layout import Layout
from tests.pipelines.sampled_output import read_records
from unigraph.encoding import tfrecord
from unigraph.columnar.ragged import Ragged
from unigraph.schema import load_schema



@pytest.fixture(scope="module")
def outputs(sampled_outputs):
    return sampled_outputs


def decoded(folder):
    schema = load_schema(os.path.join(folder, "graph_schema.pbtxt")).schema
    records = read_records(folder)
    return schema, records, [parse_example(schema, r) for r in records]


def flat(field):
    """Every value of a feature (items and dimensions flattened) and its ragged row lengths."""
    lengths = []
    while isinstance(field, Ragged):
        lengths.append(field.row_lengths)
        field = field.values
    return np.asarray(field).reshape(-1), lengths


def feature_values(graphs, scope, set_name, name):
    values, lengths = [], []
    for g in graphs:
        piece = g.context if scope == "context" else (
            g.node_sets[set_name] if scope == "nodes" else g.edge_sets[set_name])
        v, l = flat(piece.features[name])
        values.append(v)
        lengths.append(l)
    joined = np.concatenate(values) if values else np.zeros(0)
    depth = max((len(l) for l in lengths), default=0)
    return joined, [np.concatenate([l[d] for l in lengths]) for d in range(depth)]


@pytest.mark.parametrize("name", ["demo", "topk", "mixed"])
def test_counts_and_bytes_match_brute_force(outputs, name):
    folder = outputs[name]
    schema, records, graphs = decoded(folder)
    d = sample_stats(folder)
    assert d["records"] == len(records) and d["files"] == 4
    assert d["bytes"] == sum(map(len, records))
    expected_bytes = np.array([len(r) for r in records])
    assert d["bytes_per_record"] == count_quantiles(expected_bytes)
    for set_name in schema.node_sets:
        counts = np.array([g.node_sets[set_name].total_size for g in graphs])
        q = d["node_sets"][set_name]
        assert [q[n] for n in ("min", "p5", "p50", "p95", "max")] == pytest.approx(
            list(np.percentile(counts, [0, 5, 50, 95, 100])))
        assert q["mean"] == pytest.approx(counts.mean()) and q["total"] == counts.sum()
        assert q["zero"] == (counts == 0).sum()
    for set_name in schema.edge_sets:
        counts = np.array([g.edge_sets[set_name].total_size for g in graphs])
        q = d["edge_sets"][set_name]
        assert [q[n] for n in ("min", "p5", "p50", "p95", "max")] == pytest.approx(
            list(np.percentile(counts, [0, 5, 50, 95, 100])))


@pytest.mark.parametrize("name", ["demo", "topk", "mixed"])
def test_feature_summaries_match_brute_force(outputs, name):
    folder = outputs[name]
    schema, _, graphs = decoded(folder)
    d = sample_stats(folder)
    layout = Layout.of(schema)
    assert layout.features, "the test needs features"
    for ref in layout.features:
        scope = {"context": "context", "nodes": "node_sets", "edges": "edge_sets"}[ref.scope]
        got = d["features"][scope][ref.name] if scope == "context" else \
            d["features"][scope][ref.set_name][ref.name]
        values, lengths = feature_values(graphs, ref.scope, ref.set_name, ref.name)
        assert got["values"] == len(values), ref.key
        if ref.is_string:
            strings = [bytes(v) for v in values]
            distinct, counts = np.unique(np.array(strings, dtype=object), return_counts=True)
            assert got["distinct"] == len(distinct) and got["distinct_exact"]
            expected = sorted(zip(distinct, counts), key=lambda x: (-x[1], x[0]))[:10]
            assert got["top_values"] == [[v.decode(), int(c)] for v, c in expected]
            assert got["top_values_max_undercount"] == 0
        else:
            numbers = values.astype(np.float64)
            finite = numbers[np.isfinite(numbers)]
            assert got["mean"] == pytest.approx(finite.mean(), rel=1e-9, abs=1e-12)
            assert got["std"] == pytest.approx(finite.std(), rel=1e-6, abs=1e-9)
            assert got["nan"] == np.isnan(numbers).sum()
            exact = np.quantile(finite, [0, 0.05, 0.5, 0.95, 1], method="lower")
            q = [got["quantiles"][n] for n in ("min", "p5", "p50", "p95", "max")]
            if got["quantiles_exact"]:
                assert q == list(exact), ref.key
            if "distinct" in got:   # integers
                assert got["distinct"] == len(np.unique(values)) and got["distinct_exact"]
            else:
                assert q == pytest.approx(list(exact), rel=ALPHA, abs=1e-30), ref.key
        for dimension, expected_lengths in enumerate(lengths, start=1):
            r = got["row_lengths"][f"d{dimension}"]
            assert [r[n] for n in ("min", "p50", "max")] == list(
                np.quantile(expected_lengths, [0, 0.5, 1], method="lower"))


def test_mixed_graph_has_every_kind_of_feature(outputs):
    d = sample_stats(outputs["mixed"])
    item = d["features"]["node_sets"]["item"]
    assert item["tags"]["row_lengths"]["d1"]["max"] >= 1      # ragged int64
    assert "row_lengths" in item["words"] and item["words"]["distinct_exact"]  # ragged strings
    assert d["features"]["edge_sets"]["link"]["pos"]["dtype"] == "DT_INT32"


def test_seed_only_subgraphs_are_counted_and_named(outputs):
    d = sample_stats(outputs["topk"])
    assert d["subgraphs"] == {"empty": 0, "seed_only": 1, "seed_only_seed_ids": ["u3"]}
    assert d["run_report"]["seeds_missing"] == 1
    seeds = d["features"]["context"]["seed_id"]
    assert seeds["top_values"][0] == ["u1", 2]   # the duplicated seed shows


def test_cap_hit_rates_come_from_the_run_report(outputs):
    folder = outputs["demo"]
    with open(os.path.join(folder, "sample_report.json")) as f:
        report = json.load(f)
    ops = sample_stats(folder)["ops"]
    assert list(ops) == list(report["edges_sampled_per_op"])
    for op, o in ops.items():
        assert o["draws"] == report["draws_per_op"][op]
        assert o["cap_hit_rate"] == report["draws_at_cap_per_op"][op] / report["draws_per_op"][op]


def test_numbers_do_not_depend_on_workers_or_chunking(outputs, monkeypatch):
    folder = outputs["demo"]
    one = folder_stats(folder, workers=1).as_dict()
    assert folder_stats(folder, workers=2).as_dict() == one   # shards merge in file order
    monkeypatch.setattr(stats_shard, "CHUNK_BYTES", 1)  # a record per chunk
    assert_close(folder_stats(folder, workers=1).as_dict(), one)   # floats may round apart


def assert_close(got, want, where=""):
    if isinstance(want, dict):
        assert list(got) == list(want), where
        for key in want:
            assert_close(got[key], want[key], f"{where}/{key}")
    elif isinstance(want, list):
        assert len(got) == len(want), where
        for i, (g, w) in enumerate(zip(got, want)):
            assert_close(g, w, f"{where}[{i}]")
    elif isinstance(want, float):
        assert got == pytest.approx(want, rel=1e-12, abs=1e-12), where
    else:
        assert got == want, where


def test_without_report_the_ops_are_unknown(outputs, tmp_path):
    folder = tmp_path / "copy"
    shutil.copytree(outputs["demo"], folder)
    os.remove(folder / "sample_report.json")
    d = sample_stats(str(folder))
    assert d["ops"] is None and d["run_report"] is None and d["records"] == 10


def test_damaged_record_names_file_and_record(outputs, tmp_path):
    folder = tmp_path / "bad"
    shutil.copytree(outputs["demo"], folder)
    shard = sorted(p for p in os.listdir(folder) if p.endswith(".tfrecord"))[1]
    records = read_records(str(folder))
    with open(folder / shard, "rb") as f:
        good = list(tfrecord.iter_records(f, shard))
    with open(folder / shard, "wb") as f:
        f.write(tfrecord.encode_record(good[0]))
        f.write(tfrecord.encode_record(b"\x0a\x05\x0a\x03garbage"))
    assert records
    with pytest.raises(SamplesError, match=rf"{shard}: record 1: .*"):
        folder_stats(str(folder))


def test_not_a_samples_folder(tmp_path):
    with pytest.raises(SamplesError, match="no graph_schema.pbtxt"):
        folder_stats(str(tmp_path))


def test_seed_ids_kept_for_notebooks(outputs):
    stats = folder_stats(outputs["topk"], keep_seed_ids=True)
    from sampler.output.stats_frame import features_frame, records_frame, sets_frame

    frame = records_frame(stats)
    assert sorted(frame["seed_id"]) == ["u1", "u1", "u2", "u3"]
    assert list(frame["bytes"]) == [len(r) for r in read_records(outputs["topk"])]
    assert frame.loc[frame.seed_id == "u3", "edges/bought"].tolist() == [0]
    sets = sets_frame(stats)
    assert sets.loc[("node set", "item"), "max"] == 4
    features = features_frame(stats)
    assert features.loc[("node set", "user", "age"), "values"] == 4


def test_records_in_other_layouts_and_odd_sizes(tmp_path):
    """Keys in any order, an unpacked #size, an empty one, a #size of the wrong kind."""
    from sampler.graph_tensor import wire
    from sampler.output.stats_shard import summarize_shard

    (tmp_path / "graph_schema.pbtxt").write_text(
        'node_sets { key: "p" value { features { key: "x" value { dtype: DT_INT64 } } } }\n')
    layout = Layout.of(load_schema(str(tmp_path / "graph_schema.pbtxt")).schema)

    def record(entries):
        return wire.encode_example_bytes(entries)
    x = wire.encode_feature(wire.INT64, np.array([5, 7]))
    unpacked_size = b"\x1a\x04\x08\x01\x08\x01"       # Int64List{1: 1, 1: 1}: sizes 1 + 1
    shard = tmp_path / "s-00000-of-00001.tfrecord"
    with open(shard, "wb") as f:
        for r in (record([("nodes/p.x", x), ("nodes/p.#size", unpacked_size)]),
                  record([("nodes/p.#size", wire.encode_feature(wire.INT64, np.zeros(0)))]),
                  record([("nodes/p.#size", wire.encode_feature(wire.INT64, np.array([300])))])):
            f.write(tfrecord.encode_record(r))
    tally = summarize_shard(str(shard), layout)
    assert tally.nodes[0][:, 0].tolist() == [2, 0, 300]
    assert tally.features["nodes/p.x"].values.moments.mean == 6
    with open(shard, "wb") as f:
        f.write(tfrecord.encode_record(record([("nodes/p.#size", wire.encode_feature(
            wire.FLOAT, np.array([1.0])))])))
    with pytest.raises(SamplesError, match="record 0: .*#size': expected int64_list, found "
                                           "float_list"):
        summarize_shard(str(shard), layout)


@pytest.mark.parametrize("name", ["demo", "topk", "mixed", "link"])
def test_sampled_records_are_read_as_columns(outputs, name, monkeypatch):
    """What `sample` writes takes the batched decoder's columns, never the record path,
    and both paths give the same numbers."""
    folder = outputs[name]
    columns = folder_stats(folder, workers=1, keep_seed_ids=True)
    monkeypatch.setattr(stats_shard.BatchDecoder, "columns", lambda *a: None)
    by_record = folder_stats(folder, workers=1, keep_seed_ids=True)
    assert_close(columns.as_dict(), by_record.as_dict())
    assert columns.tally.seed_ids[0].tolist() == by_record.tally.seed_ids[0].tolist()
    monkeypatch.undo()
    monkeypatch.setattr(stats_shard._ShardRecords, "add",
                        lambda *a: pytest.fail("a record was read alone"))
    folder_stats(folder, workers=1)
