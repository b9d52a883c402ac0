"""`python -m pipelines.bench.decode_benchmark`: reading `sample`'s records back, every
reader of the project beside TensorFlow's parser, on the same files in the same run.

    python -m pipelines.bench.decode_benchmark                     # scale 0.01, 3 rounds
    python -m pipelines.bench.decode_benchmark --json docs/benchmarks/decode.json

Without --folder it makes the samples itself: the synthetic MAG-shaped graph of
`benchmark` (pipelines/bench/benchmark.py, cached under benchmarks/cache/) at --scale,
every paper a seed, sampled once with the benchmark spec into
benchmarks/cache/runs/decode_scale<S>/ (reused while it is complete).

Contenders, each in a fresh process of its own (imports and start-up not counted: the
loop over the folder is timed, CPU seconds of the process and its children, wall
seconds beside), interleaved round by round, the median of --repeat rounds:

  framing          TFRecord framing and checksums alone (unigraph.encoding.tfrecord)
  parse_example    `sampler.graph_tensor.parse_example`, record by record
  tensorflow       tf.data's TFRecordDataset, batches of B, `tfgnn.parse_example` on each
                   (a tfgnn.GraphTensor of shape [B]), one thread (inter- and intra-op
                   and tf.data's pools all 1)
  tf_decoder       the same GraphTensors as `sampler.api.to_tf_dataset` makes them: each
                   batch's serialized records decoded by the batched decoder in a
                   generator (sampler/graph_tensor/tfgnn_batch.py), the GraphTensor built
                   from its arrays in tf.data, one thread
  parse_examples   `sampler.graph_tensor.parse_examples` on chunks of B records
  decoder          the batched decoder as the readers use it (sampler/output/batches.py:
                   16 MB decoded at a time, cut in batches of B), each batch a merged
                   GraphTensor (whose string features, made bytes objects when first
                   read, this loop does not read)
  columns          the same without the GraphTensor (the columns HeteroData and
                   sample-stats take: string values as fixed-width arrays)
  hetero           the same batches as PyG HeteroData (`batch_to_hetero_data`, a fixed
                   Vocabulary made before)
  dataset_0/1/2    `sampler.torch.SampleDataset(batch_size=B)` through a DataLoader with
                   0, 1, 2 workers (persistent), as training reads it epoch after
                   epoch: one untimed pass over the folder (the workers' start), then
                   DATASET_PASSES timed ones, figures per pass; the wall time is the
                   measure there
  train_tensorflow `train`'s input (sampler/training/input.py: the model's numbers only,
                   no strings, merged by TensorFlow), batches of B, one thread
  train_decoder    the same batches from the batched decoder's columns through
                   `tf.numpy_function` (what `train` would do with it)

Records and MB (the shard files' bytes) per CPU-second and per wall-second. The machine
is shared: CPU seconds are the figure to read, except for the DataLoader's workers,
whose speedup only a quiet machine shows in wall time (the load average is recorded
before and after); so the dataset contenders also record the CPU each batch cost in
the main process and in the workers (read from /proc while they run), from which
`two_idle_cores` gives the speedup of 2 workers over 1 on two idle cores. `--json FILE`
writes the result with its provenance; `python -m pipelines.tools.docs_gen` renders it
into docs/performance.md.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time

from pipelines import REPO_ROOT
from pipelines.bench import worker_cpu

DATASET_PASSES = 4  # timed passes of the DataLoader contenders, after an untimed one
CONTENDERS = ("framing", "parse_example", "tensorflow", "tf_decoder", "parse_examples",
              "decoder",
              "columns", "hetero", "dataset_0", "dataset_1", "dataset_2", "train_tensorflow",
              "train_decoder")


# ---- the samples -----------------------------------------------------------------------

def ensure_samples(scale: float, log=print) -> str:
    """The folder `sample` wrote for the benchmark graph at `scale` (made once, cached)."""
    from pipelines.bench.benchmark import (COMPLETE, DEFAULT_CACHE, ensure_graph,
                                           sample_command, write_spec)

    graph, manifest = ensure_graph(DEFAULT_CACHE, scale=scale, seed=0, fmt="parquet",
                                   shards=1, hub_edges=0, log=log)
    out = os.path.join(DEFAULT_CACHE, "runs", f"decode_scale{scale:g}")
    if not os.path.exists(os.path.join(out, COMPLETE)):
        spec = write_spec(graph, "RANDOM_UNIFORM")
        seeds = os.path.join(graph, manifest["seeds"]["all"])
        subprocess.run(sample_command(graph, spec, seeds, out, []), check=True,
                       stdout=subprocess.DEVNULL)
        open(os.path.join(out, COMPLETE), "w").close()
        log(f"sampled {out}")
    return out


# ---- one contender, in its own process ---------------------------------------------------

def _cpu() -> tuple[float, float]:
    """CPU seconds of this process and of its children (the DataLoader's workers,
    counted once they have exited)."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime, children.ru_utime + children.ru_stime


def _reader(name: str, folder: str, batch_size: int):
    """A function that reads every record of the folder once and returns how many."""
    from sampler.output.folder import open_samples

    samples = open_samples(folder)
    files, schema = samples.files, samples.schema
    if name == "framing":
        from sampler.output.batches import file_chunks
        return lambda: sum(len(chunk) for path in files for chunk in file_chunks(path))
    if name == "parse_example":
        from sampler.graph_tensor import parse_example
        from sampler.output.folder import iter_records

        def read():
            count = 0
            for path in files:
                for record in iter_records(path):
                    parse_example(schema, record)
                    count += 1
            return count
        return read
    if name == "tensorflow":
        return _tensorflow(files, schema, batch_size)
    if name == "tf_decoder":
        return _tf_decoder(files, schema, batch_size)
    if name.startswith("train_"):
        return _train_input(files, schema, batch_size, name == "train_decoder")
    if name == "parse_examples":
        from sampler.graph_tensor import parse_examples

        def read():
            return sum(parse_examples(schema, chunk).num_components for path in files
                       for chunk in _chunks_of(path, batch_size))
        return read
    from sampler.graph_tensor.batch_codec import BatchDecoder
    from sampler.output.batches import read_batches

    def batches():
        return read_batches(files, range(len(files)), BatchDecoder(schema),
                            batch_size=batch_size)
    if name == "decoder":
        return lambda: sum(batch.graph().num_components for _, batch in batches())
    if name == "columns":
        return lambda: sum(batch.records for _, batch in batches())
    from sampler.torch import SampleDataset, Vocabulary
    from sampler.torch.convert import batch_to_hetero_data

    vocabulary = Vocabulary.from_samples(folder)
    if name == "hetero":
        return lambda: sum(len(batch_to_hetero_data(batch, input_id=ids,
                                                    vocabulary=vocabulary)["paper"].input_id)
                           for ids, batch in batches())
    return _dataset_reader(SampleDataset(folder, vocabulary=vocabulary,
                                         batch_size=batch_size), int(name.rsplit("_", 1)[1]))


def _dataset_reader(dataset, workers: int):
    """A DataLoader of `dataset` with `workers` persistent workers: a pass first, untimed,
    then DATASET_PASSES passes timed; `read.measured`: CPU and wall seconds per pass, the
    main process's and the workers' CPU apart."""
    import torch

    torch.set_num_threads(1)
    loader = torch.utils.data.DataLoader(dataset, batch_size=None, num_workers=workers,
                                         persistent_workers=workers > 0)

    def one_pass():
        records = batches = 0
        for data in loader:
            records += len(data["paper"].input_id)
            batches += 1
        return records, batches

    def read():
        records, _ = one_pass()
        pids = [w.pid for w in loader._iterator._workers] if workers else []
        (main, _), wall, in_workers = _cpu(), time.perf_counter(), worker_cpu.cpu_seconds(pids)
        batches = 0
        for _ in range(DATASET_PASSES):
            again, made = one_pass()
            assert again == records, (again, records)
            batches += made
        wall = time.perf_counter() - wall
        main, in_workers = _cpu()[0] - main, worker_cpu.cpu_seconds(pids) - in_workers
        read.measured = {"records": records, "cpu_s": (main + in_workers) / DATASET_PASSES,
                         "wall_s": wall / DATASET_PASSES, "batches": batches / DATASET_PASSES,
                         "main_cpu_s": main / DATASET_PASSES,
                         "workers_cpu_s": in_workers / DATASET_PASSES}
        return records
    return read


def _chunks_of(path: str, records: int):
    from unigraph.encoding import tfrecord
    from unigraph.storage import paths

    with paths.open_binary(path) as stream:
        yield from tfrecord.read_chunks(stream, path, records=records)


def _tensorflow(files, schema, batch_size: int):
    tf, options = _one_thread_tf()
    import tensorflow_gnn as tfgnn

    spec = tfgnn.create_graph_spec_from_schema_pb(
        tfgnn.GraphSchema.FromString(schema.SerializeToString()))
    dataset = (tf.data.TFRecordDataset(list(files)).batch(batch_size)
               .map(lambda serialized: tfgnn.parse_example(spec, serialized))
               .with_options(options))
    return lambda: sum(int(graph.shape[0]) for graph in dataset)


def _tf_decoder(files, schema, batch_size: int):
    """`to_tf_dataset`'s way: a generator gives each batch's records (here read from the
    files, there made by the sampler) to the batched decoder, tf.data builds the
    GraphTensor of its arrays."""
    tf, options = _one_thread_tf()
    from sampler.graph_tensor.tfgnn_batch import TfgnnBatches
    from sampler.output.folder import iter_records

    layout = TfgnnBatches(schema)

    def arrays():
        records = []
        for path in files:
            for record in iter_records(path):
                records.append(record)
                if len(records) == batch_size:
                    yield tuple(layout.arrays(records))
                    records = []
        if records:
            yield tuple(layout.arrays(records))

    dataset = (tf.data.Dataset.from_generator(arrays, output_signature=layout.signature())
               .map(layout.graph).with_options(options))
    return lambda: sum(int(graph.shape[0]) for graph in dataset)


def _one_thread_tf():
    os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    import tensorflow as tf

    tf.config.threading.set_inter_op_parallelism_threads(1)
    tf.config.threading.set_intra_op_parallelism_threads(1)
    options = tf.data.Options()
    options.threading.private_threadpool_size = 1
    options.threading.max_intra_op_parallelism = 1
    options.autotune.enabled = False
    return tf, options


def _train_input(files, schema, batch_size: int, decoder: bool):
    """`train`'s parse and merge of a batch (the label `labels` of the seed papers), by
    TensorFlow or by the batched decoder's columns."""
    tf, options = _one_thread_tf()
    from sampler.training.input import parse_and_merge
    from sampler.training.layout import layout_from_schema

    layout = layout_from_schema(schema, "labels")
    dataset = tf.data.TFRecordDataset(list(files)).batch(batch_size)
    if not decoder:
        return lambda: sum(int(tf.reduce_sum(graph["nodes/_readout.#size"]))
                           for graph in dataset.map(lambda x: parse_and_merge(x, layout))
                           .with_options(options))
    merge, dtypes = _decoder_merge(schema, layout)
    batches = dataset.map(lambda x: tf.numpy_function(merge, [x], dtypes)).with_options(options)
    return lambda: sum(int(tf.reduce_sum(outputs[0])) for outputs in batches)


def _decoder_merge(schema, layout):
    """A numpy function of a batch of serialized records to `parse_and_merge`'s arrays
    (readout sizes first), from the batched decoder's columns of the keys the model
    reads; and their dtypes."""
    import numpy as np
    import tensorflow as tf

    from sampler.graph_tensor import keys as k
    from sampler.graph_tensor.batch_codec import BatchDecoder
    from sampler.graph_tensor.example_batch import segment_sums
    from sampler.graph_tensor.readout_structure import READOUT_NODE_SET
    from unigraph.encoding.wire import padded
    from unigraph.protos import graph_schema_pb2 as gs

    wanted = gs.GraphSchema()  # the sets, with the model's features and the label only
    wanted.CopyFrom(schema)
    for name in list(wanted.context.features):
        del wanted.context.features[name]
    for set_name, node_set in wanted.node_sets.items():
        keep = {f.name for f in layout.node_sets[set_name]}
        if layout.label.node_set == set_name:
            keep.add(layout.label.feature)
        for name in [n for n in node_set.features if n not in keep]:
            del node_set.features[name]
    for edge_set in wanted.edge_sets.values():
        for name in list(edge_set.features):
            del edge_set.features[name]
    decoder = BatchDecoder(wanted)

    def merge(serialized):
        records = list(serialized)
        lengths = np.fromiter(map(len, records), np.int64, len(records))
        columns = decoder.columns(padded(b"".join(records)), np.cumsum(lengths) - lengths,
                                  lengths)
        out = [columns.values(k.node_key(READOUT_NODE_SET, k.SIZE_NAME))]
        nodes = {}
        for set_name, features in layout.node_sets.items():
            key = k.node_key(set_name, k.SIZE_NAME)
            nodes[set_name] = segment_sums(columns.values(key), columns.counts(key))
            out.append(columns.values(key))
            out += [columns.values(k.node_key(set_name, f.name)).reshape((-1,) + f.shape)
                    for f in features]
        for set_name, (source, target) in layout.edge_sets.items():
            out.append(columns.values(k.edge_key(set_name, k.SIZE_NAME)))
            for tag, end in ((k.SOURCE_NAME, source), (k.TARGET_NAME, target)):
                key = k.edge_key(set_name, tag)
                before = np.cumsum(nodes[end]) - nodes[end]
                out.append(columns.values(key) + np.repeat(before, columns.counts(key)))
        out.append(columns.values(k.node_key(layout.label.node_set, layout.label.feature))
                   .reshape(-1))
        return out

    dtypes = [tf.int64]
    for features in layout.node_sets.values():
        dtypes += [tf.int64] + [tf.float32 if f.is_float else tf.int64 for f in features]
    dtypes += [tf.int64] * (3 * len(layout.edge_sets)) + [tf.int64]
    return merge, dtypes


def run_contender(name: str, folder: str, batch_size: int) -> dict:
    read = _reader(name, folder, batch_size)
    (main, workers), wall = _cpu(), time.perf_counter()
    records = read()
    wall = time.perf_counter() - wall
    main, workers = (after - before for before, after in zip((main, workers), _cpu()))
    # The DataLoader's measure themselves (per timed pass, main process and workers apart).
    return getattr(read, "measured", {"records": records, "cpu_s": main + workers,
                                      "wall_s": wall})


# ---- the whole run -------------------------------------------------------------------------

def measure(folder: str, contenders: list[str], repeat: int, batch_size: int,
            log=print) -> dict:
    from sampler.output.folder import open_samples

    files = open_samples(folder).files
    mb = sum(os.path.getsize(f) for f in files) / 1e6
    runs = {name: [] for name in contenders}
    for round_ in range(repeat):
        for name in contenders:  # interleaved: every contender sees the same machine
            command = [sys.executable, "-m", "pipelines.bench.decode_benchmark", "--run", name,
                       "--folder", folder, "--batch-size", str(batch_size)]
            done = subprocess.run(command, capture_output=True, text=True, cwd=REPO_ROOT,
                                  env=dict(os.environ, PYTHONPATH=REPO_ROOT))
            if done.returncode:
                raise RuntimeError(f"{name}: {done.stderr.strip()[-2000:]}")
            result = json.loads(done.stdout.strip().splitlines()[-1])
            runs[name].append(result)
            log(f"round {round_ + 1} {name}: {result['records']} records, "
                f"{result['cpu_s']:.2f} CPU-s, {result['wall_s']:.2f} s")
    counts = {name: {r["records"] for r in results} for name, results in runs.items()}
    if len({c for values in counts.values() for c in values}) != 1:
        raise AssertionError(f"contenders read different numbers of records: {counts}")
    records = runs[contenders[0]][0]["records"]
    medians = {}
    for name, results in runs.items():
        cpu = statistics.median(r["cpu_s"] for r in results)
        wall = statistics.median(r["wall_s"] for r in results)
        medians[name] = {"cpu_s": round(cpu, 3), "wall_s": round(wall, 3),
                         "records_per_cpu_s": round(records / cpu, 1),
                         "mb_per_cpu_s": round(mb / cpu, 1),
                         "records_per_s": round(records / wall, 1),
                         "mb_per_s": round(mb / wall, 1)}
        if "batches" in results[0]:
            medians[name].update(
                {f"{who}_cpu_ms_per_batch": round(statistics.median(
                    1000 * r[f"{who}_cpu_s"] / r["batches"] for r in results), 2)
                 for who in ("main", "workers")})
    return {"records": records, "shards": len(files), "mb": round(mb, 1),
            "batch_size": batch_size, "repeat": repeat,
            "dataset_passes": {"untimed": 1, "timed": DATASET_PASSES,
                               "persistent_workers": True},
            "medians": medians,
            "runs": {name: [{k: round(v, 3) if isinstance(v, float) else v
                             for k, v in r.items()} for r in results]
                     for name, results in runs.items()},
            "targets": targets(medians)}


def targets(medians: dict) -> dict:
    """The issue's targets, from the medians (where both sides were measured)."""
    def ratio(a, b, key):
        if a in medians and b in medians:
            return round(medians[a][key] / medians[b][key], 2)
        return None

    found = {"decoder_vs_tensorflow_records_per_cpu_s": ratio("decoder", "tensorflow",
                                                              "records_per_cpu_s"),
             "decoder_mb_per_cpu_s": medians.get("decoder", {}).get("mb_per_cpu_s"),
             "tf_decoder_vs_tensorflow_records_per_cpu_s": ratio("tf_decoder", "tensorflow",
                                                                 "records_per_cpu_s"),
             "hetero_vs_decoder_records_per_cpu_s": ratio("hetero", "decoder",
                                                          "records_per_cpu_s"),
             "dataset_2_vs_1_workers_wall": ratio("dataset_2", "dataset_1", "records_per_s"),
             "dataset_2_vs_1_workers_two_idle_cores": two_idle_cores(medians),
             "train_decoder_vs_tensorflow_records_per_cpu_s": ratio(
                 "train_decoder", "train_tensorflow", "records_per_cpu_s")}
    return found


def two_idle_cores(medians: dict):
    """2 workers over 1 on two idle cores, from dataset_2's CPU per batch
    (worker_cpu.two_idle_cores)."""
    two = medians.get("dataset_2", {})
    return worker_cpu.two_idle_cores(two.get("main_cpu_ms_per_batch"),
                                     two.get("workers_cpu_ms_per_batch"))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="decode_benchmark",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--folder", help="a `sample` output folder (default: the benchmark "
                                         "graph's samples at --scale, made once)")
    parser.add_argument("--scale", type=float, default=0.01,
                        help="the benchmark graph's scale when no --folder (default 0.01)")
    parser.add_argument("--repeat", type=int, default=3, help="rounds (default 3)")
    parser.add_argument("--batch-size", type=int, default=64,
                        help="records per batch for every batched reader (default 64)")
    parser.add_argument("--contenders", default=",".join(CONTENDERS),
                        help=f"comma-separated, of {', '.join(CONTENDERS)} (default all)")
    parser.add_argument("--json", metavar="FILE", help="write the results here")
    parser.add_argument("--run", choices=CONTENDERS, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.run:  # one contender, in this process (what the rounds start)
        print(json.dumps(run_contender(args.run, args.folder, args.batch_size)))
        return 0
    from pipelines.bench.provenance import provenance, publish

    contenders = [c for c in args.contenders.split(",") if c]
    unknown = [c for c in contenders if c not in CONTENDERS]
    if unknown or args.repeat < 1:
        parser.error(f"--contenders: unknown {unknown}" if unknown else "--repeat must be >= 1")
    log = (lambda *a: print(*a, file=sys.stderr))
    folder = args.folder or ensure_samples(args.scale, log)
    load_before = round(os.getloadavg()[0], 1)
    result = measure(folder, contenders, args.repeat, args.batch_size, log)
    arguments = sys.argv[1:] if argv is None else list(argv)
    document = {"benchmark": "decode",
                **provenance("python", ["-m", "pipelines.bench.decode_benchmark", *arguments]),
                "load_average_before": load_before,
                "folder": (folder if args.folder else
                           f"`sample` of the benchmark graph at scale {args.scale:g} "
                           f"(synthetic-graph, every paper a seed, the benchmark spec)"),
                "result": result}
    publish(document, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
