"""The sampling job as a Beam pipeline: the stages in the order data flows.

Every keyed join works on buckets (core.buckets): a stage's elements are
numpy batches for many nodes or samples, never one node or one sample.

    Read/nodes/<set>, Read/edges/<set>, Read/seeds    unigraph.beam_io
    NodeTable/<set>, Adjacency/<set>, SeedIds/...     beam/tables.py
    EdgeTimes/<set> (target node times, if any)       beam/tables.py
    Seeds                                             beam/seeds.py
    Hop/<op>, one per op in plan order                beam/hops.py
    Nodes/<set>                                       beam/nodes.py
    Assemble                                          beam/assemble.py
    Report                                            beam/report.py

Each stage is thin wiring around a pure function of core/ or output/; this
module only connects the stages' PCollections.
"""
from __future__ import annotations

import apache_beam as beam

from sampler.beam.assemble import WriteShards
from sampler.beam.hops import SampleHop
from sampler.beam.nodes import LookupNodes
from sampler.beam.report import MergeReport
from sampler.beam.seeds import JoinSeeds
from sampler.beam.tables import BuildAdjacency, BuildNodeTable, EffectiveTimes, IdsFromEdges
from sampler.core.seeds import seeds_from_ids, seeds_from_nodes
from sampler.job.job import SamplingJob
from sampler.plan.plan import edge_sets_to_read
from unigraph.beam_io import ReadEdgeSet, ReadNodeSet, ReadSeeds
from unigraph.schema import has_table
from unigraph.tables import table_locations


class SampleSubgraphs(beam.PTransform):
    """The whole job: reads the graph and the seeds, samples every op, writes the shards.

    Returns the merged RunStats (a one-element PCollection), also written to
    job.stats_path."""

    def __init__(self, job: SamplingJob):
        super().__init__()
        self.job = job

    def expand(self, pbegin):
        job, plan, time = self.job, self.job.plan, self.job.time
        p = pbegin.pipeline
        node_tables = self._node_tables(p)
        edge_times = time.edge_columns if time is not None else {}
        edge_batches = {name: p | f"Read/edges/{name}" >> ReadEdgeSet(
                            job.loaded, name, timestamp=edge_times.get(name))
                        for name in edge_sets_to_read(plan, job.loaded.schema)}
        adjacency = {name: self._timed(edge_batches[name], name, node_tables)
                     | f"Adjacency/{name}" >> BuildAdjacency(name, job.node_buckets)
                     for name in plan.edge_sets()}
        seed_table = node_tables.get(plan.seed_set) or self._ids_from_edges(edge_batches)

        seeds = ({"table": seed_table, "seeds": self._seed_batches(p, seed_table)}
                 | "Seeds" >> JoinSeeds(plan.seed_set, job.num_shards, job.node_buckets))
        stats, edge_pieces = [seeds["stats"]], []
        reached = {plan.seed_op: seeds["found"]}
        # An op's reached nodes feed later ops and its target set's feature lookup.
        needed = {name for op in plan.ops for name in op.input_ops} | {
            op.name for op in plan.ops if op.target_set in node_tables}
        for op in plan.ops:
            hop = ({"adjacency": adjacency[op.edge_set],
                    "requests": _flatten([reached[name] for name in op.input_ops], p,
                                         f"Hop/{op.name}/Inputs")}
                   | f"Hop/{op.name}" >> SampleHop(op, job.seed, job.num_shards,
                                                   job.node_buckets, op.name in needed))
            stats.append(hop["stats"])
            edge_pieces.append(hop["edges"])
            reached[op.name] = hop["reached"]

        # Table-less sets need no lookup: their nodes are the targets of sampled edges.
        feature_pieces = [seeds["features"]]
        for name, table in node_tables.items():
            arriving = [reached[op.name] for op in plan.ops if op.target_set == name]
            if arriving:
                feature_pieces.append(
                    {"table": table, "requests": _flatten(arriving, p, f"Nodes/{name}/Reached")}
                    | f"Nodes/{name}" >> LookupNodes(name, job.num_shards))

        stats.append({"seeds": seeds["seeds"],
                      "features": _flatten(feature_pieces, p, "Assemble/Features"),
                      "edges": _flatten(edge_pieces, p, "Assemble/Edges")}
                     | "Assemble" >> WriteShards(job.loaded, plan, job.output, job.num_shards))
        return tuple(stats) | "Report" >> MergeReport(job.stats_path)

    def _timed(self, edge_batches, name, node_tables):
        """An edge set's batches, with effective times if its targets have timestamps."""
        time = self.job.time
        if time is None or name not in time.node_targets:
            return edge_batches
        target = self.job.loaded.schema.edge_sets[name].target
        return ({"edges": edge_batches, "nodes": node_tables[target]}
                | f"EdgeTimes/{name}" >> EffectiveTimes(self.job.node_buckets, time.dtype))

    def _node_tables(self, p) -> dict:
        """(bucket, NodeTableBucket) of every node set the plan reaches that has a table
        (with their timestamps, where the job's effective edge times need them)."""
        job = self.job
        node_times = job.time.node_columns if job.time is not None else {}
        tables = {}
        for name in job.plan.node_sets():
            if has_table(job.loaded.schema.node_sets[name].metadata):
                tables[name] = (p | f"Read/nodes/{name}" >> ReadNodeSet(
                                    job.loaded, name, timestamp=node_times.get(name))
                                | f"NodeTable/{name}" >> BuildNodeTable(
                                    name, job.node_buckets,
                                    table_locations(job.loaded, "nodes", name)))
        return tables

    def _ids_from_edges(self, edge_batches):
        """The table-less seed set's nodes: every id the edge sets read name in it."""
        job, seed_set = self.job, self.job.plan.seed_set
        ends = []
        for name in edge_batches:
            edge_set = job.loaded.schema.edge_sets[name]
            ends += [(name, field) for field, end in
                     (("sources", edge_set.source), ("targets", edge_set.target))
                     if end == seed_set]
        if not ends:  # no edge set names it: no nodes (the preflight refuses such a run)
            return self.pipeline | "SeedIds/None" >> beam.Create([])
        return edge_batches | "SeedIds" >> IdsFromEdges(seed_set, job.node_buckets, ends)

    def _seed_batches(self, p, seed_table):
        job = self.job
        if job.seeds_path:
            column = job.time.seed_column if job.time is not None else None
            return p | "Read/seeds" >> ReadSeeds(job.seeds_path, timestamp=column)
        if has_table(job.loaded.schema.node_sets[job.plan.seed_set].metadata):
            return (p | "Read/seeds/all" >> ReadNodeSet(job.loaded, job.plan.seed_set)
                    | "Seeds/FromNodes" >> beam.Map(seeds_from_nodes))
        return seed_table | "Seeds/FromEdges" >> beam.MapTuple(
            lambda _, table: seeds_from_ids(table.ids))


def _flatten(pcolls, pipeline, label):
    if not pcolls:
        return pipeline | f"{label}/None" >> beam.Create([])
    if len(pcolls) == 1:
        return pcolls[0]
    return tuple(pcolls) | f"{label}/Flatten" >> beam.Flatten()
