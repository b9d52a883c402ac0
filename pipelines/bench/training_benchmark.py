"""Training on merged against disjoint mini-batches: held-out accuracy and seconds per
epoch of examples/train_pyg.py's online training, over several seeds.

    python -m pipelines.bench.training_benchmark --seeds 6 --epochs 8 \\
        --json docs/benchmarks/training.json

Generates the planted task in a temporary folder (`synthetic-graph --scale S --planted`:
a paper's label is the colour its cited papers' features carry) and trains
`train_online` (heterogeneous GraphSAGE read through `trim_to_layer`, one layer per hop
of the graph's own five-op spec) on it with `--batches merged` and `--batches
disjoint`, for each seed 0..N-1: one process per run (OMP_NUM_THREADS=1, one torch
thread, no loader workers), the two modes interleaved seed by seed so they share the
machine's state. Each run is what

    OMP_NUM_THREADS=1 python examples/train_pyg.py --graph G --spec G/sampling_spec.pbtxt \\
        --label labels --batches MODE --epochs E --batch-size B --seed S

does. Recorded per run: held-out accuracy, the majority class's share, the held-out
count, and each epoch's CPU seconds (the process's: sampling, conversion and the model
all run in it) and wall seconds. Per mode: accuracy mean and range over the seeds, and
seconds per epoch (each run's mean over its epochs), mean and range. Accuracy does not
depend on the machine's load; seconds do (the load average is recorded before and after
each run). `--json FILE` writes it with its provenance; `python -m
pipelines.tools.docs_gen` renders it into docs/performance.md and docs/minibatches.md.
"""
from __future__ import annotations

import argparse
import contextlib
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import time

from pipelines import REPO_ROOT

MODES = ("merged", "disjoint")
LABEL = "labels"
EXAMPLE = os.path.join(REPO_ROOT, "examples", "train_pyg.py")
PROGRAM = "python -m pipelines.bench.training_benchmark"


def _example():
    """examples/train_pyg.py as a module (it is a script, not a package)."""
    spec = importlib.util.spec_from_file_location("train_pyg", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run_one(graph: str, mode: str, seed: int, epochs: int, batch_size: int) -> dict:
    """One training run in this process (what each of the benchmark's processes does)."""
    import torch

    torch.set_num_threads(1)
    started, cpu_started = time.perf_counter(), time.process_time()
    result = _example().train_online(graph, os.path.join(graph, "sampling_spec.pbtxt"),
                                     LABEL, batches=mode, epochs=epochs,
                                     batch_size=batch_size, seed=seed,
                                     log=lambda line: print(line, file=sys.stderr))
    return {"mode": mode, "seed": seed, "accuracy": round(result["accuracy"], 5),
            "chance": round(result["chance"], 5), "held_out_count": result["held_out_count"],
            "epoch_cpu_s": [round(s, 3) for s in result["epoch_cpu_seconds"]],
            "epoch_wall_s": [round(s, 3) for s in result["epoch_seconds"]],
            "process_cpu_s": round(time.process_time() - cpu_started, 3),
            "process_wall_s": round(time.perf_counter() - started, 3)}


def _run_process(graph: str, mode: str, seed: int, epochs: int, batch_size: int) -> dict:
    command = [sys.executable, "-m", "pipelines.bench.training_benchmark", "--run", mode,
               "--graph", graph, "--seed", str(seed), "--epochs", str(epochs),
               "--batch-size", str(batch_size)]
    done = subprocess.run(command, capture_output=True, text=True, cwd=REPO_ROOT,
                          env=dict(os.environ, OMP_NUM_THREADS="1"))
    if done.returncode != 0:
        tail = done.stderr.strip().splitlines()[-1:] or ["no message"]
        raise RuntimeError(f"{mode} run with seed {seed} failed (exit {done.returncode}): "
                           f"{tail[0]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def _spread(values: list[float], digits: int) -> dict:
    return {"mean": round(sum(values) / len(values), digits),
            "min": round(min(values), digits), "max": round(max(values), digits)}


def summarize(runs: list[dict]) -> dict:
    """Per mode: accuracy and each run's mean seconds per epoch, mean and range."""
    summary = {}
    for mode in dict.fromkeys(r["mode"] for r in runs):
        mine = [r for r in runs if r["mode"] == mode]
        summary[mode] = {
            "runs": len(mine),
            "accuracy": _spread([r["accuracy"] for r in mine], 4),
            "cpu_s_per_epoch": _spread([sum(r["epoch_cpu_s"]) / len(r["epoch_cpu_s"])
                                        for r in mine], 3),
            "wall_s_per_epoch": _spread([sum(r["epoch_wall_s"]) / len(r["epoch_wall_s"])
                                         for r in mine], 3),
            "chance": mine[0]["chance"], "held_out_count": mine[0]["held_out_count"]}
    return summary


def planted_graph(folder: str, scale: float) -> dict:
    """`synthetic-graph --scale S --planted` into `folder`; its manifest."""
    from pipelines import synthetic

    with contextlib.redirect_stdout(sys.stderr):  # stdout carries the JSON
        if synthetic.main(["--scale", str(scale), "--planted", "--quiet",
                           "--output", folder]) != 0:
            raise RuntimeError(f"synthetic-graph --scale {scale} --planted failed")
    with open(os.path.join(folder, "manifest.json")) as f:
        return json.load(f)


def spec_summary(path: str) -> dict:
    """The spec's seed node set, its ops as `edge set fan-out`, and its layers (the
    longest chain of ops from the seed: what train_online gives the model)."""
    from sampler.plan.spec import load_spec

    spec = load_spec(path)
    depth = {spec.seed_op.op_name: 0}
    for op in spec.sampling_ops:  # inputs come before the ops that read them
        depth[op.op_name] = 1 + max(depth[name] for name in op.input_op_names)
    return {"seed": spec.seed_op.node_set_name,
            "ops": [f"{op.edge_set_name} {op.sample_size}" for op in spec.sampling_ops],
            "layers": max(depth.values())}


def measure(scale: float, seeds: list[int], modes: list[str], epochs: int,
            batch_size: int, log) -> dict:
    with tempfile.TemporaryDirectory(prefix="training_benchmark_") as tmp:
        graph = os.path.join(tmp, "graph")
        manifest = planted_graph(graph, scale)
        spec = spec_summary(os.path.join(graph, "sampling_spec.pbtxt"))
        runs, loads = [], [round(os.getloadavg()[0], 1)]
        for seed in seeds:
            for mode in modes:
                run = _run_process(graph, mode, seed, epochs, batch_size)
                loads.append(round(os.getloadavg()[0], 1))
                runs.append(run)
                log(f"seed {seed}, {mode}: accuracy {run['accuracy']:.4f}, "
                    f"{sum(run['epoch_cpu_s']) / epochs:.2f} CPU-s / "
                    f"{sum(run['epoch_wall_s']) / epochs:.2f} wall s per epoch; "
                    f"load {loads[-1]}")
    return {"graph": {"scale": scale, "planted": True, "nodes": manifest.get("nodes"),
                      "edges": manifest.get("edges"), "spec": spec},
            "label": LABEL, "epochs": epochs, "batch_size": batch_size, "seeds": seeds,
            "modes": modes, "threads": 1, "load_averages": loads,
            "run_command": (f"OMP_NUM_THREADS=1 python examples/train_pyg.py --graph G "
                            f"--spec G/sampling_spec.pbtxt --label {LABEL} --batches MODE "
                            f"--epochs {epochs} --batch-size {batch_size} --seed S"),
            "summary": summarize(runs), "runs": runs}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=PROGRAM, description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=6,
                        help="train with seeds 0..N-1 in each mode (default 6)")
    parser.add_argument("--epochs", type=int, default=8, help="epochs per run (default 8)")
    parser.add_argument("--batch-size", type=int, default=64, help="seeds per training "
                                                                   "batch (default 64)")
    parser.add_argument("--scale", type=float, default=0.002,
                        help="the planted graph's scale (default 0.002)")
    parser.add_argument("--modes", default=",".join(MODES),
                        help="comma-separated, of merged, disjoint (default both)")
    parser.add_argument("--json", metavar="FILE", help="write the results here")
    # One run in this process (what the benchmark starts per mode and seed).
    parser.add_argument("--run", choices=MODES, help=argparse.SUPPRESS)
    parser.add_argument("--graph", help=argparse.SUPPRESS)
    parser.add_argument("--seed", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.seeds < 1 or args.epochs < 1 or args.batch_size < 1 or args.scale <= 0:
        parser.error("--seeds, --epochs and --batch-size must be >= 1, --scale > 0")
    if args.run:
        if not args.graph:
            parser.error("--run needs --graph")
        print(json.dumps(run_one(args.graph, args.run, args.seed, args.epochs,
                                 args.batch_size)))
        return 0
    modes = [m for m in args.modes.split(",") if m]
    unknown = [m for m in modes if m not in MODES]
    if unknown or not modes:
        parser.error(f"--modes: unknown {', '.join(unknown)}" if unknown else
                     "--modes: give merged, disjoint or both")
    from pipelines.bench.provenance import provenance, publish

    log = (lambda line: print(line, file=sys.stderr))
    try:
        result = measure(args.scale, list(range(args.seeds)), modes, args.epochs,
                         args.batch_size, log)
    except RuntimeError as e:
        print(f"training_benchmark: error: {e}", file=sys.stderr)
        return 1
    publish({"benchmark": "training", **provenance(PROGRAM, argv), **result}, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
