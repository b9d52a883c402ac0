"""DGL's neighbour sampling through a SamplingSpec, for `benchmark --api --dgl-python`.

Runs in an interpreter of its own that has DGL (and PyTorch, pyarrow, numpy)
installed, so it imports nothing from this project: it reads the benchmark graph's
schema and spec with a few regular expressions (the synthetic graph's files only),
its Parquet tables with pyarrow, builds one DGL heterograph, and walks the spec's
ops with `dgl.sampling.sample_neighbors(..., edge_dir="out")`, one op per call with
fan-out 0 on every other edge type:

  merged    the seeds in batches of --batch: each op samples once for the union of
            the batch's nodes its input ops reached (DGL's minibatch frontiers: one
            neighbourhood for the whole batch, not one subgraph per seed);
  per_seed  one seed per call (a subgraph per seed, as the sampler makes them), over
            the first --per-seed seeds.

Prints one JSON line: sampled edges and seeds per second of wall and CPU time.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import time

import numpy as np
import pyarrow.parquet as pq


def parse_schema(path: str) -> tuple[dict, dict]:
    """(node set -> table file or None, edge set -> (source, target, file, reversed))."""
    text = open(path).read()
    nodes = {}
    for name, body in re.findall(r'node_sets\s*\{\s*key:\s*"([^"]+)"\s*value\s*\{(.*?)\}\s*\}',
                                 text, re.S):
        found = re.search(r'filename:\s*"([^"]+)"', body)
        nodes[name] = found.group(1) if found else None
    edges = {}
    for block in re.split(r"\bedge_sets\s*\{", text)[1:]:
        name = re.search(r'key:\s*"([^"]+)"', block).group(1)
        source = re.search(r'source:\s*"([^"]+)"', block).group(1)
        target = re.search(r'target:\s*"([^"]+)"', block).group(1)
        filename = re.search(r'filename:\s*"([^"]+)"', block).group(1)
        edges[name] = (source, target, filename, '"reversed"' in block)
    return nodes, edges


def parse_spec(path: str) -> tuple[str, list[dict]]:
    """(seed node set, ops in order: name, inputs, edge set, sample size)."""
    text = open(path).read()
    seed_set = re.search(r'seed_op\s*\{[^}]*node_set_name:\s*"([^"]+)"', text, re.S).group(1)
    ops = []
    for body in re.findall(r"sampling_ops\s*\{(.*?)\}", text, re.S):
        ops.append({"name": re.search(r'op_name:\s*"([^"]+)"', body).group(1),
                    "inputs": [name for names in re.findall(
                        r'input_op_names:\s*(\[[^\]]*\]|"[^"]+")', body)
                        for name in re.findall(r'"([^"]+)"', names)],
                    "edge_set": re.search(r'edge_set_name:\s*"([^"]+)"', body).group(1),
                    "k": int(re.search(r"sample_size:\s*(\d+)", body).group(1))})
    seed_op = re.search(r'seed_op\s*\{[^}]*op_name:\s*"([^"]+)"', text, re.S).group(1)
    return seed_set, [{"seed_op": seed_op}] + ops


def _ids(path: str, column_names: tuple[str, ...]) -> list[np.ndarray]:
    table = pq.read_table(path)
    return [np.asarray(table.column(next(c for c in (f"#{n}", n) if c in table.column_names))
                       .to_numpy(zero_copy_only=False)).astype(str) for n in column_names]


def build_graph(folder: str, nodes: dict, edges: dict, sampled: set):
    import dgl
    import torch

    ends = {}
    for name in sampled:
        source, target, filename, reverse = edges[name]
        s, t = _ids(os.path.join(folder, filename), ("source", "target"))
        ends[name] = (t, s) if reverse else (s, t)
    names = {}
    for node_set, filename in nodes.items():
        parts = [_ids(os.path.join(folder, filename), ("id",))[0]] if filename else []
        for name, (s, t) in ends.items():
            source, target = edges[name][:2]
            parts += ([s] if source == node_set else []) + ([t] if target == node_set else [])
        if parts:
            names[node_set] = np.unique(np.concatenate(parts))
    data = {}
    for name, (s, t) in ends.items():
        source, target = edges[name][:2]
        data[(source, name, target)] = (
            torch.from_numpy(np.searchsorted(names[source], s).astype(np.int64)),
            torch.from_numpy(np.searchsorted(names[target], t).astype(np.int64)))
    graph = dgl.heterograph(data, num_nodes_dict={n: len(v) for n, v in names.items()})
    return graph, names


def sample_batch(graph, ops: list[dict], seed_set: str, edges: dict, seeds) -> int:
    """Every op for these seeds, frontiers merged; the edges sampled."""
    import dgl
    import torch

    reached = {ops[0]["seed_op"]: seeds}
    sampled = 0
    zero = {etype: 0 for etype in graph.canonical_etypes}
    for op in ops[1:]:
        source, target = edges[op["edge_set"]][:2]
        inputs = torch.unique(torch.cat([reached[i] for i in op["inputs"]]))
        fanout = dict(zero)
        etype = (source, op["edge_set"], target)
        fanout[etype] = op["k"]
        frontier = dgl.sampling.sample_neighbors(graph, {source: inputs}, fanout,
                                                 edge_dir="out")
        _, targets = frontier.edges(etype=etype)
        sampled += len(targets)
        reached[op["name"]] = torch.unique(targets)
    return sampled


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--graph", required=True)
    parser.add_argument("--spec", required=True)
    parser.add_argument("--seeds", required=True)
    parser.add_argument("--batch", type=int, default=512)
    parser.add_argument("--per-seed", type=int, default=2000)
    parser.add_argument("--passes", type=int, default=1,
                        help="merged: passes over the seeds (a longer measurement)")
    args = parser.parse_args()
    import dgl
    import torch

    torch.set_num_threads(1)
    nodes, edges = parse_schema(os.path.join(args.graph, "graph_schema.pbtxt"))
    seed_set, ops = parse_spec(args.spec)
    started = time.perf_counter()
    graph, names = build_graph(args.graph, nodes, edges, {op["edge_set"] for op in ops[1:]})
    build_s = time.perf_counter() - started
    seed_ids = _ids(args.seeds, ("id",))[0]
    seeds = torch.from_numpy(np.searchsorted(names[seed_set], seed_ids).astype(np.int64))
    result = {"dgl": dgl.__version__, "torch": torch.__version__, "build_s": round(build_s, 2)}
    for kind, batch, count in (("merged", args.batch, len(seeds)),
                               ("per_seed", 1, min(args.per_seed, len(seeds)))):
        if not count:
            continue
        passes = args.passes if kind == "merged" else 1
        wall, cpu, edges_sampled = time.perf_counter(), time.process_time(), 0
        for _ in range(passes):
            for lo in range(0, count, batch):
                edges_sampled += sample_batch(graph, ops, seed_set, edges,
                                              seeds[lo:lo + batch])
        count *= passes
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        result[kind] = {"seeds": count, "edges": edges_sampled, "wall_s": round(wall, 3),
                        "cpu_s": round(cpu, 3), "seeds_per_s": round(count / wall, 1),
                        "edges_per_s": round(edges_sampled / wall, 1),
                        "edges_per_cpu_s": round(edges_sampled / cpu, 1)}
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
