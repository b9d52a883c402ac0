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

A store larger than the memory the job may use is read at random: each page a hop
touches is faulted in alone (`advise_random`), not with the file's read-ahead window
around it, which would fill the page cache with pages no hop asked for and evict the
ones it needs (docs/store.md, "Larger than memory").
"""
from __future__ import annotations

import dataclasses
import mmap
import os
from typing import Callable

import numpy as np

from sampler.core.adjacency import AdjacencyBucket
from sampler.core.node_table import NodeTableBucket
from sampler.job.resources import available_memory
from sampler.job.job import SamplingJob
from sampler.plan.plan import edge_sets_to_read
from sampler.store import checks
from sampler.store.layout import adjacency_from, as_job_times, feature_values, layout_of, \
    serve_problem
from sampler.store.prefetch import mapping_of, prefetching
from unigraph.errors import SamplerError
from unigraph.schema import feature_shape, numpy_dtype, parse_schema_text


@dataclasses.dataclass(eq=False)
class MappedGraph:
    names: dict[str, np.ndarray]
    node_tables: dict[str, NodeTableBucket]   # ids as codes
    adjacency: dict[str, AdjacencyBucket]
    seed_table: NodeTableBucket               # ids as names (the seeds join)
    # The codes of the seed set's nodes as the job counts them, when that is fewer than
    # the store's names (see `_seed_codes`); None: all of them.
    seed_codes: np.ndarray | None
    # Whether the arrays are mapped for random reads, their gathers prefetched: the
    # store is larger than the memory the job may use (store.prefetch).
    read_at_random: bool = False


class _Arrays:
    """A store's arrays, each mapped once and checked as it is used (sampler.store.checks)."""

    def __init__(self, folder: str, manifest: dict, schema, prefetch: bool = False):
        """`prefetch`: the arrays' gathers ask for their pages first (store.prefetch)."""
        self.folder, self.manifest, self.schema = folder, manifest, schema
        self.prefetch = prefetch
        self.mapped: dict[str, np.ndarray] = {}
        self.mapped_from: dict[int, str] = {}
        self.check = checks.Checker(folder, lambda a: self.mapped_from.get(id(a),
                                                                           "a file of the store"))

    def array(self, relative: str) -> np.ndarray:
        if relative not in self.mapped:
            array = checks.open_array(self.folder, self.manifest, relative)
            self.mapped[relative] = prefetching(array) if self.prefetch else array
            self.mapped_from[id(self.mapped[relative])] = relative
        return self.mapped[relative]

    def names(self, node_set: str) -> np.ndarray:
        names = self.array(f"{self.manifest['nodes'][node_set]['dir']}/names.npy")
        self.check.sorted_names(names)
        return names

    def node_table(self, name: str, n_names: int) -> NodeTableBucket:
        meta = self.manifest["nodes"][name]
        codes = self.array(f"{meta['dir']}/table_codes.npy")
        where = f"node set '{name}'"
        checks.check_node_table(self.check, codes, n_names, where)
        features = checks.checked_features(
            self.check, meta["features"],
            lambda p, s: self.array(f"{meta['dir']}/{p}.{s}.npy"), len(codes),
            lambda f: _declared(self.schema.node_sets[name], f), where, feature_values)
        return NodeTableBucket(name, codes, features)

    def node_times(self, name: str, rows: int) -> np.ndarray:
        meta = self.manifest["nodes"][name]
        stored = self.array(f"{meta['dir']}/timestamps.npy")
        self.check.times(stored, rows, meta["timestamp"]["dtype"],
                         f"node set '{name}': one time per row")
        return stored

    def adjacency(self, name: str, layout: str, n_sources: int, n_targets: int,
                  convert: Callable[[np.ndarray, str], np.ndarray] = lambda t, where: t,
                  weights: bool = True) -> AdjacencyBucket:
        """One layout of an edge set; `convert` turns its checked times into the job's;
        `weights=False`: without its weights (layout.adjacency_from)."""
        meta = self.manifest["edges"][name]
        description = meta["layouts"][layout]
        where = f"edge set '{name}' ({layout})"

        def edge_array(key: str) -> np.ndarray:
            return self.array(f"{meta['dir']}/{layout}/{key}.npy")

        edges = len(edge_array("target_codes"))
        checks.checked_features(  # checked here, built by adjacency_from
            self.check, description["features"], lambda p, s: edge_array(f"{p}.{s}"), edges,
            lambda f: _declared(self.schema.edge_sets[name], f), where, lambda d, get: None)

        def times(stored: np.ndarray) -> np.ndarray:
            self.check.times(stored, edges, (meta["timed"] or {}).get("dtype", "int64"),
                             f"{where}: one time per edge")
            return convert(stored, where)

        bucket = adjacency_from(name, description,
                                lambda key: self.array(f"{meta['dir']}/{key}.npy"), edge_array,
                                times, weights)
        checks.check_adjacency(self.check, bucket, n_sources, n_targets, where)
        return bucket


def open_store(job: SamplingJob) -> MappedGraph:
    """The job's arrays of its store, mapped and checked (sampler.store.checks: what is
    cheap, on every open; the checksums are `verify_store`'s)."""
    store = job.loaded.store
    folder, manifest = store.folder, store.manifest

    def refuse(problem: str):
        return SamplerError(f"graph store {folder}: {problem}")

    stored_schema = parse_schema_text(manifest["schema"], os.path.join(folder, "store.json"))
    if stored_schema != job.loaded.schema:
        raise refuse(f"it was prepared for another schema than the one this job uses"
                     f"{_first_difference(stored_schema, job.loaded.schema)}; prepare it "
                     f"again from this schema")
    checks.check_files(folder, manifest, refuse)
    problem = serve_problem(manifest, job)
    if problem is not None:
        raise refuse(f"cannot serve this job: {problem}")
    plan, time = job.plan, job.time
    available = available_memory()
    larger = available is not None and _job_bytes(manifest, job) > available
    arrays = _Arrays(folder, manifest, job.loaded.schema, prefetch=larger)
    wanted = time.dtype if time is not None else None

    def convert(stored: np.ndarray, where: str) -> np.ndarray:
        try:
            return as_job_times(stored, wanted, where)
        except ValueError as e:
            raise refuse(str(e)) from None

    names = {n: arrays.names(n) for n in plan.node_sets()}
    node_tables = {name: arrays.node_table(name, len(names[name])) for name in plan.node_sets()
                   if manifest["nodes"][name]["table"]}
    adjacency = {}
    # Weights only where an op weighs its edges: on a store larger than memory, reading
    # and checking the others (2.2 GB at scale 10) would only evict what hops read.
    weighted = plan.weighted_edge_sets()
    for name in plan.edge_sets():
        meta = manifest["edges"][name]
        adjacency[name] = arrays.adjacency(name, layout_of(time, name),
                                           len(names[meta["source"]]),
                                           len(names[meta["target"]]), convert,
                                           weights=name in weighted)
    seed_set = plan.seed_set
    seed_codes = _seed_codes(job, manifest, adjacency, node_tables, arrays.array,
                             len(names[seed_set]))
    seed_meta = manifest["nodes"][seed_set]
    if seed_set in node_tables:
        table = node_tables[seed_set]
        ids = (names[seed_set] if len(table.ids) == len(names[seed_set])
               else names[seed_set][table.ids])
        timestamps = None
        if seed_meta["timestamp"] is not None and time is not None \
                and seed_set in time.node_columns:
            timestamps = convert(arrays.node_times(seed_set, len(table.ids)),
                                 f"node set '{seed_set}'")
        seed_table = NodeTableBucket(seed_set, ids, table.features, timestamps)
    else:
        seed_table = NodeTableBucket(seed_set, names[seed_set] if seed_codes is None
                                     else names[seed_set][seed_codes], {})
    if larger:
        advise_random(list(arrays.mapped.values()))  # after the checks, which read in order
    return MappedGraph(names, node_tables, adjacency, seed_table, seed_codes, larger)


def advise_random(arrays: list[np.ndarray]) -> None:
    """Tells the system that these mapped arrays are read at random (MADV_RANDOM): a page
    fault then reads its own page, not the device's read-ahead window around it (8 MB
    on this project's test machine), which fills the page cache with pages no hop asked
    for and evicts those it needs. 200K random rows of the scale-1.0 store's paper
    features in a 300 MB cgroup: 55 s and 2.3 system CPU-s instead of 210 s and 32.
    Arrays that are not mapped, and systems without madvise, are left as they are."""
    if not hasattr(mmap, "MADV_RANDOM"):
        return
    for array in arrays:
        mapping = mapping_of(array)  # np.memmap's mmap (under open_array's view)
        if mapping is not None:
            mapping.madvise(mmap.MADV_RANDOM)


def _job_bytes(manifest: dict, job: SamplingJob) -> int:
    """Bytes of the store's files for the sets the job reads, in the layouts it reads:
    what its arrays map, at most."""
    folders = [manifest["nodes"][n]["dir"] + "/" for n in job.plan.node_sets()]
    other_layouts = []
    for name in job.plan.edge_sets():
        meta = manifest["edges"][name]
        folders.append(meta["dir"] + "/")
        other_layouts += [f"{meta['dir']}/{layout}/" for layout in meta["layouts"]
                          if layout != layout_of(job.time, name)]
    return sum(meta["bytes"] for relative, meta in manifest["files"].items()
               if relative.startswith(tuple(folders))
               and not relative.startswith(tuple(other_layouts)))


def check_whole_store(loaded) -> None:
    """Every rule of sampler.store.checks on every array of the store (every set, both
    layouts), whatever a job would read: `unigraph-convert --verify`."""
    store = loaded.store
    folder, manifest = store.folder, store.manifest
    checks.check_files(folder, manifest,
                       lambda problem: SamplerError(f"graph store {folder}: {problem}"))
    arrays = _Arrays(folder, manifest, loaded.schema)
    sizes = {}
    for name, meta in sorted(manifest["nodes"].items()):
        sizes[name] = len(arrays.names(name))
        arrays.array(f"{meta['dir']}/fingerprints.npy")
        arrays.check.fingerprints(arrays.array(f"{meta['dir']}/fingerprints.npy"),
                                  sizes[name], f"node set '{name}': one fingerprint per id")
        if meta["table"]:
            table = arrays.node_table(name, sizes[name])
            if meta["timestamp"] is not None:
                arrays.node_times(name, len(table.ids))
    for name, meta in sorted(manifest["edges"].items()):
        for layout in sorted(meta["layouts"]):
            arrays.adjacency(name, layout, sizes[meta["source"]], sizes[meta["target"]])
    unused = sorted(set(manifest["files"]) - set(arrays.mapped))
    if unused:
        raise SamplerError(f"graph store {folder}: damaged: its manifest lists {unused[0]}, "
                           f"which no part of the store's layout is")


def _declared(piece, feature: str) -> tuple:
    """The schema's (numpy dtype, shape) of a set's feature; (None, None) if undeclared."""
    if feature not in piece.features:
        return None, None
    return numpy_dtype(piece.features[feature]), feature_shape(piece.features[feature])


def _seed_codes(job: SamplingJob, manifest: dict, adjacency: dict, node_tables: dict,
                array, n_names: int) -> np.ndarray | None:
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
    codes = np.unique(np.concatenate(parts)) if parts else np.zeros(0, np.int64)
    if len(codes) and (codes.dtype.kind not in "iu" or codes[0] < 0 or
                       codes[-1] >= n_names):
        raise SamplerError(f"graph store {job.loaded.store.folder}: damaged: the codes of node "
                           f"set '{seed_set}' in its edge sets are out of range")
    return codes


def verify_store(folder: str, manifest: dict) -> None:
    """Every file's size and CRC-32 against the manifest (reads the whole store)."""
    checks.verify_checksums(folder, manifest,
                            lambda problem: SamplerError(f"graph store {folder}: {problem}"))


def _first_difference(stored, used) -> str:
    for kind in ("node_sets", "edge_sets"):
        a, b = getattr(stored, kind), getattr(used, kind)
        for name in sorted(set(a) | set(b)):
            if name not in a or name not in b or a[name] != b[name]:
                return f" ({kind.replace('_', ' ')[:-1]} '{name}' differs)"
    return " (its context differs)"
