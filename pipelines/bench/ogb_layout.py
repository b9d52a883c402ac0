"""OGB dataset folders written from arrays, laid out as the `ogb` package stores them.

For the import benchmark (pipelines/bench/import_benchmark.py: the synthetic MAG-shaped
graph as an `ogbn_mag` folder) and the tests, which make small OGB folders of their own
(nothing is downloaded). The layout is `ogb/io/read_graph_raw.py`'s: headerless
gzipped CSV files of numbers, `num-node-dict.csv.gz` with a header row, one folder per
relation `<source>___<relation>___<target>`, splits as node indices per node type, link
splits as `.pt` dicts of tensors (written with torch, imported only for those).

    python -m pipelines.bench.ogb_layout --scale 0.001 --output dataset/ogbn_mag
"""
from __future__ import annotations

import argparse
import os
from typing import Mapping

import numpy as np
import pyarrow as pa
import pyarrow.csv as pa_csv

GZ = ".csv.gz"


def write_numbers(path: str, values: np.ndarray) -> None:
    """A headerless gzipped CSV of numbers, one row of `values` a line."""
    values = np.asarray(values)
    if values.ndim == 1:
        values = values[:, None]
    os.makedirs(os.path.dirname(path), exist_ok=True)
    table = pa.table({f"c{i}": pa.array(np.ascontiguousarray(values[:, i]))
                      for i in range(values.shape[1])})
    with pa.output_stream(path, compression="gzip") as sink:
        if table.num_rows:
            pa_csv.write_csv(table, sink, pa_csv.WriteOptions(include_header=False,
                                                               quoting_style="none"))


def write_header_table(path: str, columns: Mapping[str, list]) -> None:
    """A gzipped CSV with a header row (num-node-dict.csv.gz, nodetype-has-label.csv.gz)."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    names = list(columns)
    lines = [",".join(names)] + [",".join(str(columns[n][i]) for n in names)
                                 for i in range(len(columns[names[0]]) if names else 0)]
    with pa.output_stream(path, compression="gzip") as sink:
        sink.write(("\n".join(lines) + "\n").encode())


def write_homogeneous(folder: str, *, num_nodes: int, edges: np.ndarray,
                      node_feat: np.ndarray | None = None, node_label: np.ndarray | None = None,
                      node_extra: Mapping[str, np.ndarray] = {},
                      edge_feat: np.ndarray | None = None,
                      edge_extra: Mapping[str, np.ndarray] = {},
                      splits: Mapping[str, Mapping[str, np.ndarray]] = {}) -> str:
    """An ogbn-arxiv-like folder: `edges` [E, 2]; `node_extra` {"node_year": ...};
    `splits` {scheme: {"train": indices, ...}} (link splits: write_link_split)."""
    raw = os.path.join(folder, "raw")
    write_numbers(os.path.join(raw, "edge" + GZ), np.asarray(edges, np.int64).reshape(-1, 2))
    write_numbers(os.path.join(raw, "num-node-list" + GZ), np.array([num_nodes]))
    write_numbers(os.path.join(raw, "num-edge-list" + GZ), np.array([len(edges)]))
    for name, values in (("node-feat", node_feat), ("node-label", node_label),
                         ("edge-feat", edge_feat)):
        if values is not None:
            write_numbers(os.path.join(raw, name + GZ), values)
    for name, values in {**node_extra, **edge_extra}.items():
        write_numbers(os.path.join(raw, name + GZ), values)
    for scheme, parts in splits.items():
        for split, indices in parts.items():
            write_numbers(os.path.join(folder, "split", scheme, split + GZ), indices)
    open(os.path.join(folder, "RELEASE_v1.txt"), "w").close()
    return folder


def write_heterogeneous(folder: str, *, num_nodes: Mapping[str, int],
                        relations: Mapping[tuple[str, str, str], np.ndarray],
                        node_feat: Mapping[str, np.ndarray] = {},
                        node_label: Mapping[str, np.ndarray] = {},
                        node_extra: Mapping[str, Mapping[str, np.ndarray]] = {},
                        edge_feat: Mapping[tuple, np.ndarray] = {},
                        edge_extra: Mapping[str, Mapping[tuple, np.ndarray]] = {},
                        splits: Mapping[str, Mapping[str, Mapping[str, np.ndarray]]] = {},
                        reltype: bool = True) -> str:
    """An ogbn-mag-like folder. `relations` {(source, relation, target): [E, 2]};
    `node_extra` {"node_year": {type: values}}; `splits` {scheme: {type: {split: idx}}};
    `reltype`: write each relation's edge_reltype.csv.gz, as ogbn-mag has them."""
    raw = os.path.join(folder, "raw")
    write_header_table(os.path.join(raw, "num-node-dict" + GZ),
                       {t: [n] for t, n in num_nodes.items()})
    triplets = sorted(relations)
    lines = "\n".join(",".join(t) for t in triplets) + "\n"
    with pa.output_stream(os.path.join(raw, "triplet-type-list" + GZ),
                          compression="gzip") as sink:
        sink.write(lines.encode())
    for number, triplet in enumerate(triplets):
        where = os.path.join(raw, "relations", "___".join(triplet))
        edges = np.asarray(relations[triplet], np.int64).reshape(-1, 2)
        write_numbers(os.path.join(where, "edge" + GZ), edges)
        write_numbers(os.path.join(where, "num-edge-list" + GZ), np.array([len(edges)]))
        if reltype:
            write_numbers(os.path.join(where, "edge_reltype" + GZ),
                          np.full(len(edges), number, np.int64))
        if triplet in edge_feat:
            write_numbers(os.path.join(where, "edge-feat" + GZ), edge_feat[triplet])
        for name, per_triplet in edge_extra.items():
            if triplet in per_triplet:
                write_numbers(os.path.join(where, name + GZ), per_triplet[triplet])
    for node_type, values in node_feat.items():
        write_numbers(os.path.join(raw, "node-feat", node_type, "node-feat" + GZ), values)
    for name, per_type in node_extra.items():
        for node_type, values in per_type.items():
            write_numbers(os.path.join(raw, "node-feat", node_type, name + GZ), values)
    write_header_table(os.path.join(raw, "nodetype-has-label" + GZ),
                       {t: [t in node_label] for t in num_nodes})
    for node_type, values in node_label.items():
        write_numbers(os.path.join(raw, "node-label", node_type, "node-label" + GZ), values)
    for scheme, per_type in splits.items():
        write_header_table(os.path.join(folder, "split", scheme, "nodetype-has-split" + GZ),
                           {t: [t in per_type] for t in num_nodes})
        for node_type, parts in per_type.items():
            for split, indices in parts.items():
                write_numbers(os.path.join(folder, "split", scheme, node_type, split + GZ),
                              indices)
    open(os.path.join(folder, "RELEASE_v2.txt"), "w").close()
    return folder


def write_link_split(folder: str, scheme: str, split: str, value: Mapping[str, np.ndarray]
                     ) -> str:
    """split/<scheme>/<split>.pt: a dict of tensors, as ogbl-* datasets have them."""
    import torch

    path = os.path.join(folder, "split", scheme, split + ".pt")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    torch.save({k: torch.from_numpy(np.asarray(v)) for k, v in value.items()}, path)
    return path


def mag_from_synthetic(graph, folder: str) -> str:
    """The synthetic MAG-shaped graph (pipelines.synthetic_model.SyntheticGraph) as an
    `ogbn_mag` folder: ogbn-mag's node types, relations, files and time split (train
    before 2018, valid 2018, test 2019 by `year`)."""
    relations = {}
    ends = {"cites": ("paper", "paper"), "writes": ("author", "paper"),
            "has_topic": ("paper", "field_of_study"),
            "affiliated_with": ("author", "institution")}
    counts = dict(graph.num_nodes)
    for name, (source, target) in ends.items():
        sources, targets, _ = graph.edges[name]
        keep = sources < counts[source]  # the hub author ("author/hub") is not a numbered node
        relations[(source, name, target)] = np.stack([sources[keep], targets[keep]], axis=1)
    year = np.asarray(graph.year)
    papers = np.arange(len(year))
    return write_heterogeneous(
        folder, num_nodes=counts, relations=relations,
        node_feat={"paper": graph.feat}, node_label={"paper": np.asarray(graph.labels)},
        node_extra={"node_year": {"paper": year}},
        splits={"time": {"paper": {"train": papers[year < 2018], "valid": papers[year == 2018],
                                   "test": papers[year == 2019]}}})


def main(argv: list[str] | None = None) -> int:
    from pipelines import synthetic_model

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scale", type=float, default=0.001)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--output", required=True)
    args = parser.parse_args(argv)
    mag_from_synthetic(synthetic_model.generate(args.scale, args.seed), args.output)
    print(f"wrote {args.output}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
