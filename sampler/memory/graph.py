"""The graph in memory: every table a job reads, loaded once into the core's indexes.

One NodeTableBucket per node set with a table and one AdjacencyBucket (a CSR over
every source node) per sampled edge set: the Beam engine's per-bucket indexes with
a single bucket. The core's results never depend on how nodes are bucketed, so the
records are the same bytes.
"""
from __future__ import annotations

import dataclasses
from concurrent.futures import ThreadPoolExecutor

from sampler.core.adjacency import AdjacencyBucket, build_adjacency
from sampler.core.node_table import NodeTableBucket, build_node_table, ids_only_table
from sampler.core.seeds import seeds_from_ids
from sampler.job.job import SamplingJob
from sampler.plan.plan import edge_sets_to_read
from unigraph.batches import SeedBatch
from unigraph.schema import has_table
from unigraph.tables import read_seed_set, read_set, table_locations


@dataclasses.dataclass(eq=False)
class GraphInMemory:
    node_tables: dict[str, NodeTableBucket]   # node sets with a table
    adjacency: dict[str, AdjacencyBucket]     # the edge sets the plan samples
    seed_table: NodeTableBucket               # the seed set's nodes (ids only without a table)
    seeds: list[SeedBatch]                    # the seed rows, not yet numbered


def load_graph(job: SamplingJob, threads: int = 2) -> GraphInMemory:
    """Reads the tables (several at once: Arrow and numpy release the GIL) and builds
    the indexes; a bad row or a duplicate id raises the readers' one-line TableError."""
    loaded, plan = job.loaded, job.plan
    schema = loaded.schema
    node_sets = [n for n in plan.node_sets() if has_table(schema.node_sets[n].metadata)]
    edge_sets = edge_sets_to_read(plan, schema)

    def node_table(name):
        return build_node_table(name, list(read_set(loaded, "nodes", name)),
                                table_locations(loaded, "nodes", name))

    def edges(name):
        return list(read_set(loaded, "edges", name))

    with ThreadPoolExecutor(max_workers=threads) as pool:
        tables = dict(zip(node_sets, pool.map(node_table, node_sets)))
        batches = dict(zip(edge_sets, pool.map(edges, edge_sets)))
        adjacency = dict(zip(plan.edge_sets(), pool.map(
            lambda name: build_adjacency(name, batches[name]), plan.edge_sets())))
    seed_set = plan.seed_set
    seed_table = tables.get(seed_set) or ids_only_table(seed_set, [
        getattr(batch, field) for name in edge_sets for batch in batches[name]
        for field, end in (("sources", schema.edge_sets[name].source),
                           ("targets", schema.edge_sets[name].target)) if end == seed_set])
    return GraphInMemory(tables, adjacency, seed_table, _seed_rows(job, seed_table))


def _seed_rows(job: SamplingJob, seed_table: NodeTableBucket) -> list[SeedBatch]:
    """The seeds table's rows; without one, every node of the seed set (a sample's id
    depends on its row's content only, so the table need not be read twice)."""
    if job.seeds_path:
        return list(read_seed_set(job.seeds_path))  # files, or a BigQuery table
    return [seeds_from_ids(seed_table.ids)]
