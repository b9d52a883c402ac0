"""The reference for the bounded store build: every array of a store computed from the
whole tables in memory, as sampler.memory.graph.load_graph builds its indexes (and as
the store build did before it was bounded, issue 40): each node table by
core.node_table.build_node_table, each node set's names as the distinct ids of its
table and of every edge end, each edge set's CSR by core.adjacency.build_adjacency on
the whole table, laid out by sampler.store.layout. No sort here is external, no array
is paged: what the bounded build (sampler.store.nodes, .edges) must write, byte for
byte.
"""
import numpy as np

from sampler.core import rng
from sampler.core.adjacency import build_adjacency, concat_edge_batches
from sampler.core.arrays import unique
from sampler.core.node_table import build_node_table
from sampler.core.temporal import effective_times, lowest_time
from sampler.store.layout import (CANONICAL, TIMED, adjacency_arrays, feature_arrays,
                                  set_folder)
from unigraph.columnar.batches import EdgeBatch
from unigraph.schema import has_table, is_link_readout
from unigraph.tables import read_set, table_locations
from unigraph.tables.layout import TimeColumn
from unigraph.timestamps import find_timestamp_column, time_dtype
from unigraph.tables.columns import set_columns


def whole_store(loaded, chunk_edges: int, batch_rows: int):
    """({relative path: array}, nodes meta, edges meta) of the store of `loaded`."""
    schema = loaded.schema
    node_sets = sorted(schema.node_sets)
    edge_sets = sorted(n for n in schema.edge_sets if not is_link_readout("edge set", n))
    files, nodes_meta, edges_meta = {}, {}, {}

    def timestamp_of(kind, name):
        if kind == "nodes" and not has_table(schema.node_sets[name].metadata):
            return None
        return find_timestamp_column(loaded, kind, name, set_columns(loaded, kind, name))

    tables = {}
    for i, name in enumerate(node_sets):
        meta = nodes_meta[name] = {"dir": set_folder("nodes", i, name), "features": {},
                                   "table": has_table(schema.node_sets[name].metadata),
                                   "table_rows": 0, "timestamp": None}
        if not meta["table"]:
            continue
        column = timestamp_of("nodes", name)
        dtype = time_dtype(loaded, [("nodes", name)]).name if column else None
        table = tables[name] = build_node_table(name, list(read_set(
            loaded, "nodes", name, batch_rows=batch_rows,
            timestamp=TimeColumn(column, dtype) if column else None)),
            table_locations(loaded, "nodes", name))
        meta["table_rows"] = len(table.ids)
        if column:
            meta["timestamp"] = {"column": column, "dtype": dtype}
            files[f"{meta['dir']}/timestamps.npy"] = table.timestamps
        for f, feature in enumerate(sorted(table.features)):
            description, arrays = feature_arrays(table.features[feature])
            meta["features"][feature] = description | {"prefix": f"feature{f}"}
            for suffix, array in arrays.items():
                files[f"{meta['dir']}/feature{f}.{suffix}.npy"] = array
    edges = {}
    ends = {name: [tables[name].ids] if name in tables else [] for name in node_sets}
    for name in edge_sets:
        edge_column = timestamp_of("edges", name)
        target = schema.edge_sets[name].target
        target_column = timestamp_of("nodes", target)
        dtype = time_dtype(loaded, [("edges", name)] * bool(edge_column)
                           + [("nodes", target)] * bool(target_column)).name
        edges[name] = (concat_edge_batches(name, list(read_set(
            loaded, "edges", name, batch_rows=batch_rows,
            timestamp=TimeColumn(edge_column, dtype) if edge_column else None))),
            edge_column, target_column, dtype)
        ends[schema.edge_sets[name].source].append(edges[name][0].sources)
        ends[target].append(edges[name][0].targets)
    names, fingerprints = {}, {}
    for name in node_sets:
        meta = nodes_meta[name]
        pieces = [a for a in ends[name]]
        names[name] = unique(np.concatenate(pieces)) if pieces else np.zeros(0, "S1")
        fingerprints[name] = rng.fingerprint(names[name])
        meta["names"] = len(names[name])
        files[f"{meta['dir']}/names.npy"] = names[name]
        files[f"{meta['dir']}/fingerprints.npy"] = fingerprints[name]
        if meta["table"]:
            files[f"{meta['dir']}/table_codes.npy"] = np.searchsorted(names[name],
                                                                      tables[name].ids)
    for i, name in enumerate(edge_sets):
        batch, edge_column, target_column, dtype = edges[name]
        edge_set = schema.edge_sets[name]
        folder = set_folder("edges", i, name)
        timed = edge_column is not None or target_column is not None
        meta = edges_meta[name] = {
            "dir": folder, "source": edge_set.source, "target": edge_set.target,
            "edges": len(batch), "layouts": {},
            "timed": {"edge_column": edge_column, "target_column": target_column,
                      "dtype": dtype} if timed else None}
        source_fps, target_fps = fingerprints[edge_set.source], fingerprints[edge_set.target]
        same_set = edge_set.source == edge_set.target
        coded = None
        if len(batch):
            coded = EdgeBatch(name, np.searchsorted(names[edge_set.source], batch.sources),
                              np.searchsorted(names[edge_set.target], batch.targets),
                              batch.rows, batch.weights, batch.features, None)
        for layout in [CANONICAL] + [TIMED] * timed:
            if coded is None:  # no rows: the empty CSR
                built = build_adjacency(name, [])
            else:
                times = None
                if layout == TIMED:
                    node_times = None
                    if target_column:
                        by_code = np.full(len(names[edge_set.target]), lowest_time(dtype),
                                          dtype)
                        by_code[np.searchsorted(names[edge_set.target],
                                                tables[edge_set.target].ids)] = \
                            tables[edge_set.target].timestamps
                        node_times = by_code[coded.targets]
                    times = effective_times(batch.timestamps, node_times, dtype)
                built = build_adjacency(name, [EdgeBatch(
                    name, coded.sources, coded.targets, coded.rows, coded.weights,
                    coded.features, times)], source_fps.__getitem__, chunk_edges,
                    target_fps.__getitem__)
                if same_set:
                    built.target_fingerprints = source_fps[built.target_ids]
            per_row, per_edge, description = adjacency_arrays(built)
            meta["layouts"][layout] = description
            if layout == CANONICAL:
                files.update({f"{folder}/{k}.npy": a for k, a in per_row.items()})
            files.update({f"{folder}/{layout}/{k}.npy": a for k, a in per_edge.items()})
    return files, nodes_meta, edges_meta
