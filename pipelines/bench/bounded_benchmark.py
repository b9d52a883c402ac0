"""`benchmark --bounded`: a graph larger than the machine, generated, built and sampled.

    benchmark --bounded --scale 10 --seed-fraction 0.1 --build-cap-mb 4096 --cap-mb 3072 \\
              --seed-parts 10 --json
    benchmark --bounded --scale 1.0 --seed-fraction 0.1 --json      (the same, uncapped)

Each step runs in its own measured process (pipelines/bench/proc_stats.py: wall time,
CPU seconds of the process tree, peak RSS), each under a memory cgroup when its cap is
given (pipelines/bench/memory_cap.py: the kernel's count of the group's peak charge
and of its processes killed for memory; the machine's swap must be off, or the cap
would only move memory to swap, and the command refuses):
  1. generate: `synthetic-graph` (streamed) into the benchmark's cache, under
     --build-cap-mb; its figures are kept beside the graph (generation.json), and a
     later run that reuses the graph reports them;
  2. build: `unigraph-convert --format store --memory-limit` (the cap, or the default
     limit without one), under --build-cap-mb; the disk the build used at its peak
     (store and scratch runs, polled every second) beside the tables' and the store's;
  3. the job: `sample --engine memory` on the store over --seed-fraction of the papers,
     under --cap-mb, in --seed-parts processes of one part of the seeds each (chosen by
     a hash of the id), each part's output deleted once measured: the disk holds one
     part's output at a time (and, with --drop-tables, no tables: they are deleted
     once the store is built). Under a cap, the store is dropped from the page cache
     before each part: pages an earlier process left there would be read without being
     charged to the group. Subgraphs per second = all subgraphs / all parts' wall time;
     per CPU-second likewise. A run stopped during the job (tables dropped, store built)
     starts again at the job, at its first part not measured; `--parts-limit K` measures
     K parts at most (the JSON says how many of how many: a job of hours recorded as
     far as it went, and finished by the same command without it).
The JSON is one run (with its provenance); `--record FILE` also puts it into FILE's
runs (docs/benchmarks/store_bounded.json: the runs the performance page and
docs/store.md show, pipelines/tools/perf_tables.py), in place of an earlier run of the
same scale and caps.
"""
from __future__ import annotations

import json
import os
import shutil
import sys
import threading

from pipelines import REPO_ROOT
from pipelines.bench.memory_cap import MemoryCap, drop_cached, swap_total_bytes, unavailable
from pipelines.bench.proc_stats import run_measured
from pipelines.bench.provenance import provenance, write_json

GENERATION = "generation.json"
DROPPED = "tables_dropped"  # --drop-tables ran: the store stands for the tables


def folder_disk_bytes(folder: str) -> int:
    """Bytes a folder takes on disk (allocated blocks: a run file whose read part was
    given back counts what it still holds)."""
    total = 0
    for root, _, files in os.walk(folder):
        for name in files:
            try:
                total += os.stat(os.path.join(root, name)).st_blocks * 512
            except OSError:  # deleted meanwhile
                pass
    return total


class DiskPeak:
    """Polls the bytes under a folder every second while a step runs; `peak` their most."""

    def __init__(self, folder: str):
        self.folder, self.peak = folder, 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        while not self._stop.is_set():
            self.peak = max(self.peak, folder_disk_bytes(self.folder))
            self._stop.wait(1.0)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, folder_disk_bytes(self.folder))  # the end is a peak too


def measured_step(cmd: list[str], cap_mb: int | None) -> dict:
    """One step in its own process, under a cgroup of `cap_mb` when given; its figures,
    or RuntimeError with the end of its stderr."""
    if cap_mb is None:
        stats, group = run_measured(cmd, cwd=REPO_ROOT), {}
    else:
        with MemoryCap(cap_mb << 20) as cap:
            stats = run_measured(cap.wrap(cmd), cwd=REPO_ROOT)
            group = {"cap_mb": cap_mb, "group_peak_mb": (cap.peak_bytes() or 0) >> 20,
                     "oom_kills": cap.oom_kills()}
    if stats.returncode != 0:
        tail = "\n".join(stats.stderr.strip().splitlines()[-5:])
        raise RuntimeError(f"{' '.join(cmd[:4])} ... exited with {stats.returncode}: {tail}")
    return {"wall_s": round(stats.wall_seconds, 1), "cpu_s": round(stats.cpu_seconds, 1),
            "peak_rss_mb": round(stats.peak_rss_bytes / 2**20), **group,
            "load_average": round(os.getloadavg()[0], 1)}


def ensure_graph_capped(args, bench, log) -> tuple[str, dict, dict]:
    """(folder, manifest, generation figures) of the benchmark's graph, generated by
    `synthetic-graph` in a measured process unless the cache has it."""
    folder = os.path.join(args.cache_dir, bench.graph_key(args.scale, args.seed, args.format,
                                                    args.shards, args.hub_edges))
    # A graph whose tables --drop-tables deleted serves while its store is there: a run
    # stopped during the job starts again at the job.
    dropped = os.path.exists(os.path.join(folder, DROPPED)) and \
        os.path.exists(os.path.join(store_path(args, folder), "store.json"))
    if not dropped and not os.path.exists(os.path.join(folder, bench.COMPLETE)):
        shutil.rmtree(folder, ignore_errors=True)
        log(f"generating {folder}")
        step = measured_step([sys.executable, "-m", "pipelines.synthetic", "--scale",
                              str(args.scale), "--seed", str(args.seed), "--format",
                              args.format, "--shards", str(args.shards), "--hub-edges",
                              str(args.hub_edges), "--quiet", "--output", folder],
                             args.build_cap_mb)
        with open(os.path.join(folder, GENERATION), "w") as f:
            json.dump(step, f)
        open(os.path.join(folder, bench.COMPLETE), "w").close()
    with open(os.path.join(folder, "manifest.json")) as f:
        manifest = json.load(f)
    generation = {"reused": True}
    if os.path.exists(os.path.join(folder, GENERATION)):
        with open(os.path.join(folder, GENERATION)) as f:
            generation = json.load(f)
    log(f"graph {folder}: {generation}")
    return folder, manifest, generation


def store_path(args, folder: str) -> str:
    return os.path.join(args.cache_dir, "stores", os.path.basename(folder))


def build_store(args, folder: str, log) -> tuple[str, dict]:
    """The store of the graph (built unless the cache has one), and its build's figures."""
    store = store_path(args, folder)
    figures = store + ".build.json"
    if os.path.exists(os.path.join(store, "store.json")) and os.path.exists(figures):
        with open(figures) as f:
            build = json.load(f)
        log(f"reusing {store}: {build}")
        return store, build
    shutil.rmtree(store, ignore_errors=True)
    os.makedirs(os.path.dirname(store), exist_ok=True)
    cmd = [sys.executable, "-m", "pipelines.convert", "--graph", folder, "--output", store,
           "--format", "store"]
    if args.build_cap_mb:
        cmd += ["--memory-limit", f"{args.build_cap_mb}M"]
    log(f"building {store}")
    # The store's parent holds its staging folder (store files and scratch runs).
    with DiskPeak(os.path.dirname(store)) as disk:
        build = measured_step(cmd, args.build_cap_mb)
    build.update(memory_limit_mb=args.build_cap_mb, disk_peak_mb=round(disk.peak / 2**20))
    with open(figures, "w") as f:
        json.dump(build, f)
    return store, build


def seed_parts(path: str, parts: int) -> list[str]:
    """The seeds file cut into `parts` files by a hash of the id (written once)."""
    if parts == 1:
        return [path]
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    from sampler.core.rng import fingerprint

    names = [f"{path[:-len('.parquet')]}_part{i}of{parts}.parquet" for i in range(parts)]
    if not all(os.path.exists(n) for n in names):
        ids = np.array(pq.read_table(path).column("id").to_pylist(), dtype="S")
        part = fingerprint(ids, salt=1) % np.uint64(parts)
        for i, name in enumerate(names):
            pq.write_table(pa.table({"id": pa.array(ids[part == i].tolist(), pa.binary())}),
                           name + ".tmp")
            os.replace(name + ".tmp", name)
    return names


def run_job(args, bench, folder: str, store: str, log) -> dict:
    spec = os.path.join(folder, "sampling_spec.pbtxt")
    with open(os.path.join(folder, "manifest.json")) as f:
        manifest = json.load(f)
    seeds = seed_parts(bench.seed_subset(folder, manifest, args.seed_fraction or 1.0),
                       args.seed_parts)
    runs = []
    workers = ["--workers", str(args.job_workers)] if args.job_workers else []
    measured = os.path.join(args.cache_dir, "runs", os.path.basename(folder), "parts")
    os.makedirs(measured, exist_ok=True)
    for i, part in enumerate(seeds):
        # Each part's figures are kept: a run stopped during the job goes on from the
        # first part it had not measured (same caps and workers).
        figures = os.path.join(measured, f"part{i}of{len(seeds)}_cap{args.cap_mb}_"
                                         f"workers{args.job_workers}.json")
        if os.path.exists(figures):
            with open(figures) as f:
                runs.append(json.load(f))
            log(f"part {i + 1}/{len(seeds)}: measured before, {runs[-1]['wall_s']:.1f} s")
            continue
        if args.parts_limit is not None and len(runs) >= args.parts_limit:
            log(f"parts {i + 1} to {len(seeds)} left for a later run (--parts-limit)")
            break
        output = os.path.join(args.cache_dir, "runs", os.path.basename(folder), "bounded")
        command = bench.sample_command(store, spec, part, output,
                                       ["--engine", "memory", *workers])
        if args.cap_mb:
            drop_cached(store)  # read, and charged, inside the group
            with MemoryCap(args.cap_mb << 20) as group:
                run = bench.run_once(group.wrap(command), output)
                run.update(group_peak_mb=(group.peak_bytes() or 0) >> 20,
                           oom_kills=group.oom_kills())
        else:
            run = bench.run_once(command, output)
        run["load_average"] = round(os.getloadavg()[0], 1)
        shutil.rmtree(output, ignore_errors=True)
        with open(figures + ".tmp", "w") as f:
            json.dump(run, f)
        os.replace(figures + ".tmp", figures)
        runs.append(run)
        log(f"part {i + 1}/{len(seeds)}: {run['seeds']:,} subgraphs in {run['wall_s']:.1f} s "
            f"({run['cpu_s']:.1f} CPU-s), peak RSS {run['peak_rss_mb']:,.0f} MB, load "
            f"{run['load_average']}")
    subgraphs = sum(r["seeds"] for r in runs)
    wall, cpu = sum(r["wall_s"] for r in runs), sum(r["cpu_s"] for r in runs)
    return {"parts": len(runs), "parts_of": len(seeds), "subgraphs": subgraphs, "wall_s": round(wall, 1),
            "cpu_s": round(cpu, 1), "subgraphs_per_s": round(subgraphs / wall, 1),
            "subgraphs_per_cpu_s": round(subgraphs / cpu, 1),
            "peak_rss_mb": max(r["peak_rss_mb"] for r in runs),
            "peak_pss_mb": max(r["peak_pss_mb"] for r in runs),
            "output_mb_per_part": round(max(r["output_bytes"] for r in runs) / 2**20),
            "graph_in_memory_mb": runs[0].get("graph_in_memory_mb"),
            "cap_mb": args.cap_mb, "workers": args.job_workers,
            "group_peak_mb": max((r.get("group_peak_mb", 0) for r in runs), default=0),
            "oom_kills": sum(r.get("oom_kills", 0) for r in runs), "runs": runs}


def drop_tables(bench, folder: str, fraction: float, manifest: dict, tables_mb: float
                ) -> None:
    """Deletes the graph's tables (the job reads the store), keeping its schema, spec,
    manifest and the job's seeds; the graph then counts as not generated."""
    bench.seed_subset(folder, manifest, fraction)  # written before its source goes
    with open(os.path.join(folder, DROPPED), "w") as f:
        f.write(str(tables_mb))
    if os.path.exists(os.path.join(folder, bench.COMPLETE)):
        os.remove(os.path.join(folder, bench.COMPLETE))
    keep = {"graph_schema.pbtxt", "sampling_spec.pbtxt", "manifest.json", GENERATION, DROPPED}
    for name in os.listdir(folder):
        if name not in keep and not name.startswith("seeds_fraction"):
            os.remove(os.path.join(folder, name))


def record(result: dict, path: str) -> None:
    """Puts a run into a store_bounded file's runs (sorted by scale; one per scale and
    caps)."""
    document = {"benchmark": "store_bounded", "about": "", "runs": []}
    if os.path.exists(path):
        with open(path) as f:
            document = json.load(f)

    def key(run):
        return run["scale"], run["build"].get("cap_mb"), run["job"].get("cap_mb")

    runs = [r for r in document["runs"] if key(r) != key(result)] + [result]
    document["runs"] = sorted(runs, key=lambda r: (r["scale"], key(r)[1] or 0, key(r)[2] or 0))
    write_json(document, path)


def why_not(args) -> str | None:
    """Why this run cannot be measured as asked (one line), or None."""
    if (args.build_cap_mb or args.cap_mb) and unavailable():
        return unavailable()
    if (args.build_cap_mb or args.cap_mb) and swap_total_bytes():
        return ("--build-cap-mb and --cap-mb need swap off (swapoff -a): under a cap, "
                "memory would go to swap instead of being refused")
    if args.seed_parts < 1:
        return "--seed-parts must be >= 1"
    if args.parts_limit is not None and args.parts_limit < 1:
        return "--parts-limit must be >= 1"
    if args.job_workers is not None and args.job_workers < 1:
        return "--job-workers must be >= 1"
    return None


def main_hook(args, log, bench) -> int:
    """`bench`: pipelines.bench.benchmark (its graph cache, seeds and measured runs; it
    imports this module)."""
    problem = why_not(args)
    if problem:
        print(f"benchmark: error: {problem}", file=sys.stderr)
        return 2
    folder, manifest, generation = ensure_graph_capped(args, bench, log)
    store, build = build_store(args, folder, log)
    tables_mb = sum(os.path.getsize(os.path.join(folder, f)) for f in os.listdir(folder)
                    if os.path.isfile(os.path.join(folder, f))) / 2**20
    if os.path.exists(os.path.join(folder, DROPPED)):  # measured before they were dropped
        with open(os.path.join(folder, DROPPED)) as f:
            tables_mb = float(f.read())
    elif args.drop_tables:
        drop_tables(bench, folder, args.seed_fraction or 1.0, manifest, tables_mb)
    job = run_job(args, bench, folder, store, log)
    result = {"benchmark": "store_bounded", **provenance("benchmark", args.argv),
              "scale": args.scale, "nodes": sum(manifest["nodes"].values()),
              "edges": sum(manifest["edges"].values()),
              "tables_mb": round(tables_mb), "store_mb": round(folder_disk_bytes(store) / 2**20),
              "seed_fraction": args.seed_fraction, "generate": generation, "build": build,
              "job": job, "swap_total_mb": swap_total_bytes() >> 20}
    if args.record:
        record(result, args.record)
    if args.json:
        print(json.dumps(result, indent=1))
    else:
        log(f"scale {args.scale}: generate {generation}; build {build}; job "
            f"{job['subgraphs_per_s']} subgraphs/s, peak RSS {job['peak_rss_mb']} MB")
    return 0
