"""`load_graph`: a graph read (or a store mapped) once for one spec, with the options
`sample` takes, ready for sampling calls."""
from __future__ import annotations

import logging
import os
from typing import Any, Optional, Sequence, Union

from google.protobuf import text_format

from sampler.api.graph import CUTOFF_COLUMN, Graph, PathLike
from sampler.core.long_rows import CHUNK_EDGES
from sampler.job.job import DEFAULT_SEED, SamplingJob
from sampler.job.options import link_plan, load_and_check
from sampler.memory.graph import load_graph as load_into_memory
from sampler.numpy_cpu import sort_hint
from sampler.plan import sampling_spec_pb2 as ss
from sampler.plan.plan import UNIFORM, with_edge_aggregation
from sampler.plan.timing import time_plan_of
from unigraph.errors import SamplerError
from unigraph.importers import from_object
from unigraph.importers.spec import SPEC_FILE_NAME, starting_spec
from unigraph.schema import LoadedSchema
from unigraph.storage import bigquery

log = logging.getLogger("sampler")


def load_graph(graph: Union[PathLike, Any], spec: PathLike | ss.SamplingSpec | None = None, *,
               data_path: PathLike | None = None, timestamp_column: str | None = None,
               cutoffs: bool = False, edge_aggregation: str = "edge", negatives: int = 0,
               negative_sampling: str = UNIFORM, exclude_target_edge: bool = True,
               target_edge_sets: Optional[Sequence[str]] = None,
               chunk_edges: int = CHUNK_EDGES,
               bigquery_project: str | None = None, threads: int = 1) -> Graph:
    """Loads the graph a spec samples, once: `graph` is a schema file or its folder (any
    table format, local, gs:// or BigQuery), or a graph store (docs/store.md), which is
    mapped instead of read; or a graph held in Python, sampled as it is without files:
    a PyG `Data`/`HeteroData`, a DGL graph or a `unigraph.importers.ImportedGraph`
    (docs/import.md: it reads as `unigraph.import_pyg` would write it, so the subgraphs
    are those of the written folder). `spec` left out: the folder's
    `sampling_spec.pbtxt` (what `unigraph-import` writes), or for a graph in Python the
    same starting spec (two hops over every edge set from the labelled node set).
    The options are `sample`'s flags of the same names:
    `cutoffs=True` prepares sampling with per-seed time cut-offs; `negatives`,
    `negative_sampling`, `exclude_target_edge`, `target_edge_sets` are for link specs;
    `bigquery_project` bills BigQuery reads (default: GOOGLE_CLOUD_PROJECT, else the
    credentials' project).
    `threads`: each sampling call splits its seeds into up to this many chunks (of at
    least 128 seeds) sampled at once in threads; numpy releases the GIL in the sorts
    and gathers that take most of the time, so a batch comes back sooner where cores
    are free. The subgraphs are the same for any number of threads.
    How much memory it holds is logged and is `Graph.nbytes`."""
    if isinstance(threads, bool) or not isinstance(threads, int) or threads < 1:
        raise SamplerError(f"threads must be a whole number of at least 1, got {threads!r}")
    with bigquery.billing_project_given(bigquery_project):
        return _load_graph(graph, spec, data_path, timestamp_column, cutoffs, edge_aggregation,
                           negatives, negative_sampling, exclude_target_edge,
                           target_edge_sets, chunk_edges, bigquery_project, threads)


def _graph_and_spec(graph, spec) -> tuple[Union[str, LoadedSchema],
                                          Union[str, "os.PathLike[str]", ss.SamplingSpec]]:
    """(a path or a graph held in memory, the spec): a graph in Python imported, and a
    spec left out made or found (load_graph's docstring)."""
    imported = from_object(graph)
    if imported is not None:
        if spec is None:
            if imported.seed_set is None:
                raise SamplerError(f"{imported.origin}: no labelled node set or split to seed "
                                   f"a starting spec from; give a spec")
            spec = text_format.Parse(
                starting_spec(imported.schema, imported.seed_set, imported.link),
                ss.SamplingSpec())
        return imported.loaded(), spec
    if not isinstance(graph, (str, os.PathLike)):
        raise SamplerError(f"load_graph: graph {type(graph).__name__!r}: give a schema file or "
                           f"folder, a graph store, or a PyG / DGL graph")
    graph = os.fspath(graph)
    if spec is None:
        folder = graph if not graph.endswith(".pbtxt") else os.path.dirname(graph) or "."
        spec = os.path.join(folder, SPEC_FILE_NAME)
        if not os.path.exists(spec):
            raise SamplerError(f"load_graph: no spec given and no {SPEC_FILE_NAME} beside "
                               f"the graph in {folder}")
    return graph, spec


def _load_graph(graph, spec, data_path, timestamp_column, cutoffs, edge_aggregation,
                negatives, negative_sampling, exclude_target_edge, target_edge_sets,
                chunk_edges, bigquery_project, threads) -> Graph:
    graph, spec = _graph_and_spec(graph, spec)
    loaded, plan = load_and_check(graph, spec if isinstance(spec, ss.SamplingSpec)
                                  else os.fspath(spec),
                                  None if data_path is None else os.fspath(data_path),
                                  timestamp_column)
    plan = with_edge_aggregation(
        link_plan(plan, loaded, exclude_target_edge=exclude_target_edge,
                  target_edge_sets=None if target_edge_sets is None else list(target_edge_sets),
                  negatives=negatives, negative_sampling=negative_sampling), edge_aggregation)
    if chunk_edges < 1:
        raise SamplerError(f"chunk_edges must be at least 1, got {chunk_edges}")
    time = time_plan_of(loaded, plan, CUTOFF_COLUMN if cutoffs else None, "cutoffs")
    # The engine's job, minus what only a run that writes files needs.
    job = SamplingJob(loaded=loaded, plan=plan, seeds_path=None, output=None, num_shards=1,
                      node_buckets=1, seed=DEFAULT_SEED, stats_path="", time=time,
                      chunk_edges=chunk_edges)
    memory = load_into_memory(job)
    loaded_graph = Graph(loaded, plan, time, memory, chunk_edges, bigquery_project, threads)
    log.info("graph loaded: %s (%s)", loaded_graph,
             "a graph store, mapped" if loaded.store is not None else "tables read")
    hint = sort_hint()
    if hint is not None:
        log.info(hint)
    return loaded_graph
