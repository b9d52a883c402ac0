"""One output shard, start to finish: its pieces assembled, encoded and written.

Every engine ends in `write_shard`, so the files and the counts they report come
from one function whatever moved the pieces there.
"""
from __future__ import annotations

from typing import Sequence

from sampler.core.assemble import ShardAssembler, ShardStats
from sampler.core.pieces import EdgePiece, NodeFeatures, SeedPiece
from sampler.core.stats import Distribution, RunStats
from sampler.output.encoder import encode_shard
from sampler.output.files import OutputSpec, write_records


def write_shard(assembler: ShardAssembler, output: OutputSpec, shard: int, num_shards: int,
                seeds: Sequence[SeedPiece], features: Sequence[NodeFeatures],
                edges: Sequence[EdgePiece]) -> tuple[ShardStats, RunStats]:
    """Writes shard `shard` of `num_shards` (atomically); its assembly stats and the
    run counts it adds."""
    assembled, stats = assembler.assemble(seeds, features, edges)
    written = write_records(output.shard_path(shard, num_shards), encode_shard(assembled))
    run = RunStats(subgraphs_written=stats.subgraphs, bytes_written=written,
                   dangling_edges_dropped=dict(stats.dangling_edges),
                   dangling_edge_examples=list(stats.dangling_examples),
                   nodes_missing_from_tables=dict(stats.nodes_missing))
    for target, counts in ((run.nodes_per_subgraph, stats.nodes),
                           (run.edges_per_subgraph, stats.edges)):
        for name, values in counts.items():
            target.setdefault(name, Distribution()).add_all(values)
    return stats, run
