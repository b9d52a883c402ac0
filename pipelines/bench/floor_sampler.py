"""A plain single-process numpy sampler of the benchmark's job: the floor `sample` is
measured against (`benchmark --engine memory,floor`).

It does the same work as `sample --engine memory` in the most direct way we could
write: every node id becomes an integer code once, adjacency is one CSR per edge
set over those codes, each op samples every request at once with numpy's own
generator, and subgraphs are assembled with integer sorts. No buckets, no pieces,
no hashed random streams and no canonical orders beyond what the encoding needs,
so it gives the same kind of records but not the same bytes. It reuses only what is
the same work either way: the table readers, the spec check and the record encoder.

RANDOM_UNIFORM only (the benchmark's default strategy). Not a product: no checks.

    python -m pipelines.bench.floor_sampler --graph G --spec S --seeds SEEDS --output OUT
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np

from sampler.output.encoder import (constant_column, encode_examples, scalar_int_column,
                                    values_column)
from sampler.output.files import write_records
from sampler.plan.plan import build_plan
from sampler.plan.spec import load_spec
from sampler.graph_tensor import wire
from sampler.graph_tensor.keys import context_key, edge_key, node_key
from unigraph.schema import load_schema
from unigraph.tables import read_seeds, read_set

SHARDS = 4
CHUNK = 2048


def unique(values):
    """np.unique without numpy 2.x's slow hashing path: one sort."""
    ordered = np.sort(values)
    return ordered[np.r_[True, ordered[1:] != ordered[:-1]]] if len(ordered) else ordered


def load(loaded, plan):
    """Per node set: sorted ids and features by code; per edge set: CSR over codes."""
    schema = loaded.schema
    tables = {n: list(read_set(loaded, "nodes", n)) for n in plan.node_sets()
              if schema.node_sets[n].metadata.filename}
    edges = {e: list(read_set(loaded, "edges", e)) for e in plan.edge_sets()}
    ids = {}
    for n in plan.node_sets():
        parts = [b.ids for b in tables.get(n, [])]
        parts += [b.sources for e in edges for b in edges[e] if schema.edge_sets[e].source == n]
        parts += [b.targets for e in edges for b in edges[e] if schema.edge_sets[e].target == n]
        ids[n] = unique(np.concatenate(parts))
    features = {}
    for n, batches in tables.items():
        table_ids = np.concatenate([b.ids for b in batches])
        code = np.searchsorted(ids[n], table_ids)
        features[n] = {}
        for f in batches[0].features:
            values = np.concatenate([b.features[f] for b in batches])
            full = np.zeros((len(ids[n]),) + values.shape[1:], values.dtype)
            full[code] = values
            features[n][f] = full
    csr = {}
    for e, batches in edges.items():
        es = schema.edge_sets[e]
        src = np.searchsorted(ids[es.source], np.concatenate([b.sources for b in batches]))
        tgt = np.searchsorted(ids[es.target], np.concatenate([b.targets for b in batches]))
        order = np.argsort(src, kind="stable")
        indptr = np.zeros(len(ids[es.source]) + 1, np.int64)
        np.cumsum(np.bincount(src, minlength=len(ids[es.source])), out=indptr[1:])
        csr[e] = (indptr, tgt[order].astype(np.int64))
    return ids, features, csr


def sample_op(indptr, targets, samples, nodes, k, rng):
    """k edges of each (sample, node) without replacement, uniformly: (sample, src, tgt)."""
    degree = indptr[nodes + 1] - indptr[nodes]
    take = np.minimum(degree, k)
    out_sample = np.repeat(samples, take)
    out_source = np.repeat(nodes, take)
    start = np.repeat(indptr[nodes], take)
    within = np.arange(take.sum()) - np.repeat(np.cumsum(take) - take, take)
    big = np.flatnonzero(degree > k)
    if big.size:  # Floyd's algorithm, every big row at once: k draws each, exact k-subsets
        d = degree[big]
        picks = np.empty((len(big), k), np.int64)
        for i in range(k):
            top = d - k + i
            draw = (rng.random(len(big)) * (top + 1)).astype(np.int64)
            seen = (picks[:, :i] == draw[:, None]).any(axis=1)
            picks[:, i] = np.where(seen, top, draw)
        first_slot = (np.cumsum(take) - take)[big]
        within[(first_slot[:, None] + np.arange(k)).reshape(-1)] = picks.reshape(-1)
    return out_sample, out_source, targets[start + within]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="floor_sampler", description=__doc__.split("\n")[0])
    parser.add_argument("--graph", required=True)
    parser.add_argument("--spec", required=True)
    parser.add_argument("--seeds", required=True)
    parser.add_argument("--output", required=True)
    args = parser.parse_args(argv)
    started = time.time()
    loaded = load_schema(args.graph)
    plan = build_plan(load_spec(args.spec), loaded, source=args.spec)
    schema = loaded.schema
    ids, features, csr = load(loaded, plan)
    seed_ids = np.concatenate([b.ids for b in read_seeds(args.seeds)])
    seed_codes = np.searchsorted(ids[plan.seed_set], seed_ids)
    rng = np.random.default_rng(42)
    os.makedirs(args.output, exist_ok=True)
    sets = plan.node_sets()
    sampled = dict.fromkeys((op.name for op in plan.ops), 0)
    shard_of = np.arange(len(seed_codes)) % SHARDS
    for shard in range(SHARDS):
        mine = np.flatnonzero(shard_of == shard)

        def records():
            for lo in range(0, len(mine), CHUNK):
                yield from encode_chunk(seed_codes[mine[lo:lo + CHUNK]])

        def encode_chunk(seeds):
            n = len(seeds)
            samples = np.arange(n)
            reached = {plan.seed_op: (samples, seeds)}
            edge_parts = []
            for op in plan.ops:
                s = np.concatenate([reached[i][0] for i in op.input_ops])
                v = np.concatenate([reached[i][1] for i in op.input_ops])
                key = unique(s.astype(np.int64) * len(ids[op.source_set]) + v)
                s, v = key // len(ids[op.source_set]), key % len(ids[op.source_set])
                es, src, tgt = sample_op(*csr[op.edge_set], s, v, op.sample_size, rng)
                sampled[op.name] += len(es)
                reached[op.name] = (es, tgt)
                edge_parts.append((op.edge_set, es, src, tgt))
            columns = [values_column(context_key("seed_id"), ids[plan.seed_set][seeds],
                                     np.arange(n + 1)),
                       constant_column(node_key("_readout", "#size"),
                                       wire.encode_feature(wire.INT64, np.ones(1, np.int64)))]
            for field, value in (("#size", 1), ("#source", 0), ("#target", 0)):
                columns.append(constant_column(edge_key("_readout/seed", field),
                                               wire.encode_feature(wire.INT64,
                                                                   np.array([value]))))
            local = {}
            for name in sets:
                width = len(ids[name])
                keys = [s.astype(np.int64) * width + t for e, s, _, t in edge_parts
                        if schema.edge_sets[e].target == name]
                if name == plan.seed_set:
                    keys.append(samples.astype(np.int64) * width + seeds)
                node_keys = unique(np.concatenate(keys)) if keys else np.zeros(0, np.int64)
                owner, code = node_keys // width, node_keys % width
                offsets = np.searchsorted(owner, np.arange(n + 1))
                local[name] = (node_keys, offsets)
                columns.append(scalar_int_column(node_key(name, "#size"), np.diff(offsets)))
                columns.append(values_column(node_key(name, "#id"), ids[name][code], offsets))
                for f, values in features.get(name, {}).items():
                    columns.append(values_column(node_key(name, f), values[code], offsets))
            for e in plan.edge_sets():
                es_ = schema.edge_sets[e]
                parts = [(s, src, t) for name, s, src, t in edge_parts if name == e]
                s = np.concatenate([p[0] for p in parts])
                src = np.concatenate([p[1] for p in parts])
                t = np.concatenate([p[2] for p in parts])
                skeys, soff = local[es_.source]
                tkeys, _ = local[es_.target]
                si = np.searchsorted(skeys, s.astype(np.int64) * len(ids[es_.source]) + src)
                ti = np.searchsorted(tkeys, s.astype(np.int64) * len(ids[es_.target]) + t)
                order = np.argsort(s, kind="stable")
                s, si, ti = s[order], si[order] - soff[s[order]], ti[order] - local[
                    es_.target][1][s[order]]
                offsets = np.searchsorted(s, np.arange(n + 1))
                columns.append(scalar_int_column(edge_key(e, "#size"), np.diff(offsets)))
                columns.append(values_column(edge_key(e, "#source"), si, offsets))
                columns.append(values_column(edge_key(e, "#target"), ti, offsets))
            return encode_examples(columns, n)

        write_records(os.path.join(args.output, f"samples-{shard:05d}-of-{SHARDS:05d}.tfrecord"),
                      records())
    with open(os.path.join(args.output, "sample_report.json"), "w") as f:
        json.dump({"seeds_read": len(seed_codes), "subgraphs_written": len(seed_codes),
                   "edges_sampled_per_op": sampled,
                   "wall_time_s": round(time.time() - started, 3)}, f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
