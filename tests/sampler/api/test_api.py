"""sampler.api: the Python API samples the CLI's bytes, seed by seed.

The differential tests draw random graphs and specs as the engines' test does (every
strategy, LATEST_K with cut-offs, induced edges, long rows, link pairs with negatives)
and check that `to_example(graph.sample([id], seed=S)[0])` is the record `sample
--seed S` writes for that seed, that one call with every seed gives all of them, and
the same for pairs. The rest is the API as a user calls it: batches and epochs,
errors, logging, TensorFlow datasets, graph stores.
"""
import collections
import logging
import os
import threading

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as hs

from pipelines import sample as sample_cli
from sampler import api
from sampler.graph_tensor import parse_example
from sampler.job.job import epoch_seed
from tests.conftest import REPO_ROOT
from tests.pipelines.sampled_output import read_records
from tests.pipelines.test_engines_agree import (PROFILE, graphs, link_jobs, options,
                                                write_graph)
from unigraph.columnar.batches import NodeBatch, PairBatch, row_ids
from unigraph.schema import load_schema
from unigraph.tables import pairs_layout
from unigraph.tables.layout import TimeColumn, seeds_layout
from unigraph.tables.writers import write_table

DEMO = os.path.join(REPO_ROOT, "examples", "mag_tiny")
DEMO_SPEC = os.path.join(DEMO, "sampling_spec.pbtxt")
LINK = os.path.join(REPO_ROOT, "examples", "link_tiny")


def cli(folder, spec, seeds, out, *flags):
    args = ["--graph", folder, "--spec", spec, "--output", str(out), "--quiet",
            "--engine", "memory", *flags]
    if seeds:
        args += ["--seeds", seeds]
    code = sample_cli.main(args)
    return code, (read_records(str(out)) if code == 0 else [])


def records_by(records, schema_folder, keys):
    """CLI records grouped by the context features `keys` (seed id and cut-off)."""
    schema = load_schema(os.path.join(schema_folder, "graph_schema.pbtxt")).schema
    grouped = collections.defaultdict(list)
    for record in records:
        context = parse_example(schema, record).context
        grouped[tuple(context[k][0] if k in context.features else None
                      for k in keys)].append(record)
    return grouped


def api_options(flags):
    """The API's load_graph options for `sample` flags."""
    options = {}
    if "--edge-aggregation" in flags:
        options["edge_aggregation"] = flags[flags.index("--edge-aggregation") + 1]
    if "--chunk-edges" in flags:
        options["chunk_edges"] = int(flags[flags.index("--chunk-edges") + 1])
    if "--negatives" in flags:
        options["negatives"] = int(flags[flags.index("--negatives") + 1])
        options["negative_sampling"] = flags[flags.index("--negative-sampling") + 1]
    if "--no-exclude-target-edge" in flags:
        options["exclude_target_edge"] = False
    return options


@settings(settings.get_profile(PROFILE))
@given(graphs(), options(), hs.sampled_from([5, 0, 2**40 + 3]))
def test_each_seed_alone_is_the_record_the_cli_writes(tmp_path_factory, graph, flags, seed):
    node_sets, edge_sets, spec, seeds, fmt, rng, cutoffs = graph
    root = tmp_path_factory.mktemp("api")
    folder = str(root / "graph")
    write_graph(folder, node_sets, edge_sets, fmt, rng)
    spec_path = str(root / "spec.pbtxt")
    (root / "spec.pbtxt").write_text(spec)
    seed_set = spec.split('node_set_name: "')[1].split('"')[0]
    if seeds is None:
        seeds = list(node_sets[seed_set][0])
    seeds_path = str(root / f"seeds.{fmt}")
    times = None if cutoffs is None else np.array(cutoffs, np.int64)
    write_table(seeds_path, seeds_layout(TimeColumn("timestamp", "int64") if times is not None
                                         else None),
                [NodeBatch("seeds", np.array(seeds, "S"), row_ids(0, 0, len(seeds)),
                           {} if times is None else {"timestamp": times})])
    code, records = cli(folder, spec_path, seeds_path, root / "out", "--seed", str(seed), *flags)
    graph_ = api.load_graph(folder, spec_path, cutoffs=times is not None, **api_options(flags))
    every = graph_.sample(seeds, seed=seed, cutoffs=times)
    # One call with every seed: the CLI's records, as a multiset.
    assert sorted(every.to_examples()) == sorted(records)
    assert (code == 1) == (len(every) == 0)
    assert [m for m in every.missing] == [s for s in seeds if s == b"nobody"]
    if not records:
        return
    by_seed = records_by(records, str(root / "out"), ("seed_id", "seed_timestamp"))
    rows = collections.Counter(zip(seeds, cutoffs or [None] * len(seeds)))
    for (seed_id, cutoff), copies in rows.items():
        alone = graph_.sample([seed_id] * copies, seed=seed,
                              cutoffs=None if cutoff is None else [cutoff] * copies)
        expected = by_seed.get((seed_id, cutoff), [])
        assert sorted(alone.to_examples()) == sorted(expected)
        # The GraphTensors encode to the same bytes, one by one.
        assert sorted(api.to_example(g, graph_.output_schema) for g in alone) == \
            sorted(expected)


@settings(settings.get_profile(PROFILE))
@given(link_jobs())
def test_each_pair_alone_is_the_records_the_cli_writes(tmp_path_factory, job):
    node_sets, edge_sets, spec, pairs, fmt, rng, seed_set, flags, cutoffs = job
    if "degree" in flags and not any(
            f"edge_set_name: \"{e}\"" in spec for e, (s, t, *_r) in edge_sets.items()
            if s == t == seed_set):
        flags[flags.index("degree")] = "uniform"
    root = tmp_path_factory.mktemp("api_link")
    folder = str(root / "graph")
    write_graph(folder, node_sets, edge_sets, fmt, rng, link_set=seed_set)
    spec_path = str(root / "spec.pbtxt")
    (root / "spec.pbtxt").write_text(spec)
    sources, targets, labels = (np.array(column) for column in zip(*pairs))
    sources, targets = sources.astype("S"), targets.astype("S")
    labels = labels.astype(np.int64)
    times = None if cutoffs is None else np.array(cutoffs, np.int64)
    seeds_path = str(root / f"pairs.{fmt}")
    write_table(seeds_path, pairs_layout(load_schema(folder).schema, timestamp=None if times is None
                                         else TimeColumn("timestamp", "int64")),
                [PairBatch(sources, targets, row_ids(0, 0, len(pairs)), {"label": labels,
                           **({} if times is None else {"timestamp": times})})])
    code, records = cli(folder, spec_path, seeds_path, root / "out", "--seed", "9", *flags)
    options = api_options(flags)
    graph_ = api.load_graph(folder, spec_path, cutoffs=times is not None, **options)
    features = {} if options.get("negatives") else {"label": labels}
    every = graph_.sample_pairs(sources, targets, seed=9, cutoffs=times, features=features)
    assert sorted(every.to_examples()) == sorted(records)
    if not records:
        return
    negatives = bool(options.get("negatives"))
    rows = collections.Counter(zip(sources.tolist(), targets.tolist(),
                                   [None] * len(pairs) if negatives else labels.tolist(),
                                   [None] * len(pairs) if times is None else times.tolist()))
    alone = []
    for (source, target, label, cutoff), copies in rows.items():
        got = graph_.sample_pairs(
            [source] * copies, [target] * copies, seed=9,
            cutoffs=None if cutoff is None else [cutoff] * copies,
            features=None if negatives else {"label": [label] * copies},
            known_positives=(sources, targets) if negatives else None)
        alone += got.to_examples()
    # Pair by pair (each with its negatives, the table's pairs as known positives): the
    # CLI's records, as a multiset.
    assert sorted(alone) == sorted(records)


# --- the API as a user calls it ------------------------------------------------------

@pytest.fixture(scope="module")
def demo():
    return api.load_graph(DEMO, DEMO_SPEC)


def demo_seeds():
    with open(os.path.join(DEMO, "seeds.csv")) as f:
        return [line.strip() for line in f.readlines()[1:] if line.strip()]


def test_an_epoch_of_batches_is_the_clis_output_of_that_epoch(demo, tmp_path):
    seeds = demo_seeds()
    for epoch in (0, 2):
        _, records = cli(DEMO, DEMO_SPEC, os.path.join(DEMO, "seeds.csv"), tmp_path / str(epoch),
                         "--seed", "7", "--epoch", str(epoch))
        batches = list(demo.batches(seeds, batch_size=3, epochs=1, first_epoch=epoch, seed=7))
        assert {b.epoch for b in batches} == {epoch}
        assert sorted(r for b in batches for r in b.to_examples()) == sorted(records)
    first = sorted(demo.sample(seeds, seed=7).to_examples())
    assert first != sorted(demo.sample(seeds, seed=7, epoch=1).to_examples())  # new draws
    assert first == sorted(demo.sample(seeds, seed=7, epoch=0).to_examples())
    assert epoch_seed(7, 0) == 7 and epoch_seed(7, 1) != epoch_seed(7, 2)


def test_batches_hold_every_seed_once_per_epoch_in_a_new_order(demo):
    ids = demo.node_ids()
    batches = list(demo.batches(batch_size=4, epochs=3, seed=1))
    per_epoch = collections.defaultdict(list)
    for batch in batches:
        assert len(batch) <= 4
        per_epoch[batch.epoch] += batch.seed_ids.tolist()
    assert sorted(per_epoch) == [0, 1, 2]
    for order in per_epoch.values():
        assert sorted(order) == sorted(ids.tolist())
    assert per_epoch[0] != per_epoch[1] != per_epoch[2]  # shuffled anew
    again = [b.seed_ids.tolist() for b in demo.batches(batch_size=4, epochs=3, seed=1)]
    assert again == [b.seed_ids.tolist() for b in batches]  # and reproducibly
    in_order = [s for b in demo.batches(batch_size=4, shuffle=False) for s in b.seed_ids]
    assert in_order == ids.tolist()
    full = list(demo.batches(batch_size=4, drop_last=True))
    assert all(len(b) == 4 for b in full) and len(full) == len(ids) // 4
    endless = demo.batches(batch_size=len(ids), epochs=None)
    assert [next(endless).epoch for _ in range(5)] == [0, 1, 2, 3, 4]


def test_subgraphs_keep_the_callers_order_and_report_the_missing(demo, caplog, capsys):
    with caplog.at_level(logging.WARNING, logger="sampler"):
        got = demo.sample(["p03", "ghost", b"p01", "p03"], seed=3)
    assert got.seed_ids.tolist() == [b"p03", b"p01", b"p03"]
    assert got.positions.tolist() == [0, 2, 3]
    assert got.missing == [b"ghost"]
    assert got.report["seeds_read"] == 4 and got.report["seeds_missing"] == 1
    assert got.report["missing_seed_ids"] == ["ghost"]
    assert "1 of 4 seeds are not in node set 'paper' (first: ghost)" in caplog.text
    assert capsys.readouterr() == ("", "")  # a library call prints nothing
    graphs = list(got)
    assert [g.context["seed_id"][0] for g in graphs] == [b"p03", b"p01", b"p03"]
    assert graphs[1].node_sets["paper"]["#id"][0] == b"p01"  # the seed is node 0
    assert got[-1] is graphs[-1] and got[0:2] == graphs[0:2]
    with pytest.raises(IndexError):
        got[3]
    assert len(demo.sample([], seed=3)) == 0


def test_threads_sample_the_same_subgraphs(demo, monkeypatch):
    monkeypatch.setattr(api.graph, "THREAD_CHUNK_MIN", 2)  # 13 seeds found: 4 chunks of <= 4
    threaded = api.load_graph(DEMO, DEMO_SPEC, threads=4)
    seeds = demo_seeds() + ["ghost"] + demo_seeds()[:3]
    alone, together = demo.sample(seeds, seed=5), threaded.sample(seeds, seed=5)
    assert len(together.assembled) == 4  # split into chunks, one per thread
    assert together.to_examples() == alone.to_examples()
    assert together.report == alone.report and together.missing == alone.missing
    batches = [b.to_examples() for b in threaded.batches(batch_size=8, epochs=2, seed=1)]
    assert batches == [b.to_examples() for b in demo.batches(batch_size=8, epochs=2, seed=1)]
    for bad in (0, 1.5, True):
        with pytest.raises(api.SamplerError, match="threads must be a whole number"):
            api.load_graph(DEMO, DEMO_SPEC, threads=bad)


def test_prefetched_batches_are_the_same_batches(demo):
    plain = [b.to_examples() for b in demo.batches(batch_size=3, epochs=2, seed=2)]
    ahead = demo.batches(batch_size=3, epochs=2, seed=2, prefetch=2)
    assert [b.to_examples() for b in ahead] == plain
    early = demo.batches(batch_size=3, epochs=None, seed=2, prefetch=3)
    assert next(early).to_examples() == plain[0]
    early.close()  # an endless iterator left early stops its thread
    assert not any(t.name.startswith("sampler-prefetch") and t.is_alive()
                   for t in threading.enumerate())
    failing = demo.batches(["p01", ""], batch_size=1, shuffle=False, prefetch=1)  # "": bad
    assert len(next(failing)) == 1
    with pytest.raises(api.SamplerError, match="seeds row 0: .*empty"):
        next(failing)  # a batch's error reaches the caller at that batch
    with pytest.raises(api.SamplerError, match="prefetch must be a whole number"):
        demo.batches(prefetch=-1)


@pytest.mark.parametrize("call, message", [
    (lambda g: g.sample(["p01", ""]), "seeds row 1: .*empty"),
    (lambda g: g.sample(["p01"], cutoffs=[3]), r"load_graph\(\.\.\., cutoffs=True\)"),
    (lambda g: g.sample_pairs(["p01"], ["p02"]), "seeds nodes: use sample"),
    (lambda g: g.sample([1.5]), "id column 'id' has type double"),
    (lambda g: list(g.batches(batch_size=0)), "batch_size 0"),
    (lambda g: g.node_ids("nowhere"), "node set 'nowhere'"),
])
def test_bad_input_raises_one_line(demo, call, message):
    with pytest.raises(api.SamplerError, match=message) as raised:
        call(demo)
    assert "\n" not in str(raised.value)


@pytest.mark.parametrize("args, options, message", [
    ((DEMO, os.path.join(DEMO, "nope.pbtxt")), {}, "sampling spec .*nope.pbtxt: no such file"),
    (("/nonexistent/graph", DEMO_SPEC), {}, "/nonexistent/graph"),
    ((DEMO, DEMO_SPEC), {"negatives": 2}, "--negatives is for link seeds"),
    ((DEMO, DEMO_SPEC), {"edge_aggregation": "node:nope"}, "edge set 'nope' is not sampled"),
    ((DEMO, DEMO_SPEC), {"chunk_edges": 0}, "chunk_edges must be at least 1"),
])
def test_bad_graphs_and_options_raise_the_clis_line(args, options, message):
    with pytest.raises(api.SamplerError, match=message) as raised:
        api.load_graph(*args, **options)
    assert "\n" not in str(raised.value)


def test_link_graphs_sample_pairs_with_negatives_and_labels():
    graph = api.load_graph(LINK, os.path.join(LINK, "sampling_spec.pbtxt"), negatives=2)
    assert graph.link
    got = graph.sample_pairs(["u0000", "u0001"], ["u0008", "u0002"], seed=4)
    assert got.labels.tolist() == [1, 1, 0, 0, 0, 0]
    assert got.positions.tolist() == [0, 1, 2, 3, 4, 5]  # the pairs, then 2 negatives each
    assert got.seed_ids.tolist() == [b"u0000", b"u0001", b"u0000", b"u0000", b"u0001",
                                     b"u0001"]
    assert got.target_ids[:2].tolist() == [b"u0008", b"u0002"]
    for g, label in zip(got, got.labels):
        assert g.node_sets["_readout"]["label"].tolist() == [label]
    with pytest.raises(api.SamplerError, match="use sample_pairs"):
        graph.sample(["u0000"])
    with pytest.raises(api.SamplerError, match="feature 'colour' is not a feature"):
        graph.sample_pairs(["u0000"], ["u0001"], features={"colour": [1]})
    epochs = [b for b in graph.pair_batches(["u0000", "u0001", "u0002"],
                                            ["u0001", "u0002", "u0003"],
                                            batch_size=2, epochs=2, seed=4)]
    assert [len(b) for b in epochs] == [6, 3, 6, 3]


def test_a_graph_store_samples_what_the_tables_do(demo, tmp_path):
    from pipelines import convert

    store = str(tmp_path / "store")
    convert.prepare(DEMO, store, log=lambda line: None)
    mapped = api.load_graph(store, DEMO_SPEC)
    seeds = demo_seeds()
    assert mapped.sample(seeds, seed=11).to_examples() == demo.sample(seeds, seed=11).to_examples()
    assert "MB of arrays" in repr(mapped) and mapped.nbytes > 0


def test_tf_datasets_hold_the_cli_records_and_parse_with_tfgnn(demo):
    tf = pytest.importorskip("tensorflow")
    tfgnn = pytest.importorskip("tensorflow_gnn")
    seeds = demo_seeds()
    raw = api.to_tf_dataset(demo, seeds, batch_size=4, shuffle=False, seed=2, parse=False)
    batches = [b.numpy().tolist() for b in raw]
    assert batches == [b.to_examples() for b in demo.batches(seeds, 4, shuffle=False, seed=2)]
    parsed = api.to_tf_dataset(demo, seeds, batch_size=4, shuffle=False, seed=2)
    spec = tfgnn.create_graph_spec_from_schema_pb(
        tfgnn.GraphSchema.FromString(demo.output_schema.SerializeToString()))
    for graph, records in zip(parsed, batches):
        assert isinstance(graph, tfgnn.GraphTensor)
        expected = tfgnn.parse_example(spec, tf.constant(records))
        for name in graph.node_sets:
            assert graph.node_sets[name].sizes.numpy().tolist() == \
                expected.node_sets[name].sizes.numpy().tolist()
        assert graph.context["seed_id"].numpy().tolist() == \
            expected.context["seed_id"].numpy().tolist()
