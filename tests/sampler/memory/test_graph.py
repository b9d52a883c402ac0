"""load_graph (sampler.memory.graph): interned ids, and indexes equal to the Beam
engine's built on the ids themselves."""
import os

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
