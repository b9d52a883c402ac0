"""The store built in bounded memory (issue 40) holds the bytes of the whole-table build.

Hypothesis draws small graphs that take every path of the build: byte-string ids of
several widths; node sets with and without a table; node features dense, ragged
(int lists) and byte strings, node timestamps; edge sets with and without weights,
with dense, ragged and byte-string edge features, edge timestamps, a reversed edge set
reading another's table, empty tables, hubs, self-loops, duplicate edges, edges to ids
a node table lacks; tables in every format, some in two files, read in batches of a
few rows. Each is built with working memories of a few hundred bytes (every sort
spills runs of a few records, merges in several passes, buckets hold a row or two)
and of megabytes (nothing spilled), and every file must equal the whole-table
reference (tests/sampler/store/whole_build.py), every manifest entry too.
"""
import json
import os

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as hs

from sampler.store import build, external_sort
from sampler.store.external_sort import Budget
from tests.sampler.store.whole_build import whole_store
from unigraph.columnar.batches import EdgeBatch, NodeBatch, row_ids
from unigraph.columnar.ragged import Ragged
from unigraph.schema import check_schema, load_schema
from unigraph.tables import read_set as real_read_set
from unigraph.tables import table_layout
from unigraph.tables.layout import TimeColumn
from unigraph.tables.writers import write_sharded

BATCH_ROWS = 3
SETTINGS = settings(max_examples=25, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow,
                                           HealthCheck.function_scoped_fixture])

NODE_FEATURES = {
    "vec": ("dtype: DT_FLOAT shape { dim { size: 2 } }",
            lambda rng, n: rng.normal(size=(n, 2)).astype(np.float32)),
    "tag": ("dtype: DT_STRING",
            lambda rng, n: np.array([f"t{i}".encode() * int(i % 3) for i in
                                     rng.integers(0, 9, n)], dtype=object)),
    "tokens": ("dtype: DT_INT64 shape { dim { size: -1 } }",
               lambda rng, n: Ragged(rng.integers(0, 50, int(lengths.sum())), lengths)
               if (lengths := rng.integers(0, 4, n)) is not None else None),
}
EDGE_FEATURES = {
    "w2": ("dtype: DT_DOUBLE", lambda rng, m: np.round(rng.normal(size=m), 2)),
    "kind": ("dtype: DT_STRING",
             lambda rng, m: np.array([b"k" * int(i) for i in rng.integers(0, 4, m)],
                                     dtype=object)),
    "path": ("dtype: DT_FLOAT shape { dim { size: -1 } }",
             lambda rng, m: Ragged(rng.normal(size=int(lengths.sum())).astype(np.float32),
                                   lengths)
             if (lengths := rng.integers(0, 3, m)) is not None else None),
}


@hs.composite
def graphs(draw):
    rng = np.random.default_rng(draw(hs.integers(0, 2**32 - 1)))
    fmt = draw(hs.sampled_from(["csv", "parquet", "tfrecord"]))
    timed = draw(hs.booleans())
    node_sets = {}
    for s in range(draw(hs.integers(1, 3))):
        count = draw(hs.integers(1, 14))
        ids = np.array(sorted({f"{'abc'[s]}{i:0{draw(hs.integers(1, 3))}d}".encode()
                               for i in range(count)}), dtype="S")
        with_table = draw(hs.booleans()) or s == 0
        features = [f for f in NODE_FEATURES if draw(hs.booleans())] if with_table else []
        times = with_table and timed and draw(hs.booleans())
        node_sets[f"n{s}"] = (ids, with_table, features, times)
    edge_sets = {}
    for e in range(draw(hs.integers(1, 4))):
        source, target = (f"n{draw(hs.integers(0, len(node_sets) - 1))}" for _ in range(2))
        m = draw(hs.integers(0, 40)) if fmt == "csv" else draw(hs.integers(1, 40))
        src = rng.choice(node_sets[source][0], m)
        if m and draw(hs.booleans()):  # a hub
            src[: m // 2] = node_sets[source][0][0]
        tgt = rng.choice(node_sets[target][0], m)
        if m and source == target and draw(hs.booleans()):
            tgt[0] = src[0]  # a self-loop
        if m > 1 and draw(hs.booleans()):
            src[-1], tgt[-1] = src[0], tgt[0]  # a duplicate edge
        if m and node_sets[target][1] and draw(hs.booleans()):
            tgt[m // 2] = b"missing-longer-id"  # an id its node table lacks
        features = [f for f in EDGE_FEATURES if draw(hs.booleans())]
        weights = draw(hs.booleans())
        times = timed and draw(hs.booleans())
        edge_sets[f"e{e}"] = (source, target, src, tgt, features, weights, times,
                              draw(hs.integers(1, 2)) if m >= 2 else 1)
    reversed_of = draw(hs.sampled_from(sorted(edge_sets)))
    return fmt, node_sets, edge_sets, reversed_of, rng


def write_graph(folder, fmt, node_sets, edge_sets, reversed_of, rng):
    lines = []
    for name, (ids, with_table, features, times) in node_sets.items():
        declared = "".join(f'features {{ key: "{f}" value {{ {NODE_FEATURES[f][0]} }} }} '
                           for f in features)
        table = f'metadata {{ filename: "{name}.{fmt}" }}' if with_table else ""
        lines.append(f'node_sets {{ key: "{name}" value {{ {declared}{table} }} }}')
    for name, (source, target, _s, _t, features, _w, _times, shards) in edge_sets.items():
        declared = "".join(f'features {{ key: "{f}" value {{ {EDGE_FEATURES[f][0]} }} }} '
                           for f in features)
        table = f"{name}@{shards}.{fmt}" if shards > 1 else f"{name}.{fmt}"
        lines.append(f'edge_sets {{ key: "{name}" value {{ source: "{source}" target: '
                     f'"{target}" {declared}metadata {{ filename: "{table}" }} }} }}')
    source, target, _s, _t, features, _w, _times, shards = edge_sets[reversed_of]
    declared = "".join(f'features {{ key: "{f}" value {{ {EDGE_FEATURES[f][0]} }} }} '
                       for f in features)
    table = f"{reversed_of}@{shards}.{fmt}" if shards > 1 else f"{reversed_of}.{fmt}"
    lines.append(f'edge_sets {{ key: "r_{reversed_of}" value {{ source: "{target}" target: '
                 f'"{source}" {declared}metadata {{ filename: "{table}" extra {{ key: '
                 f'"edge_type" value: "reversed" }} }} }} }}')
    os.makedirs(folder)
    with open(os.path.join(folder, "graph_schema.pbtxt"), "w") as f:
        f.write("\n".join(lines) + "\n")
    loaded = load_schema(folder)
    stamp = TimeColumn("#timestamp", "int64")
    for name, (ids, with_table, features, times) in node_sets.items():
        if with_table:
            values = {f: NODE_FEATURES[f][1](rng, len(ids)) for f in features}
            if times:
                values["#timestamp"] = rng.integers(0, 4, len(ids))
            write_sharded([os.path.join(folder, f"{name}.{fmt}")],
                          table_layout(loaded, "nodes", name, stamp if times else None),
                          [NodeBatch(name, ids, row_ids(0, 0, len(ids)), values)])
    for name, (source, target, src, tgt, features, weights, times, shards) in edge_sets.items():
        m = len(src)
        values = {f: EDGE_FEATURES[f][1](rng, m) for f in features}
        if times:
            values["#timestamp"] = rng.integers(0, 5, m)
        table = f"{name}@{shards}.{fmt}" if shards > 1 else f"{name}.{fmt}"
        paths = ([os.path.join(folder, table)] if shards == 1 else
                 [os.path.join(folder, f"{name}-{i:05d}-of-{shards:05d}.{fmt}")
                  for i in range(shards)])
        batch = EdgeBatch(name, np.array(src, "S"), np.array(tgt, "S"), row_ids(0, 0, m),
                          rng.choice([0.5, 1.0, 2.0, 7.0], m) if weights else None, values)
        write_sharded(paths, table_layout(loaded, "edges", name, stamp if times else None),
                      [batch])  # with two files, half of the rows each


def _stored(store, manifest):
    return {relative: np.load(os.path.join(store, relative), allow_pickle=False)
            for relative in manifest["files"]}


def _compare(store, manifest, reference):
    files, nodes_meta, edges_meta = reference
    stored = _stored(store, manifest)
    assert sorted(stored) == sorted(files)
    for relative, array in files.items():
        array = np.asarray(array)
        assert stored[relative].dtype == array.dtype, relative
        assert stored[relative].shape == array.shape, relative
        assert stored[relative].tobytes() == array.tobytes(), relative
    assert manifest["nodes"] == json.loads(json.dumps(nodes_meta))
    assert manifest["edges"] == json.loads(json.dumps(edges_meta))
    # The files are np.save's bytes (headers included), and nothing else is left.
    for relative, array in files.items():
        with open(os.path.join(store, relative), "rb") as f:
            head = f.read(128)
        expected = np.lib.format.header_data_from_array_1_0(np.asarray(array))
        assert str(tuple(expected["shape"])) in head.decode("latin1"), relative
    left = {os.path.relpath(os.path.join(d, f), store) for d, _, fs in os.walk(store)
            for f in fs}
    assert left == set(manifest["files"]) | {"store.json"}


@SETTINGS
@given(graphs(), hs.sampled_from([1, 2, 1 << 20]))
def test_the_bounded_build_writes_the_whole_builds_bytes(tmp_path_factory, monkeypatch,
                                                         graph, chunk_edges):
    fmt, node_sets, edge_sets, reversed_of, rng = graph
    monkeypatch.setattr(external_sort, "MIN_PAGE_BYTES", 256)  # pages of a few records
    root = tmp_path_factory.mktemp("g")
    folder = str(root / "graph")
    write_graph(folder, fmt, node_sets, edge_sets, reversed_of, rng)
    loaded = load_schema(folder)
    check_schema(loaded)
    reference = whole_store(loaded, chunk_edges, BATCH_ROWS)
    monkeypatch.setattr(build, "read_set", lambda *a, **k: real_read_set(
        *a, batch_rows=BATCH_ROWS, **k))
    for work in (200, 4000, 8 << 20):
        store = str(root / f"store{work}")
        manifest = build.prepare_store(loaded, store, chunk_edges=chunk_edges,
                                       budget=Budget(work))
        _compare(store, manifest, reference)


def test_mag_tiny_at_any_memory_is_the_same_store(tmp_path):
    example = os.path.join(os.path.dirname(__file__), "..", "..", "..", "examples", "mag_tiny")
    loaded = load_schema(example)
    check_schema(loaded)
    reference = whole_store(loaded, 3, 1 << 16)
    for work in (300, 1 << 30):
        store = str(tmp_path / f"s{work}")
        _compare(store, build.prepare_store(loaded, store, chunk_edges=3,
                                            budget=Budget(work)), reference)


def test_a_duplicate_node_id_across_runs_is_named(tmp_path, monkeypatch):
    folder = str(tmp_path / "g")
    os.makedirs(folder)
    with open(os.path.join(folder, "graph_schema.pbtxt"), "w") as f:
        f.write('node_sets { key: "n" value { metadata { filename: "n.csv" } } }\n'
                'edge_sets { key: "e" value { source: "n" target: "n" '
                'metadata { filename: "e.csv" } } }\n')
    with open(os.path.join(folder, "n.csv"), "w") as f:
        f.write("#id\n" + "".join(f"v{i:03d}\n" for i in range(60)) + "v007\n")
    with open(os.path.join(folder, "e.csv"), "w") as f:
        f.write("#source,#target\nv001,v002\n")
    monkeypatch.setattr(build, "read_set", lambda *a, **k: real_read_set(
        *a, batch_rows=BATCH_ROWS, **k))
    with pytest.raises(Exception, match=r"duplicate node id 'v007' in .*n.csv.* and "):
        build.prepare_store(load_schema(folder), str(tmp_path / "s"), chunk_edges=4,
                            budget=Budget(200))
    assert not os.path.exists(tmp_path / "s")


def test_the_builds_memory_is_its_budget_not_the_graphs(tmp_path, monkeypatch):
    """tracemalloc (numpy's and Python's allocations) over prepare_store with 1 MB of
    working memory, on MAG-shaped graphs of 42,000 and 169,000 edges (parquet row groups
    of 2,048 rows: a reader's batch is 1 MB). Built with all the memory it wants, the
    larger graph's build peaks at 9 MB (each table sorted whole); within 1 MB, both
    peak at about 2 MB: the budget, a reader's batch and a merge's pages."""
    import tracemalloc

    from pipelines import synthetic

    monkeypatch.setattr(synthetic, "BATCH_ROWS", 2048)
    peaks = {}
    for scale in (0.002, 0.008):
        folder = str(tmp_path / f"g{scale}")
        synthetic.write_streamed(folder, "parquet", scale=scale, seed=0)
        loaded = load_schema(folder)
        check_schema(loaded)
        if not peaks:  # the modules a build imports are allocations too, once
            build.prepare_store(loaded, str(tmp_path / "warm"), chunk_edges=1 << 20,
                                budget=Budget(1 << 20))
        for work in (1 << 20, 1 << 30):
            tracemalloc.start()
            try:
                build.prepare_store(loaded, str(tmp_path / f"s{scale}-{work}"),
                                    chunk_edges=1 << 20, budget=Budget(work))
                peaks[scale, work] = tracemalloc.get_traced_memory()[1]
            finally:
                tracemalloc.stop()
    bounded = [peaks[scale, 1 << 20] for scale in (0.002, 0.008)]
    assert max(bounded) < 3 << 20, peaks
    assert bounded[1] < 1.3 * bounded[0], peaks
    assert peaks[0.008, 1 << 30] > 2 * bounded[1], peaks  # the bound is no accident
