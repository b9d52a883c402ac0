"""A job on a graph store writes the same bytes as the same job on the tables (issue 24).

The random graphs and specs of tests/pipelines/test_engines_agree.py (hubs, dangling
edges, table-less node sets, every table format, LATEST_K, seed and pair cut-offs,
negatives, induced edges, tiny --chunk-edges): the graph is prepared into a store
once, with the job's --chunk-edges, and `sample` runs on the tables and on the store
with the memory engine, and on the store as if it were larger than memory (its gathers
prefetched). One store serves any spec: the edge sets a spec does not
sample are in it too (and change nothing).
"""
import os
from unittest import mock

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as hs

from pipelines import convert
from sampler.memory import engine
from sampler.store import mapped as store_mapped
from sampler.store import prefetch
from tests.pipelines.sampled_output import read_records
from tests.pipelines.test_engines_agree import (PROFILE, graphs, link_jobs, options, run,
                                                write_graph)
from unigraph.columnar.batches import NodeBatch, PairBatch, row_ids
from unigraph.schema import load_schema
from unigraph.tables import pairs_layout
from unigraph.tables.layout import TimeColumn, seeds_layout
from unigraph.tables.writers import write_table


def assert_store_agrees(root, folder, spec_path, seeds_path, flags, workers=1):
    chunk = int(flags[flags.index("--chunk-edges") + 1]) if "--chunk-edges" in flags else None
    store = str(root / "store")
    convert.prepare(folder, store, **({"chunk_edges": chunk} if chunk else {}),
                    log=lambda line: None)
    tables = run(folder, spec_path, seeds_path, str(root / "tables"), "--engine", "memory",
                 "--workers", str(workers), *flags)
    mapped = run(store, spec_path, seeds_path, str(root / "mapped"), "--engine", "memory",
                 "--workers", str(workers), *flags)
    # As if the store were larger than memory: read at random, every gather (even of one
    # row) asking for its pages first, a few rows at a time (sampler.store.prefetch), and
    # the engine's chunks for such a store (a few samples, each encoded whole).
    with mock.patch.object(store_mapped, "available_memory", lambda: 0), \
            mock.patch.object(prefetch, "MIN_INDICES", 1), \
            mock.patch.object(prefetch, "PIECE", 3), \
            mock.patch.object(engine, "CHUNK_SAMPLES_READ_AT_RANDOM", 5):
        larger = run(store, spec_path, seeds_path, str(root / "larger"), "--engine", "memory",
                     "--workers", str(workers), *flags)
    assert tables[0] == mapped[0] == larger[0]  # exit status
    assert tables[1] == mapped[1] == larger[1]  # the report's counts
    if tables[0] == 0:
        assert read_records(str(root / "tables")) == read_records(str(root / "mapped")) \
            == read_records(str(root / "larger"))
        with open(root / "tables" / "graph_schema.pbtxt", "rb") as f, \
                open(root / "mapped" / "graph_schema.pbtxt", "rb") as g:
            assert f.read() == g.read()


@settings(settings.get_profile(PROFILE))
@given(graphs(), hs.integers(1, 2), options())
def test_store_writes_the_tables_bytes(tmp_path_factory, graph, workers, flags):
    node_sets, edge_sets, spec, seeds, fmt, rng, cutoffs = graph
    root = tmp_path_factory.mktemp("g")
    folder = str(root / "graph")
    write_graph(folder, node_sets, edge_sets, fmt, rng)
    spec_path = str(root / "spec.pbtxt")
    with open(spec_path, "w") as f:
        f.write(spec)
    seeds_path = None
    if cutoffs is not None:
        seeds_path = str(root / f"seeds.{fmt}")
        write_table(seeds_path, seeds_layout(TimeColumn("timestamp", "int64")),
                    [NodeBatch("seeds", np.array(seeds, "S"), row_ids(0, 0, len(seeds)),
                               {"timestamp": np.array(cutoffs, np.int64)})])
    elif seeds is not None:
        seeds_path = str(root / "seeds.txt")
        with open(seeds_path, "wb") as f:
            f.write(b"\n".join(seeds) + b"\n")
    assert_store_agrees(root, folder, spec_path, seeds_path, flags, workers)


@settings(settings.get_profile(PROFILE))
@given(link_jobs())
def test_store_writes_the_tables_bytes_for_link_seeds(tmp_path_factory, job):
    node_sets, edge_sets, spec, pairs, fmt, rng, seed_set, flags, cutoffs = job
    if "degree" in flags and not any(
            f"edge_set_name: \"{e}\"" in spec for e, (s, t, *_r) in edge_sets.items()
            if s == t == seed_set):
        flags[flags.index("degree")] = "uniform"
    root = tmp_path_factory.mktemp("link")
    folder = str(root / "graph")
    write_graph(folder, node_sets, edge_sets, fmt, rng, link_set=seed_set)
    spec_path = str(root / "spec.pbtxt")
    with open(spec_path, "w") as f:
        f.write(spec)
    if cutoffs is None:
        seeds_path = str(root / "pairs.csv")
        with open(seeds_path, "wb") as f:
            f.write(b"source,target,label\n" + b"".join(
                b"%s,%s,%d\n" % (s, t, label) for s, t, label in pairs))
    else:
        seeds_path = str(root / f"pairs.{fmt}")
        sources, targets, labels = (np.array(column) for column in zip(*pairs))
        write_table(seeds_path, pairs_layout(load_schema(folder).schema,
                                             timestamp=TimeColumn("timestamp", "int64")),
                    [PairBatch(sources.astype("S"), targets.astype("S"),
                               row_ids(0, 0, len(pairs)),
                               {"label": labels.astype(np.int64),
                                "timestamp": np.array(cutoffs, np.int64)})])
    assert_store_agrees(root, folder, spec_path, seeds_path, flags)


def test_one_store_serves_specs_with_and_without_time(tmp_path):
    """The mag_tiny example's store, sampled by its spec and by the same spec with a
    LATEST_K op on a timed edge set, each equal to the tables' output."""
    example = os.path.join(os.path.dirname(__file__), "..", "..", "..", "examples", "mag_tiny")
    store = str(tmp_path / "store")
    convert.prepare(example, store, log=lambda line: None)
    spec = os.path.join(example, "sampling_spec.pbtxt")
    seeds = os.path.join(example, "seeds.csv")
    for i, flags in enumerate(([], ["--workers", "2"])):
        tables = run(example, spec, seeds, str(tmp_path / f"t{i}"), "--engine", "memory", *flags)
        mapped = run(store, spec, seeds, str(tmp_path / f"m{i}"), "--engine", "memory", *flags)
        assert tables == mapped and tables[0] == 0
        assert read_records(str(tmp_path / f"t{i}")) == read_records(str(tmp_path / f"m{i}"))
