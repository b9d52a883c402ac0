"""Reading speed of the unigraph table readers: rows/s per format on a generated edge table.

    python -m pipelines.read_benchmark [--edges 1000000] [--nodes 100000] [--dir /tmp/...]

Generates one edge table (string ids `n<k>`, a float64 weight, and a float32
3-vector edge feature) in CSV, TFRecord and Parquet with unigraph.writers, then
reads each back with the pure readers (unigraph.tables.read_unit) in this
process and prints write and read rows/s. Data goes to --dir (default: a fresh
temporary folder), never into the repository.
"""
from __future__ import annotations

import argparse
import os
import tempfile
import time

import numpy as np

from unigraph.batches import EdgeBatch, row_ids
from unigraph.tables import DEFAULT_BATCH_ROWS, read_unit, split_file
from unigraph.tables.layout import EDGES, FeatureSpec, TableLayout
from unigraph.writers import write_table

LAYOUT = TableLayout(EDGES, "edges", (FeatureSpec("vec", np.dtype(np.float32), (3,), "DT_FLOAT"),))


def make_batches(edges: int, nodes: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    for start in range(0, edges, DEFAULT_BATCH_ROWS):
        n = min(DEFAULT_BATCH_ROWS, edges - start)
        ends = rng.integers(0, nodes, size=(2, n))
        names = np.char.add(b"n", ends.astype("S"))
        yield EdgeBatch("edges", names[0], names[1], row_ids(0, start, n),
                        rng.random(n).round(3),
                        {"vec": rng.standard_normal((n, 3)).astype(np.float32)})


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="read_benchmark", description=__doc__.split("\n\n")[0])
    parser.add_argument("--edges", type=int, default=1_000_000)
    parser.add_argument("--nodes", type=int, default=100_000)
    parser.add_argument("--dir", default=None, help="where to write the tables")
    args = parser.parse_args(argv)
    folder = args.dir or tempfile.mkdtemp(prefix="unigraph-read-benchmark-")
    os.makedirs(folder, exist_ok=True)
    print(f"{args.edges} edges, {args.nodes} nodes, tables in {folder}")
    print(f"{'format':9} {'MB':>7} {'write rows/s':>13} {'read rows/s':>12}")
    for fmt in ("csv", "tfrecord", "parquet"):
        path = os.path.join(folder, f"edges.{fmt}")
        t0 = time.perf_counter()
        write_table(path, LAYOUT, make_batches(args.edges, args.nodes))
        write_seconds = time.perf_counter() - t0
        t0 = time.perf_counter()
        rows = sum(len(b) for unit in split_file(path, 0) for b in read_unit(LAYOUT, unit))
        read_seconds = time.perf_counter() - t0
        assert rows == args.edges, (fmt, rows)
        size = os.path.getsize(path) / 1e6
        print(f"{fmt:9} {size:7.1f} {args.edges / write_seconds:13,.0f} "
              f"{rows / read_seconds:12,.0f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
