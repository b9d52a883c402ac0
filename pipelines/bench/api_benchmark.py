"""`benchmark --api`: online sampling through sampler.api beside the offline memory engine.

    benchmark --scale 0.01 --api --repeat 3 --json
    benchmark --scale 1.0 --seed-fraction 0.02 --api --latency --repeat 1

Every measurement runs in a process of its own, one core's worth of work (the memory
engine with one worker; the API in its calling thread), contenders interleaved round
by round, medians reported. The graph is loaded first and not timed: what is compared
is sampling, once the graph is in memory.

  offline   `sample --engine memory --workers 1` on every seed: the engine's time from
            the graph loaded to the last shard written (sampling, assembly, encoding,
            writing TFRecord files); subgraphs/s, and CPU seconds of that span.
  online    sampler.api on the same graph, `graph.batches(seeds, 512)` over every seed,
            three passes: `arrays` (sampled and assembled, nothing built from them),
            `graphs` (every subgraph as a numpy GraphTensor) and `examples` (every
            subgraph as its tf.Example bytes, what offline writes). Sampled edges/s
            count the edges of the subgraphs (per seed: nothing merged).
  latency   one batch of 512 random seeds, 30 times: milliseconds per batch (median,
            p95, and the median in CPU time; with --repeat N, N such rounds in new
            processes and the median of each), as arrays, as GraphTensors and as bytes;
            then as arrays again with load_graph(threads=2). On an AMD Zen 4 (where the
            sampler has numpy sort with AVX2, sampler/numpy_cpu.py), the arrays once
            more in a process with numpy's AVX-512 code (SAMPLER_NUMPY_AVX512=1).
  dgl       (with --dgl-python: an interpreter with DGL installed, e.g. torch 2.2.1 and
            dgl 2.1.0) DGL's C++ `sample_neighbors` through the same spec on the same
            tables (pipelines/bench/dgl_benchmark.py): merged frontiers of 512 seeds, and one
            seed per call.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time

import numpy as np

from pipelines import REPO_ROOT
from pipelines.bench.provenance import provenance
from sampler import numpy_cpu

BATCH = 512
LATENCY_BATCHES = 30
THREADS = 2  # the latency's threaded pass


def _seed_ids(seeds_path: str) -> np.ndarray:
    from unigraph.tables import read_seed_set

    return np.concatenate([batch.ids for batch in read_seed_set(seeds_path)])


def measure_offline(graph: str, spec: str, seeds: str, output: str) -> dict:
    """The memory engine, one worker, in this process: from graph loaded to files written."""
    from sampler.job.job import DEFAULT_SEED, SamplingJob
    from sampler.job.options import load_and_check
    from sampler.job.sizing import output_shards
    from sampler.memory.engine import run_in_memory
    from sampler.output.files import parse_output
    from sampler.plan.timing import time_plan
    from unigraph.tables import seed_files

    loaded, plan = load_and_check(graph, spec)
    final = parse_output(output)
    shutil.rmtree(output, ignore_errors=True)
    os.makedirs(output)
    shards = output_shards(loaded, plan, seed_files(seeds))
    job = SamplingJob(loaded=loaded, plan=plan, seeds_path=seeds, output=final,
                      num_shards=shards, node_buckets=1, seed=DEFAULT_SEED, stats_path="",
                      time=time_plan(loaded, plan, seeds))
    started = {}

    def on_start(*_):
        started.update(wall=time.perf_counter(), cpu=time.process_time())

    stats = run_in_memory(job, workers=1, on_start=on_start)
    wall, cpu = time.perf_counter() - started["wall"], time.process_time() - started["cpu"]
    shutil.rmtree(output)  # at scale 1.0, every paper's subgraph is about 40 GB
    subgraphs = stats.as_dict()["subgraphs_written"]
    return {"subgraphs": subgraphs, "wall_s": round(wall, 3), "cpu_s": round(cpu, 3),
            "subgraphs_per_s": round(subgraphs / wall, 1),
            "subgraphs_per_cpu_s": round(subgraphs / cpu, 1)}


def _subgraph_edges(batch) -> int:
    """Edges in a batch's subgraphs (the `_readout` edges left out)."""
    return sum(len(layout.sources) for part in batch.assembled for layout in part.edges.values())


def measure_online(graph: str, spec: str, seeds: str) -> dict:
    """sampler.api over every seed in batches of 512, three ways (see the docstring)."""
    from sampler import api

    loaded = api.load_graph(graph, spec)
    ids = _seed_ids(seeds)
    result = {}
    for kind in ("arrays", "graphs", "examples"):
        wall, cpu = time.perf_counter(), time.process_time()
        subgraphs = edges = 0
        for batch in loaded.batches(ids, BATCH, seed=api.DEFAULT_SEED):
            if kind == "graphs":
                list(batch)
            elif kind == "examples":
                batch.to_examples()
            subgraphs += len(batch)
            edges += _subgraph_edges(batch)
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        result[kind] = {"subgraphs": subgraphs, "wall_s": round(wall, 3),
                        "cpu_s": round(cpu, 3), "subgraph_edges": edges,
                        "subgraphs_per_s": round(subgraphs / wall, 1),
                        "subgraphs_per_cpu_s": round(subgraphs / cpu, 1),
                        "edges_per_cpu_s": round(edges / cpu, 1)}
    return result


def _arrays_pass(loaded, ids: np.ndarray) -> tuple[list[float], list[float]]:
    """The latency's batches (the same for every pass) sampled as arrays: wall and CPU
    seconds of each."""
    chooser = np.random.default_rng(0)
    wall, cpu = [], []
    for i in range(LATENCY_BATCHES):
        batch_ids = ids[chooser.choice(len(ids), min(BATCH, len(ids)), replace=False)]
        started, started_cpu = time.perf_counter(), time.process_time()
        loaded.sample(batch_ids, seed=i)
        wall.append(time.perf_counter() - started)
        cpu.append(time.process_time() - started_cpu)
    return wall, cpu


def measure_latency(graph: str, spec: str, seeds: str, arrays_only: bool = False) -> dict:
    """Milliseconds for one batch of 512 random seeds, once the graph is loaded (with
    `arrays_only`, the first of the passes alone)."""
    from sampler import api

    loaded_at = time.perf_counter()
    loaded = api.load_graph(graph, spec)
    load_s = time.perf_counter() - loaded_at
    ids = _seed_ids(seeds)
    times, cpu = {}, {}  # cpu: the same spans in CPU seconds, what load inflates less
    if arrays_only:
        times["arrays"], cpu["arrays"] = _arrays_pass(loaded, ids)
    else:
        chooser = np.random.default_rng(0)
        times = {"arrays": [], "graphs": [], "examples": []}
        cpu = {kind: [] for kind in times}
        for i in range(LATENCY_BATCHES):
            batch_ids = ids[chooser.choice(len(ids), min(BATCH, len(ids)), replace=False)]
            started, started_cpu = time.perf_counter(), time.process_time()
            batch = loaded.sample(batch_ids, seed=i)
            sampled, sampled_cpu = time.perf_counter(), time.process_time()
            list(batch)
            built, built_cpu = time.perf_counter(), time.process_time()
            again = loaded.sample(batch_ids, seed=i)
            resampled, resampled_cpu = time.perf_counter(), time.process_time()
            again.to_examples()
            encoded, encoded_cpu = time.perf_counter(), time.process_time()
            times["arrays"].append(sampled - started)
            times["graphs"].append(built - started)
            times["examples"].append(encoded - resampled + (sampled - started))
            cpu["arrays"].append(sampled_cpu - started_cpu)
            cpu["graphs"].append(built_cpu - started_cpu)
            cpu["examples"].append(encoded_cpu - resampled_cpu + (sampled_cpu - started_cpu))
        # The same batches as arrays with load_graph(threads=2) (set on the graph loaded,
        # so as not to load it twice): what a second core buys, where it is free.
        loaded._threads = THREADS
        times["arrays_threads"], cpu["arrays_threads"] = _arrays_pass(loaded, ids)
    return {"load_s": round(load_s, 2), "graph_mb": round(loaded.nbytes / 1e6, 1),
            "batches": LATENCY_BATCHES, "threads": THREADS,
            **{kind: {"median_ms": round(1e3 * statistics.median(values), 1),
                      "p95_ms": round(1e3 * float(np.percentile(values, 95)), 1),
                      "median_cpu_ms": round(1e3 * statistics.median(cpu[kind]), 1)}
               for kind, values in times.items()}}


def _run(kind: str, args: argparse.Namespace, extra: list[str],
         env: dict[str, str] | None = None) -> dict:
    command = [sys.executable, "-m", "pipelines.bench.api_benchmark", kind, "--graph", args.graph,
               "--spec", args.spec, "--seeds", args.seeds, *extra]
    done = subprocess.run(command, capture_output=True, text=True, cwd=REPO_ROOT,
                          env=env or dict(os.environ, OMP_NUM_THREADS="1"))
    if done.returncode != 0:
        raise RuntimeError(f"{kind} failed: {done.stderr.strip()[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def _median(runs: list[dict]) -> dict:
    """The median of every number in a list of like nested dicts."""
    first = runs[0]
    if isinstance(first, dict):
        return {k: _median([r[k] for r in runs]) for k in first}
    if isinstance(first, (int, float)) and first is not None:
        return round(statistics.median(runs), 3)
    return first


def main_hook(args, folder: str, spec: str, seeds: str, log) -> int:
    """`benchmark --api` (pipelines/bench/benchmark.py calls it with the generated graph)."""
    runs = {"offline": [], "online": []}
    ns = argparse.Namespace(graph=folder, spec=spec, seeds=seeds)
    out = os.path.join(args.cache_dir, "runs", "api")
    for round_ in range(args.repeat):
        runs["offline"].append(_run("offline", ns, ["--output", out]))
        runs["online"].append(_run("online", ns, []))
        offline, online = runs["offline"][-1], runs["online"][-1]
        log(f"round {round_ + 1}/{args.repeat}: offline {offline['subgraphs_per_s']:,.0f} "
            f"subgraphs/s; online (bytes) {online['examples']['subgraphs_per_s']:,.0f}, "
            f"(GraphTensors) {online['graphs']['subgraphs_per_s']:,.0f}, (arrays) "
            f"{online['arrays']['subgraphs_per_s']:,.0f} subgraphs/s, "
            f"{online['arrays']['edges_per_cpu_s'] / 1e6:.2f} M sampled edges/s")
    result = {"benchmark": "api", **provenance("benchmark", args.argv),
              "scale": args.scale, "batch_size": BATCH, "repeat": args.repeat,
              "median": {name: _median(r) for name, r in runs.items()}}
    median = result["median"]
    result["online_vs_offline"] = {
        kind: round(median["online"][kind]["subgraphs_per_s"]
                    / median["offline"]["subgraphs_per_s"], 2)
        for kind in ("arrays", "graphs", "examples")}
    if args.latency:  # --repeat rounds, each in fresh processes; the median of each figure
        rounds = []
        for _ in range(args.repeat):
            latency = _run("latency", ns, [])
            if numpy_cpu.applies_here():  # the same batches with the sort numpy would pick
                avx512 = _run("latency", ns, ["--arrays-only"], env=_numpy_avx512_env())
                latency["arrays_avx512"] = avx512["arrays"]
            log(f"latency, batch of {BATCH}: {json.dumps(latency)}")
            rounds.append(latency)
        result["latency"] = dict(_median(rounds), rounds=len(rounds))
    if args.dgl_python:
        done = subprocess.run([args.dgl_python, os.path.join(REPO_ROOT, "pipelines", "bench",
                                                             "dgl_benchmark.py"),
                               "--graph", folder, "--spec", spec, "--seeds", seeds,
                               "--batch", str(BATCH)],
                              capture_output=True, text=True, cwd=REPO_ROOT,
                              env=dict(os.environ, OMP_NUM_THREADS="1"))
        if done.returncode != 0:
            raise RuntimeError(f"dgl failed: {done.stderr.strip()[-2000:]}")
        result["dgl"] = json.loads(done.stdout.strip().splitlines()[-1])
        log(f"dgl: {json.dumps(result['dgl'])}")
    log(f"online / offline subgraphs per second: {result['online_vs_offline']}")
    if args.json:
        print(json.dumps(result))
    return 0


def _numpy_avx512_env() -> dict[str, str]:
    """This environment for a process whose numpy keeps its AVX-512 code."""
    env = {k: v for k, v in os.environ.items() if k not in numpy_cpu.NUMPY_VARIABLES}
    return dict(env, OMP_NUM_THREADS="1", **{numpy_cpu.OPT_OUT: "1"})


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m pipelines.bench.api_benchmark")
    parser.add_argument("kind", choices=("offline", "online", "latency"))
    parser.add_argument("--graph", required=True)
    parser.add_argument("--spec", required=True)
    parser.add_argument("--seeds", required=True)
    parser.add_argument("--output")
    parser.add_argument("--arrays-only", action="store_true",
                        help="latency: the batches as arrays, nothing else")
    args = parser.parse_args(argv)
    if args.kind == "offline":
        result = measure_offline(args.graph, args.spec, args.seeds, args.output)
    elif args.kind == "online":
        result = measure_online(args.graph, args.spec, args.seeds)
    else:
        result = measure_latency(args.graph, args.spec, args.seeds, args.arrays_only)
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
