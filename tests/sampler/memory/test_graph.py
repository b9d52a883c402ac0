"""load_graph (sampler.memory.graph): interned ids, and indexes equal to the Beam
engine's built on the ids themselves."""
import os
import shutil

import numpy as np
import pytest

from sampler.core.adjacency import build_adjacency
from sampler.core.node_table import build_node_table
from sampler.core.pieces import Requests, SeedPiece
from sampler.job.job import SamplingJob
from sampler.memory.graph import _array_bytes, load_graph
from sampler.output.files import parse_output
from sampler.plan.plan import build_plan
from sampler.plan.spec import load_spec
from tests.conftest import REPO_ROOT, TESTDATA
from unigraph.schema import load_schema, table_files
from unigraph.tables import read_set

GRAPHS = {"topk": os.path.join(TESTDATA, "topk"),
          "mag_tiny": os.path.join(REPO_ROOT, "examples", "mag_tiny")}


def make_job(folder, tmp_path, seeds=None):
    loaded = load_schema(folder)
    spec_path = os.path.join(folder, "sampling_spec.pbtxt")
    plan = build_plan(load_spec(spec_path), loaded, source=spec_path)
    return SamplingJob(loaded, plan, seeds, parse_output(f"{tmp_path}/out/"), num_shards=2,
                       node_buckets=1, seed=3, stats_path=str(tmp_path / "stats.json"))


@pytest.mark.parametrize("name", sorted(GRAPHS))
def test_names_are_every_id_once_in_order(name, tmp_path):
    job = make_job(GRAPHS[name], tmp_path)
    graph = load_graph(job)
    schema = job.loaded.schema
    for node_set, names in graph.names.items():
        assert np.all(names[1:] > names[:-1]), node_set
        expected = set()
        if schema.node_sets[node_set].metadata.filename:
            expected |= {i for b in read_set(job.loaded, "nodes", node_set) for i in b.ids}
        for edge_set in job.plan.edge_sets():
            e = schema.edge_sets[edge_set]
            for batch in read_set(job.loaded, "edges", edge_set):
                expected |= set(batch.sources) if e.source == node_set else set()
                expected |= set(batch.targets) if e.target == node_set else set()
        assert expected <= set(names), node_set


@pytest.mark.parametrize("name", sorted(GRAPHS))
def test_indexes_equal_the_beam_engines_on_ids(name, tmp_path):
    """Codes are in id order, so decoding the in-memory indexes gives, array for array,
    what the Beam engine builds from the ids in one bucket."""
    job = make_job(GRAPHS[name], tmp_path)
    graph = load_graph(job)
    schema = job.loaded.schema
    for edge_set, coded in graph.adjacency.items():
        e = schema.edge_sets[edge_set]
        on_ids = build_adjacency(edge_set, list(read_set(job.loaded, "edges", edge_set)))
        np.testing.assert_array_equal(graph.names[e.source][coded.sources], on_ids.sources)
        np.testing.assert_array_equal(coded.row_splits, on_ids.row_splits)
        np.testing.assert_array_equal(graph.names[e.target][coded.targets], on_ids.targets)
        np.testing.assert_array_equal(coded.rows, on_ids.rows)
        np.testing.assert_array_equal(coded.source_fingerprints, on_ids.source_fingerprints)
        if on_ids.weights is not None:
            np.testing.assert_array_equal(coded.weights, on_ids.weights)
    for node_set, coded in graph.node_tables.items():
        on_ids = build_node_table(node_set, list(read_set(job.loaded, "nodes", node_set)),
                                  table_files(job.loaded, "nodes", node_set))
        np.testing.assert_array_equal(graph.names[node_set][coded.ids], on_ids.ids)
        for key, values in on_ids.features.items():
            assert np.array_equal(np.asarray(coded.features[key]), np.asarray(values)), key


def test_requests_and_seeds_are_interned_by_id(tmp_path):
    graph = load_graph(make_job(GRAPHS["topk"], tmp_path))
    names = graph.names["user"]
    ids = names[[2, 0, 2]]
    requests = graph.intern_requests("user", Requests(np.array([5, 6, 7]),
                                                      np.zeros(3, np.int64), ids))
    assert requests.ids.tolist() == [2, 0, 2]
    assert requests.samples.tolist() == [5, 6, 7]
    seeds = graph.intern_seeds("user", SeedPiece(np.array([1, 2, 3]), ids))
    assert seeds.ids.tolist() == [2, 0, 2]


def test_nbytes_counts_every_array_once(tmp_path):
    graph = load_graph(make_job(GRAPHS["mag_tiny"], tmp_path))
    paper = graph.node_tables["paper"]
    feature_bytes = sum(np.asarray(v).nbytes for v in paper.features.values())
    assert graph.nbytes > feature_bytes + sum(n.nbytes for n in graph.names.values())
    base = np.zeros(100, np.int64)
    assert _array_bytes({"a": base, "b": [base[10:], base.reshape(10, 10)]}) == 800
    assert _array_bytes((np.zeros(3, np.int8), {"x": (np.zeros(2, np.float64),)})) == 19


def _ends_in_tables(job, edge_set):
    """From the tables themselves: every id the edge set names is in its end's table
    (or that end has none)."""
    e = job.loaded.schema.edge_sets[edge_set]
    for end, column in ((e.source, "sources"), (e.target, "targets")):
        if not job.loaded.schema.node_sets[end].metadata.filename:
            continue
        known = {i for b in read_set(job.loaded, "nodes", end) for i in b.ids}
        named = {i for b in read_set(job.loaded, "edges", edge_set) for i in getattr(b, column)}
        if not named <= known:
            return False
    return True


@pytest.mark.parametrize("dangling", [False, True])
def test_edge_sets_whose_ends_all_have_rows_skip_the_row_gather(dangling, tmp_path):
    """An edge's table row only names a dropped edge; an edge set none of whose edges
    can be dropped is marked, and its edge_rows are -1 instead of a gather."""
    folder = tmp_path / "topk"
    shutil.copytree(GRAPHS["topk"], folder)
    if dangling:
        with open(folder / "bought.csv", "a") as f:
            f.write("u1,i99,9.0,1\n")  # i99 is not in the item table
    job = make_job(str(folder), tmp_path)
    graph = load_graph(job)
    marks = {name: a.ends_in_tables for name, a in graph.adjacency.items()}
    truth = {name: _ends_in_tables(job, name) for name in graph.adjacency}
    schema = job.loaded.schema
    if dangling:  # marked per node set: every set with an end at 'item' loses its mark
        assert all(truth[n] or not marks[n] for n in marks)  # never marked wrongly
        assert marks == {n: truth[n] and "item" not in (schema.edge_sets[n].source,
                                                        schema.edge_sets[n].target)
                         for n in marks}
    else:
        assert marks == truth
    assert marks["bought"] is not dangling
    for adjacency in graph.adjacency.values():
        positions = np.arange(len(adjacency.rows))[::-1]
        expected = np.full(len(positions), -1) if adjacency.ends_in_tables \
            else adjacency.rows[positions]
        np.testing.assert_array_equal(adjacency.edge_rows(positions), expected)
