"""`benchmark --minibatch`: merged mini-batches (sampler.minibatch) beside DGL's sampler.

    benchmark --minibatch --scale 0.01 --repeat 3 --dgl-python .cache/dgl/bin/python --json
    benchmark --minibatch --scale 1.0 --seed-fraction 0.05 --dgl-python ... --json

Every measurement runs in a process of its own with one thread (OMP_NUM_THREADS=1,
torch.set_num_threads(1)), contenders interleaved round by round, medians reported;
the graph is loaded first and not timed. The same graph, spec (fan-outs) and seeds,
in file order, for all:

  sampling    `Graph.sample_merged` over every seed in batches of B (512 and 1024):
              the batch's arrays only; sampled edges, seeds and batches per CPU-second
              (each measurement passes over the seeds, a new epoch each time, until it
              has sampled 100,000 seeds; DGL too).
  heterodata  the same batches of 1024 as PyG HeteroData with the papers' features
              (`x`) and labels (`y`): batches per CPU-second, against `sampling`'s.
  dgl         (--dgl-python) DGL's C++ `sample_neighbors` on the merged frontiers of the
              same batches (pipelines/bench/dgl_benchmark.py), its own interpreter.
  loader      `sampler.torch.NeighborLoader` (batches of 1024 as HeteroData, shuffled)
              with 1 and with 2 workers: batches per wall second once the workers run
              (persistent workers, prefetch 4; the first epoch, their start, is not
              timed, then epochs until LOADER_MIN_BATCHES batches), and the CPU a batch
              cost in the main process and in the workers (read from /proc while they
              run). On 2 cores, 2 workers can give up to twice one worker's rate, only
              on a quiet machine: the load average is recorded with the figures, and
              the CPU costs give what two idle cores would
              (worker_cpu.two_idle_cores).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np

from pipelines import REPO_ROOT
from pipelines.bench.api_benchmark import _median
from pipelines.bench.worker_cpu import cpu_seconds, two_idle_cores
from pipelines.bench.provenance import provenance

BATCHES = (512, 1024)
HETERO_BATCH = 1024
LOADER_BATCH = 1024
LOADER_MIN_BATCHES = 160  # timed batches per loader run (epochs after the first)
LABEL = "labels"
MIN_SEEDS = 100_000  # seeds per measurement: passes over the seeds until so many


def passes(seeds: int) -> int:
    return max(1, -(-MIN_SEEDS // max(seeds, 1)))


def _seed_ids(seeds_path: str) -> np.ndarray:
    from unigraph.tables import read_seed_set

    return np.concatenate([batch.ids for batch in read_seed_set(seeds_path)])


def _quiet_torch() -> None:
    import torch

    torch.set_num_threads(1)


def measure_sampling(graph: str, spec: str, seeds: str) -> dict:
    """Merged sampling alone, batches of each size in BATCHES over every seed."""
    from sampler import api
    from sampler.api.minibatches import minibatch, node_seeds

    loaded = api.load_graph(graph, spec)
    prepared, _ = node_seeds(loaded, _seed_ids(seeds), None)
    _warm(loaded, prepared, lambda batch: None)
    result = {}
    rounds = passes(len(prepared))
    for size in BATCHES:
        wall, cpu = time.perf_counter(), time.process_time()
        edges = nodes = batches = 0
        for epoch in range(rounds):
            for lo in range(0, len(prepared), size):
                batch = minibatch(loaded, prepared.take(np.arange(lo, min(lo + size,
                                                                          len(prepared)))),
                                  seed=api.DEFAULT_SEED, epoch=epoch, disjoint=False)
                edges += batch.num_edges
                nodes += batch.num_nodes
                batches += 1
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        result[str(size)] = _rates(len(prepared) * rounds, batches, edges, wall, cpu,
                                   nodes=nodes)
    return result


def measure_heterodata(graph: str, spec: str, seeds: str) -> dict:
    """Batches of HETERO_BATCH as HeteroData with features and labels."""
    _quiet_torch()
    from sampler import api
    from sampler.api.minibatches import minibatch, node_seeds
    from sampler.torch import merged_to_hetero_data

    loaded = api.load_graph(graph, spec)
    prepared, _ = node_seeds(loaded, _seed_ids(seeds), None)
    _warm(loaded, prepared, lambda batch: merged_to_hetero_data(batch, label=LABEL))
    rounds = passes(len(prepared))
    wall, cpu = time.perf_counter(), time.process_time()
    edges = batches = feature_bytes = 0
    for epoch in range(rounds):
        for lo in range(0, len(prepared), HETERO_BATCH):
            batch = minibatch(loaded, prepared.take(np.arange(lo, min(lo + HETERO_BATCH,
                                                                      len(prepared)))),
                              seed=api.DEFAULT_SEED, epoch=epoch, disjoint=False)
            data = merged_to_hetero_data(batch, label=LABEL)
            feature_bytes += sum(v.numel() * v.element_size() for v in data.x_dict.values())
            edges += batch.num_edges
            batches += 1
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    return dict(_rates(len(prepared) * rounds, batches, edges, wall, cpu),
                feature_mb_per_batch=round(feature_bytes / batches / 1e6, 2))


def _warm(loaded, prepared, view) -> None:
    """One batch first, untimed: what is built on first use (lookup tables, the
    features' index, imports inside PyG) is not a batch's cost."""
    from sampler.api.minibatches import minibatch

    view(minibatch(loaded, prepared.take(np.arange(min(64, len(prepared)))), seed=1,
                   epoch=99, disjoint=False))


def measure_loader(graph: str, spec: str, seeds: str, workers: int) -> dict:
    """NeighborLoader with `workers` workers: batches per wall second after the first
    epoch (its workers' start)."""
    _quiet_torch()
    from sampler import api
    from sampler.torch import NeighborLoader

    loaded = api.load_graph(graph, spec)
    ids = _seed_ids(seeds)
    loader = NeighborLoader(loaded, ids, batch_size=LOADER_BATCH, shuffle=True,
                            num_workers=workers, label=LABEL, persistent_workers=True,
                            prefetch_factor=4)
    epochs = 1 + max(1, -(-LOADER_MIN_BATCHES // len(loader)))
    timed = 0
    for epoch in range(epochs):
        if epoch == 1:
            pids = [w.pid for w in loader._iterator._workers]
            wall, cpu, in_workers = time.perf_counter(), time.process_time(), cpu_seconds(pids)
        for data in loader:
            timed += epoch > 0
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    in_workers = cpu_seconds(pids) - in_workers
    return {"workers": workers, "epochs": epochs - 1, "batches": timed,
            "wall_s": round(wall, 3), "main_cpu_s": round(cpu, 3),
            "workers_cpu_s": round(in_workers, 3), "batches_per_s": round(timed / wall, 2),
            "main_cpu_ms_per_batch": round(1000 * cpu / timed, 2),
            "workers_cpu_ms_per_batch": round(1000 * in_workers / timed, 2)}


def _rates(seeds: int, batches: int, edges: int, wall: float, cpu: float, **more) -> dict:
    return {"seeds": seeds, "batches": batches, "edges": edges, "wall_s": round(wall, 3),
            "cpu_s": round(cpu, 3), "seeds_per_cpu_s": round(seeds / cpu, 1),
            "batches_per_cpu_s": round(batches / cpu, 2),
            "edges_per_cpu_s": round(edges / cpu, 1), **more}


def _run(kind: str, ns: argparse.Namespace, extra: list[str]) -> dict:
    command = [sys.executable, "-m", "pipelines.bench.minibatch_benchmark", kind, "--graph",
               ns.graph, "--spec", ns.spec, "--seeds", ns.seeds, *extra]
    done = subprocess.run(command, capture_output=True, text=True, cwd=REPO_ROOT,
                          env=dict(os.environ, OMP_NUM_THREADS="1"))
    if done.returncode != 0:
        raise RuntimeError(f"{kind} failed: {done.stderr.strip()[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def _dgl(python: str, ns: argparse.Namespace, size: int) -> dict:
    done = subprocess.run([python, os.path.join(REPO_ROOT, "pipelines", "bench",
                                                "dgl_benchmark.py"),
                           "--graph", ns.graph, "--spec", ns.spec, "--seeds", ns.seeds,
                           "--batch", str(size), "--per-seed", "0",
                           "--passes", str(passes(ns.seed_count))],
                          capture_output=True, text=True, cwd=REPO_ROOT,
                          env=dict(os.environ, OMP_NUM_THREADS="1"))
    if done.returncode != 0:
        raise RuntimeError(f"dgl failed: {done.stderr.strip()[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main_hook(args, folder: str, spec: str, seeds: str, log) -> int:
    """`benchmark --minibatch` (pipelines/bench/benchmark.py calls it with the graph)."""
    ns = argparse.Namespace(graph=folder, spec=spec, seeds=seeds,
                            seed_count=len(_seed_ids(seeds)))
    runs: dict[str, list] = {"sampling": [], "heterodata": [], "loader_1": [], "loader_2": []}
    if args.dgl_python:
        runs.update({f"dgl_{size}": [] for size in BATCHES})
    loads, dgl_info = [], {}
    for round_ in range(args.repeat):
        runs["sampling"].append(_run("sampling", ns, []))
        runs["heterodata"].append(_run("heterodata", ns, []))
        if args.dgl_python:
            for size in BATCHES:
                done = _dgl(args.dgl_python, ns, size)
                dgl_info = {k: done[k] for k in ("dgl", "torch", "build_s")}
                runs[f"dgl_{size}"].append(done["merged"])
        loads.append(round(os.getloadavg()[0], 1))
        for workers in (1, 2):
            runs[f"loader_{workers}"].append(_run("loader", ns, ["--workers", str(workers)]))
        loads.append(round(os.getloadavg()[0], 1))
        s = runs["sampling"][-1][str(HETERO_BATCH)]
        log(f"round {round_ + 1}/{args.repeat}: sampling {s['edges_per_cpu_s'] / 1e6:.2f} M "
            f"edges/CPU-s, {s['batches_per_cpu_s']:.1f} batches/CPU-s; heterodata "
            f"{runs['heterodata'][-1]['batches_per_cpu_s']:.1f} batches/CPU-s; "
            + (f"dgl {runs[f'dgl_{HETERO_BATCH}'][-1]['edges_per_cpu_s'] / 1e6:.2f} M "
               f"edges/CPU-s; " if args.dgl_python else "")
            + f"loader {runs['loader_1'][-1]['batches_per_s']:.1f} / "
            f"{runs['loader_2'][-1]['batches_per_s']:.1f} batches/s (1 / 2 workers); "
            f"load {loads[-1]}")
    median = {name: _median(r) for name, r in runs.items()}
    sampling = median["sampling"]
    result = {"benchmark": "minibatch", **provenance("benchmark", args.argv),
              "scale": args.scale, "seeds": ns.seed_count,
              "passes": passes(ns.seed_count),
              "batch_sizes": list(BATCHES), "repeat": args.repeat,
              "loader": {"batch_size": LOADER_BATCH, "untimed_epochs": 1,
                         "timed_batches_at_least": LOADER_MIN_BATCHES,
                         "persistent_workers": True, "prefetch_factor": 4},
              "load_averages": loads, "median": median,
              "ratios": {
                  "heterodata_vs_sampling": round(
                      median["heterodata"]["batches_per_cpu_s"]
                      / sampling[str(HETERO_BATCH)]["batches_per_cpu_s"], 3),
                  "loader_2_vs_1": round(median["loader_2"]["batches_per_s"]
                                         / median["loader_1"]["batches_per_s"], 3),
                  "loader_2_vs_1_two_idle_cores": two_idle_cores(
                      median["loader_2"]["main_cpu_ms_per_batch"],
                      median["loader_2"]["workers_cpu_ms_per_batch"])}}
    if args.dgl_python:
        result["dgl"] = dgl_info
        for size in BATCHES:
            result["ratios"][f"sampling_vs_dgl_{size}"] = round(
                sampling[str(size)]["edges_per_cpu_s"]
                / median[f"dgl_{size}"]["edges_per_cpu_s"], 3)
    log(f"ratios: {json.dumps(result['ratios'])}")
    if args.json:
        print(json.dumps(result))
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m pipelines.bench.minibatch_benchmark")
    parser.add_argument("kind", choices=("sampling", "heterodata", "loader"))
    parser.add_argument("--graph", required=True)
    parser.add_argument("--spec", required=True)
    parser.add_argument("--seeds", required=True)
    parser.add_argument("--workers", type=int, default=1)
    args = parser.parse_args(argv)
    if args.kind == "sampling":
        result = measure_sampling(args.graph, args.spec, args.seeds)
    elif args.kind == "heterodata":
        result = measure_heterodata(args.graph, args.spec, args.seeds)
    else:
        result = measure_loader(args.graph, args.spec, args.seeds, args.workers)
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
