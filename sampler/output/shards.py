"""One output shard, start to finish: its pieces assembled, encoded and written.

Every engine ends in `write_shard`, so the files and the counts they report come
from one function whatever moved the pieces there. A shard's pieces may come in
chunks of samples (ascending sample ids, each sample's pieces in one chunk): a
record depends on its own sample alone, so the bytes are the same however the
samples are chunked, and memory holds one chunk at a time.
"""
from __future__ import annotations

import dataclasses
from typing import Iterable, Iterator, Sequence

from sampler.core.assemble import ShardAssembler, ShardStats
from sampler.core.pieces import EdgePiece, NodeFeatures, PairPiece, SeedPiece
from sampler.core.stats import MAX_LISTED_IDS, Distribution, RunStats
from sampler.output.encoder import encode_shard
from sampler.output.files import OutputSpec, write_records


@dataclasses.dataclass(eq=False)
class ShardChunk:
    """The pieces of some of a shard's samples."""

    seeds: Sequence[SeedPiece]
    features: Sequence[NodeFeatures]
    edges: Sequence[EdgePiece]
    pairs: Sequence[PairPiece] = ()  # link samples (then `seeds` are the found endpoints)


def write_shard(assembler: ShardAssembler, output: OutputSpec, shard: int, num_shards: int,
                chunks: Iterable[ShardChunk], gather_node_rows: bool = False
                ) -> tuple[ShardStats, RunStats]:
    """Writes shard `shard` of `num_shards` (atomically); its assembly stats and the
    run counts it adds. `gather_node_rows`: each chunk's node features are gathered
    at once before it is encoded (AssembledShard.with_node_rows_gathered)."""
    total = ShardStats()

    def records() -> Iterator[bytes]:
        for chunk in chunks:
            assembled, stats = assembler.assemble(chunk.seeds, chunk.features, chunk.edges,
                                                  chunk.pairs)
            _add(total, stats)
            if gather_node_rows:
                assembled = assembled.with_node_rows_gathered()
            yield from encode_shard(assembled)

    written = write_records(output.shard_path(shard, num_shards), records())
    run = RunStats(subgraphs_written=total.subgraphs, bytes_written=written,
                   dangling_edges_dropped=dict(total.dangling_edges),
                   dangling_edge_examples=list(total.dangling_examples),
                   nodes_missing_from_tables=dict(total.nodes_missing),
                   pairs_read=total.pairs, pairs_dropped=total.pairs_dropped)
    for target, counts in ((run.nodes_per_subgraph, total.nodes),
                           (run.edges_per_subgraph, total.edges)):
        for name, values in counts.items():
            target.setdefault(name, Distribution()).add_all(values)
    return total, run


def _add(total: ShardStats, part: ShardStats) -> None:
    total.subgraphs += part.subgraphs
    total.pairs += part.pairs
    total.pairs_dropped += part.pairs_dropped
    for mine, theirs in ((total.nodes, part.nodes), (total.edges, part.edges)):
        for name, values in theirs.items():
            mine.setdefault(name, []).extend(values)
    for mine, theirs in ((total.dangling_edges, part.dangling_edges),
                         (total.nodes_missing, part.nodes_missing)):
        for name, count in theirs.items():
            mine[name] = mine.get(name, 0) + count
    total.dangling_examples = sorted(set(total.dangling_examples + part.dangling_examples))[
        :MAX_LISTED_IDS]
