"""The sampling job as a Beam pipeline: the stages in the order data flows.

Every keyed join works on buckets (core.buckets): a stage's elements are
numpy batches for many nodes or samples, never one node or one sample.

    Read/nodes/<set>, Read/edges/<set>, Read/seeds    unigraph.beam.read
    NodeTable/<set>, Adjacency/<set>, SeedIds/...     beam/tables.py
    EdgeTimes/<set> (target node times, if any)       beam/tables.py
    Pairs (link seeds), Seeds                         beam/pairs.py, beam/seeds.py
    Hop/<op>, one per op in plan order                beam/hops.py
    Nodes/<set>                                       beam/nodes.py
    Assemble                                          beam/assemble.py
    Report                                            beam/report.py

Each stage is thin wiring around a pure function of core/ or output/; this
module only connects the stages' PCollections.
"""
from __future__ import annotations

import apache_beam as beam
import numpy as np

from sampler.beam.assemble import WriteShards
from sampler.beam.hops import SampleHop
from sampler.beam.induced import InducedEdges
from sampler.beam.negatives import DrawNegatives
from sampler.beam.nodes import LookupNodes
from sampler.beam.pairs import NumberPairs
from sampler.beam.report import MergeReport
from sampler.beam.seeds import JoinSeeds
from sampler.beam.tables import BuildAdjacency, BuildNodeTable, EffectiveTimes, IdsFromEdges
from sampler.core.seeds import seeds_from_ids, seeds_from_nodes
from sampler.job.job import SamplingJob
from sampler.job.sizing import hub_edge_sets
from sampler.core.negatives import split_by_draw_group
from sampler.beam.report import STATS
from sampler.plan.plan import (DEGREE, edge_sets_to_read, excludes_pair_edges, label_dtype,
                               members_ops, pair_edge_sets, pairs_table_layout)
from unigraph.beam.read import ReadEdgeSet, ReadNodeSet, ReadPairs, ReadSeeds
from unigraph.beam.runners import on_dask
from unigraph.schema import has_table
from unigraph.tables import table_locations
from unigraph.beam.steps import FlatMapTuple, Map, MapTuple


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
        timed = {name: self._timed(edge_batches[name], name, node_tables)
                 for name in plan.edge_sets()}
        # Hubs' edges travel as chunks of bounded size (core.hubs), not in their bucket;
        # not on the DaskRunner, whose task graph the extra joins would multiply
        # (docs/architecture.md, "Bounded elements").
        apart = ([] if on_dask(p.options)
                 else hub_edge_sets(job.loaded, plan, job.chunk_edges))
        adjacency, chunks = {}, {}
        for name in plan.edge_sets():
            built = timed[name] | f"Adjacency/{name}" >> BuildAdjacency(
                name, job.node_buckets, job.chunk_edges, hubs_apart=name in apart)
            if name in apart:
                adjacency[name], chunks[name] = built["adjacency"], built["chunks"]
            else:
                adjacency[name] = built
        seed_table = node_tables.get(plan.seed_set) or self._ids_from_edges(edge_batches)

        pairs = None
        if plan.link:  # a pair is a sample of two seed requests; from there on, the same path
            column = time.seed_column if time is not None else None
            rows = p | "Read/seeds" >> ReadPairs(
                pairs_table_layout(plan, job.loaded.schema, column), job.seeds_path)
            if plan.negatives:
                timed = time is not None and time.negative_target_set is not None
                drawn = ({"pairs": rows, "candidates": self._candidates(seed_table, adjacency)}
                         | "Negatives" >> DrawNegatives(plan.negatives, job.seed,
                                                        job.node_buckets,
                                                        label_dtype(job.loaded.schema),
                                                        time.dtype if timed else None))
                rows, negative_stats = drawn["pairs"], drawn["stats"]
            pairs = rows | "Pairs" >> NumberPairs(job.num_shards, job.node_buckets,
                                                  job.seed_numbering_keys)
            seed_input = {"table": seed_table, "requests": pairs["requests"]}
        else:
            seed_input = {"table": seed_table, "seeds": self._seed_batches(p, seed_table)}
        # Where the seed set has a table, the seeds' features come from its lookup with
        # the nodes the samples reach: a seed reached by another sample of its shard is
        # sent once, and the seeds' join moves ids, not feature rows.
        seed_lookup = plan.seed_set in node_tables
        seeds = seed_input | "Seeds" >> JoinSeeds(plan.seed_set, job.num_shards,
                                                  job.node_buckets, job.seed_numbering_keys,
                                                  with_features=not seed_lookup)
        stats, edge_pieces = [seeds["stats"]], []
        if plan.negatives:
            stats.append(negative_stats)
        reached = {plan.seed_op: seeds["found"]}
        # An op's reached nodes feed later ops and its target set's feature lookup.
        needed = {name for op in plan.ops for name in op.input_ops} | {
            op.name for op in plan.ops if op.target_set in node_tables} | {
            name for e in plan.induced_edge_sets for end in self._ends(e)
            for name in members_ops(plan, end)}
        for op in plan.ops:
            inputs = {"adjacency": adjacency[op.edge_set],
                      "requests": _flatten([reached[name] for name in op.input_ops], p,
                                           f"Hop/{op.name}/Inputs")}
            if op.edge_set in chunks:
                inputs["chunks"] = chunks[op.edge_set]
            hop = (inputs
                   | f"Hop/{op.name}" >> SampleHop(op, job.seed, job.num_shards,
                                                   job.node_buckets, op.name in needed))
            stats.append(hop["stats"])
            edge_pieces.append(hop["edges"])
            reached[op.name] = hop["reached"]

        for name in plan.induced_edge_sets:  # every edge among a subgraph's nodes
            source, target = self._ends(name)
            members = {end: _flatten([reached[op] for op in members_ops(plan, end)], p,
                                     f"Induced/{name}/{role}")
                       for end, role in ((source, "Sources"), (target, "Targets"))}
            induced = ({"adjacency": adjacency[name], "sources": members[source],
                        "targets": members[target]}
                       | f"Induced/{name}" >> InducedEdges(name, job.num_shards,
                                                         job.node_buckets,
                                                         excludes_pair_edges(plan, name)))
            edge_pieces.append(induced["edges"])
            stats.append(induced[STATS])

        # Table-less sets need no lookup: their nodes are the targets of sampled edges.
        feature_pieces = [] if seed_lookup else [seeds["features"]]
        for name, table in node_tables.items():
            arriving = [reached[op.name] for op in plan.ops if op.target_set == name]
            if name == plan.seed_set:
                arriving.insert(0, seeds["found"])
            if arriving:
                feature_pieces.append(
                    {"table": table, "requests": _flatten(arriving, p, f"Nodes/{name}/Reached")}
                    | f"Nodes/{name}" >> LookupNodes(name, job.num_shards))

        shard_pieces = {"seeds": seeds["seeds"],
                        "features": _flatten(feature_pieces, p, "Assemble/Features"),
                        "edges": _flatten(edge_pieces, p, "Assemble/Edges")}
        if pairs is not None:
            shard_pieces["pairs"] = pairs["pairs"]
        stats.append(shard_pieces
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

    def _ends(self, edge_set: str) -> tuple[str, str]:
        ends = self.job.loaded.schema.edge_sets[edge_set]
        return ends.source, ends.target

    def _candidates(self, seed_table, adjacency):
        """Negatives' candidate targets by draw group: the paired set's nodes, or (degree)
        the sources of its edge sets to itself with their out-degrees; with the paired
        set's node times when negatives must exist at their pair's cut-off."""
        plan, time = self.job.plan, self.job.time
        timed = time is not None and time.negative_target_set is not None
        nodes = seed_table | "Negatives/Candidates/Nodes" >> FlatMapTuple(
            lambda _, table: split_by_draw_group(table.ids,
                                                 times=table.timestamps if timed else None))
        if plan.negatives.mode != DEGREE:
            return nodes
        parts = tuple(adjacency[name] | f"Negatives/Candidates/{name}" >> FlatMapTuple(
            lambda _, adj: split_by_draw_group(adj.sources, np.diff(adj.row_splits)))
            for name in pair_edge_sets(plan)) + ((nodes,) if timed else ())
        return parts | "Negatives/Candidates" >> beam.Flatten()

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
                    | "Seeds/FromNodes" >> Map(seeds_from_nodes))
        return seed_table | "Seeds/FromEdges" >> MapTuple(
            lambda _, table: seeds_from_ids(table.ids))


def _flatten(pcolls, pipeline, label):
    if not pcolls:
        return pipeline | f"{label}/None" >> beam.Create([])
    if len(pcolls) == 1:
        return pcolls[0]
    return tuple(pcolls) | f"{label}/Flatten" >> beam.Flatten()
