"""`python -m pipelines.bench.import_benchmark`: how fast `unigraph-import` reads an OGB
dataset folder, beside how fast `sample` reads the same graph's CSV tables.

    python -m pipelines.bench.import_benchmark --scale 1.0 --json docs/benchmarks/import.json

The graph is the synthetic OGBN-MAG-shaped one (pipelines/synthetic_model.py) at --scale, in
two forms cached under benchmarks/cache/ (git-ignored): its unigraph CSV tables (what
`benchmark` samples) and the same arrays as an `ogbn_mag` folder laid out as the `ogb`
package stores it (pipelines/bench/ogb_layout.py: gzipped CSV of numbers, one folder
per relation, a time split). Contenders, each a process of its own, interleaved within
each of --repeat rounds (the machine's state shared), measured by proc_stats.run_measured
(CPU seconds of the process tree, wall seconds, peak RSS):

  read_csv     every table of the CSV graph read with the readers `sample` uses
               (unigraph.tables.read_set, each table once): sample's CSV reading rate
  import_read  what `unigraph-import` does before it writes: the OGB folder read, every
               value checked and decoded into the batches the writers take (the
               importer's TableSources through unigraph.tables.read_memory): how fast
               importing reads
  import       the whole command, `unigraph-import <ogbn_mag> --output <tmp> --format F`:
               read, checked and written as unigraph tables (default F: csv), then deleted

Rows are the table rows each contender reads: for read_csv the graph's node and edge
rows; for the import the same nodes and edges (the OGB folder holds the same graph)
plus the split's seed rows, which it reads and writes too. The figure is rows per
CPU-second, and the ratios import_read / read_csv and import / read_csv. `--json
FILE` writes the medians with provenance; docs/performance.md shows it (generated).
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import time

from pipelines import synthetic_model
from pipelines.bench.benchmark import DEFAULT_CACHE, ensure_graph, graph_key
from pipelines.bench.ogb_layout import mag_from_synthetic
from pipelines.bench.proc_stats import run_measured
from pipelines.bench.provenance import provenance, write_json

CONTENDERS = ("read_csv", "import_read", "import")
COMPLETE = ".complete"


def ensure_ogb_folder(cache_dir: str, scale: float, seed: int, log=print) -> str:
    """The `ogbn_mag` folder of the synthetic graph at `scale`, made unless complete."""
    root = os.path.join(cache_dir, graph_key(scale, seed, "ogb", 1, 0, False))
    folder = os.path.join(root, "ogbn_mag")
    if not os.path.exists(os.path.join(root, COMPLETE)):
        shutil.rmtree(root, ignore_errors=True)
        started = time.perf_counter()
        mag_from_synthetic(synthetic_model.generate(scale, seed), folder)
        open(os.path.join(root, COMPLETE), "w").close()
        log(f"wrote {folder} in {time.perf_counter() - started:.1f} s")
    else:
        log(f"reusing {folder}")
    return folder


def read_tables(graph: str) -> dict:
    """Every table of a unigraph read as `sample` reads it; {kind: rows}."""
    from unigraph.schema import has_table, is_link_readout, load_schema
    from unigraph.tables import read_set

    loaded = load_schema(graph)
    rows = {"nodes": 0, "edges": 0}
    seen = set()
    for kind, pieces in (("nodes", loaded.schema.node_sets), ("edges", loaded.schema.edge_sets)):
        for name, piece in sorted(pieces.items()):
            if not has_table(piece.metadata) or is_link_readout(kind[:-1] + " set", name) \
                    or piece.metadata.filename in seen:
                continue
            seen.add(piece.metadata.filename)
            rows[kind] += sum(len(batch) for batch in read_set(loaded, kind, name))
    return rows


def import_read(folder: str) -> dict:
    """Every table and split of an OGB folder read as `unigraph-import` reads them,
    nothing written; {kind: rows}."""
    from unigraph.importers.ogb import from_ogb
    from unigraph.importers.write import _readers_of
    from unigraph.tables.layout import seeds_layout, table_layout
    from unigraph.tables.read import read_memory

    graph = from_ogb(folder)
    loaded = graph.loaded()
    rows = {"nodes": 0, "edges": 0, "seeds": 0}
    for stem, (kind, name) in _readers_of(graph).items():
        layout = table_layout(loaded, kind, name)
        rows[kind] += sum(len(b) for b in read_memory(layout, graph.tables[stem]))
    for split in graph.splits:
        rows["seeds"] += sum(len(b) for b in read_memory(seeds_layout(), split.source))
    return rows


def _measure(name: str, command: list[str]) -> dict:
    stats = run_measured(command)
    if stats.returncode != 0:
        raise SystemExit(f"{name} failed ({stats.returncode}): {stats.stderr.strip()[-800:]}")
    return {"contender": name, "cpu_s": round(stats.cpu_seconds, 2),
            "wall_s": round(stats.wall_seconds, 2),
            "peak_rss_mb": round(stats.peak_rss_bytes / 2**20, 1), "stdout": stats.stdout}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scale", type=float, default=0.01)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--format", default="csv", choices=("csv", "parquet", "tfrecord"),
                        help="tables the import writes (default csv)")
    parser.add_argument("--cache-dir", default=DEFAULT_CACHE, metavar="DIR")
    parser.add_argument("--json", metavar="FILE", help="write the results here")
    parser.add_argument("--read-tables", metavar="GRAPH", help=argparse.SUPPRESS)
    parser.add_argument("--import-read", metavar="OGB", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.read_tables:  # the read_csv contender's own process
        print(json.dumps(read_tables(args.read_tables)))
        return 0
    if args.import_read:  # the import_read contender's own process
        print(json.dumps(import_read(args.import_read)))
        return 0
    log = print if not args.json else (lambda text: print(text, file=sys.stderr))
    graph, manifest = ensure_graph(args.cache_dir, scale=args.scale, seed=args.seed, fmt="csv",
                                   shards=1, hub_edges=0, log=log)
    ogb = ensure_ogb_folder(args.cache_dir, args.scale, args.seed, log)
    runs, rows = [], None
    for round_index in range(args.repeat):
        for name in CONTENDERS:
            if name == "read_csv":
                run = _measure(name, [sys.executable, "-m", "pipelines.bench.import_benchmark",
                                      "--read-tables", graph])
                rows = json.loads(run.pop("stdout"))
            elif name == "import_read":
                run = _measure(name, [sys.executable, "-m", "pipelines.bench.import_benchmark",
                                      "--import-read", ogb])
                read = json.loads(run.pop("stdout"))
                if (read["nodes"], read["edges"]) != (rows["nodes"], rows["edges"]):
                    raise SystemExit(f"the OGB folder holds {read} rows, the tables {rows}")
                rows["seeds"] = read["seeds"]
            else:
                out = os.path.join(args.cache_dir, "runs", "import", str(round_index))
                shutil.rmtree(out, ignore_errors=True)
                run = _measure(name, [sys.executable, "-m", "pipelines.import_graph", ogb,
                                      "--output", out, "--format", args.format])
                run.pop("stdout")
                shutil.rmtree(out, ignore_errors=True)
            run["round"] = round_index
            runs.append(run)
            log(f"round {round_index} {name}: {run['cpu_s']:.1f} CPU-s, {run['wall_s']:.1f} s, "
                f"peak RSS {run['peak_rss_mb']:.0f} MB")
    total = rows["nodes"] + rows["edges"]
    medians = {}
    for name in CONTENDERS:
        mine = [r for r in runs if r["contender"] == name]
        cpu = statistics.median(r["cpu_s"] for r in mine)
        read = total if name == "read_csv" else total + rows["seeds"]
        medians[name] = {"cpu_s": round(cpu, 2), "rows": read,
                         "wall_s": round(statistics.median(r["wall_s"] for r in mine), 2),
                         "peak_rss_mb": statistics.median(r["peak_rss_mb"] for r in mine),
                         "rows_per_cpu_s": round(read / cpu) if cpu else None}
    document = {"benchmark": "import", **provenance("python -m pipelines.bench.import_benchmark"),
                "config": {"scale": args.scale, "seed": args.seed, "format": args.format,
                           "repeat": args.repeat, "nodes": manifest.get("nodes"),
                           "edges": manifest.get("edges"), "rows": rows},
                "runs": runs, "medians": medians,
                "import_read_vs_read": round(medians["import_read"]["rows_per_cpu_s"]
                                             / medians["read_csv"]["rows_per_cpu_s"], 3),
                "import_vs_read": round(medians["import"]["rows_per_cpu_s"]
                                        / medians["read_csv"]["rows_per_cpu_s"], 3)}
    if args.json:
        write_json(document, args.json)
    print(f"rows: {rows['nodes']:,} node, {rows['edges']:,} edge, {rows['seeds']:,} seed")
    for name in CONTENDERS:
        m = medians[name]
        print(f"{name:>11}: {m['rows_per_cpu_s']:,} rows per CPU-second ({m['cpu_s']} CPU-s, "
              f"{m['wall_s']} s, peak RSS {m['peak_rss_mb']:.0f} MB)")
    print(f"import_read / read_csv: {document['import_read_vs_read']:.2f}x, import / "
          f"read_csv: {document['import_vs_read']:.2f}x  (load average "
          f"{document['load_average']})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
