"""docs/performance.md from the measurements in docs/benchmarks/*.json.

Each file holds one measuring command's JSON output with its provenance (date,
machine, load average, command: pipelines/bench/provenance.py) and a `benchmark` key that
names its renderer here. A file with no renderer is an error, so a new measurement
cannot silently stay off the page. Figures are formatted, never recomputed from
anything but the file; ratios are computed from the file's own numbers.
"""
from __future__ import annotations

import re
from typing import Callable, Optional

Table = list[list[str]]


def table(header: list[str], rows: Table) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def number(value, digits: int = 0) -> str:
    if value is None:
        return "n/a"
    return f"{value:,.{digits}f}"


def provenance_line(data: dict, source: str) -> str:
    load = data.get("load_average")
    load_text = f", load average {load}" if load is not None else ""
    return (f"*Measured {data.get('date', 'n/a')} on {data.get('machine', 'n/a')}{load_text}, "
            f"by `{data.get('command', 'n/a')}` (`docs/{source}`).*")


# ---- renderers: (data, source) -> markdown ---------------------------------------------

def engines(data: dict, source: str) -> str:
    """`benchmark --engine A,B,... --json`: the whole job per contender (medians); for the
    Beam engine also the bytes its GroupByKeys shuffled per subgraph, where measured."""
    config, medians = data["config"], data["medians"]
    first = medians[config["engines"][0]]
    shuffled = any("shuffled_bytes_per_subgraph" in medians[name] for name in config["engines"])
    capped = config.get("ram_cap_mb") is not None
    rows = []
    for name in config["engines"]:
        m = medians[name]
        seeds_per_s = m["seeds_per_s"] or (config["seeds"] / m["wall_s"])
        row = [name, number(m["wall_s"], 2), number(m["cpu_s"], 2),
               f"{m['cpu_s'] / first['cpu_s']:.2f}x", number(seeds_per_s),
               number(m["peak_rss_mb"]), number(m["peak_pss_mb"])]
        if capped:
            row.append(number(m["peak_rss_swap_mb"]))
        if shuffled:
            per = m.get("shuffled_bytes_per_subgraph")
            row.append("" if per is None else number(per / 1e3, 1))
        rows.append(row)
    repeat = len(data["runs"]) // max(1, len(config["engines"]))
    about = (f"Scale {config['scale']} ({sum(config['nodes'].values()):,} nodes, "
             f"{sum(config['edges'].values()):,} edges, {config['format']} tables), "
             f"{config['seeds']:,} seeds, strategy {config['strategy']}; median of "
             f"{repeat} interleaved run(s). CPU is user + system seconds of the whole "
             f"process tree."
             + (" `tfgnn` is TF-GNN's `tfgnn_sampler` on the same graph."
                if "tfgnn" in config["engines"] else "")
             + (" Shuffled: the encoded bytes that entered the Beam engine's GroupByKeys, "
                "per subgraph (the report's `shuffled`)." if shuffled else "")
             + (f" RAM capped at {number(config['ram_cap_mb'])} MB by a memory cgroup and the "
                f"rest swapped out ({number(config['swap_mb'] / 1024)} GB of swap): the "
                f"memory the job held is the peak of RSS + swap; swapping makes its times "
                f"no measure of speed." if capped else ""))
    header = (["contender", "wall s", "CPU s", "CPU vs first", "subgraphs/s", "peak RSS MB",
               "peak PSS MB"] + (["peak RSS + swap MB"] if capped else [])
              + (["shuffled kB/subgraph"] if shuffled else []))
    return "\n\n".join([about, table(header, rows), provenance_line(data, source)])


def api(data: dict, source: str) -> str:
    """`benchmark --api --json`: online sampling beside the offline memory engine."""
    median = data["median"]
    offline = median["offline"]
    parts = []
    if "online" in median and "offline" in median:
        rows = [["offline: `sample --engine memory --workers 1`",
                 number(offline["subgraphs_per_s"]), "1.00x", "n/a",
                 number(offline["subgraphs_per_cpu_s"])]]
        for kind, what in (("arrays", "online, sampled and assembled"),
                           ("graphs", "online, numpy GraphTensors"),
                           ("examples", "online, tf.Example bytes")):
            m = median["online"][kind]
            rows.append([what, number(m["subgraphs_per_s"]),
                         f"{m['subgraphs_per_s'] / offline['subgraphs_per_s']:.2f}x",
                         number(m["edges_per_cpu_s"] / 1e6, 2),
                         number(m["subgraphs_per_cpu_s"])])
        parts += [f"Scale {data['scale']}, {number(offline['subgraphs'])} seeds in batches of "
                  f"{data['batch_size']}, one core; median of {data['repeat']} interleaved "
                  f"round(s).",
                  table(["", "subgraphs/s", "vs offline", "M sampled edges / CPU-s",
                         "subgraphs / CPU-s"], rows)]
    if "latency" in data:
        latency = data["latency"]
        with_cpu = "median_cpu_ms" in latency["arrays"]
        labels = {kind: kind for kind in ("arrays", "graphs", "examples")}
        if "arrays_threads" in latency:
            labels["arrays_threads"] = f"arrays, `load_graph(threads={latency['threads']})`"
        if "arrays_avx512" in latency:
            labels["arrays_avx512"] = "arrays, numpy's AVX-512 sort (`SAMPLER_NUMPY_AVX512=1`)"
        rows = [[label, number(latency[kind]["median_ms"], 1),
                 number(latency[kind]["p95_ms"], 1)]
                + ([number(latency[kind]["median_cpu_ms"], 1)] if with_cpu else [])
                for kind, label in labels.items()]
        parts += [f"One batch of {data['batch_size']} random seeds, once the graph is loaded "
                  f"(scale {data['scale']}: {number(latency['graph_mb'])} MB in memory, "
                  f"loaded in {number(latency['load_s'], 1)} s)"
                  + (f", {latency['batches']} batches"
                     + (f" in each of {latency['rounds']} rounds (medians of the rounds)"
                        if latency.get("rounds", 1) > 1 else "")
                     + ", one thread unless said. Wall time "
                     "counts waiting for a core where other jobs share the machine (see the "
                     "load average below), and a second thread helps only where a core is "
                     "free:" if "batches" in latency else ":"),
                  table(["returned as", "median ms", "p95 ms"]
                        + (["median CPU ms"] if with_cpu else []), rows)]
    if "dgl" in data:
        dgl = data["dgl"]
        ours = median["online"]["arrays"]
        rows = [[f"DGL {dgl['dgl']} `sample_neighbors`, merged frontiers of "
                 f"{data['batch_size']} seeds", number(dgl["merged"]["seeds"] / dgl["merged"]["cpu_s"]),
                 number(dgl["merged"]["edges_per_cpu_s"] / 1e6, 2)],
                [f"DGL {dgl['dgl']} `sample_neighbors`, one seed per call",
                 number(dgl["per_seed"]["seeds"] / dgl["per_seed"]["cpu_s"]),
                 number(dgl["per_seed"]["edges_per_cpu_s"] / 1e6, 2)],
                ["this sampler online: per-seed subgraphs (nothing merged), arrays",
                 number(ours["subgraphs_per_cpu_s"]), number(ours["edges_per_cpu_s"] / 1e6, 2)]]
        parts += [f"DGL's C++ sampler through the same spec on the same tables (its own "
                  f"interpreter, torch {dgl['torch']}): a merged frontier samples each "
                  f"node once for all seeds of a batch, so it samples fewer edges than "
                  f"per-seed subgraphs do.",
                  table(["", "seeds / CPU-s", "M sampled edges / CPU-s"], rows)]
    parts.append(provenance_line(data, source))
    return "\n\n".join(parts)


def install(data: dict, source: str) -> str:
    """`python -m pipelines.bench.bench_install --json`: fresh virtualenvs per requirement."""
    rows = [[row["variant"], f"`{row['requirement']}`", number(row["install_s"], 1),
             number(row["venv_mb"]), str(row["packages"]), number(row["sample_help_s"], 2),
             ", ".join(k for k, v in row["has"].items() if v) or "none"]
            for row in data["rows"]]
    notes = f" {data['notes'].capitalize()}." if data.get("notes") else ""
    return "\n\n".join([
        "A fresh virtualenv per requirement: install time, its size on disk, the packages "
        "in it, and how long `sample --help` takes to start." + notes,
        table(["variant", "requirement", "install s", "venv MB", "packages",
               "`sample --help` s", "heavy libraries in it"], rows),
        provenance_line(data, source)])


def store(data: dict, source: str) -> str:
    """`benchmark --store --json`: the job from tables and from a graph store, and under
    a memory cap; and the build's peak memory."""
    rows = []
    for run in data["runs"]:
        m = run["median"]
        capped = run.get("capped") or {}
        rows.append([str(run["scale"]), number(run["graph_in_memory_mb"]),
                     number(run["tables_mb"]), number(run["store_mb"]),
                     number(m["tables"]["startup_s"], 1), number(m["store"]["startup_s"], 1),
                     number(m["tables"]["wall_s"], 1), number(m["store"]["wall_s"], 1),
                     f"{m['tables']['wall_s'] / m['store']['wall_s']:.2f}x",
                     number(m["tables"].get("sampling_cpu_s"), 1),
                     number(m["store"].get("sampling_cpu_s"), 1),
                     f"{number(capped.get('cap_mb'))} MB: {number(capped.get('wall_s'), 1)} s"
                     if capped.get("wall_s") else "n/a"])
    parts = [data["about"],
             table(["scale", "graph in memory MB", "tables MB", "store MB",
                    "start-up s, tables", "start-up s, store", "job s, tables",
                    "job s, store", "speed-up", "sampling CPU-s, tables",
                    "sampling CPU-s, store", "store under a cap"], rows)]
    parts += [provenance_line(run, source) + (f" {run['note']}." if run.get("note") else "")
              for run in data["runs"]]
    builds = [[str(b["scale"]), b.get("variant", ""), number(b.get("wall_s"), 1),
               number(b.get("user_cpu_s"), 1), number(b["peak_rss_mb"]),
               number(b["graph_in_memory_mb"], 1),
               f"{b['peak_rss_mb'] / b['graph_in_memory_mb']:.2f}", number(b["store_mb"]),
               number(b["tables_mb"]), number(b.get("load_average"), 1)]
              for b in data.get("builds", [])]
    if builds:
        parts += ["Building a store (`unigraph-convert --format store`): peak RSS of the "
                  "building process against the graph's in-memory size:",
                  table(["scale", "build", "wall s", "user CPU s", "peak RSS MB",
                         "graph in memory MB",
                         "peak / graph", "store MB", "tables MB", "load average"], builds)]
        if data.get("builds_about"):
            parts.append(f"*{data['builds_about']}.*")
    return "\n\n".join(parts)


def store_bounded(data: dict, source: str) -> str:
    """`benchmark --bounded --json`, run by run: a graph generated, built into a store and
    sampled, each step in its own process, under memory cgroups where capped; the first
    run is the reference the others' sampling rate is compared with."""
    runs = data["runs"]
    first = runs[0]
    steps, sizes = [], []

    def cap(step):
        return number(step.get("cap_mb")) if step.get("cap_mb") else "none"

    listed = []  # the generate and build steps shown: runs of one graph under other job caps
    for run in runs:
        job = run["job"]
        for name, step in (("generate", run["generate"]), ("build", run["build"]),
                           ("sample", job)):
            if name != "sample":
                if (run["scale"], name, step) in listed:
                    continue
                listed.append((run["scale"], name, step))
            steps.append([str(run["scale"]), name, cap(step), number(step.get("wall_s"), 1),
                          number(step.get("cpu_s"), 1), number(step.get("peak_rss_mb")),
                          number(step.get("group_peak_mb")) if step.get("cap_mb") else "",
                          str(step.get("oom_kills", "")) if step.get("cap_mb") else ""])
        rate = job["subgraphs"] / job["wall_s"]
        first_rate = first["job"]["subgraphs"] / first["job"]["wall_s"]
        cpu_rate = job["subgraphs"] / job["cpu_s"]
        first_cpu_rate = first["job"]["subgraphs"] / first["job"]["cpu_s"]
        sizes.append([str(run["scale"]), f"{run['nodes']:,}", f"{run['edges']:,}",
                      number(run["tables_mb"]), number(run["store_mb"]),
                      number(run["build"].get("disk_peak_mb")),
                      f"{job['subgraphs']:,} in {job['parts']}" + (
                          f" of {job['parts_of']}" if job.get("parts_of", job["parts"])
                          != job["parts"] else ""),
                      cap(job), str(job.get("workers") or "one per core"), number(rate, 1),
                      number(cpu_rate, 1), f"{rate / first_rate:.2f}x",
                      f"{cpu_rate / first_cpu_rate:.2f}x"])
    largest = max(runs, key=lambda r: r["edges"])
    per_million = 1e6 / largest["edges"]
    parts = [data["about"],
             table(["scale", "step", "cap MB", "wall s", "CPU s", "peak RSS MB",
                    "cgroup peak MB", "killed"], steps),
             table(["scale", "nodes", "edges", "tables MB", "store MB", "build's disk peak MB",
                    "subgraphs (processes)", "job's cap MB", "job's workers", "subgraphs/s",
                    "subgraphs per CPU-s",
                    f"subgraphs/s vs scale {first['scale']}",
                    f"per CPU-s vs scale {first['scale']}"], sizes),
             f"Per million edges of the largest graph (scale {largest['scale']}): "
             f"{largest['tables_mb'] * per_million:,.0f} MB of Parquet tables, "
             f"{largest['store_mb'] * per_million:,.0f} MB of store, and "
             f"{largest['build']['disk_peak_mb'] * per_million:,.0f} MB of disk at the "
             f"build's peak (store and scratch runs, beside the tables)."]
    parts += [provenance_line(run, source) + (f" {run['note']}." if run.get("note") else "")
              for run in runs]
    return "\n\n".join(parts)


def fuzz(data: dict, source: str) -> str:
    """`make fuzz` (tests/fuzz/long_run.py): mutated inputs, stores and output folders'
    state files through the five commands."""
    counts = data["counts"]
    groups = {"base": "inputs mutated from", "command": "run by", "exit": "exit status",
              "sample": "sample runs (table bases)", "store": "store cases",
              "sample-stats": "sample-stats runs"}
    rows = [[groups[key.split(":")[0]], key.split(":", 1)[1], f"{value:,}"]
            for key, value in sorted(counts.items()) if key.split(":")[0] in groups]
    findings = data.get("findings", {})
    listed = "".join(f"\n- {name}" for name in sorted(findings))
    return "\n\n".join([
        f"{data['inputs_tried']:,} mutated inputs in {data['minutes']:.0f} minutes "
        f"(seed {data['seed']}); a finding is a traceback, a hang, more than three lines "
        f"on stderr, a message naming no input file, a partial output, a changed store "
        f"file that passes its checksums, a run that touches files outside its output "
        f"folder or, refused, inside it, or a tag from the data in sample-stats' page. "
        f"{data.get('distinct_findings', len(findings))} distinct finding(s) in this run"
        + (f":{listed}" if findings else "."),
        table(["", "", "inputs"], rows),
        provenance_line(data, source)])


def torch(data: dict, source: str) -> str:
    """`python -m pipelines.bench.torch_benchmark OUT --json`: reading a folder as PyG
    HeteroData beside the project's numpy decoder."""
    result = data["result"]
    names = {"numpy": "numpy decoder (`parse_example`)",
             "hetero": "HeteroData per record (`SampleDataset`)",
             "hetero_batch": f"HeteroData batches of {result['batch_size']} "
                             f"(`SampleDataset(batch_size=...)`)",
             "pyg_batch": f"records collated by PyG's `Batch` ({result['batch_size']} "
                          f"per batch)"}
    rows = [[names.get(name, name), number(row["records_per_s"]), number(row["mb_per_s"], 2),
             f"{row['vs_numpy']:.0%}"] for name, row in result["contenders"].items()]
    return "\n\n".join([
        f"{data['folder']}: {result['records']:,} records, {number(result['mb'], 1)} MB in "
        f"{result['shards']} shards; median of {data['repeat']} interleaved rounds (the "
        f"vocabulary's pass over the `#id`s took {number(result['vocabulary_s'], 1)} s "
        f"before).",
        table(["reader", "records/s", "MB/s", "rate vs the numpy decoder"], rows),
        provenance_line(data, source)])


def import_graph(data: dict, source: str) -> str:
    """`python -m pipelines.bench.import_benchmark --json`: `unigraph-import` reading an OGB
    folder beside `sample` reading the same graph's CSV tables."""
    config, medians = data["config"], data["medians"]
    names = {"read_csv": "`sample`'s readers, the graph's CSV tables",
             "import_read": "`unigraph-import` reading the OGB folder (checked, nothing written)",
             "import": f"`unigraph-import`, the whole command (writes {config['format']})"}
    base = medians["read_csv"]["rows_per_cpu_s"]
    rows = [[names.get(name, name), number(m["rows"]), number(m["cpu_s"], 1),
             number(m["wall_s"], 1), number(m["rows_per_cpu_s"]),
             f"{m['rows_per_cpu_s'] / base:.2f}x", number(m["peak_rss_mb"])]
            for name, m in medians.items()]
    counts = config["rows"]
    return "\n\n".join([
        f"Scale {config['scale']}: {counts['nodes']:,} node rows (papers with 128 floats), "
        f"{counts['edges']:,} edge rows, {counts.get('seeds', 0):,} seed rows (the time "
        f"split, which only the import reads); the synthetic graph as CSV tables and as an "
        f"`ogbn_mag` folder laid out as `ogb` stores it (gzipped CSV). Median of "
        f"{config['repeat']} interleaved round(s), one process per contender.",
        table(["contender", "rows", "CPU s", "wall s", "rows per CPU-second",
               "vs `sample`", "peak RSS MB"], rows),
        provenance_line(data, source)])


def decode(data: dict, source: str) -> str:
    """`python -m pipelines.bench.decode_benchmark --json`: every reader of `sample`'s
    records beside tf.data + tfgnn.parse_example, on the same files in one run."""
    result = data["result"]
    medians = result["medians"]
    batch = result["batch_size"]
    names = {
        "framing": "TFRecord framing and checksums alone",
        "parse_example": "`parse_example`, record by record",
        "tensorflow": f"TensorFlow: `tf.data` + `tfgnn.parse_example` on batches of {batch}, "
                      f"one thread",
        "tf_decoder": f"`to_tf_dataset`'s way: the batched decoder's arrays as TF-GNN's "
                      f"GraphTensor of {batch} records (tf.data), one thread",
        "parse_examples": f"`parse_examples` on chunks of {batch} records (GraphTensor)",
        "decoder": f"batched decoder, batches of {batch} (merged GraphTensor; its string "
                   f"features made bytes objects when first read, none read here)",
        "columns": f"batched decoder, batches of {batch} (columns, no GraphTensor)",
        "hetero": f"HeteroData batches of {batch} (`batch_to_hetero_data`)",
        "dataset_0": f"`SampleDataset(batch_size={batch})`, DataLoader without workers",
        "dataset_1": f"`SampleDataset(batch_size={batch})`, 1 DataLoader worker",
        "dataset_2": f"`SampleDataset(batch_size={batch})`, 2 DataLoader workers",
        "train_tensorflow": f"`train`'s input by `tf.io.parse_example`, batches of {batch}",
        "train_decoder": f"`train`'s input by the batched decoder (`tf.numpy_function`), "
                         f"batches of {batch}",
    }
    tf = medians.get("tensorflow")
    rows = [[names.get(name, name), number(m["records_per_cpu_s"]), number(m["mb_per_cpu_s"]),
             f"{m['records_per_cpu_s'] / tf['records_per_cpu_s']:.2f}x" if tf else "n/a",
             number(m["records_per_s"]), number(m["cpu_s"], 2), number(m["wall_s"], 2)]
            for name, m in medians.items()]
    targets = result.get("targets", {})

    def ratio(key: str, target: str) -> str:
        value = targets.get(key)
        return "not measured" if value is None else f"**{value:.2f}x** (target {target})"

    mb = targets.get("decoder_mb_per_cpu_s")
    load = data.get("load_average_before")
    return "\n\n".join([
        f"{data['folder']}: {result['records']:,} records, {number(result['mb'], 1)} MB in "
        f"{result['shards']} shards; each reader in a process of its own, its loop over "
        f"the folder timed (start-up and imports not counted)" + _dataset_passes(result)
        + f", median of {result['repeat']} "
        f"interleaved rounds. CPU seconds include the DataLoader's workers; their speedup "
        f"is read in wall time, which only a quiet machine shows"
        + (f" (load average {load} before the run, {data.get('load_average')} after)"
           if load is not None else "") + ".",
        table(["reader", "records / CPU-s", "MB / CPU-s", "vs TensorFlow", "records / s",
               "CPU s", "wall s"], rows),
        "From these medians: the batched decoder (merged GraphTensors) reads "
        + ratio("decoder_vs_tensorflow_records_per_cpu_s", "5x")
        + " TensorFlow's records per CPU-second and "
        + (f"**{number(mb)}** MB per CPU-second (target 150)" if mb is not None
           else "no MB figure")
        + "; HeteroData batches come at " + ratio("hetero_vs_decoder_records_per_cpu_s",
                                                  "0.8x")
        + " the decoder's rate; `SampleDataset` with 2 DataLoader workers at "
        + ratio("dataset_2_vs_1_workers_wall", "1.7x") + " the wall rate of one"
        + _worker_costs(medians.get("dataset_2", {}),
                        targets.get("dataset_2_vs_1_workers_two_idle_cores"))
        + (f"; TF-GNN's GraphTensors by the decoder (`to_tf_dataset`) at "
           f"{ratio('tf_decoder_vs_tensorflow_records_per_cpu_s', 'more than 1x')} "
           f"`tfgnn.parse_example`'s records per CPU-second" if "tf_decoder" in medians
           else "")
        + (f"; `train`'s input by the decoder at "
           f"{ratio('train_decoder_vs_tensorflow_records_per_cpu_s', 'more than 1x')} "
           f"TensorFlow's records per CPU-second" if "train_decoder" in medians else "")
        + ".",
        provenance_line(data, source)])


def _dataset_passes(result: dict) -> str:
    """How the DataLoader rows were timed (decode_benchmark.DATASET_PASSES), if said."""
    passes = result.get("dataset_passes")
    if not passes:
        return ""
    return (f"; the DataLoader rows per pass over the folder, its workers persistent, "
            f"{passes['timed']} passes timed after {passes['untimed']} untimed (the "
            f"workers' start)")


def _worker_costs(two: dict, idle: Optional[float]) -> str:
    """The CPU a batch cost with 2 workers, and what it makes of 2 workers on two idle
    cores (decode_benchmark.two_idle_cores)."""
    main, workers = two.get("main_cpu_ms_per_batch"), two.get("workers_cpu_ms_per_batch")
    if main is None or workers is None or idle is None:
        return ""
    return (f" on this machine (a batch cost {main:.2f} ms of CPU in the main process and "
            f"{workers:.2f} ms in a worker, so on two idle cores 2 workers give "
            f"2W / (W + M) = **{idle:.2f}x** one worker's rate, and up to 2x with a core "
            f"for the main process)")


def features(data: dict, source: str) -> str:
    """`python -m pipelines.bench.features_benchmark --json`: a feature spec's share of
    converting batches to HeteroData, and each feature's encoding alone."""
    result, graph = data["result"], data["graph"]
    names = {"api": "Python API batches (`graph.batches`)",
             "records": "decoded batches of records (the batched decoder's, as `SampleDataset` "
                        "converts them)"}
    rows = [[names.get(path, path), number(row["without_s_per_batch"] * 1e3, 1),
             number(row["with_s_per_batch"] * 1e3, 1), f"{row['with_vs_without']:.2f}x",
             number(row["spec_s_per_batch"] * 1e3, 1), f"**{row['spec_share']:.0%}**"]
            for path, row in result["paths"].items()]
    values = result.get("values_per_batch", {})
    listed = ", ".join(f"{number(count)} {name}" for name, count in values.items())
    read = result["paths"].get("records", {})
    decoded = (f" Decoding a batch of records took {number(read['decode_s_per_batch'] * 1e3, 1)}"
               f" ms more; of decoding and converting together (`SampleDataset`'s work per "
               f"batch) the spec is **{read['spec_share_of_decode_and_convert']:.0%}**."
               if "decode_s_per_batch" in read else "")
    parts = [
        f"`synthetic-graph --scale {graph['scale']:g} --extra-features`, batches of "
        f"{result['batch_size']} subgraphs of its sampling spec ({result['batches']} "
        f"batches, {number(result['papers_per_batch'])} papers in the first"
        + (f": {listed} values" if listed else "") + "), converted by `to_hetero_data` "
        f"with the numbers only and with every feature by the benchmark spec (venues, tags "
        f"and intents through vocabularies, token ids hashed into buckets, lists as bags); "
        f"median of {data['repeat']} interleaved rounds, CPU milliseconds per batch of one "
        f"thread. *Applying the spec* is the time inside `FeatureEncoder.encode`; its share "
        f"is of the conversion with every feature." + decoded,
        table(["batches", "numbers only (ms)", "every feature (ms)", "every / numbers",
               "applying the spec (ms)", "spec's share"], rows)]
    per_feature = result.get("per_feature_ms")
    if per_feature:
        records = result.get("per_feature_records_ms", {})  # files since the decoded path's
        batches = "ms per batch" if records else "ms per batch of the API's"
        parts.append(f"Each feature's encoding alone ({batches}; fitting the "
                     f"encoder, its {len(result['vocabularies'])} vocabularies over every row "
                     f"of the graph, took {number(result['fit_s'], 2)} s once):")
        parts.append(table(["feature (kind)"]
                           + (["API batch (ms)", "decoded batch (ms)"] if records else
                              ["ms per batch"]),
                           [[f"`{name.split(' ')[0]}` {' '.join(name.split(' ')[1:])}",
                             number(ms, 2)]
                            + ([number(records[name], 2) if name in records else "-"]
                               if records else [])
                            for name, ms in per_feature.items()]))
    parts.append(provenance_line(data, source))
    return "\n\n".join(parts)


# ---- what a Dataflow run costs, estimated from the Beam engine's measured CPU ---------

# Dataflow batch prices, us-central1: per vCPU-hour, per GB-hour of memory, per GB
# shuffled (Dataflow Shuffle). An n1-highmem-2 has 6.5 GB per vCPU.
VCPU_HOUR_USD, GB_HOUR_USD, SHUFFLE_GB_USD, GB_PER_VCPU = 0.056, 0.0036, 0.011, 6.5
# A Dataflow vCPU is assumed to do half the work of a local core (the shuffle's
# serialization and network, slower worker CPUs). The bytes shuffled are the Beam
# engine's measured ones (the report's `shuffled`, in the benchmark's runs); a file
# without them falls back to the earlier assumption, twice the output (each reached
# node's features go once to its output shard, plus requests and sampled edges).
DATAFLOW_SLOWDOWN, SHUFFLED_PER_OUTPUT_BYTE = 2.0, 2.0
# TF-GNN's published Dataflow run of tfgnn_sampler on OGBN-MAG: 736k subgraphs on 30 to
# 100 n1-highmem-2 workers for 45 minutes, about $11.
TFGNN_SUBGRAPHS, TFGNN_VCPU_HOURS, TFGNN_USD = 736_000, (45, 150), 11.0


def _loader_costs(two: dict, idle: Optional[float]) -> list[str]:
    """The CPU a loader's batch cost with 2 workers, and 2 workers on two idle cores
    (a paragraph, where the file has them)."""
    main, workers = two.get("main_cpu_ms_per_batch"), two.get("workers_cpu_ms_per_batch")
    if main is None or workers is None or idle is None:
        return []
    return [f"With 2 workers a batch cost {main:.2f} ms of CPU in the main process and "
            f"{workers:.2f} ms in a worker, so on two idle cores 2 workers give "
            f"2W / (W + M) = **{idle:.2f}x** one worker's rate."]


def minibatch(data: dict, source: str) -> str:
    """`benchmark --minibatch --json`: merged mini-batches beside DGL's sampler, HeteroData
    against sampling alone, the loader with 1 and 2 workers."""
    median, ratios = data["median"], data["ratios"]
    sampling = median["sampling"]
    rows = []
    for size in data["batch_sizes"]:
        ours = sampling[str(size)]
        rows.append([f"this sampler, `Graph.sample_merged`, batches of {size}",
                     number(ours["edges_per_cpu_s"] / 1e6, 2), number(ours["seeds_per_cpu_s"]),
                     number(ours["batches_per_cpu_s"], 1), ""])
        dgl = median.get(f"dgl_{size}")
        if dgl is not None:
            rows.append([f"DGL {data['dgl']['dgl']} `sample_neighbors`, batches of {size}",
                         number(dgl["edges_per_cpu_s"] / 1e6, 2),
                         number(dgl["seeds"] / dgl["cpu_s"]),
                         number(dgl["seeds"] / size / dgl["cpu_s"], 1),
                         f"this sampler {ours['edges_per_cpu_s'] / dgl['edges_per_cpu_s']:.2f}x "
                         f"its edges / CPU-s"])
    hetero = median["heterodata"]
    rows.append([f"this sampler, `HeteroData` batches of {1024} with features and labels",
                 number(hetero["edges_per_cpu_s"] / 1e6, 2),
                 number(hetero["seeds_per_cpu_s"]), number(hetero["batches_per_cpu_s"], 1),
                 f"{ratios['heterodata_vs_sampling']:.2f}x of sampling alone"])
    loader = [[f"`NeighborLoader(num_workers={w})`, HeteroData batches of 1024",
               number(median[f"loader_{w}"]["batches_per_s"], 1),
               "1.00x" if w == 1 else f"{ratios['loader_2_vs_1']:.2f}x"] for w in (1, 2)]
    loads = data.get("load_averages", [])
    return "\n\n".join([
        f"Scale {data['scale']}, {number(data['seeds'])} seeds"
        + (f", {data['passes']} passes over them (a new epoch each)" if data.get("passes")
           else "") + "; the benchmark "
        f"spec's fan-outs for both samplers, one thread each, CPU seconds; median of "
        f"{data['repeat']} interleaved round(s). DGL's C++ sampler through the same spec "
        f"on the same tables (its own interpreter, torch {data.get('dgl', {}).get('torch')})"
        f": each op's merged frontier in one `sample_neighbors` call.",
        table(["", "M sampled edges / CPU-s", "seeds / CPU-s", "batches / CPU-s", "ratio"],
              rows),
        "The loader over one epoch after another (the first, its workers' start, not "
        "timed), batches per wall second: two workers on this 2-core machine can give up "
        "to twice one worker's rate only where nothing else runs"
        + (f" (load average during the runs: {', '.join(str(x) for x in loads)})"
           if loads else "") + ".",
        table(["", "batches / s", "vs 1 worker"], loader),
        *_loader_costs(median["loader_2"], ratios.get("loader_2_vs_1_two_idle_cores")),
        provenance_line(data, source)])


def training(data: dict, source: str) -> str:
    """`python -m pipelines.bench.training_benchmark --json`: examples/train_pyg.py's
    online training on merged and on disjoint mini-batches, seed by seed."""
    summary, graph = data["summary"], data["graph"]
    spec = graph["spec"]
    rows = [[mode, f"{s['accuracy']['mean']:.3f} ({s['accuracy']['min']:.3f}-"
                   f"{s['accuracy']['max']:.3f})",
             f"{s['cpu_s_per_epoch']['mean']:.2f} ({s['cpu_s_per_epoch']['min']:.2f}-"
             f"{s['cpu_s_per_epoch']['max']:.2f})",
             f"{s['wall_s_per_epoch']['mean']:.2f} ({s['wall_s_per_epoch']['min']:.2f}-"
             f"{s['wall_s_per_epoch']['max']:.2f})"]
            for mode, s in summary.items()]
    seeds = data["seeds"]
    first = next(iter(summary.values()))
    ratio = ""
    if {"merged", "disjoint"} <= set(summary):
        cpu = (summary["disjoint"]["cpu_s_per_epoch"]["mean"]
               / summary["merged"]["cpu_s_per_epoch"]["mean"])
        ratio = (f" An epoch on disjoint batches took {cpu:.2f}x the CPU of one on merged "
                 f"batches.")
    loads = data.get("load_averages", [])
    return "\n\n".join([
        f"`synthetic-graph --scale {graph['scale']:g} --planted` (only the cited papers "
        f"know a paper's label; {number(graph['nodes'].get('paper'))} papers) with the "
        f"graph's own spec (seed {spec['seed']}; {', '.join(spec['ops'])}: "
        f"{spec['layers']} layers), "
        f"{data['epochs']} epoch{'s' if data['epochs'] != 1 else ''} of batches of "
        f"{data['batch_size']}, "
        + (f"seeds {seeds[0]}-{seeds[-1]}" if len(seeds) > 1 else f"seed {seeds[0]}")
        + f", one process per run with one thread; each run is "
        f"`{data['run_command']}`. Held-out accuracy on {number(first['held_out_count'])} "
        f"seeds (the majority class: {first['chance']:.3f}); seconds per epoch are each "
        f"run's mean over its epochs (sampling, conversion and the model, all in the "
        f"process)." + ratio
        + (f" Accuracy does not depend on the machine's load; seconds do (load average "
           f"{min(loads)}-{max(loads)} during the runs)." if loads else ""),
        table(["batches", "held-out accuracy, mean (range)",
               "CPU s per epoch, mean (range)", "wall s per epoch, mean (range)"], rows),
        provenance_line(data, source)])


def cost(data: dict, source: str) -> str:
    """The cost model from an engines measurement that has a `beam` contender."""
    config, medians = data["config"], data["medians"]
    beam = medians["beam"]
    seeds = config["seeds"]
    output_bytes = sorted(r["output_bytes"] for r in data["runs"] if r["engine"] == "beam")
    per_subgraph_bytes = output_bytes[len(output_bytes) // 2] / seeds
    measured = beam.get("shuffled_bytes_per_subgraph")
    shuffled_per_subgraph = (measured if measured is not None
                             else SHUFFLED_PER_OUTPUT_BYTE * per_subgraph_bytes)
    local_vcpu_hours = beam["cpu_s"] / seeds * 1e6 / 3600
    vcpu_hours = local_vcpu_hours * DATAFLOW_SLOWDOWN
    workers_usd = vcpu_hours * (VCPU_HOUR_USD + GB_PER_VCPU * GB_HOUR_USD)
    shuffled_gb = shuffled_per_subgraph * 1e6 / 1e9
    shuffle_usd = shuffled_gb * SHUFFLE_GB_USD
    per_million = 1e6 / TFGNN_SUBGRAPHS
    low, high = TFGNN_VCPU_HOURS
    rows = [
        ["subgraphs", f"{TFGNN_SUBGRAPHS:,}", "per million"],
        ["vCPU-hours", f"{low}-{high} ({low * per_million:.0f}-{high * per_million:.0f} per "
                       f"million)", f"{local_vcpu_hours:.2f} measured locally, "
                                    f"**{vcpu_hours:.2f}** assumed on Dataflow"],
        ["workers", "", f"${workers_usd:.2f} per million"],
        ["shuffle", "", f"{shuffled_gb:,.0f} GB{' measured' if measured is not None else ''}: "
                        f"${shuffle_usd:.2f} per million"],
        ["total", f"about ${TFGNN_USD:.0f} (${TFGNN_USD * per_million:.0f} per million)",
         f"**about ${workers_usd + shuffle_usd:.2f} per million**, plus worker start-up"],
    ]
    return "\n\n".join([
        f"From the Beam engine's CPU seconds in `docs/{source}` ({seeds:,} subgraphs of "
        f"{per_subgraph_bytes / 1e3:,.0f} kB, {beam['cpu_s']:.2f} CPU-s on the local "
        f"runner), next to TF-GNN's published Dataflow run of `tfgnn_sampler` on OGBN-MAG:",
        table(["", "tfgnn_sampler (published, OGBN-MAG)", "this sampler on Dataflow (estimate)"],
              rows),
        f"Assumptions: Dataflow batch prices of us-central1 (${VCPU_HOUR_USD} per vCPU-hour, "
        f"${GB_HOUR_USD} per GB-hour with {GB_PER_VCPU} GB per vCPU as on n1-highmem-2, "
        f"${SHUFFLE_GB_USD} per GB shuffled); a Dataflow vCPU does 1/{DATAFLOW_SLOWDOWN:g} "
        f"of a local core's work; "
        + (f"the bytes shuffled are the ones the local run's GroupByKeys took in "
           f"({shuffled_per_subgraph / 1e3:,.1f} kB per subgraph, encoded by the job's own "
           f"coder as on Dataflow), each byte billed once" if measured is not None else
           f"the bytes shuffled are {SHUFFLED_PER_OUTPUT_BYTE:g}x the output")
        + ". Reading the graph once adds cents; worker start-up (2-4 minutes per "
        "worker, billed) dominates small jobs. The spec matters as much as the engine: "
        "subgraph size sets both the CPU time and the shuffle. Not measured on Dataflow "
        "itself (no network here); `--dry_run` checks the job that would run.",
        provenance_line(data, source)])


RENDERERS: dict[str, tuple[str, Callable[[dict, str], str]]] = {
    "engines": ("The whole job, engine by engine", engines),
    "api": ("Online sampling (Python API)", api),
    "store": ("Graph stores", store),
    "store_bounded": ("Graphs larger than the machine", store_bounded),
    "install": ("Installing", install),
    "fuzz": ("Fuzzing", fuzz),
    "torch": ("Reading samples into PyTorch Geometric", torch),
    "import": ("Importing a graph (`unigraph-import`)", import_graph),
    "minibatch": ("Mini-batches (merged, PyG and DGL)", minibatch),
    "training": ("Training on merged and disjoint mini-batches", training),
    "decode": ("Reading samples back: the batched decoder", decode),
    "features": ("Applying a feature spec", features),
}
# Sections computed from other kinds' files: (title, after which kind they go).
DERIVED = {"cost": ("What a Dataflow run costs", "engines")}

INTRO = """# Performance

Every figure on this page is read from a JSON file under `docs/benchmarks/`, written by
the command shown under its table, and the page itself is written by
`python -m pipelines.tools.docs_gen`: to bring a figure up to date, run its command again
with `--json` into its file and regenerate the page. Contenders are always measured
interleaved in one run, so they share the machine's state; the machine here has 2
cores that other jobs share, so read ratios rather than absolute times, and CPU
seconds rather than wall time where both are given.

`benchmark` generates (and caches under `benchmarks/`, git-ignored) a synthetic graph
shaped like OGBN-MAG (papers, authors, institutions, fields of study; skewed degrees;
128 floats per paper), with scale 1.0 the size of OGBN-MAG, and samples it with the
benchmark spec (seed paper; cites 8; written 4 from seed and cited papers; writes 4;
affiliated_with 2; has_topic 4). See [`benchmark --help`](cli/benchmark.md) for every
option, and the other measuring commands: `python -m pipelines.bench.codec_benchmark`
(GraphTensor encode and decode), `python -m pipelines.bench.strategy_benchmark` (the
strategies alone), `python -m pipelines.bench.read_benchmark` (table readers and writers),
`python -m pipelines.bench.decode_benchmark` (reading `sample`'s records back, beside
TensorFlow's parser).
"""


def render_sections(benchmarks: dict[str, dict]) -> dict[str, str]:
    """{kind: its markdown} from {path under docs/: data}; ValueError for a file no
    renderer knows."""
    sections: dict[str, list[str]] = {}
    for source, data in sorted(benchmarks.items()):
        kind = data.get("benchmark")
        if kind not in RENDERERS:
            raise ValueError(f"docs/{source}: 'benchmark' is {kind!r}; pipelines/tools/perf_tables.py "
                             f"renders {', '.join(RENDERERS)}")
        sections.setdefault(kind, []).append(RENDERERS[kind][1](data, source))
        # A run under a RAM cap swapped: its CPU seconds are no basis for a price.
        if kind == "engines" and "beam" in data["medians"] and "ram_cap_mb" not in data["config"]:
            sections.setdefault("cost", []).append(cost(data, source))
    return {kind: "\n\n".join(parts) for kind, parts in sections.items()}


def render_performance(sections: dict[str, str], generated_note: str) -> str:
    """The performance page: every kind's section under its title."""
    text = [INTRO.replace("# Performance\n", f"# Performance\n\n{generated_note}\n", 1)]
    for kind, (title, _) in RENDERERS.items():
        if kind in sections:
            text.append(f"## {title}\n\n{sections[kind]}")
        for derived, (derived_title, after) in DERIVED.items():
            if after == kind and derived in sections:
                text.append(f"## {derived_title}\n\n{sections[derived]}")
    return "\n\n".join(text) + "\n"


FIGURES = re.compile(r"(<!-- figures:([a-z_]+) -->\n)(.*?)(<!-- /figures:\2 -->)", re.S)


def fill_figures(page: str, sections: dict[str, str], where: str) -> str:
    """A hand-written page with each `<!-- figures:KIND -->...<!-- /figures:KIND -->`
    region holding KIND's section (the same tables as the performance page)."""
    def fill(match: re.Match) -> str:
        kind = match.group(2)
        if kind not in sections:
            raise ValueError(f"{where}: figures:{kind}: no docs/benchmarks file has "
                             f"'benchmark': '{kind}'")
        return f"{match.group(1)}{sections[kind]}\n{match.group(4)}"
    return FIGURES.sub(fill, page)
