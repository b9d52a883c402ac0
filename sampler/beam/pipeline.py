"""The sampling job as a Beam pipeline: thin wiring around the pure modules.

Data flows top-down, every keyed join working on buckets (see buckets.py):

  ReadUnigraph ─► NodeTable/<set>  (bucket -> NodeTableBucket)
               └► Adjacency/<edge set>  (bucket -> AdjacencyBucket), built once per edge set
  ReadSeeds ─► Seeds/Join with the seed set's nodes ─► found (sample, node) requests
  Hop/<op>/Join: requests that reached a bucket ⋈ its adjacency ─► Hop/<op>/Sample
        ─► sampled edges (keyed by output shard) and reached targets (keyed by node bucket)
  Nodes/<set>/Join: reached nodes ⋈ node table ─► each node's features, once per shard
  Assemble: every piece of one output shard ─► canonical subgraphs ─► encoded straight
        from arrays (byte-identical to the GraphTensor core's encoder) ─► one TFRecord file
  Report: RunStats from every stage, merged into one.
"""
from __future__ import annotations

import dataclasses

import apache_beam as beam
import numpy as np
from apache_beam.metrics import Metrics

from sampler.core import buckets
from sampler.core.adjacency import build_adjacency, slice_batch
from sampler.core.assemble import ShardAssembler
from sampler.core.hop import sample_hop
from sampler.core.node_table import build_node_table, features_by_shard, ids_only_table
from sampler.output.files import OutputSpec, write_records, write_text
from sampler.core.pieces import Requests, SeedPiece
from sampler.job.progress import Progress, log_shard
from sampler.output.report import Distribution, RunStats, to_json
from sampler.plan.spec import Plan, edge_sets_to_read
from unigraph.batches import NodeBatch, SeedBatch
from unigraph.beam_io import ReadEdgeSet, ReadNodeSet, ReadSeeds
from unigraph.ragged import take
from unigraph.schema import LoadedSchema, table_files

_NAMESPACE = "sampler"
STATS = "stats"


@dataclasses.dataclass(frozen=True)
class SamplingJob:
    """Everything a run needs, fixed before the pipeline is built."""

    loaded: LoadedSchema
    plan: Plan
    seeds_path: str | None
    output: OutputSpec
    num_shards: int
    node_buckets: int
    seed: int
    stats_path: str  # where the merged RunStats JSON goes


def _split_requests(requests: Requests, num_buckets: int):
    bucket_of_id = buckets.node_buckets(requests.ids, num_buckets)  # once per distinct id
    for bucket, positions in buckets.split_by_bucket(bucket_of_id[requests.codes]):
        yield bucket, requests.take(positions)


def _split_by_shard(piece, num_shards: int):
    for shard, positions in buckets.split_by_bucket(
            buckets.sample_buckets(piece.samples, num_shards)):
        yield shard, piece.take(positions)


class _SplitRows(beam.DoFn):
    """A table batch cut into one piece per node bucket of `id_field`."""

    def __init__(self, id_field: str, num_buckets: int):
        self.id_field, self.num_buckets = id_field, num_buckets

    def process(self, batch):
        ids = getattr(batch, self.id_field)
        for bucket, positions in buckets.split_by_bucket(
                buckets.node_buckets(ids, self.num_buckets)):
            if isinstance(batch, NodeBatch):
                yield bucket, NodeBatch(batch.node_set, batch.ids[positions], batch.rows[positions],
                                        {k: take(v, positions) for k, v in batch.features.items()})
            else:
                yield bucket, slice_batch(batch, positions)


class _JoinSeeds(beam.DoFn):
    """Seeds ⋈ the seed set's nodes: found seeds go on (as hop requests, seed pieces and
    the seed nodes' features); missing ones are counted and listed in the report."""

    def __init__(self, job: SamplingJob):
        self.job = job
        self.read = Metrics.counter(_NAMESPACE, "seeds_read")
        self.missing = Metrics.counter(_NAMESPACE, "seeds_missing")

    def process(self, element):
        bucket, grouped = element
        tables = list(grouped["table"])
        requests = Requests.concat(list(grouped["requests"]))
        if len(requests) == 0:
            return
        table = tables[0] if tables else ids_only_table(self.job.plan.seed_set, [])
        found = (table.positions_of(requests.ids) >= 0)[requests.codes]
        absent = requests.nodes[~found]
        self.read.inc(len(requests))
        self.missing.inc(len(absent))
        yield beam.pvalue.TaggedOutput(STATS, RunStats(
            seeds_read=len(requests), seeds_missing=len(absent),
            missing_seed_ids=sorted(i.decode(errors="replace") for i in absent[:100])))
        seeds = requests.take(np.flatnonzero(found))
        if not len(seeds):
            return
        yield bucket, seeds
        for shard, part in _split_by_shard(SeedPiece(seeds.samples, seeds.nodes),
                                           self.job.num_shards):
            yield beam.pvalue.TaggedOutput("seeds", (shard, part))
        if table.features:
            shard_features, _ = features_by_shard(table, seeds, self.job.num_shards)
            for shard, features in shard_features:
                yield beam.pvalue.TaggedOutput("features", (shard, features))


class _SampleHop(beam.DoFn):
    """Requests ⋈ adjacency of one bucket: the sampled edges (keyed by output shard) and,
    when a later op or a feature lookup needs them, the reached nodes (keyed by bucket)."""

    def __init__(self, job: SamplingJob, op_index: int, emit_reached: bool):
        self.job, self.op = job, job.plan.ops[op_index]
        self.emit_reached = emit_reached
        self.sampled = Metrics.counter(_NAMESPACE, f"edges_sampled/{self.op.name}")

    def setup(self):
        self.progress = Progress(f"Hop/{self.op.name}")

    def process(self, element):
        _, grouped = element
        requests = Requests.concat(list(grouped["requests"]))
        adjacency = list(grouped["adjacency"])
        if len(requests) == 0 or not adjacency:
            return
        edges = sample_hop(adjacency[0], requests, self.op, self.job.seed)
        self.sampled.inc(len(edges))
        self.progress.add(buckets=1, requests=len(requests), edges=len(edges))
        yield beam.pvalue.TaggedOutput(STATS, RunStats(edges_sampled_per_op={self.op.name: len(edges)}))
        if not len(edges):
            return
        for shard, part in _split_by_shard(edges, self.job.num_shards):
            yield beam.pvalue.TaggedOutput("edges", (shard, part))
        if self.emit_reached:
            yield from _split_requests(
                Requests(edges.samples, edges.target_codes, edges.target_ids),
                self.job.node_buckets)


class _LookupNodes(beam.DoFn):
    """Reached nodes ⋈ their node table: each shard gets the features of the nodes its
    samples reached, once per node."""

    def __init__(self, job: SamplingJob, node_set: str):
        self.job, self.node_set = job, node_set
        self.missing = Metrics.counter(_NAMESPACE, f"nodes_missing/{node_set}")

    def process(self, element):
        _, grouped = element
        requests = Requests.concat(list(grouped["requests"]))
        if len(requests) == 0:
            return
        tables = list(grouped["table"])
        table = tables[0] if tables else ids_only_table(self.node_set, [])
        shard_features, absent = features_by_shard(table, requests, self.job.num_shards)
        if len(absent):
            self.missing.inc(len(absent))
        yield from shard_features


class _AssembleShard(beam.DoFn):
    def __init__(self, job: SamplingJob):
        self.job = job
        self.written = Metrics.counter(_NAMESPACE, "subgraphs_written")

    def setup(self):
        self.assembler = ShardAssembler(self.job.plan, self.job.loaded.schema)

    def process(self, element):
        shard, grouped = element
        assembled, stats = self.assembler.assemble(list(grouped["seeds"]),
                                                   list(grouped["features"]),
                                                   list(grouped["edges"]))
        path = self.job.output.shard_path(shard, self.job.num_shards)
        written = write_records(path, assembled.examples())
        log_shard(shard, self.job.num_shards, stats.subgraphs, written / 1e6)
        self.written.inc(stats.subgraphs)
        for kind, counts in (("nodes", stats.nodes), ("edges", stats.edges)):
            for name, values in counts.items():
                dist = Metrics.distribution(_NAMESPACE, f"{kind}_per_subgraph/{name}")
                for v in values:
                    dist.update(v)
        run = RunStats(subgraphs_written=stats.subgraphs, bytes_written=written,
                       dangling_edges_dropped=dict(stats.dangling_edges),
                       nodes_missing_from_tables=dict(stats.nodes_missing))
        for target, counts in ((run.nodes_per_subgraph, stats.nodes),
                               (run.edges_per_subgraph, stats.edges)):
            for name, values in counts.items():
                target.setdefault(name, Distribution()).add_all(values)
        yield run


class _MergeStats(beam.CombineFn):
    def create_accumulator(self):
        return RunStats()

    def add_input(self, accumulator, stats):
        return accumulator.merge(stats)

    def merge_accumulators(self, accumulators):
        result = RunStats()
        for a in accumulators:
            result.merge(a)
        return result

    def extract_output(self, accumulator):
        return accumulator


def _seed_batches_from_nodes(batch: NodeBatch) -> SeedBatch:
    return SeedBatch(batch.ids, batch.rows)


def _seeds_from_ids(element) -> SeedBatch:
    """Every node of a table-less seed set is a seed; its sample id is its id's fingerprint."""
    from sampler.core import rng

    _, table = element
    return SeedBatch(table.ids, rng.fingerprint(table.ids).view(np.int64))


class SampleSubgraphs(beam.PTransform):
    """The whole job: reads the graph and seeds, samples every op, writes the shards.

    Returns the merged RunStats (a one-element PCollection)."""

    def __init__(self, job: SamplingJob):
        super().__init__()
        self.job = job

    def expand(self, pbegin):
        job, plan = self.job, self.job.plan
        schema = job.loaded.schema
        p = pbegin.pipeline
        stats = []

        node_tables = {}
        for name in plan.node_sets():
            if schema.node_sets[name].metadata.filename:
                files = table_files(job.loaded, "nodes", name)
                node_tables[name] = (
                    p | f"Read/nodes/{name}" >> ReadNodeSet(job.loaded, name)
                    | f"NodeTable/{name}/Split" >> beam.ParDo(_SplitRows("ids", job.node_buckets))
                    | f"NodeTable/{name}/Group" >> beam.GroupByKey()
                    | f"NodeTable/{name}/Build" >> beam.MapTuple(
                        lambda b, batches, n=name, f=files: (b, build_node_table(n, list(batches), f))))
        edge_batches = {name: p | f"Read/edges/{name}" >> ReadEdgeSet(job.loaded, name)
                        for name in edge_sets_to_read(plan, schema)}
        adjacency = {
            name: (batches
                   | f"Adjacency/{name}/Split" >> beam.ParDo(_SplitRows("sources", job.node_buckets))
                   | f"Adjacency/{name}/Group" >> beam.GroupByKey()
                   | f"Adjacency/{name}/Build" >> beam.MapTuple(
                       lambda b, pieces, n=name: (b, build_adjacency(n, list(pieces)))))
            for name, batches in edge_batches.items() if name in plan.edge_sets()}

        seed_table = node_tables.get(plan.seed_set)
        if seed_table is None:  # its nodes: the ids the edges read for it name
            seed_table = self._ids_from_edges(plan.seed_set, edge_batches)
        if job.seeds_path:
            seeds = p | "Read/seeds" >> ReadSeeds(job.seeds_path)
        elif schema.node_sets[plan.seed_set].metadata.filename:
            seeds = p | "Read/seeds/all" >> ReadNodeSet(job.loaded, plan.seed_set) \
                | "Seeds/FromNodes" >> beam.Map(_seed_batches_from_nodes)
        else:
            seeds = seed_table | "Seeds/FromEdges" >> beam.Map(_seeds_from_ids)
        seed_requests = seeds | "Seeds/Split" >> beam.FlatMap(
            lambda batch, n=job.node_buckets: _split_requests(Requests.from_ids(batch.rows, batch.ids), n))
        joined = ({"table": seed_table, "requests": seed_requests}
                  | "Seeds/Join" >> beam.CoGroupByKey()
                  | "Seeds/Check" >> beam.ParDo(_JoinSeeds(job)).with_outputs(
                      STATS, "seeds", "features", main="found"))
        stats.append(joined[STATS])
        reached = {plan.seed_op: joined.found}
        # An op's reached nodes feed later ops and its target set's feature lookup; the
        # nodes themselves need no stage (they are the targets of the sampled edges).
        reached_needed = {name for op in plan.ops for name in op.input_ops} | {
            op.name for op in plan.ops if op.target_set in node_tables}
        edge_pieces = []
        for index, op in enumerate(plan.ops):
            inputs = [reached[name] for name in op.input_ops]
            requests = inputs[0] if len(inputs) == 1 else (
                inputs | f"Hop/{op.name}/Inputs" >> beam.Flatten())
            out = ({"adjacency": adjacency[op.edge_set], "requests": requests}
                   | f"Hop/{op.name}/Join" >> beam.CoGroupByKey()
                   | f"Hop/{op.name}/Sample" >> beam.ParDo(_SampleHop(
                       job, index, emit_reached=op.name in reached_needed)).with_outputs(
                       STATS, "edges", main="reached"))
            stats.append(out[STATS])
            edge_pieces.append(out.edges)
            reached[op.name] = out.reached

        # Features of the reached nodes of every set with a table. Table-less sets need
        # no stage: their nodes are the targets of the sampled edges.
        feature_pieces = [joined.features]
        for name in plan.node_sets():
            arriving = [reached[op.name] for op in plan.ops if op.target_set == name]
            if not arriving or name not in node_tables:
                continue
            requests = arriving[0] if len(arriving) == 1 else (
                arriving | f"Nodes/{name}/Reached" >> beam.Flatten())
            feature_pieces.append(
                {"table": node_tables[name], "requests": requests}
                | f"Nodes/{name}/Join" >> beam.CoGroupByKey()
                | f"Nodes/{name}/Lookup" >> beam.ParDo(_LookupNodes(job, name)))

        shards = p | "Assemble/Shards" >> beam.Create([(i, None) for i in range(job.num_shards)])
        assembled = ({"shard": shards, "seeds": joined.seeds,
                      "features": _flatten(feature_pieces, p, "Assemble/Features"),
                      "edges": _flatten(edge_pieces, p, "Assemble/Edges")}
                     | "Assemble/Join" >> beam.CoGroupByKey()
                     | "Assemble/Write" >> beam.ParDo(_AssembleShard(job)))
        stats.append(assembled)
        return (stats | "Report/Flatten" >> beam.Flatten()
                | "Report/Merge" >> beam.CombineGlobally(_MergeStats())
                | "Report/Write" >> beam.Map(
                    lambda s, path=job.stats_path: write_text(path, to_json(s)) or s))

    def _ids_from_edges(self, node_set: str, edge_batches):
        """Bucketed ids of a table-less node set: every id the plan's edge sets name in it."""
        schema = self.job.loaded.schema
        parts = []
        for name, batches in edge_batches.items():
            edge_set = schema.edge_sets[name]
            for field, end in (("sources", edge_set.source), ("targets", edge_set.target)):
                if end == node_set:
                    parts.append(batches | f"SeedIds/{name}/{field}" >> beam.FlatMap(
                        lambda b, f=field, n=self.job.node_buckets: (
                            (bucket, np.unique(getattr(b, f)[pos])) for bucket, pos in
                            buckets.split_by_bucket(buckets.node_buckets(getattr(b, f), n)))))
        ids = _flatten(parts, self.pipeline, "SeedIds")
        return (ids | "SeedIds/Group" >> beam.GroupByKey()
                | "SeedIds/Build" >> beam.MapTuple(
                    lambda b, arrays, n=node_set: (b, ids_only_table(n, list(arrays)))))


def _flatten(pcolls, pipeline, label):
    if not pcolls:
        return pipeline | f"{label}/None" >> beam.Create([])
    if len(pcolls) == 1:
        return pcolls[0]
    return pcolls | f"{label}/Flatten" >> beam.Flatten()
