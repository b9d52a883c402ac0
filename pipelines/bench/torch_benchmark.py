"""`python -m pipelines.bench.torch_benchmark OUT`: decoding a `sample` output folder into PyG
`HeteroData`, side by side with the project's numpy decoder over the same folder.

Contenders, interleaved within each round (the same machine state for all), the median
of --repeat rounds; each reads every record of the folder from its files:

  numpy         `parse_example` per record: the numpy GraphTensors (the reference rate)
  hetero        `SampleDataset`: one HeteroData per record (decode + convert)
  hetero_batch  `SampleDataset(batch_size=B)`: records merged into batches, seeds first
  pyg_batch     `SampleDataset` through PyG's DataLoader: records collated by `Batch`

The vocabulary (`Vocabulary.from_samples`, one pass over the `#id`s) is built once,
before, and timed on its own. `--json FILE` writes the results with the date, machine
and command; `python -m pipelines.tools.docs_gen` renders that file into docs/torch.md and the
performance page (pipelines/tools/perf_tables.py), so the figure there is never typed by hand:

    python -m pipelines.bench.torch_benchmark OUT --json docs/benchmarks/torch.json
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

from pipelines.bench.provenance import provenance, publish
from sampler.graph_tensor.codec import parse_example
from sampler.output.folder import iter_records, open_samples

CONTENDERS = ("numpy", "hetero", "hetero_batch", "pyg_batch")


def _numpy(samples):
    count = 0
    for path in samples.files:
        for record in iter_records(path):
            parse_example(samples.schema, record)
            count += 1
    return count


def contenders(folder: str, vocabulary, batch_size: int) -> dict:
    """name -> a function that reads the whole folder and returns the subgraphs read."""
    from torch_geometric.loader import DataLoader

    from sampler.torch import SampleDataset

    samples = open_samples(folder)
    records = SampleDataset(folder, vocabulary=vocabulary)
    batches = SampleDataset(folder, vocabulary=vocabulary, batch_size=batch_size)
    return {
        "numpy": lambda: _numpy(samples),
        "hetero": lambda: sum(1 for _ in records),
        "hetero_batch": lambda: sum(int(d[_seed_type(d)].batch_size) if _seed_type(d)
                                    else len(d.input_id) for d in batches),
        "pyg_batch": lambda: sum(b.num_graphs for b in DataLoader(records,
                                                                  batch_size=batch_size)),
    }


def _seed_type(data):
    return next((t for t in data.node_types if "batch_size" in data[t]), None)


def run(folder: str, repeat: int, batch_size: int) -> dict:
    from sampler.torch import Vocabulary

    samples = open_samples(folder)
    size = sum(os.path.getsize(p) for p in samples.files) if not folder.startswith("gs://") \
        else None
    started = time.perf_counter()
    vocabulary = Vocabulary.from_samples(folder)
    vocabulary_s = time.perf_counter() - started
    runs = contenders(folder, vocabulary, batch_size)
    seconds = {name: [] for name in runs}
    counts = {}
    for _ in range(repeat):
        for name, read in runs.items():  # interleaved
            started = time.perf_counter()
            counts[name] = read()
            seconds[name].append(time.perf_counter() - started)
    if len(set(counts.values())) != 1:
        raise AssertionError(f"contenders read different numbers of subgraphs: {counts}")
    records = counts["numpy"]
    rows = {}
    for name, times in seconds.items():
        median = statistics.median(times)
        rows[name] = {"median_s": round(median, 3), "seconds": [round(t, 3) for t in times],
                      "records_per_s": round(records / median, 1),
                      "mb_per_s": round(size / median / 1e6, 2) if size else None,
                      "vs_numpy": round(statistics.median(seconds["numpy"]) / median, 3)}
    return {"records": records, "shards": len(samples.files),
            "mb": round(size / 1e6, 1) if size else None, "batch_size": batch_size,
            "vocabulary_s": round(vocabulary_s, 3),
            "vocabulary": {n: vocabulary.size(n) for n in vocabulary.node_sets()},
            "contenders": rows}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="torch_benchmark",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", help="a `sample` output folder")
    parser.add_argument("--repeat", type=int, default=3, help="rounds (default 3)")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--about", default="",
                        help="what the folder holds, for the record (e.g. how it was made)")
    parser.add_argument("--json", metavar="FILE", help="write the results here")
    args = parser.parse_args(argv)
    result = run(args.folder, args.repeat, args.batch_size)
    document = {
        "benchmark": "torch",
        **provenance("python -m pipelines.bench.torch_benchmark", argv),
        "folder": args.about or args.folder,
        "repeat": args.repeat,
        "result": result,
    }
    publish(document, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
