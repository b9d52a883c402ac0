"""`benchmark`: time the full `sample` job on a synthetic OGBN-MAG-shaped graph.

    benchmark --scale 0.01 --strategy RANDOM_UNIFORM --repeat 3

1. Generates the graph with pipelines.synthetic (or reuses it): graphs are cached
   under <repo>/benchmarks/cache/ (git-ignored), one folder per (scale, seed,
   format, shards, hub edges); a folder counts only once its `.complete` marker
   is written. Inside it, the spec for a strategy is `spec_<STRATEGY>.pbtxt`: the
   benchmark spec (see synthetic.spec_text) with every op's strategy rewritten,
   and each run writes to <cache>/runs/<graph folder>/<STRATEGY>/<i>/ (never inside the
   graph's folder: `sample` refuses that).
2. Runs `python -m pipelines.sample` as a subprocess over every paper as a seed
   (or, with --hub-edges, over the papers the hub author wrote), --repeat times.
3. Prints per run and the median over runs:
     wall       seconds from starting the CLI until it has exited (so the output,
                schema and report are written); includes Python, Beam and pipeline
                start-up, which dominate tiny graphs
     seeds/s    subgraphs written (report `subgraphs_written`) / wall
     edges/s    sum of the report's `edges_sampled_per_op` / wall
     MB/s       bytes of the output folder / wall / 1e6
     cpu        user + system CPU seconds of the whole process tree (steadier than
                wall time on a busy machine)
     peak RSS   max over 50 ms polls of the RSS summed over the `sample` process
                and all its descendants (pipelines/bench/proc_stats.py says what that
                does and does not count)
     PSS        the same for the proportional set size, polled every 200 ms: a
                page shared by n processes counts 1/n in each, so forked workers
                sharing the in-memory engine's graph count it once (the tree's
                physical memory; RSS sums count shared pages once per process)
     RSS + swap the peak of RSS + swapped-out memory, summed alike: with --ram-cap-mb
                (the RAM of each run capped by a memory cgroup, the rest swapped),
                the memory a job held on a machine with less than it needs
     shuffled   (Beam engine) the encoded bytes that entered its GroupByKeys and
                CoGroupByKeys, per subgraph written (the report's `shuffled`,
                counted by unigraph.beam.shuffle; per step in the JSON)
   `--json` prints the same as one JSON line instead.
4. `--link`: link prediction. N pairs (the `cites` edges whose source is in the seed
   fraction) run as a link job (symmetric_link_seed_op on paper, the graph's schema
   with TF-GNN's `_readout` link sets, the benchmark spec's ops), interleaved with a
   node job over the pairs' 2N endpoints as seeds, per engine; the ratio of the two
   wall times is the issue's measure (a link job should cost no more). With
   `--timestamps` every pair has its `cites` edge's time as its cut-off, and both its
   endpoints have it as node seeds (so both jobs sample as of that time).
Extra flags for `sample` go in one string: --extra-args="--direct_num_workers 2".
"""
from __future__ import annotations

import argparse
import glob
import json
import os
import shlex
import shutil
import statistics
import sys
import time

from google.protobuf import text_format

from pipelines import REPO_ROOT, synthetic
from pipelines.bench.provenance import provenance
from pipelines.bench.memory_cap import MemoryCap, swap_total_bytes
from pipelines.bench.memory_cap import unavailable as memory_cap_unavailable
from pipelines.bench.proc_stats import run_measured
from sampler.graph_tensor import wire
from unigraph.encoding import tfrecord
from sampler.plan import sampling_spec_pb2 as ss
from sampler.plan.spec import load_spec
from unigraph.interrupts import interruptible

DEFAULT_CACHE = os.path.join(REPO_ROOT, "benchmarks", "cache")
STRATEGIES = ("RANDOM_UNIFORM", "TOP_K", "RANDOM_WEIGHTED", "LATEST_K")
COMPLETE = ".complete"
METRICS = ("wall_s", "cpu_s", "seeds_per_s", "edges_per_s", "output_mb_per_s", "peak_rss_mb",
           "peak_pss_mb", "peak_rss_swap_mb")
# The Beam engine's reports say what its GroupByKeys moved (unigraph.beam.shuffle).
SHUFFLE_METRICS = ("shuffled_bytes", "shuffled_bytes_per_subgraph")


def graph_key(scale: float, seed: int, fmt: str, shards: int, hub_edges: int,
              timestamps: bool = False, extra_features: bool = False) -> str:
    return (f"mag_scale{scale:g}_seed{seed}_{fmt}_shards{shards}_hub{hub_edges}"
            + ("_timed" if timestamps else "") + ("_features" if extra_features else ""))


def ensure_graph(cache_dir: str, *, scale: float, seed: int, fmt: str, shards: int,
                 hub_edges: int, timestamps: bool = False, extra_features: bool = False,
                 log=print) -> tuple[str, dict]:
    """The folder of a generated graph, generating it unless complete; (folder, manifest).
    `extra_features`: synthetic-graph --extra-features (strings, lists, edge features)."""
    folder = os.path.join(cache_dir, graph_key(scale, seed, fmt, shards, hub_edges,
                                               timestamps, extra_features))
    marker = os.path.join(folder, COMPLETE)
    if not os.path.exists(marker):
        if os.path.exists(folder):
            shutil.rmtree(folder)
        started = time.perf_counter()
        manifest = synthetic.write_streamed(folder, fmt, shards, scale=scale, seed=seed,
                                            hub_edges=hub_edges, timestamps=timestamps,
                                            extra_features=extra_features)
        manifest["total_seconds"] = round(time.perf_counter() - started, 3)
        with open(os.path.join(folder, "manifest.json"), "w") as f:
            json.dump(manifest, f, indent=2)
        open(marker, "w").close()
        log(f"generated {folder} in {manifest['total_seconds']:.2f} s")
    else:
        log(f"reusing {folder}")
    with open(os.path.join(folder, "manifest.json")) as f:
        return folder, json.load(f)


def write_spec(folder: str, strategy: str) -> str:
    """spec_<strategy>.pbtxt: the graph's sampling_spec.pbtxt with every op's strategy set."""
    spec = load_spec(os.path.join(folder, "sampling_spec.pbtxt"))
    for op in spec.sampling_ops:
        op.strategy = ss.SamplingStrategy.Value(strategy)
    path = os.path.join(folder, f"spec_{strategy}.pbtxt")
    with open(path, "w") as f:
        f.write(f"# sampling_spec.pbtxt with every strategy {strategy} (pipelines/bench/benchmark.py)\n")
        f.write(text_format.MessageToString(spec))
    return path


def sample_command(schema: str, spec: str, seeds: str, output: str,
                   extra_args: list[str]) -> list[str]:
    return [sys.executable, "-m", "pipelines.sample", "--graph", schema, "--spec", spec,
            "--seeds", seeds, "--output", output.rstrip("/") + "/", "--quiet", *extra_args]


def folder_bytes(folder: str) -> int:
    total = 0
    for root, _, files in os.walk(folder):
        total += sum(os.path.getsize(os.path.join(root, f)) for f in files)
    return total


class SampleFailed(RuntimeError):
    pass


def counted_report(folder: str) -> dict:
    """What a run report would say, counted from the records of a folder (TF-GNN's sampler
    writes no report): subgraphs, and sampled edges (every edge set but the readout's)."""
    records, edges = 0, 0
    for path in sorted(glob.glob(os.path.join(folder, "*.tfrecord*"))):
        with open(path, "rb") as f:
            for record in tfrecord.iter_records(f, path):
                records += 1
                for key, feature in wire.split_example(record).items():
                    if key.startswith("edges/") and key.endswith(".#size") and \
                            not key.startswith("edges/_readout"):
                        edges += int(wire.decode_feature(feature, key)[1].sum())
    return {"subgraphs_written": records, "seeds_read": records,
            "edges_sampled_per_op": {"all": edges}}


def run_once(cmd: list[str], output: str, timeout: float | None = None, *,
             tfgnn: bool = False, ram_cap_mb: int | None = None) -> dict:
    """One measured run; SampleFailed with the tail of its stderr if it fails.
    `ram_cap_mb`: the run's RAM capped by a memory cgroup, the rest swapped out."""
    if os.path.exists(output):
        shutil.rmtree(output)
    # TF-GNN 1.0.3 imports only with Keras 2 (tf-keras) selected before TensorFlow loads.
    env = dict(os.environ, TF_USE_LEGACY_KERAS="1") if tfgnn else None
    if ram_cap_mb is None:
        stats = run_measured(cmd, cwd=REPO_ROOT, timeout=timeout, env=env)
    else:
        with MemoryCap(ram_cap_mb << 20, swap=True) as cap:
            stats = run_measured(cap.wrap(cmd), cwd=REPO_ROOT, timeout=timeout, env=env)
    report_path = os.path.join(output, "sample_report.json")
    if stats.returncode != 0 or not (tfgnn or os.path.exists(report_path)):
        tail = "\n".join((stats.stderr or stats.stdout).strip().splitlines()[-5:])
        raise SampleFailed(f"exited with status {stats.returncode}: {tail}")
    if tfgnn:
        report = counted_report(output)
    else:
        with open(report_path) as f:
            report = json.load(f)
    wall = stats.wall_seconds
    edges = sum(report.get("edges_sampled_per_op", {}).values())
    out_bytes = folder_bytes(output)
    shuffled = report.get("shuffled")
    subgraphs = report.get("subgraphs_written", 0)
    return {
        "wall_s": round(wall, 3),
        "cpu_s": round(stats.cpu_seconds, 3),
        "seeds": report.get("subgraphs_written", 0),
        "seeds_read": report.get("seeds_read", 0),
        "edges_sampled": edges,
        "output_bytes": out_bytes,
        "seeds_per_s": round(report.get("subgraphs_written", 0) / wall, 1),
        "edges_per_s": round(edges / wall, 1),
        "output_mb_per_s": round(out_bytes / wall / 1e6, 3),
        "peak_rss_mb": round(stats.peak_rss_bytes / 2**20, 1),
        "peak_pss_mb": round(stats.peak_pss_bytes / 2**20, 1),
        "peak_rss_swap_mb": round(stats.peak_rss_swap_bytes / 2**20, 1),
        "max_processes": stats.max_processes,
        "pipeline_wall_s": report.get("wall_time_s"),
        "graph_in_memory_mb": report.get("graph_in_memory_mb"),  # the memory engine's
        **({} if shuffled is None else {  # the Beam engine's
            "shuffled_bytes": shuffled["bytes"],
            "shuffled_bytes_per_subgraph": round(shuffled["bytes"] / max(subgraphs, 1), 1),
            "shuffled_elements": shuffled["elements"],
            "shuffled_by_step": shuffled["by_step"]}),
    }


def median_of(runs: list[dict]) -> dict:
    return {k: round(statistics.median(r[k] for r in runs), 3)
            for k in METRICS + SHUFFLE_METRICS if all(k in r for r in runs)}


def format_run(label: str, r: dict) -> str:
    return (f"{label}: wall {r['wall_s']:.2f} s (cpu {r['cpu_s']:.2f} s), "
            f"{r['seeds_per_s']:,.1f} seeds/s, "
            f"{r['edges_per_s']:,.0f} sampled edges/s, {r['output_mb_per_s']:.2f} MB/s out, "
            f"peak RSS {r['peak_rss_mb']:,.0f} MB (PSS {r['peak_pss_mb']:,.0f} MB"
            + (f", RSS + swap {r['peak_rss_swap_mb']:,.0f} MB"
               if r.get("peak_rss_swap_mb", 0) > r["peak_rss_mb"] else "") + ")"
            + (f", shuffled {r['shuffled_bytes_per_subgraph'] / 1e3:,.1f} kB per subgraph"
               if "shuffled_bytes_per_subgraph" in r else ""))


def make_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="benchmark", description=__doc__.split("\n\n")[0],
        epilog="examples:\n  benchmark --scale 0.01\n"
               "  benchmark --scale 0.1 --strategy TOP_K --repeat 1 --json\n"
               "  benchmark --scale 0.01 --hub-edges 100000 "
               "--extra-args='--direct_num_workers 2 --direct_running_mode multi_processing'",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scale", type=float, default=0.01,
                        help="graph scale, 1.0 = OGBN-MAG (default 0.01)")
    parser.add_argument("--seed", type=int, default=0, help="graph generator seed (default 0)")
    parser.add_argument("--strategy", choices=STRATEGIES, default="RANDOM_UNIFORM",
                        help="strategy written into every op of the spec (default RANDOM_UNIFORM)")
    parser.add_argument("--format", choices=sorted(synthetic.FORMATS), default="parquet",
                        help="table format of the generated graph (default parquet)")
    parser.add_argument("--shards", type=int, default=1, help="files per table (default 1)")
    parser.add_argument("--hub-edges", type=int, default=0, metavar="N",
                        help="add a hub author with N writes edges and use its papers as seeds")
    parser.add_argument("--engine", default="memory", metavar="NAMES",
                        help="what runs the job, comma-separated and interleaved run by run: "
                             "memory, beam (our engines), memory-timed, beam-timed (the same "
                             "with every paper's year as its cut-off; needs --timestamps), "
                             "floor (a plain single-process numpy program, "
                             "pipelines/bench/floor_sampler.py), tfgnn (TF-GNN's "
                             "tfgnn_sampler; needs --format tfrecord); the first is the "
                             "reference for the ratios (default memory)")
    parser.add_argument("--timestamps", action="store_true",
                        help="generate the graph with synthetic-graph --timestamps (years on "
                             "papers and edges); needed by --strategy LATEST_K and the "
                             "memory-timed and beam-timed engines")
    parser.add_argument("--cutoff", type=int, metavar="T",
                        help="the -timed engines give every paper this cut-off instead of its "
                             "own year (e.g. 9999: nothing excluded, the cost of the machinery "
                             "alone)")
    parser.add_argument("--seed-fraction", type=float, metavar="F",
                        help="sample only about this fraction of the papers (chosen by a hash "
                             "of the id), e.g. 0.1")
    parser.add_argument("--repeat", type=int, default=3, metavar="N",
                        help="runs to time; the median is reported too (default 3)")
    parser.add_argument("--extra-args", default="", metavar="ARGS",
                        help="one string of extra flags for `sample`; write it with '=': "
                             "--extra-args='--direct_num_workers 2'")
    parser.add_argument("--keep-output", action="store_true",
                        help="keep every run's output under CACHE_DIR/runs/ (default: "
                             "deleted once measured)")
    parser.add_argument("--cache-dir", default=DEFAULT_CACHE, metavar="DIR",
                        help="where graphs and run outputs go (default benchmarks/cache)")
    parser.add_argument("--timeout", type=float, metavar="S", help="seconds per run before it "
                        "is killed (default: none)")
    parser.add_argument("--ram-cap-mb", type=int, metavar="MB",
                        help="run each contender with its RAM capped at MB by a memory "
                             "cgroup (root) and the rest swapped out, to measure on this "
                             "machine a job that needs more memory than it has: the peak "
                             "is then RSS + swap (needs swap space, e.g. a swap file)")
    parser.add_argument("--link", action="store_true",
                        help="time a link job over N pairs against a node job over their 2N "
                             "endpoints (with --timestamps: each at its edge's time as "
                             "cut-off; see the module docstring)")
    parser.add_argument("--store", action="store_true",
                        help="the memory engine from the tables and from a graph store, and "
                             "the store under a memory cap (pipelines/bench/store_benchmark.py)")
    parser.add_argument("--cap-mb", type=int, metavar="MB",
                        help="--store, --bounded: the job's memory cap (--store's default: "
                             "the interpreter's footprint "
                             "plus half the graph's in-memory size)")
    parser.add_argument("--bounded", action="store_true",
                        help="a graph larger than the machine: generate it and build its "
                             "store each in a process under --build-cap-mb, then sample the "
                             "store under --cap-mb (pipelines/bench/bounded_benchmark.py)")
    parser.add_argument("--build-cap-mb", type=int, metavar="MB",
                        help="--bounded: the memory cgroup of generating and building, and "
                             "the build's --memory-limit (default: no cap, the default limit)")
    parser.add_argument("--seed-parts", type=int, default=1, metavar="K",
                        help="--bounded: the job's seeds in K processes of one part each, "
                             "each part's output deleted once measured (disk; default 1)")
    parser.add_argument("--parts-limit", type=int, metavar="K",
                        help="--bounded: measure at most K of the --seed-parts (the parts "
                             "measured are kept: a later run goes on from the next)")
    parser.add_argument("--job-workers", type=int, metavar="N",
                        help="--bounded: the job's --workers (default: sample's, one per "
                             "core); under a cap smaller than the store, workers beyond the "
                             "cores overlap their waits for the disk")
    parser.add_argument("--drop-tables", action="store_true",
                        help="--bounded: delete the graph's tables once its store is built "
                             "(the job reads the store; disk)")
    parser.add_argument("--record", metavar="FILE",
                        help="--bounded: also put the run into FILE's runs (e.g. "
                             "docs/benchmarks/store_bounded.json)")
    parser.add_argument("--api", action="store_true",
                        help="online sampling through sampler.api against the memory engine "
                             "on one core (pipelines/bench/api_benchmark.py)")
    parser.add_argument("--minibatch", action="store_true",
                        help="merged mini-batches (sampling, HeteroData, the loader with 1 and "
                             "2 workers) beside DGL's sampler with --dgl-python "
                             "(pipelines/bench/minibatch_benchmark.py)")
    parser.add_argument("--latency", action="store_true",
                        help="--api: also the milliseconds per batch of 512 random seeds")
    parser.add_argument("--dgl-python", metavar="PYTHON",
                        help="--api, --minibatch: an interpreter with DGL installed, to run DGL's "
                             "sample_neighbors beside (pipelines/bench/dgl_benchmark.py)")
    parser.add_argument("--json", action="store_true",
                        help="print one JSON line (config, runs, median) instead of text")
    return parser


CONTENDERS = ("memory", "beam", "memory-timed", "beam-timed", "floor", "tfgnn")
TIMED = "-timed"  # an engine of ours over the seeds with cut-offs (timed_seeds)


def contender_command(name: str, folder: str, spec: str, seeds: str, output: str,
                      extra: list[str], timed_seeds: str | None = None) -> list[str]:
    """The command that runs the job with `name`: one of our engines, the plain numpy
    floor (pipelines/bench/floor_sampler.py) or TF-GNN's own sampler."""
    schema = os.path.join(folder, "graph_schema.pbtxt")
    if name in ("memory", "beam"):
        return sample_command(schema, spec, seeds, output, ["--engine", name, *extra])
    if name.endswith(TIMED):  # every paper, its own year (or --cutoff) as its cut-off
        timed = timed_seeds or glob.glob(os.path.join(folder, "timed_seeds.*"))[0]
        return sample_command(schema, spec, timed, output,
                              ["--engine", name[:-len(TIMED)], *extra])
    if name == "floor":
        return [sys.executable, "-m", "pipelines.bench.floor_sampler", "--graph", schema,
                "--spec", spec, "--seeds", seeds, "--output", output]
    # TF-GNN's sampler writes a file pattern; its report is ours to make (see run_once).
    return [sys.executable, "-m", "tensorflow_gnn.experimental.sampler.beam.sampler",
            f"--graph_schema={schema}", f"--sampling_spec={spec}", f"--input_seeds={seeds}",
            f"--output_samples={os.path.join(output, 'samples.tfrecords@4')}",
            "--runner=DirectRunner", *extra]


def seed_subset(folder: str, manifest: dict, fraction: float) -> str:
    """A seeds file of about `fraction` of the papers, chosen by a hash of the id (so the
    same papers for every run and engine); written once into the graph's folder."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    from sampler.core.rng import fingerprint
    from unigraph.tables import read_seeds

    path = os.path.join(folder, f"seeds_fraction{fraction:g}.parquet")
    if not os.path.exists(path):
        ids = np.concatenate([b.ids for b in read_seeds(
            os.path.join(folder, manifest["seeds"]["all"]))])
        keep = (fingerprint(ids) % np.uint64(1_000_000)) < np.uint64(int(fraction * 1e6))
        temp = path + ".tmp"
        pq.write_table(pa.table({"id": pa.array(ids[keep].tolist(), pa.binary())}), temp)
        os.replace(temp, path)
    return path


def constant_cutoff_seeds(folder: str, manifest: dict, cutoff: int) -> str:
    """Every paper with the same cut-off, written once into the graph's folder."""
    import numpy as np

    from unigraph.columnar.batches import NodeBatch
    from unigraph.tables import read_seeds
    from unigraph.tables.layout import TimeColumn, seeds_layout
    from unigraph.tables.writers import write_table

    path = os.path.join(folder, f"seeds_cutoff{cutoff}.parquet")
    if not os.path.exists(path):
        ids = np.concatenate([b.ids for b in read_seeds(
            os.path.join(folder, manifest["seeds"]["all"]))])
        temp = path + ".tmp.parquet"
        write_table(temp, seeds_layout(TimeColumn("timestamp", "int64")),
                    [NodeBatch("seeds", ids, np.arange(len(ids), dtype=np.int64),
                               {"timestamp": np.full(len(ids), cutoff, np.int64)})])
        os.replace(temp, path)
    return path


@interruptible("benchmark", "interrupted")
def main(argv: list[str] | None = None) -> int:
    args = make_parser().parse_args(argv)
    args.argv = sys.argv[1:] if argv is None else list(argv)
    if args.repeat < 1:
        print("benchmark: error: --repeat must be >= 1", file=sys.stderr)
        return 2
    unknown = [e for e in args.engine.split(",") if e not in CONTENDERS]
    if unknown:
        print(f"benchmark: error: --engine {unknown[0]}: choose from {', '.join(CONTENDERS)}",
              file=sys.stderr)
        return 2
    needs_time = args.strategy == "LATEST_K" or any(e.endswith(TIMED) for e in
                                                    args.engine.split(","))
    if needs_time and not args.timestamps:
        print("benchmark: error: LATEST_K and the -timed engines need --timestamps",
              file=sys.stderr)
        return 2
    if "tfgnn" in args.engine.split(",") and args.format != "tfrecord":
        # TF-GNN reads Parquet not at all, and CSV with one value per cell: the graph's
        # papers carry 128-float vectors.
        print("benchmark: error: --engine tfgnn needs --format tfrecord", file=sys.stderr)
        return 2
    if args.seed_fraction is not None and not 0 < args.seed_fraction <= 1:
        print("benchmark: error: --seed-fraction must be in (0, 1]", file=sys.stderr)
        return 2
    if args.ram_cap_mb is not None:
        if args.ram_cap_mb < 64:
            why = "--ram-cap-mb must be >= 64"
        elif not swap_total_bytes():  # a job over the cap would be killed, not measured
            why = ("--ram-cap-mb needs swap space: this machine has none (e.g. fallocate, "
                   "mkswap and swapon a file)")
        else:
            why = memory_cap_unavailable()
        if why:
            print(f"benchmark: error: {why}", file=sys.stderr)
            return 2
    log = (lambda *a: print(*a, file=sys.stderr)) if args.json else print
    if args.bounded:
        from pipelines.bench.bounded_benchmark import main_hook as bounded_hook

        return bounded_hook(args, log, sys.modules[__name__])
    folder, manifest = ensure_graph(args.cache_dir, scale=args.scale, seed=args.seed,
                                    fmt=args.format, shards=args.shards,
                                    hub_edges=args.hub_edges, timestamps=args.timestamps,
                                    log=log)
    spec = write_spec(folder, args.strategy)
    if args.seed_fraction is not None:
        seeds = seed_subset(folder, manifest, args.seed_fraction)
    else:
        seeds = os.path.join(folder, manifest["seeds"]["hub" if args.hub_edges else "all"])
    extra = shlex.split(args.extra_args)
    if args.minibatch:
        from pipelines.bench.minibatch_benchmark import main_hook as minibatch_hook

        return minibatch_hook(args, folder, spec, seeds, log)
    if args.api:
        from pipelines.bench.api_benchmark import main_hook as api_hook

        return api_hook(args, folder, spec, seeds, log)
    if args.store:
        from pipelines.bench.store_benchmark import main_hook

        return main_hook(args, folder, spec, seeds, lambda cmd, out: run_once(cmd, out),
                         sample_command, log)
    timed_seeds = (constant_cutoff_seeds(folder, manifest, args.cutoff)
                   if args.cutoff is not None and args.timestamps else None)
    contenders = args.engine.split(",")
    if args.link:
        if any(c not in ("memory", "beam") for c in contenders):
            print("benchmark: error: --link runs our engines only (memory, beam)",
                  file=sys.stderr)
            return 2
        link_schema, link_spec, pairs, endpoints = link_inputs(
            folder, spec, args.strategy, args.seed_fraction or 1.0, timed=args.timestamps)
        variants = {}
        for name in contenders:
            variants[f"{name}/link"] = sample_command(link_schema, link_spec, pairs, "", [
                "--engine", name, *extra])
            variants[f"{name}/node"] = sample_command(
                os.path.join(folder, "graph_schema.pbtxt"), spec, endpoints, "",
                ["--engine", name, *extra])
        contenders = list(variants)
    runs = {name: [] for name in contenders}
    for i in range(args.repeat):
        for name in contenders:  # interleaved: the same machine state for every contender
            output = os.path.join(args.cache_dir, "runs", os.path.basename(folder),
                                  args.strategy, name.replace("/", "-"), str(i))
            if args.link:
                cmd = variants[name]
                cmd[cmd.index("--output") + 1] = output.rstrip("/") + "/"
            else:
                cmd = contender_command(name, folder, spec, seeds, output, extra, timed_seeds)
            try:
                run = run_once(cmd, output, args.timeout, tfgnn=(name == "tfgnn"),
                               ram_cap_mb=args.ram_cap_mb)
            except SampleFailed as e:
                print(f"benchmark: error: {name} run {i + 1}: {e}", file=sys.stderr)
                print(f"benchmark: command: {shlex.join(cmd)}", file=sys.stderr)
                return 1
            if not args.keep_output:  # a scale-0.25 run writes about 10 GB
                shutil.rmtree(output, ignore_errors=True)
            run["engine"] = name
            runs[name].append(run)
            if not args.json:
                graph_mb = run["graph_in_memory_mb"]
                print(format_run(f"{name} run {i + 1}/{args.repeat}", run)
                      + (f", graph in memory {graph_mb:,.0f} MB" if graph_mb else ""))
    medians = {name: median_of(r) for name, r in runs.items()}
    first = runs[contenders[0]][0]
    config = {"scale": args.scale, "seed": args.seed, "strategy": args.strategy,
              "timestamps": args.timestamps, "cutoff": args.cutoff,
              "format": args.format, "shards": args.shards, "hub_edges": args.hub_edges,
              "seed_fraction": args.seed_fraction, "engines": contenders,
              "extra_args": args.extra_args, "graph": folder,
              "nodes": manifest["nodes"], "edges": manifest["edges"],
              "seeds": first["seeds_read"]}
    if args.ram_cap_mb is not None:
        config.update(ram_cap_mb=args.ram_cap_mb, swap_mb=round(swap_total_bytes() / 2**20))
    if args.json:
        print(json.dumps({"benchmark": "engines", **provenance("benchmark", argv),
                          "config": config, "runs": [r for n in contenders for r in runs[n]],
                          "median": medians[contenders[0]], "medians": medians}))
    else:
        print(f"graph: {sum(manifest['nodes'].values()):,} nodes, "
              f"{sum(manifest['edges'].values()):,} edges ({args.format}); "
              f"{config['seeds']:,} seeds; strategy {args.strategy}")
        if args.link:
            for name in args.engine.split(","):
                link, node = medians[f"{name}/link"], medians[f"{name}/node"]
                print(f"{name}: link job over {runs[f'{name}/link'][0]['seeds']:,} pairs / node "
                      f"job over their endpoints: wall {link['wall_s'] / node['wall_s']:.2f}x, "
                      f"cpu {link['cpu_s'] / node['cpu_s']:.2f}x, peak RSS "
                      f"{link['peak_rss_mb'] / node['peak_rss_mb']:.2f}x")
        for name in contenders:
            ratio = medians[name]["wall_s"] / medians[contenders[0]]["wall_s"]
            print(format_run(f"{name}: median of {args.repeat}", medians[name])
                  + (f" ({ratio:.2f}x {contenders[0]}'s wall time)" if name != contenders[0]
                     else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())


LINK_READOUT = """
node_sets { key: "_readout" value { } }
edge_sets { key: "_readout/source" value { source: "paper" target: "_readout" } }
edge_sets { key: "_readout/target" value { source: "paper" target: "_readout" } }
"""


def link_inputs(folder: str, spec_path: str, strategy: str, fraction: float,
                timed: bool = False) -> tuple[str, str, str, str]:
    """(schema, spec, pairs, endpoint seeds) of the link benchmark, written once into the
    graph's folder: the schema with TF-GNN's link sets, the spec seeded by pairs of
    papers, the `cites` edges whose source is in the fraction as pairs, and their 2N
    endpoints as node seeds (in pair order, repeats kept); `timed`: each pair and its
    two endpoints with the edge's time as their `timestamp` cut-off."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    from sampler.core.rng import fingerprint
    from unigraph.schema import load_schema
    from unigraph.tables import read_set
    from unigraph.tables.layout import TimeColumn

    schema = os.path.join(folder, "graph_schema_link.pbtxt")
    if not os.path.exists(schema):
        with open(os.path.join(folder, "graph_schema.pbtxt")) as f:
            text = f.read()
        with open(schema + ".tmp", "w") as f:
            f.write(text + LINK_READOUT)
        os.replace(schema + ".tmp", schema)
    spec = load_spec(spec_path)
    link_spec = ss.SamplingSpec()
    link_spec.symmetric_link_seed_op.op_name = spec.seed_op.op_name
    link_spec.sampling_ops.extend(spec.sampling_ops)
    spec_out = os.path.join(folder, f"spec_link_{strategy}.pbtxt")
    with open(spec_out, "w") as f:
        f.write(f"# spec_{strategy}.pbtxt seeded by pairs of papers (pipelines/bench/benchmark.py)\n")
        f.write(text_format.MessageToString(link_spec))
    kind = "timed_" if timed else ""
    pairs = os.path.join(folder, f"{kind}pairs_fraction{fraction:g}.parquet")
    endpoints = os.path.join(folder, f"{kind}pair_endpoints_fraction{fraction:g}.parquet")
    if not os.path.exists(endpoints):
        column = TimeColumn("timestamp", "int64") if timed else None
        batches = list(read_set(load_schema(os.path.join(folder, "graph_schema.pbtxt")),
                                "edges", "cites", timestamp=column))
        sources = np.concatenate([b.sources for b in batches])
        targets = np.concatenate([b.targets for b in batches])
        keep = (fingerprint(sources) % np.uint64(1_000_000)) < np.uint64(int(fraction * 1e6))
        sources, targets = sources[keep], targets[keep]
        columns = {"source": pa.array(sources.tolist(), pa.binary()),
                   "target": pa.array(targets.tolist(), pa.binary())}
        ends = {"id": pa.array(np.stack([sources, targets], axis=1).reshape(-1).tolist(),
                               pa.binary())}
        if timed:
            times = np.concatenate([b.timestamps for b in batches])[keep]
            columns["timestamp"] = pa.array(times, pa.int64())
            ends["timestamp"] = pa.array(np.repeat(times, 2), pa.int64())
        pq.write_table(pa.table(columns), pairs + ".tmp")
        os.replace(pairs + ".tmp", pairs)
        pq.write_table(pa.table(ends), endpoints + ".tmp")
        os.replace(endpoints + ".tmp", endpoints)
    return schema, spec_out, pairs, endpoints
