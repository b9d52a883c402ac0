"""Speed of the unigraph table writers and readers, per format, on generated tables.

    python -m pipelines.bench.read_benchmark [--edges 1000000] [--nodes 100000]
                                       [--features 128] [--repeat 3] [--dir /tmp/...]
                                       [--tables edges nodes] [--formats csv tfrecord ...]

Generates two tables with unigraph.tables.writers and reads each back with the pure
readers (unigraph.tables.read_unit) in this process:
  edges  --edges rows: string ids `n<k>` of --nodes nodes, a float64 weight
         and a float32 3-vector edge feature;
  nodes  --nodes rows: string ids and a float32 vector of --features values.
Each table is written as CSV, TFRecord (also GZIP-compressed, and read once
more without data checksums to show what they cost) and Parquet. Prints the
file size, write rows/s (batches generated beforehand, not timed), and the
median over --repeat reads of rows/s and MB/s (of the file as stored), and of
rows per second of the process's CPU time (all its threads: the steadier
figure on a machine other jobs keep busy). --tables and --formats measure a
subset. Data goes to --dir (default: a fresh temporary
folder), never into the repository.
"""
from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time

import numpy as np

from unigraph.columnar.batches import EdgeBatch, NodeBatch, row_ids
from unigraph.tables import DEFAULT_BATCH_ROWS, read_unit, split_file
from unigraph.tables.layout import EDGES, NODES, FeatureSpec, TableLayout
from unigraph.tables.tfrecord import read_tfrecord
from unigraph.tables.writers import write_table

LAYOUT = TableLayout(EDGES, "edges", (FeatureSpec("vec", np.dtype(np.float32), (3,), "DT_FLOAT"),))

# (name in the table, file suffix, read without data checksums)
FORMATS = [("csv", ".csv", False), ("tfrecord", ".tfrecord", False),
           ("tfrecord, no crc", ".tfrecord", True), ("tfrecord.gz", ".tfrecord.gz", False),
           ("parquet", ".parquet", False)]
# --formats spells them without spaces
FORMAT_KEYS = {"csv": "csv", "tfrecord": "tfrecord", "tfrecord-nocrc": "tfrecord, no crc",
               "tfrecord-gz": "tfrecord.gz", "parquet": "parquet"}


def node_layout(features: int) -> TableLayout:
    return TableLayout(NODES, "nodes", (FeatureSpec("feat", np.dtype(np.float32), (features,),
                                                    "DT_FLOAT"),))


def make_batches(edges: int, nodes: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    for start in range(0, edges, DEFAULT_BATCH_ROWS):
        n = min(DEFAULT_BATCH_ROWS, edges - start)
        ends = rng.integers(0, nodes, size=(2, n))
        names = np.char.add(b"n", ends.astype("S"))
        yield EdgeBatch("edges", names[0], names[1], row_ids(0, start, n),
                        rng.random(n).round(3),
                        {"vec": rng.standard_normal((n, 3)).astype(np.float32)})


def make_node_batches(nodes: int, features: int, seed: int = 1):
    rng = np.random.default_rng(seed)
    for start in range(0, nodes, DEFAULT_BATCH_ROWS):
        n = min(DEFAULT_BATCH_ROWS, nodes - start)
        ids = np.char.add(b"n", np.arange(start, start + n).astype("S"))
        yield NodeBatch("nodes", ids, row_ids(0, start, n),
                        {"feat": rng.standard_normal((n, features)).astype(np.float32)})


def gzip_copy(path: str, target: str) -> None:
    """A GZIP-compressed copy, as TensorFlow's TFRecordOptions(compression_type='GZIP') writes."""
    import gzip
    with open(path, "rb") as source, gzip.open(target, "wb", compresslevel=6) as out:
        while True:
            block = source.read(1 << 24)
            if not block:
                break
            out.write(block)


def read_rows(layout: TableLayout, path: str, no_crc: bool) -> int:
    if no_crc:
        return sum(len(b) for b in read_tfrecord(layout, path, 0, DEFAULT_BATCH_ROWS,
                                                 check_crc=False))
    return sum(len(b) for unit in split_file(path, 0) for b in read_unit(layout, unit))


def bench_table(label: str, layout: TableLayout, batches, rows: int, folder: str,
                repeat: int, formats: list[str] | None = None) -> None:
    written: dict[str, tuple[str, float]] = {}
    batches = list(batches())  # generated once, outside the timed writes
    for name, suffix, no_crc in FORMATS:
        if formats is not None and name not in formats:
            continue
        path = os.path.join(folder, f"{layout.set_name}{suffix}")
        if suffix == ".tfrecord.gz" and ".tfrecord" not in written:
            written[".tfrecord"] = (os.path.join(folder, f"{layout.set_name}.tfrecord"),
                                    float("nan"))
            write_table(written[".tfrecord"][0], layout, batches)
        if suffix not in written:
            t0 = time.perf_counter()
            if suffix == ".tfrecord.gz":
                gzip_copy(written[".tfrecord"][0], path)
                seconds = float("nan")  # not our writer: a plain copy compressed by gzip
            else:
                write_table(path, layout, batches)
                seconds = time.perf_counter() - t0
            written[suffix] = (path, seconds)
        path, seconds = written[suffix]
        times, cpu_times = [], []
        for _ in range(repeat):
            t0, c0 = time.perf_counter(), time.process_time()
            count = read_rows(layout, path, no_crc)
            times.append(time.perf_counter() - t0)
            cpu_times.append(time.process_time() - c0)
            assert count == rows, (name, count)
        read_seconds = statistics.median(times)
        cpu_seconds = statistics.median(cpu_times)
        size = os.path.getsize(path) / 1e6
        write_rate = "" if no_crc or seconds != seconds else f"{rows / seconds:,.0f}"
        print(f"{label:6} {name:17} {size:8.1f} {write_rate:>13} {rows / read_seconds:12,.0f} "
              f"{size / read_seconds:8.0f} {rows / cpu_seconds:12,.0f}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="read_benchmark", description=__doc__.split("\n\n")[0])
    parser.add_argument("--edges", type=int, default=1_000_000)
    parser.add_argument("--nodes", type=int, default=100_000)
    parser.add_argument("--features", type=int, default=128,
                        help="float32 values per node (the node table's one feature)")
    parser.add_argument("--repeat", type=int, default=3, help="reads per file; the median counts")
    parser.add_argument("--dir", default=None, help="where to write the tables")
    parser.add_argument("--tables", nargs="+", choices=["edges", "nodes"],
                        default=["edges", "nodes"], help="which tables to measure")
    parser.add_argument("--formats", nargs="+", choices=sorted(FORMAT_KEYS),
                        default=None, help="which formats to measure (default: all)")
    args = parser.parse_args(argv)
    formats = None if args.formats is None else [FORMAT_KEYS[f] for f in args.formats]
    folder = args.dir or tempfile.mkdtemp(prefix="unigraph-read-benchmark-")
    os.makedirs(folder, exist_ok=True)
    print(f"{args.edges} edges, {args.nodes} nodes with {args.features} float32 features, "
          f"tables in {folder}")
    print(f"{'table':6} {'format':17} {'MB':>8} {'write rows/s':>13} {'read rows/s':>12} "
          f"{'read MB/s':>8} {'CPU rows/s':>12}")
    if "edges" in args.tables:
        bench_table("edges", LAYOUT, lambda: make_batches(args.edges, args.nodes), args.edges,
                    folder, args.repeat, formats)
    if "nodes" in args.tables:
        layout = node_layout(args.features)
        bench_table("nodes", layout, lambda: make_node_batches(args.nodes, args.features),
                    args.nodes, folder, args.repeat, formats)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
