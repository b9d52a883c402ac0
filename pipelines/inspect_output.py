"""`sample-inspect OUT`: one decoded subgraph of a `sample` output folder, summarized.

Decodes with the numpy GraphTensor core against the folder's graph_schema.pbtxt,
without TensorFlow. Shows, per node set and edge set, the sizes, a few ids or
(source id -> target id) pairs, and every feature's shape and dtype.
"""
from __future__ import annotations

import argparse
import os
import sys

from sampler.graph_tensor import GraphTensor, parse_example
from sampler.output.folder import iter_records, open_samples
from unigraph.errors import SamplerError
from unigraph.ragged import Ragged

SHOWN = 6  # ids and edges listed per set


def nth_record(files: list[str], index: int) -> tuple[str, int, bytes]:
    """(file, index within the file, record) of the index-th record across the shards."""
    seen = 0
    for path in files:
        for position, record in enumerate(iter_records(path)):
            if seen == index:
                return path, position, record
            seen += 1
    raise SamplerError(f"{os.path.dirname(files[0])}: has {seen} record(s), no record #{index}")


def _describe(value) -> str:
    if isinstance(value, Ragged):
        return f"ragged[{len(value)}] {value.flat_values.dtype}"
    return f"{list(value.shape)} {value.dtype}"


def _listing(items: list[str]) -> str:
    more = f", ... (+{len(items) - SHOWN})" if len(items) > SHOWN else ""
    return ", ".join(items[:SHOWN]) + more


def summarize(graph: GraphTensor) -> str:
    seed = graph.context["seed_id"][0].decode(errors="replace")
    lines = [f"subgraph of seed {seed!r}"]
    for name, node_set in sorted(graph.node_sets.items()):
        ids = [i.decode(errors="replace") for i in node_set.features.get("#id", [])]
        features = ", ".join(f"{k} {_describe(v)}" for k, v in sorted(node_set.features.items())
                             if k != "#id")
        lines.append(f"  nodes {name}: {int(node_set.sizes.sum())}"
                     + (f" [{_listing(ids)}]" if ids else "")
                     + (f"; features: {features}" if features else ""))
    for name, edge_set in sorted(graph.edge_sets.items()):
        adjacency = edge_set.adjacency
        src_set, tgt_set = adjacency.node_set_name("source"), adjacency.node_set_name("target")
        src_ids = graph.node_sets[src_set].features.get("#id")
        tgt_ids = graph.node_sets[tgt_set].features.get("#id")
        pairs = [f"{_name(src_ids, s)}->{_name(tgt_ids, t)}" for s, t in
                 zip(adjacency.indices("source").tolist(), adjacency.indices("target").tolist())]
        features = ", ".join(f"{k} {_describe(v)}" for k, v in sorted(edge_set.features.items()))
        lines.append(f"  edges {name} ({src_set} -> {tgt_set}): {int(edge_set.sizes.sum())}"
                     + (f" [{_listing(pairs)}]" if pairs else "")
                     + (f"; features: {features}" if features else ""))
    return "\n".join(lines)


def _name(ids, index: int) -> str:
    return ids[index].decode(errors="replace") if ids is not None else str(index)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="sample-inspect", description=__doc__.split("\n\n")[0],
        epilog="example:\n  sample-inspect out/demo --index 3",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("output", metavar="OUT", help="a `sample` output folder")
    parser.add_argument("--index", type=int, default=0, help="which record (default 0)")
    args = parser.parse_args(argv)
    try:
        samples = open_samples(args.output)
        path, position, record = nth_record(list(samples.files), args.index)
        graph = parse_example(samples.schema, record)
        print(f"{path}, record {position}:")
        print(summarize(graph))
        return 0
    except SamplerError as e:
        print(f"sample-inspect: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
