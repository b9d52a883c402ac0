"""Opens a graph store for a job: its arrays mapped (np.load mmap_mode='r'), never read.

What `load_graph` builds from tables, the store already holds, so opening it checks
and maps: the manifest's format version (unigraph.store_manifest), that every file
it lists is there with its size, that the job's schema is the store's, and that the
store can serve the job (sampler.store.layout.serve_problem); each refusal is one
SamplerError line. The mapped pages belong to the page cache: forked workers share
them, and a graph larger than memory is paged in and out by the system.

Only what a job's time type makes different is copied: int64 times a float64 job
compares (one edge set's times, or one node set's), and the ids of a seed set whose
nodes the job counts differently from the store (below).
"""
from __future__ import annotations

import dataclasses
import os

import numpy as np

from sampler.core.adjacency import AdjacencyBucket
from sampler.core.node_table import NodeTableBucket
from sampler.job.job import SamplingJob
from sampler.plan.plan import edge_sets_to_read
from sampler.store.build import file_crc32
from sampler.store.layout import (CANONICAL, adjacency_from, as_job_times, feature_values,
                                  layout_of, serve_problem)
from unigraph.errors import SamplerError
from unigraph.schema import parse_schema_text


@dataclasses.dataclass(eq=False)
class MappedGraph:
    names: dict[str, np.ndarray]
    node_tables: dict[str, NodeTableBucket]   # ids as codes
    adjacency: dict[str, AdjacencyBucket]
    seed_table: NodeTableBucket               # ids as names (the seeds join)
    # The codes of the seed set's nodes as the job counts them, when that is fewer than
    # the store's names (see `_seed_codes`); None: all of them.
    seed_codes: np.ndarray | None


def open_store(job: SamplingJob) -> MappedGraph:
    store = job.loaded.store
    folder, manifest = store.folder, store.manifest

    def refuse(problem: str):
        return SamplerError(f"graph store {folder}: {problem}")

    stored_schema = parse_schema_text(manifest["schema"], os.path.join(folder, "store.json"))
    if stored_schema != job.loaded.schema:
        raise refuse(f"it was prepared for another schema than the one this job uses"
                     f"{_first_difference(stored_schema, job.loaded.schema)}; prepare it "
                     f"again from this schema")
    _check_files(folder, manifest, refuse)
    problem = serve_problem(manifest, job)
    if problem is not None:
        raise refuse(f"cannot serve this job: {problem}")

    def array(relative: str) -> np.ndarray:
        # A plain ndarray over the mapping: np.memmap's Python-level __array_finalize__
        # would run on every slice and view the hops take.
        return np.load(os.path.join(folder, relative), mmap_mode="r",
                       allow_pickle=False).view(np.ndarray)

    plan, time = job.plan, job.time
    wanted = time.dtype if time is not None else None
    names = {n: array(f"{manifest['nodes'][n]['dir']}/names.npy") for n in plan.node_sets()}
    node_tables = {}
    for name in plan.node_sets():
        meta = manifest["nodes"][name]
        if not meta["table"]:
            continue
        features = {f: feature_values(d, lambda s, p=d["prefix"], m=meta:
                                      array(f"{m['dir']}/{p}.{s}.npy"))
                    for f, d in meta["features"].items()}
        node_tables[name] = NodeTableBucket(name, array(f"{meta['dir']}/table_codes.npy"),
                                            features)
    adjacency = {}
    for name in plan.edge_sets():
        meta = manifest["edges"][name]
        layout = layout_of(time, name)

        def times(stored, where=f"edge set '{name}'"):
            try:
                return as_job_times(stored, wanted, where)
            except ValueError as e:
                raise refuse(str(e)) from None

        adjacency[name] = adjacency_from(
            name, meta["layouts"][layout], lambda key, d=meta["dir"]: array(f"{d}/{key}.npy"),
            lambda key, d=meta["dir"], l=layout: array(f"{d}/{l}/{key}.npy"), times)
    seed_set = plan.seed_set
    seed_codes = _seed_codes(job, manifest, adjacency, node_tables, array)
    seed_meta = manifest["nodes"][seed_set]
    if seed_set in node_tables:
        table = node_tables[seed_set]
        ids = (names[seed_set] if len(table.ids) == len(names[seed_set])
               else names[seed_set][table.ids])
        timestamps = None
        if seed_meta["timestamp"] is not None and time is not None \
                and seed_set in time.node_columns:
            timestamps = as_job_times(array(f"{seed_meta['dir']}/timestamps.npy"), wanted,
                                      f"node set '{seed_set}'")
        seed_table = NodeTableBucket(seed_set, ids, table.features, timestamps)
    else:
        seed_table = NodeTableBucket(seed_set, names[seed_set] if seed_codes is None
                                     else names[seed_set][seed_codes], {})
    return MappedGraph(names, node_tables, adjacency, seed_table, seed_codes)


def _seed_codes(job: SamplingJob, manifest: dict, adjacency: dict, node_tables: dict,
                array) -> np.ndarray | None:
    """The seed set's nodes as the job counts them, as codes: its table's ids and the ids
    of the edge sets the job reads that name the set (load_graph's names). The store's
    names count every edge set; where the two differ, seeds and pairs must be found as
    from the tables, so the difference is kept. None when they are the same."""
    plan, schema = job.plan, job.loaded.schema
    seed_set = plan.seed_set
    naming = {n for n, m in manifest["edges"].items() if seed_set in (m["source"], m["target"])}
    read = set(edge_sets_to_read(plan, schema))
    if naming <= read:
        return None
    parts = [node_tables[seed_set].ids] if seed_set in node_tables else []
    for name in sorted(naming & read):
        meta = manifest["edges"][name]
        bucket = adjacency.get(name)
        if meta["source"] == seed_set:
            parts.append(bucket.sources if bucket is not None
                         else array(f"{meta['dir']}/sources.npy"))
        if meta["target"] == seed_set:
            parts.append(bucket.target_ids if bucket is not None
                         else array(f"{meta['dir']}/target_ids.npy"))
    return np.unique(np.concatenate(parts)) if parts else np.zeros(0, np.int64)


def _check_files(folder: str, manifest: dict, refuse) -> None:
    """Every listed file present with its size: a store missing a file, or with a file cut
    short, is refused (checksums: `verify_store`, which reads everything)."""
    for relative, meta in manifest["files"].items():
        try:
            size = os.path.getsize(os.path.join(folder, relative))
        except OSError:
            raise refuse(f"incomplete: {relative} is missing") from None
        if size != meta["bytes"]:
            raise refuse(f"damaged: {relative} has {size} bytes, its manifest says "
                         f"{meta['bytes']}")


def verify_store(folder: str, manifest: dict) -> None:
    """Every file's size and CRC-32 against the manifest (reads the whole store)."""
    def refuse(problem: str):
        return SamplerError(f"graph store {folder}: {problem}")

    _check_files(folder, manifest, refuse)
    for relative, meta in manifest["files"].items():
        if file_crc32(os.path.join(folder, relative)) != meta["crc32"]:
            raise refuse(f"damaged: {relative} does not match its checksum")


def _first_difference(stored, used) -> str:
    for kind in ("node_sets", "edge_sets"):
        a, b = getattr(stored, kind), getattr(used, kind)
        for name in sorted(set(a) | set(b)):
            if name not in a or name not in b or a[name] != b[name]:
                return f" ({kind.replace('_', ' ')[:-1]} '{name}' differs)"
    return " (its context differs)"
