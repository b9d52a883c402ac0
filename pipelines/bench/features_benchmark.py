"""`python -m pipelines.bench.features_benchmark`: what applying a feature spec costs, as a
share of turning a batch of subgraphs into PyG `HeteroData` (docs/features.md).

On the benchmark graph with every kind of feature (`synthetic-graph --extra-features`:
a venue string per paper, a list of tags, a list of token ids, a citation's intent, an
author's position; generated once and cached like `benchmark`'s graphs), batches of the
benchmark spec's subgraphs are converted, interleaved in each round, after a round not
counted, and the median of --repeat rounds taken; CPU seconds of this process, one
torch thread:

  without   `to_hetero_data(batch)`: the numbers only (strings and lists left out)
  with      `to_hetero_data(batch, encoder=...)`: every feature, by `benchmark_spec()`
            (venues, tags and intents through vocabularies, token ids hashed; the lists
            as bags with offsets)
  spec      the part of `with` spent applying the spec (FeatureEncoder.encode: the
            lookups, hashes, offsets and numbers), timed inside it; laying the output
            out as tensors is the conversion's, as it is without a spec

for the Python API's batches (`graph.batches`) and for the same subgraphs as decoded
records (their tf.Examples decoded as one batch by the batched decoder, and converted
by `batch_to_hetero_data`: what SampleDataset does with each batch; decoding is timed
too, so the spec's share of a batch's whole reading is given). Each conversion of a
decoded batch gets a batch decoded afresh (untimed), as SampleDataset converts each
once: a decoded batch makes some of its forms on first use (its strings' fixed-width
arrays), and a batch converted before would hand the next conversion those for
free. The
spec's share is spec / with (issue 41 asks for at most 20%); `with / without` is what
carrying every feature costs beside the numbers alone. Each feature's encoding is also
timed alone, and fitting the encoder (its vocabularies over every row, once per graph).
`--json FILE` writes the results with their provenance; `python -m
pipelines.tools.docs_gen` renders them (pipelines/tools/perf_tables.py):

    python -m pipelines.bench.features_benchmark --scale 0.01 --json docs/benchmarks/features.json
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

from pipelines.bench.benchmark import DEFAULT_CACHE, ensure_graph
from pipelines.bench.provenance import provenance, publish

PATHS = ("api", "records")


def benchmark_spec():
    """What a user would declare for these features: venues and tags through
    vocabularies (a venue seen once is left out), the ragged token ids hashed into 2^16
    buckets as bags, intents through a vocabulary; the numbers by their defaults."""
    from sampler.features import Categorical, FeatureSpec

    return FeatureSpec(
        node_sets={"paper": {"venue": Categorical(min_count=2),
                             "tags": Categorical(),
                             "tokens": Categorical(hash_buckets=1 << 16)}},
        edge_sets={"cites": {"intent": Categorical()}})


def run(folder: str, *, batch_size: int, batches: int, repeat: int, seed: int = 0) -> dict:
    import torch

    from sampler import api
    from sampler.features import FeatureEncoder
    from sampler.graph_tensor.batch_codec import BatchDecoder, record_buffer
    from sampler.graph_tensor.example_batch import ExampleBatch
    from sampler.torch import Vocabulary, to_hetero_data
    from sampler.torch.convert import batch_to_hetero_data

    def convert(batch, **options):
        if isinstance(batch, ExampleBatch):
            return batch_to_hetero_data(batch, **options)
        return to_hetero_data(batch, **options)

    torch.set_num_threads(1)
    graph = api.load_graph(folder, os.path.join(folder, "sampling_spec.pbtxt"))
    started = time.process_time()
    encoder = FeatureEncoder.fit(graph, benchmark_spec())
    fit_s = time.process_time() - started
    vocabulary = Vocabulary.from_graph(graph)
    online = [b for b, _ in zip(graph.batches(batch_size=batch_size, epochs=1, seed=seed),
                                range(batches))]
    schema = graph.output_schema
    decoder = BatchDecoder(schema)
    buffers = [record_buffer(b.to_examples()) for b in online]

    def decoded():  # the batches as SampleDataset gets them: decoded, not yet read
        return [decoder.decode(*buffer) for buffer in buffers]
    decode_s = []  # SampleDataset's other part of a batch: decoding its records
    for _ in range(repeat):
        begun = time.process_time()
        for buffer in buffers:
            decoder.decode(*buffer)
        decode_s.append(time.process_time() - begun)
    spent = {"spec": 0.0}

    def timed(function):
        def run_timed(*args, **kwargs):
            begun = time.process_time()
            try:
                return function(*args, **kwargs)
            finally:
                spent["spec"] += time.process_time() - begun
        return run_timed

    per_feature, per_feature_records = (_per_feature(encoder, batches, lambda batch: convert(
        batch, vocabulary=vocabulary, encoder=encoder), repeat)
        for batches in (online, decoded()))
    # The spec's part: FeatureEncoder.encode (laying its output out as tensors, the
    # numbers' matrix `x` among them, is what the conversion does without a spec too).
    encode = encoder.encode
    encoder.encode = timed(encode)
    try:
        seconds = _rounds({"api": lambda: online, "records": decoded}, repeat, spent,
                          lambda batch: convert(batch, vocabulary=vocabulary),
                          lambda batch: convert(batch, vocabulary=vocabulary,
                                                encoder=encoder))
    finally:
        encoder.encode = encode
    sample = to_hetero_data(online[0], vocabulary=vocabulary, encoder=encoder)
    rows = {}
    for path in PATHS:
        medians = {name: statistics.median(seconds[f"{path}/{name}"])
                   for name in ("without", "with", "spec")}
        rows[path] = {f"{name}_s_per_batch": round(value / len(online), 5)
                      for name, value in medians.items()}
        rows[path]["spec_share"] = round(medians["spec"] / medians["with"], 4)
        if path == "records":  # of what SampleDataset does per batch: decode, convert
            decode = statistics.median(decode_s)
            rows[path]["decode_s_per_batch"] = round(decode / len(online), 5)
            rows[path]["spec_share_of_decode_and_convert"] = round(
                medians["spec"] / (decode + medians["with"]), 4)
        rows[path]["with_vs_without"] = round(medians["with"] / medians["without"], 3)
        rows[path]["seconds"] = {name: [round(t, 4) for t in seconds[f"{path}/{name}"]]
                                 for name in ("without", "with", "spec")}
    paper = sample["paper"]
    return {"batch_size": batch_size, "batches": len(online),
            "subgraphs": sum(len(b) for b in online), "fit_s": round(fit_s, 3),
            "papers_per_batch": int(paper.num_nodes),
            "values_per_batch": {name: int(paper[name].numel()) for name in
                                 ("venue", "tags", "tokens") if name in paper},
            "vocabularies": {f"{kind}/{name}.{feature}": vocabulary.size for
                             (kind, name, feature), vocabulary in encoder.vocabularies.items()},
            "per_feature_ms": per_feature, "per_feature_records_ms": per_feature_records,
            "paths": rows}


def _per_feature(encoder, batches: list, convert_batch, repeat: int) -> dict:
    """Milliseconds per batch of encoding each feature alone (FeatureEncoder.encode of
    that feature, on the values the conversion hands the encoder), median of `repeat`."""
    calls = []
    encode = encoder.encode
    encoder.encode = lambda kind, name, features, **kw: (
        calls.append((kind, name, dict(features), kw)) or encode(kind, name, features, **kw))
    try:
        for batch in batches:
            convert_batch(batch)
    finally:
        encoder.encode = encode
    spent: dict[str, list] = {}
    for _ in range(repeat):
        totals: dict[str, float] = {}
        for kind, set_name, features, kw in calls:
            for name, values in features.items():
                feature = encoder.features(set_name, kind)[name]
                begun = time.process_time()
                encode(kind, set_name, {name: values}, **kw)
                key = f"{kind}/{set_name}.{name} ({type(feature.kind).__name__.lower()})"
                totals[key] = totals.get(key, 0.0) + time.process_time() - begun
        for key, total in totals.items():
            spent.setdefault(key, []).append(total)
    return {key: round(statistics.median(values) * 1e3 / len(batches), 3)
            for key, values in sorted(spent.items(), key=lambda kv: -sum(kv[1]))}


def _rounds(inputs: dict, repeat: int, spent: dict, without, with_spec) -> dict:
    """CPU seconds of each path's batches (`inputs[path]()`, called for every pass:
    each batch is converted once) converted `without` and `with_spec`, and of the
    spec's part (spent["spec"]), per round; a first round is not counted (first calls'
    imports and caches)."""
    seconds = {f"{path}/{name}": [] for path in PATHS for name in ("without", "with", "spec")}
    for path in PATHS:
        for batch in inputs[path]():
            without(batch)
        for batch in inputs[path]():
            with_spec(batch)
    for _ in range(repeat):
        for path in PATHS:  # interleaved
            batches = inputs[path]()
            begun = time.process_time()
            for batch in batches:
                without(batch)
            seconds[f"{path}/without"].append(time.process_time() - begun)
            batches = inputs[path]()
            spent["spec"] = 0.0
            begun = time.process_time()
            for batch in batches:
                with_spec(batch)
            seconds[f"{path}/with"].append(time.process_time() - begun)
            seconds[f"{path}/spec"].append(spent["spec"])
    return seconds


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="features_benchmark",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--scale", type=float, default=0.01)
    parser.add_argument("--seed", type=int, default=0, help="the graph's seed")
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--batches", type=int, default=12)
    parser.add_argument("--repeat", type=int, default=5, help="rounds (default 5)")
    parser.add_argument("--cache-dir", default=DEFAULT_CACHE, metavar="DIR")
    parser.add_argument("--json", metavar="FILE", help="write the results here")
    args = parser.parse_args(argv)
    folder, manifest = ensure_graph(args.cache_dir, scale=args.scale, seed=args.seed,
                                    fmt="parquet", shards=1, hub_edges=0,
                                    extra_features=True, log=lambda m: print(m, file=sys.stderr))
    result = run(folder, batch_size=args.batch_size, batches=args.batches, repeat=args.repeat)
    document = {
        "benchmark": "features",
        **provenance("python -m pipelines.bench.features_benchmark", argv),
        "graph": {"scale": args.scale, "seed": args.seed, "extra_features": True,
                  "nodes": manifest.get("nodes"), "edges": manifest.get("edges")},
        "repeat": args.repeat,
        "result": result,
    }
    publish(document, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
