"""`benchmark --store`: the benchmark's job from its Parquet tables and from a graph store.

    benchmark --scale 1.0 --seed-fraction 0.1 --store --repeat 3 --json

Measures, on the benchmark's generated graph (pipelines/bench/benchmark.py):
  * building the store (`unigraph-convert --format store`): wall time, peak RSS of the
    building process against the graph's in-memory size, the store's bytes against
    the tables';
  * start-up: seconds from `sample`'s start until its graph is ready and sampling
    begins (the "graph loaded" line), tables against store;
  * the whole job, tables and store interleaved, `--repeat` times (median);
  * the store job under a memory cap (pipelines/bench/memory_cap.py): the interpreter's
    footprint (measured on a tiny graph) plus half the graph's in-memory size, or
    `--cap-mb`; its wall time against the uncapped store job.
"""
from __future__ import annotations

import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import time

from pipelines import REPO_ROOT
from pipelines.bench.memory_cap import MemoryCap, unavailable
from pipelines.bench.proc_stats import run_measured

EXAMPLE = os.path.join(REPO_ROOT, "examples", "mag_tiny")


def folder_bytes(folder: str) -> int:
    return sum(os.path.getsize(os.path.join(d, f)) for d, _, files in os.walk(folder)
               for f in files)


def prepare(folder: str, store: str, log) -> dict:
    """Builds the store (unless one is there) in a measured process."""
    if os.path.exists(os.path.join(store, "store.json")):
        log(f"reusing {store}")
        return {"reused": True}
    stats = run_measured([sys.executable, "-m", "pipelines.convert", "--graph", folder,
                          "--output", store, "--format", "store"], cwd=REPO_ROOT)
    if stats.returncode != 0:
        raise RuntimeError(f"preparing the store failed: {stats.stderr.strip()[-500:]}")
    log(f"prepared {store} in {stats.wall_seconds:.1f} s, peak RSS "
        f"{stats.peak_rss_bytes / 2**20:,.0f} MB")
    return {"wall_s": round(stats.wall_seconds, 2),
            "peak_rss_mb": round(stats.peak_rss_bytes / 2**20, 1)}


def startup_seconds(cmd: list[str]) -> tuple[float, float]:
    """(seconds, CPU seconds) from start until `sample` says its graph is loaded (then it
    is stopped): the CPU a job spends before sampling, so that the rest of a whole job's
    CPU is its sampling."""
    cmd = [c for c in cmd if c != "--quiet"]  # the line is part of the progress it hides
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                            cwd=REPO_ROOT, env=dict(os.environ, PYTHONUNBUFFERED="1"))
    try:
        for line in proc.stdout:
            if "graph loaded" in line:
                seconds = round(time.perf_counter() - started, 3)
                break
        else:
            raise RuntimeError(f"no 'graph loaded' line from {' '.join(cmd)}")
    finally:
        proc.kill()
        proc.wait()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return seconds, round(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime, 3)


def run_store_benchmark(args, folder: str, spec: str, seeds: str, run_once, sample_command,
                        log) -> dict:
    """The experiment above; returns its JSON-ready results."""
    store = os.path.join(args.cache_dir, "stores", os.path.basename(folder))
    build = prepare(folder, store, log)
    schema = os.path.join(folder, "graph_schema.pbtxt")
    runs_dir = os.path.join(args.cache_dir, "runs", os.path.basename(folder), "store")
    commands = {"tables": lambda out: sample_command(schema, spec, seeds, out,
                                                     ["--engine", "memory"]),
                "store": lambda out: sample_command(store, spec, seeds, out,
                                                    ["--engine", "memory"])}
    startup = {name: [] for name in commands}
    startup_cpu = {name: [] for name in commands}
    runs = {name: [] for name in commands}
    load_averages = []  # the 1-minute load average after each run: the machine is shared
    for i in range(args.repeat):
        for name, command in commands.items():  # interleaved
            seconds, cpu = startup_seconds(command(os.path.join(runs_dir, "startup")))
            startup[name].append(seconds)
            startup_cpu[name].append(cpu)
            run = run_once(command(os.path.join(runs_dir, name)), os.path.join(runs_dir, name))
            runs[name].append(run)
            load_averages.append(round(os.getloadavg()[0], 1))
            log(f"{name} run {i + 1}/{args.repeat}: wall {run['wall_s']:.1f} s, CPU "
                f"{run['cpu_s']:.1f} s, start-up {seconds:.2f} s ({cpu:.1f} CPU-s), peak RSS "
                f"{run['peak_rss_mb']:,.0f} MB, load average {load_averages[-1]}")
    median = {name: {"wall_s": statistics.median(r["wall_s"] for r in rs),
                     "cpu_s": statistics.median(r["cpu_s"] for r in rs),
                     "peak_rss_mb": statistics.median(r["peak_rss_mb"] for r in rs),
                     "startup_s": statistics.median(startup[name]),
                     "startup_cpu_s": statistics.median(startup_cpu[name]),
                     # The whole job's CPU less its start-up's, run by run (same round).
                     "sampling_cpu_s": round(statistics.median(
                         r["cpu_s"] - c for r, c in zip(rs, startup_cpu[name])), 2)}
              for name, rs in runs.items()}
    graph_mb = runs["tables"][0]["graph_in_memory_mb"]
    capped = {"skipped": unavailable()}
    if capped["skipped"] is None:
        tiny = run_measured(sample_command(EXAMPLE, os.path.join(EXAMPLE, "sampling_spec.pbtxt"),
                                           os.path.join(EXAMPLE, "seeds.csv"),
                                           os.path.join(runs_dir, "tiny"),
                                           ["--engine", "memory", "--workers", "1"]),
                            cwd=REPO_ROOT)
        cap_mb = args.cap_mb or round(tiny.peak_rss_bytes / 2**20 + graph_mb / 2)
        output = os.path.join(runs_dir, "capped")
        command = sample_command(store, spec, seeds, output, ["--engine", "memory",
                                                              "--workers", "1"])
        with MemoryCap(cap_mb << 20) as group:
            capped = {"cap_mb": cap_mb, "interpreter_mb": round(tiny.peak_rss_bytes / 2**20),
                      "workers": 1}
            try:
                run = run_once(group.wrap(command), output)
                capped.update(wall_s=run["wall_s"], vs_uncapped_store=round(
                    run["wall_s"] / median["store"]["wall_s"], 2))
            except Exception as e:  # killed under the cap: that is the result
                capped["failed"] = str(e).splitlines()[0]
            capped.update(oom_kills=group.oom_kills(),
                          group_peak_mb=(group.peak_bytes() or 0) >> 20)
        log(f"store under a {cap_mb} MB cap: {capped}")
    return {
        "date": time.strftime("%Y-%m-%d"),
        "machine": f"{platform.node()}: {os.cpu_count()} cores, "
                   f"{os.sysconf('SC_PAGE_SIZE') * os.sysconf('SC_PHYS_PAGES') >> 30} GB, "
                   f"load average {os.getloadavg()[0]:.1f} at the end",
        "command": "benchmark " + " ".join(sys.argv[1:]),
        "graph_in_memory_mb": graph_mb,
        "tables_mb": round(folder_bytes(folder) / 2**20, 1),
        "store_mb": round(folder_bytes(store) / 2**20, 1),
        "build": build, "median": median,
        "store_speedup": round(median["tables"]["wall_s"] / median["store"]["wall_s"], 2),
        "runs": runs, "startup_runs": startup, "startup_cpu_runs": startup_cpu,
        "load_averages": load_averages, "capped": capped,
    }


def main_hook(args, folder, spec, seeds, run_once, sample_command, log) -> int:
    """What `benchmark --store` runs instead of its contenders."""
    result = run_store_benchmark(args, folder, spec, seeds, run_once, sample_command, log)
    print(json.dumps(result, indent=1) if args.json else
          f"store: {result['store_speedup']}x faster than the tables "
          f"(median wall {result['median']['store']['wall_s']:.1f} s against "
          f"{result['median']['tables']['wall_s']:.1f} s); start-up "
          f"{result['median']['store']['startup_s']:.2f} s against "
          f"{result['median']['tables']['startup_s']:.2f} s")
    return 0
