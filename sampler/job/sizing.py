"""How a job is cut: node buckets from the input's size, output shards from the output's.

Both are fixed before any table is read in full, from file sizes and a look at the
first bytes of a table, and neither changes a subgraph (docs/architecture.md §4):
buckets only cut the work; the shard count decides which file a subgraph lands in,
so it is part of the job (`--output name@N` fixes it).

- **Node buckets.** Every keyed join moves one element per (set, bucket): a bucket's
  node table or adjacency, whole. Each set's table is cut into enough buckets that
  one bucket of it stays under ELEMENT_BUDGET bytes in memory (file bytes times the
  format's growth, sampler.job.resources.GROWTH).
- **Numbering keys.** The Beam engine numbers seed rows (or pairs) whole numbering
  groups at a time (core.seeds.numbering_key): as many keys, a power of two, as node
  buckets, and more where the seeds table is larger than NUMBERING_ROWS rows per key.
- **Output shards.** Enough shards that each is about SHARD_TARGET bytes: the
  output's size is estimated as (seeds) x (bytes of one subgraph), a subgraph as the
  seed plus, per op, min(sample_size, the edge set's mean degree) nodes per input
  node, each node as many bytes as a row of its table. Never fewer than
  DEFAULT_SHARDS, so small jobs keep their files.
"""
from __future__ import annotations

import math

from sampler.core.seeds import NUMBERING_GROUP_BITS
from sampler.plan.plan import DEGREE, Plan, pair_edge_sets
from unigraph.storage import paths
from unigraph.tables.columns import set_bytes
from unigraph.schema import LoadedSchema, bigquery_source, has_table, table_files

DEFAULT_SHARDS, MAX_SHARDS = 4, 10_000
SHARD_TARGET = 200 << 20  # bytes per output file: 100-250 MB
MIN_NODE_BUCKETS, MAX_NODE_BUCKETS = 4, 4096
ELEMENT_BUDGET = 64 << 20  # bytes in memory of the largest join element (one bucket)
GROWTH = {"parquet": 4.0, "csv": 2.0, "tfrecord": 1.5, "text": 2.0}  # see resources.py
PREFIX = 1 << 20  # bytes read from a table's first file to learn its bytes per row
FALLBACK_ROW_BYTES = 100  # a table whose rows cannot be counted from its first bytes
NUMBERING_ROWS = 1 << 20  # seed rows per numbering element: tens of MB


def node_buckets(loaded: LoadedSchema, plan: Plan) -> int:
    """Buckets such that one bucket of the largest set the job reads fits the budget."""
    largest = 0.0
    for kind, name in _sets(loaded, plan):
        growth = 2.0
        if loaded.store is not None:
            growth = GROWTH.get(loaded.store.table(kind, name).format, 2.0)
        elif bigquery_source(loaded, kind, name) is None:
            files = table_files(loaded, kind, name)
            growth = GROWTH.get(paths.file_format(files[0]), 2.0) if files else 2.0
        largest = max(largest, set_bytes(loaded, kind, name) * growth)
    return max(MIN_NODE_BUCKETS, min(MAX_NODE_BUCKETS, math.ceil(largest / ELEMENT_BUDGET)))


def output_shards(loaded: LoadedSchema, plan: Plan, seed_files: list[str]) -> int:
    """Shards of about SHARD_TARGET bytes for the estimated output, at least DEFAULT_SHARDS."""
    estimate = estimated_output_bytes(loaded, plan, seed_files)
    return max(DEFAULT_SHARDS, min(MAX_SHARDS, math.ceil(estimate / SHARD_TARGET)))


def numbering_keys(loaded: LoadedSchema, plan: Plan, seed_files: list[str],
                   buckets: int) -> int:
    """How many elements the Beam engine numbers the seeds in (a power of two, at most
    2**NUMBERING_GROUP_BITS): one per node bucket, or more for a seeds table of more
    than NUMBERING_ROWS rows per key. Few elements for a small job (each element costs
    the runner a shuffle entry and numpy calls), bounded ones for a large one."""
    want = max(buckets, math.ceil(seed_rows(loaded, plan, seed_files) / NUMBERING_ROWS), 1)
    return min(1 << NUMBERING_GROUP_BITS, 1 << (want - 1).bit_length())


def seed_rows(loaded: LoadedSchema, plan: Plan, seed_files: list[str],
              rows: dict | None = None) -> float:
    """Estimated rows of the seeds table (or of the seed set, without one)."""
    if seed_files:
        return sum(_file_rows(f)[0] for f in seed_files)
    if rows is not None and ("nodes", plan.seed_set) in rows:
        return rows["nodes", plan.seed_set]
    if has_table(loaded.schema.node_sets[plan.seed_set].metadata):
        return table_rows(loaded, "nodes", plan.seed_set)[0]
    # a table-less seed set: at most as many nodes as its edge sets have rows
    return max([table_rows(loaded, "edges", name)[0]
                for name, edge_set in loaded.schema.edge_sets.items()
                if plan.seed_set in (edge_set.source, edge_set.target)] or [0.0])


def estimated_output_bytes(loaded: LoadedSchema, plan: Plan, seed_files: list[str]) -> float:
    rows, row_bytes = {}, {}
    for kind, name in _sets(loaded, plan):
        rows[kind, name], row_bytes[kind, name] = table_rows(loaded, kind, name)
    seeds = seed_rows(loaded, plan, seed_files, rows)
    node_bytes = {name: row_bytes.get(("nodes", name), 16.0) for name in plan.node_sets()}
    reached = {plan.seed_op: 1.0}  # nodes per subgraph each op yields
    per_subgraph = node_bytes.get(plan.seed_set, 16.0)
    for op in plan.ops:
        inputs = sum(reached.get(name, 0.0) for name in op.input_ops)
        sources = rows.get(("nodes", op.source_set)) or 0
        edges = rows.get(("edges", op.edge_set)) or 0
        degree = edges / sources if sources else float(op.sample_size)
        reached[op.name] = inputs * min(float(op.sample_size), degree)
        # An edge costs its two indices (and its features, in its row's bytes).
        edge_bytes = 16.0 + max(0.0, row_bytes.get(("edges", op.edge_set), 0.0) - 24.0)
        per_subgraph += reached[op.name] * (node_bytes.get(op.target_set, 16.0) + edge_bytes)
    return seeds * per_subgraph


def hub_edge_sets(loaded: LoadedSchema, plan: Plan, chunk_edges: int) -> list[str]:
    """Edge sets whose hubs the Beam pipeline ships as chunk elements (core.hubs): those
    the plan's ops sample whose table may hold a row of more than chunk_edges edges (an
    estimate of at least half that many rows: the estimate from the first bytes may be
    low). Edge sets that also serve induced edges or degree-weighted negatives keep
    long rows inside their bucket's adjacency (the same results; the bucket is larger)."""
    keep_whole = set(plan.induced_edge_sets)
    if plan.negatives is not None and plan.negatives.mode == DEGREE:
        keep_whole |= set(pair_edge_sets(plan))
    sampled = {op.edge_set for op in plan.ops} - keep_whole
    return sorted(name for name in sampled
                  if table_rows(loaded, "edges", name)[0] * 2 > chunk_edges)


def _sets(loaded: LoadedSchema, plan: Plan):
    for name in plan.node_sets():
        if has_table(loaded.schema.node_sets[name].metadata):
            yield "nodes", name
    for name in plan.edge_sets():
        yield "edges", name


def table_rows(loaded: LoadedSchema, kind: str, name: str) -> tuple[float, float]:
    """(estimated rows, bytes per row) of a set's table; a store's, as estimated from the
    tables it was prepared from (so a job on a store cuts its output into the same shards)."""
    if loaded.store is not None:
        facts = loaded.store.table(kind, name)
        return facts.rows, facts.row_bytes
    if bigquery_source(loaded, kind, name) is not None:
        total = set_bytes(loaded, kind, name)
        return total / FALLBACK_ROW_BYTES, float(FALLBACK_ROW_BYTES)
    files = table_files(loaded, kind, name)
    if not files:
        return 0.0, float(FALLBACK_ROW_BYTES)
    total = sum(paths.size(f) for f in files)
    _, per_row = _file_rows(files[0])
    return total / per_row, per_row


def _file_rows(path: str) -> tuple[float, float]:
    """(estimated rows, bytes per row) of one file, from its size and first PREFIX bytes."""
    size = paths.size(path)
    fmt = paths.file_format(path)
    per_row = float(FALLBACK_ROW_BYTES)
    if fmt == "parquet":
        from unigraph.tables.parquet import row_groups  # one line naming a damaged footer

        count = sum(row_groups(path))
        return float(count), (size / count if count else per_row)
    with paths.open_binary(path) as f:
        head = f.read(PREFIX)
    if fmt in ("csv", "text"):
        lines = head.count(b"\n")
        if lines > 1 and not head.startswith((b"\x1f\x8b",)):
            per_row = len(head) / lines
    elif fmt == "tfrecord":
        per_row = _tfrecord_row_bytes(head) or per_row
    return size / per_row, per_row


def _tfrecord_row_bytes(head: bytes) -> float | None:
    """Mean framed record size over the whole records in `head` (uncompressed files)."""
    at, records = 0, 0
    while at + 12 <= len(head):
        length = int.from_bytes(head[at:at + 8], "little")
        if length > len(head):  # compressed, or not TFRecord framing
            break
        if at + 16 + length > len(head):
            break
        at += 16 + length
        records += 1
    return at / records if records else None
