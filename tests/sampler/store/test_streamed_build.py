"""The streamed build (sampler.store.edges) writes the bytes of the whole-table build.

Each random graph of tests/pipelines/test_engines_agree.py (weights, an edge feature,
edge and node timestamps, self-loop edge sets, hubs, dangling edges) is prepared three
ways: with buckets of 1 edge and of 3 edges (every row its own bucket, or a few rows
per bucket, long rows across bucket edges) and with every edge set built whole in
memory (`_write_whole_edge_set`, the CSR exactly as load_graph builds it). Every file
and every manifest entry must be the same. tests/sampler/store/test_store_agrees.py
then checks that a store samples like the tables. ~10 s in all.
"""
import json
import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as hs

from sampler.store import build
from sampler.store.edges import bucket_of_sources
from tests.pipelines.test_engines_agree import PROFILE, graphs, write_graph
from unigraph.schema import check_schema, load_schema

import numpy as np


def _prepare(folder, store, chunk_edges, **kwargs):
    loaded = load_schema(folder)
    check_schema(loaded)
    return build.prepare_store(loaded, store, chunk_edges=chunk_edges, **kwargs)


def _files(store):
    out = {}
    for d, _, files in os.walk(store):
        for f in files:
            if f != "store.json":
                with open(os.path.join(d, f), "rb") as g:
                    out[os.path.relpath(os.path.join(d, f), store)] = g.read()
    return out


def _comparable(manifest):
    return {k: v for k, v in manifest.items() if k not in ("created",)}


@settings(settings.get_profile(PROFILE))
@given(graphs(), hs.sampled_from([1, 2, 5, 1 << 20]))
def test_buckets_write_the_whole_builds_bytes(tmp_path_factory, graph, chunk_edges):
    node_sets, edge_sets, _spec, _seeds, fmt, rng, _cutoffs = graph
    root = tmp_path_factory.mktemp("g")
    folder = str(root / "graph")
    write_graph(folder, node_sets, edge_sets, fmt, rng)
    stores = {}
    for bucket_edges in (1, 3):
        stores[bucket_edges] = _prepare(folder, str(root / f"b{bucket_edges}"), chunk_edges,
                                        bucket_edges=bucket_edges)
    whole = build.write_edge_set
    try:
        build.write_edge_set = lambda *args, **kwargs: None  # every edge set built whole
        stores["whole"] = _prepare(folder, str(root / "whole"), chunk_edges)
    finally:
        build.write_edge_set = whole
    expected = _files(str(root / "whole"))
    for key in (1, 3):
        assert _comparable(stores[key]) == _comparable(stores["whole"])
        assert _files(str(root / f"b{key}")) == expected


def test_a_bucket_never_splits_a_row_and_holds_about_its_budget():
    degrees = np.array([0, 3, 1, 0, 9, 2, 2, 2, 0, 1])
    bucket = bucket_of_sources(degrees, 4)
    assert np.all(np.diff(bucket) >= 0)  # contiguous code ranges
    for b in np.unique(bucket):
        rows = degrees[bucket == b]
        # A bucket closes once it holds the budget: at most budget - 1 + its last row.
        assert rows.sum() <= 4 - 1 + rows[rows > 0][-1]


def test_the_mag_tiny_store_is_the_same_built_in_buckets(tmp_path):
    example = os.path.join(os.path.dirname(__file__), "..", "..", "..", "examples", "mag_tiny")
    a = _prepare(example, str(tmp_path / "a"), 1 << 20, bucket_edges=7)
    b = _prepare(example, str(tmp_path / "b"), 1 << 20)
    assert _comparable(a) == _comparable(b)
    assert _files(str(tmp_path / "a")) == _files(str(tmp_path / "b"))
    # The scratch files are gone; the manifest lists every file there is.
    assert set(_files(str(tmp_path / "a"))) == set(a["files"])
    with open(tmp_path / "a" / "store.json") as f:
        assert json.load(f)["files"] == a["files"]


def test_an_edge_sets_build_holds_one_bucket_not_the_table(tmp_path, monkeypatch):
    """tracemalloc (which sees numpy's buffers) over write_edge_set: 400,000 edges in
    batches of 10,000, buckets and copy blocks of 5,000 edges. Sorting the table whole
    would hold its columns (sources, targets, rows: 9.6 MB) several times over; the
    bucketed build's peak is a few buckets' worth (2.3 MB here; 32 MB in one bucket)."""
    import tracemalloc

    from sampler.store import edges
    from sampler.core.temporal import effective_times
    from unigraph.columnar.batches import EdgeBatch

    monkeypatch.setattr(edges, "BLOCK_EDGES", 5_000)
    monkeypatch.setattr(build, "CHECKSUM_BLOCK", 1 << 20)  # a fixed 16 MB read buffer
    n_nodes, n_edges, batch = 2_000, 400_000, 10_000
    rng = np.random.default_rng(0)
    sources = rng.integers(0, n_nodes, n_edges)
    targets = rng.integers(0, n_nodes, n_edges)

    def batches():
        for lo in range(0, n_edges, batch):
            yield EdgeBatch("e", sources[lo:lo + batch], targets[lo:lo + batch],
                            np.arange(lo, lo + batch, dtype=np.int64), None, {})

    out = build._Writer(str(tmp_path))
    fingerprints = np.arange(n_nodes, dtype=np.uint64) * np.uint64(2654435761)
    tracemalloc.start()
    try:
        written = edges.write_edge_set(
            out, "edges/000-e", "e", batches(), n_sources=n_nodes, n_targets=n_nodes,
            source_fingerprints=fingerprints, target_fingerprints=fingerprints,
            same_set=True, target_times=None,
            effective_times=lambda e, t: effective_times(e, t, "int64"),
            chunk_edges=1 << 20, bucket_edges=5_000, timed=False)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert written["edges"] == n_edges
    assert peak < 3 << 20, f"peak {peak / 2**20:.1f} MB"
    assert np.load(tmp_path / "edges/000-e/row_splits.npy")[-1] == n_edges
