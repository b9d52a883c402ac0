"""A graph store's layout: which flat arrays hold a graph, and what a job needs of them.

Pure logic, no files: the builder (sampler.store.build) and the mapper
(sampler.store.mapped) both name arrays through these functions, so the two cannot
drift apart. docs/store.md draws the folder.

What a store holds, for any spec on its schema:
  * per node set: `names` (its ids, sorted: codes index them), their `fingerprints`
    (the random streams' keys), and for a set with a table the table's rows as codes
    (`table_codes`), its features (ragged ones as flat values plus row lengths per
    ragged dimension) and its timestamps when the set has a timestamp column;
  * per edge set: the CSR that sampling uses (sampler.core.adjacency), in two layouts:
    `canonical` (by source, target, row) and, when the set or its target node set has a
    timestamp column, `timed` (by source, effective time, target, row, with the effective
    times). Both with the long-row layout of the store's chunk_edges (core.long_rows).

Which layout a job reads, and which timestamps, is what sampler.plan.timing decides for
the job; `serve_problem` says in one line when the store cannot give it that.
"""
from __future__ import annotations

import re
from typing import Callable

import numpy as np

from sampler.core.adjacency import AdjacencyBucket
from sampler.core.long_rows import LongRows
from unigraph.columnar.batches import FeatureValues
from unigraph.columnar.ragged import Ragged

CANONICAL, TIMED = "canonical", "timed"
# Per-row arrays, the same in both layouts of an edge set (stored once).
ROW_ARRAYS = ("sources", "row_splits", "target_ids", "source_fingerprints")
LONG_ROW_ARRAYS = ("rows", "chunk_offsets", "chunk_starts", "chunk_ends")


def set_folder(kind: str, index: int, name: str) -> str:
    """The folder of the index-th set of a kind: readable, and unique whatever the name."""
    return f"{kind}/{index:03d}-{re.sub(r'[^A-Za-z0-9_.-]', '_', name)[:60]}"


def feature_arrays(values: FeatureValues) -> tuple[dict, dict[str, np.ndarray]]:
    """(its description, its arrays by suffix) of one feature column: dense, one array;
    ragged, the flat values and one row-lengths array per ragged dimension."""
    lengths = []
    while isinstance(values, Ragged):
        lengths.append(values.row_lengths)
        values = values.values
    arrays = {f"lengths{i}": np.asarray(l, np.int64) for i, l in enumerate(lengths)}
    if values.dtype == object:  # byte strings of any length: one blob and offsets
        flat = values.reshape(-1)
        arrays["blob"] = np.frombuffer(b"".join(flat), np.uint8)
        arrays["offsets"] = np.r_[0, np.cumsum([len(v) for v in flat])].astype(np.int64)
        return {"ragged": len(lengths), "strings": list(values.shape[1:])}, arrays
    arrays["values"] = np.ascontiguousarray(values)
    return {"ragged": len(lengths)}, arrays


def feature_values(description: dict, get: Callable[[str], np.ndarray]) -> FeatureValues:
    """The feature column back from its arrays (`get(suffix)`). Byte strings come back
    as the object array the readers give (a copy: numpy cannot map them)."""
    if "strings" in description:
        blob, offsets = bytes(get("blob")), get("offsets")
        values = np.empty(len(offsets) - 1, object)
        values[:] = [blob[a:b] for a, b in zip(offsets[:-1].tolist(), offsets[1:].tolist())]
        values = values.reshape([-1] + description["strings"])
    else:
        values = get("values")
    for i in reversed(range(description["ragged"])):
        values = Ragged(values, get(f"lengths{i}"))
    return values


def adjacency_arrays(adjacency: AdjacencyBucket) -> tuple[dict[str, np.ndarray],
                                                          dict[str, np.ndarray], dict]:
    """(per-row arrays, per-edge arrays, description) of one layout of an edge set."""
    rows = {"sources": adjacency.sources, "row_splits": adjacency.row_splits,
            "target_ids": adjacency.target_ids,
            "source_fingerprints": adjacency.source_fingerprints}
    if adjacency.target_fingerprints is not None:
        rows["target_fingerprints"] = adjacency.target_fingerprints
    edges = {"target_codes": adjacency.target_codes, "rows": adjacency.rows}
    if adjacency.weights is not None:
        edges["weights"] = adjacency.weights
    if adjacency.times is not None:
        edges["times"] = adjacency.times
    if adjacency.long_rows is not None:
        edges.update({f"long_rows.{k}": getattr(adjacency.long_rows, k) for k in LONG_ROW_ARRAYS})
    features = {}
    for i, (name, values) in enumerate(sorted(adjacency.features.items())):
        features[name], arrays = feature_arrays(values)
        features[name]["prefix"] = f"feature{i}"
        edges.update({f"feature{i}.{suffix}": a for suffix, a in arrays.items()})
    return rows, edges, {"features": features, "weights": adjacency.weights is not None,
                         "times": adjacency.times is not None,
                         "long_rows": adjacency.long_rows is not None,
                         "target_fingerprints": adjacency.target_fingerprints is not None}


def adjacency_from(edge_set: str, description: dict, row_array: Callable[[str], np.ndarray],
                   edge_array: Callable[[str], np.ndarray],
                   times: Callable[[np.ndarray], np.ndarray] = lambda t: t,
                   weights: bool = True) -> AdjacencyBucket:
    """One layout's AdjacencyBucket from its arrays; `times` may convert the stored times
    to the job's time type; `weights=False`: without the stored weights (a job none of
    whose ops weighs this edge set neither maps nor checks them)."""
    long_rows = (LongRows(*(edge_array(f"long_rows.{k}") for k in LONG_ROW_ARRAYS))
                 if description["long_rows"] else None)
    features = {name: feature_values(d, lambda suffix, p=d["prefix"]: edge_array(f"{p}.{suffix}"))
                for name, d in description["features"].items()}
    return AdjacencyBucket(
        edge_set, row_array("sources"), row_array("row_splits"), edge_array("target_codes"),
        row_array("target_ids"), edge_array("rows"),
        edge_array("weights") if description["weights"] and weights else None, features,
        row_array("source_fingerprints"),
        row_array("target_fingerprints") if description["target_fingerprints"] else None,
        times=times(edge_array("times")) if description["times"] else None,
        long_rows=long_rows)


def layout_of(job_time, edge_set: str) -> str:
    """The layout a job samples an edge set in."""
    return TIMED if job_time is not None and edge_set in job_time.ordered_edge_sets \
        else CANONICAL


def serve_problem(manifest: dict, job) -> str | None:
    """Why the store cannot serve the job, in one line; None when it can. What a job
    needs: the store's chunk_edges (long rows' draws depend on it), every edge set and
    node set the plan reads, and for each time-ordered edge set a timed layout built from
    the same timestamp columns (the job's time plan, sampler.plan.timing)."""
    options = manifest["options"]
    if job.chunk_edges != options["chunk_edges"]:
        return (f"it was laid out with --chunk-edges {options['chunk_edges']} and the job asks "
                f"for {job.chunk_edges} (long rows' draws depend on it); run with "
                f"--chunk-edges {options['chunk_edges']}, or prepare the store with "
                f"--chunk-edges {job.chunk_edges}")
    plan, time = job.plan, job.time
    for name in plan.edge_sets():
        if name not in manifest["edges"]:
            return f"it has no edge set '{name}'"
        stored = manifest["edges"][name]
        if layout_of(time, name) == CANONICAL:
            continue
        timed = stored["timed"]
        wanted_edge = time.edge_columns[name].name if name in time.edge_columns else None
        target = job.loaded.schema.edge_sets[name].target
        wanted_target = (time.node_columns[target].name if name in time.node_targets
                         else None)
        if timed is None:
            return (f"edge set '{name}' is time-ordered in this job but the store has no "
                    f"timed layout of it (no timestamp column when it was prepared)")
        if (timed["edge_column"], timed["target_column"]) != (wanted_edge, wanted_target):
            return (f"edge set '{name}': the store ordered it by timestamp columns "
                    f"{_columns(timed['edge_column'], timed['target_column'])}, the job by "
                    f"{_columns(wanted_edge, wanted_target)} (was --timestamp-column "
                    f"different when it was prepared?)")
        if not convertible_times(timed["dtype"], time.dtype):
            return (f"edge set '{name}': the store holds {timed['dtype']} times, the job "
                    f"compares {time.dtype} ones")
    if time is not None:
        for node_set, column in time.node_columns.items():
            stored = manifest["nodes"].get(node_set, {}).get("timestamp")
            if stored is None or stored["column"] != column.name:
                return (f"node set '{node_set}': the job reads timestamp column "
                        f"'{column.name}', the store has "
                        f"{repr(stored['column']) if stored else 'none'}")
            if not convertible_times(stored["dtype"], time.dtype):
                return (f"node set '{node_set}': the store holds {stored['dtype']} times, the "
                        f"job compares {time.dtype} ones")
    return None


def convertible_times(stored: str, wanted: str) -> bool:
    """Stored times serve a job whose times are of the same type, or float64 ones when
    they are int64 (a float timestamp elsewhere in the job): sampler.store.mapped
    converts them, checking that each int64 time is exact as a float64."""
    return stored == wanted or (stored == "int64" and wanted == "float64")


def as_job_times(times: np.ndarray, wanted: str, where: str) -> np.ndarray:
    """Stored times in the job's type (a copy when they differ). int64's lowest value
    (a missing time, core.temporal.lowest_time) becomes -inf; any other value must be
    exact as a float64, or its order (and ties) would change: ValueError naming `where`."""
    if times.dtype == np.dtype(wanted):
        return times
    lowest = times == np.iinfo(np.int64).min
    converted = times.astype(np.float64)
    if not np.array_equal(converted[~lowest].astype(np.int64), times[~lowest]):
        raise ValueError(f"{where}: int64 times beyond 2**53 cannot be compared as the job's "
                         f"float64 times without changing their order")
    converted[lowest] = -np.inf
    return converted


def _columns(edge_column, target_column) -> str:
    return f"(edge: {edge_column or 'none'}, target node: {target_column or 'none'})"
