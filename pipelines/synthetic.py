"""`synthetic-graph`: a seeded OGBN-MAG-shaped heterogeneous graph at any scale.

    synthetic-graph --scale 0.01 --format parquet --output /tmp/mag_0.01

writes, into the output folder, a unigraph that `sample` reads unchanged:

  graph_schema.pbtxt    node sets paper, author, field_of_study, institution; edge sets
                        cites, writes, written (writes read backwards: `edge_type: reversed`,
                        as in TF-GNN's MAG example), has_topic, affiliated_with
  sampling_spec.pbtxt   the benchmark spec (seed paper; cites 8, written 4, writes 4,
                        affiliated_with 2, has_topic 4; all RANDOM_UNIFORM)
  paper.<ext>           `#id`, `feat` (128 floats), `labels` (int64 [1]), `year` (int64 [1])
  cites/writes/has_topic/affiliated_with.<ext>   `#source`, `#target`, `#weight` (float)
  seeds.<ext>           every paper id (column `#id`)
  timed_seeds.<ext>     with --timestamps: every paper id and its year as the cut-off
                        (columns `#id`, `timestamp`)
  hub_seeds.<ext>       with --hub-edges: the papers "author/hub" wrote
  manifest.json         the arguments, counts, degree statistics and timings

Tables are written by unigraph.tables.writers (so the readers read them back to the same
columns; TFRecord's float_list holds float32, so weights read from TFRecord equal the
4-decimal float64 weights of CSV/Parquet only as float32); with --shards N each table
is `name@N.<ext>` (name-0000i-of-0000N.<ext>).

Memory. The command writes the tables streamed (`write_streamed`): paper rows are drawn
a batch (BATCH_ROWS) at a time as they are written, and one edge set at a time is drawn,
written and dropped. The draw needs the set's arrays whole (a shuffle, a sort to find
repeated pairs, the edges grouped by source: about 40 bytes per edge), so they are
memory-mapped files in a scratch folder (pipelines/synthetic_scratch.py; inside the
output, or --scratch-dir; removed at the end and on failure, and after a kill by the
next run there), worked on in place or a block (synthetic_model.BLOCK edges) at a
time. The heap holds arrays of node-set size and those blocks whatever the scale;
the edge set is page cache, which the kernel writes back and evicts under a memory
cap (tests/pipelines/test_synthetic_memory_cap.py), so a graph of any scale is written
in bounded memory, given the disk for its largest edge set's draw beside its tables. A
cap that leaves less page cache than that draw still completes, but slowly: the
shuffles and the sort touch the set's pages at random, and each page evicted is read
again.
Every step draws the numbers and gives the values the whole-array numpy calls give, and
synthetic_model.generate() runs the same code on heap arrays: the tables are byte for
byte those of `write_graph(generate(...))`, which holds the whole graph
(tests/pipelines/test_synthetic_streamed.py).

Ids are strings "<node set>/<index>" (e.g. "paper/123"); the hub author is "author/hub".

Extra features (--extra-features; pipelines/synthetic_features.py): every kind a
feature spec turns into tensors (docs/features.md): paper `venue` (a string), `tags` (a
list of strings), `tokens` (a ragged list of int64 ids); cites `intent` (a string);
writes/written `position` (int64). Each value is a pure function of (seed, its row's
index), so these columns change nothing else in the graph and are written a batch at a
time like the rest.

What the graph is (its counts, degree model, features, planted task, timestamps and
random streams) is pipelines/synthetic_model.py's.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import time

import numpy as np

from unigraph.columnar.batches import EdgeBatch, NodeBatch
from unigraph.interrupts import interruptible
from unigraph.storage.paths import shard_names
from unigraph.schema import load_schema
from unigraph.tables.layout import FeatureSpec, seeds_layout, table_layout
from unigraph.tables.writers import write_sharded, write_table

from pipelines import synthetic_features as extra
from pipelines import synthetic_model as model
from pipelines.synthetic_model import (EDGE_COUNTS, EDGE_ENDS, FEAT_DIM,
                                       OGBN_MAG_CLASSES, PLANTED_DEFAULT_CLASSES,
                                       PLANTED_FEATURES, PLANTED_SIGNAL, Recipe,
                                       SyntheticGraph, colours, degree_stats,
                                       draw_edge_set, draw_hub, edge_years, feat_rows,
                                       label_rows, labels_from_colours, plant_colours,
                                       random_stream, recipe, weight_rows, year_rows)
from pipelines.synthetic_scratch import Scratch, blocks

BATCH_ROWS = 65536
HUB_ID = b"author/hub"
FORMATS = {"csv": ".csv", "parquet": ".parquet", "tfrecord": ".tfrecord"}
TIME_FEATURE = "timestamp"  # the default timestamp column (unigraph.timestamps)

# ---- files ----------------------------------------------------------------------------

def node_ids(node_set: str, index: np.ndarray, hub_index: int | None = None) -> np.ndarray:
    """b"<node_set>/<index>" for every index (bytes 'S' array); the hub index as author/hub."""
    # np.strings: numpy 2 (fast); np.char: the same on numpy 1.26, which setup.py allows.
    ids = getattr(np, "strings", np.char).add(f"{node_set}/".encode(),
                                              np.asarray(index).astype("S"))
    if hub_index is not None:
        ids[np.asarray(index) == hub_index] = HUB_ID
    return ids


def table_name(name: str, fmt: str, shards: int) -> str:
    ext = FORMATS[fmt]
    return f"{name}@{shards}{ext}" if shards > 1 else f"{name}{ext}"


def schema_text(fmt: str, shards: int, note: str = "", timestamps: bool = False,
                extra_features: bool = False) -> str:
    """graph_schema.pbtxt of a generated graph."""
    t = {name: table_name(name, fmt, shards) for name in ("paper", *EDGE_COUNTS)}
    header = f"# OGBN-MAG-shaped synthetic graph (pipelines/synthetic.py). {note}".rstrip()
    time = (f'features {{ key: "{TIME_FEATURE}" value {{ dtype: DT_INT64 }} }} '
            if timestamps else "")
    more = {name: extra.schema_lines(name) + " " if extra_features else ""
            for name in ("paper", "cites", "writes", "written")}
    text = f"""{header}
node_sets {{
  key: "paper"
  value {{
    features {{ key: "feat"   value {{ dtype: DT_FLOAT shape {{ dim {{ size: {FEAT_DIM} }} }} }} }}
    features {{ key: "labels" value {{ dtype: DT_INT64 shape {{ dim {{ size: 1 }} }} }} }}
    features {{ key: "year"   value {{ dtype: DT_INT64 shape {{ dim {{ size: 1 }} }} }} }}
    {time}{more['paper']}metadata {{ filename: "{t['paper']}" }}
  }}
}}
# Featureless node sets without tables: their nodes are the ids the edges name.
node_sets {{ key: "author" value {{}} }}
node_sets {{ key: "field_of_study" value {{}} }}
node_sets {{ key: "institution" value {{}} }}
# Every edge table has a float '#weight' column (used by TOP_K and RANDOM_WEIGHTED).
edge_sets {{
  key: "cites"
  value {{ source: "paper" target: "paper" {time}{more['cites']}metadata {{ filename: "{t['cites']}" }} }}
}}
edge_sets {{
  key: "writes"
  value {{ source: "author" target: "paper" {time}{more['writes']}metadata {{ filename: "{t['writes']}" }} }}
}}
edge_sets {{
  key: "written"
  value {{
    source: "paper" target: "author"
    {time}{more['written']}metadata {{ filename: "{t['writes']}" extra {{ key: "edge_type" value: "reversed" }} }}
  }}
}}
edge_sets {{
  key: "has_topic"
  value {{ source: "paper" target: "field_of_study" {time}metadata {{ filename: "{t['has_topic']}" }} }}
}}
edge_sets {{
  key: "affiliated_with"
  value {{ source: "author" target: "institution" {time}metadata {{ filename: "{t['affiliated_with']}" }} }}
}}
"""
    return text


def spec_text(strategy: str = "RANDOM_UNIFORM") -> str:
    """The benchmark SamplingSpec, every op with `strategy`."""
    ops = [("seed->paper", ["seed"], "cites", 8),
           ("paper->author", ["seed", "seed->paper"], "written", 4),
           ("author->paper", ["paper->author"], "writes", 4),
           ("author->institution", ["paper->author"], "affiliated_with", 2),
           ("paper->field_of_study", ["seed", "seed->paper", "author->paper"], "has_topic", 4)]
    lines = ["# The benchmark spec (pipelines/synthetic.py).",
             'seed_op { op_name: "seed" node_set_name: "paper" }']
    for name, inputs, edge_set, k in ops:
        names = ", ".join(f'"{i}"' for i in inputs)
        lines.append(f'sampling_ops {{ op_name: "{name}" input_op_names: [{names}] '
                     f'edge_set_name: "{edge_set}" sample_size: {k} strategy: {strategy} }}')
    return "\n".join(lines) + "\n"


def _chunks(n: int):
    rows = BATCH_ROWS
    for lo in range(0, n, rows):
        yield lo, min(n, lo + rows)


def _shard_paths(folder: str, name: str, fmt: str, shards: int) -> list[str]:
    pattern = os.path.join(folder, table_name(name, fmt, shards))
    return shard_names(pattern) if shards > 1 else [pattern]


class _Folder:
    """The output folder of one graph: its schema and spec, then its tables one at a
    time, each written batch by batch from `chunk(lo, hi)` functions that are called in
    row order (so a function may draw its rows from a random stream as it goes).
    `extra_seed`: the graph's seed, to write the extra features (synthetic_features: pure
    functions of the seed and the rows), or None."""

    def __init__(self, output: str, fmt: str, shards: int, note: str, timestamps: bool,
                 extra_seed: int | None = None):
        if fmt not in FORMATS:
            raise ValueError(f"format must be one of {', '.join(FORMATS)}, got {fmt!r}")
        if shards < 1:
            raise ValueError(f"shards must be >= 1, got {shards}")
        self.output, self.fmt, self.shards, self.timestamps = output, fmt, shards, timestamps
        self.extra_seed = extra_seed
        os.makedirs(output, exist_ok=True)
        schema_path = os.path.join(output, "graph_schema.pbtxt")
        with open(schema_path, "w") as f:
            f.write(schema_text(fmt, shards, note, timestamps, extra_seed is not None))
        with open(os.path.join(output, "sampling_spec.pbtxt"), "w") as f:
            f.write(spec_text())
        self.loaded = load_schema(schema_path)
        self.timings: dict[str, float] = {}

    def papers(self, n_papers: int, feat, labels, year: np.ndarray, venues=None) -> None:
        """The paper table; `feat(lo, hi)`, `labels(lo, hi)` and `venues(lo, hi)` (the
        planted venue numbers, or None) give rows lo:hi."""
        started = time.perf_counter()

        def batches():
            for lo, hi in _chunks(n_papers):
                index = np.arange(lo, hi, dtype=np.int64)
                features = {"feat": feat(lo, hi), "labels": labels(lo, hi)[:, None],
                            "year": year[lo:hi, None]}
                if self.timestamps:
                    features[TIME_FEATURE] = year[lo:hi]
                if self.extra_seed is not None:
                    features.update(extra.paper_features(
                        self.extra_seed, index, None if venues is None else venues(lo, hi)))
                yield NodeBatch("paper", node_ids("paper", index), index, features)

        write_sharded(_shard_paths(self.output, "paper", self.fmt, self.shards),
                      table_layout(self.loaded, "nodes", "paper"), batches())
        self.timings["paper"] = round(time.perf_counter() - started, 3)

    def edges(self, name: str, sources: np.ndarray, targets: np.ndarray, weights,
              times, hub: int | None) -> None:
        """An edge table; `weights(lo, hi)` and `times(lo, hi)` (None without
        --timestamps) give rows lo:hi; the source index `hub` is the hub author."""
        started = time.perf_counter()
        src_set, tgt_set = EDGE_ENDS[name]

        def batches():
            for lo, hi in _chunks(len(sources)):
                index = np.arange(lo, hi, dtype=np.int64)
                features = {} if times is None else {TIME_FEATURE: times(lo, hi)}
                if self.extra_seed is not None:
                    features.update(extra.edge_features(self.extra_seed, name, index))
                yield EdgeBatch(name, node_ids(src_set, sources[lo:hi], hub),
                                node_ids(tgt_set, targets[lo:hi]), index, weights(lo, hi),
                                features)

        write_sharded(_shard_paths(self.output, name, self.fmt, self.shards),
                      table_layout(self.loaded, "edges", name), batches())
        self.timings[name] = round(time.perf_counter() - started, 3)

    def seeds(self, n_papers: int, hub_papers: np.ndarray, year: np.ndarray) -> dict:
        """seeds, hub_seeds (with a hub) and timed_seeds (with timestamps): their names."""
        started = time.perf_counter()
        ext = FORMATS[self.fmt]

        def seed_batches(index, times=None):
            for lo, hi in _chunks(len(index)):
                yield NodeBatch("seeds", node_ids("paper", index[lo:hi]),
                                np.arange(lo, hi, dtype=np.int64),
                                {} if times is None else {TIME_FEATURE: times[lo:hi]})

        seeds = {"all": f"seeds{ext}"}
        every = np.arange(n_papers, dtype=np.int64)
        write_table(os.path.join(self.output, seeds["all"]), seeds_layout(),
                    seed_batches(every))
        if len(hub_papers):
            seeds["hub"] = f"hub_seeds{ext}"
            write_table(os.path.join(self.output, seeds["hub"]), seeds_layout(),
                        seed_batches(np.unique(hub_papers)))
        if self.timestamps:  # every paper, its own year as its cut-off
            seeds["timed"] = f"timed_seeds{ext}"
            timed = dataclasses.replace(seeds_layout(), features=(
                FeatureSpec(TIME_FEATURE, np.dtype(np.int64), (), "DT_INT64"),))
            write_table(os.path.join(self.output, seeds["timed"]), timed,
                        seed_batches(every, year))
        self.timings["seeds"] = round(time.perf_counter() - started, 3)
        return seeds


def _note(scale, seed, planted, num_classes, hub_edges) -> str:
    return (f"scale={scale} seed={seed} planted={planted} classes={num_classes} "
            f"hub_edges={hub_edges}")


def _edge_degrees(name: str, sources: np.ndarray, targets: np.ndarray, nodes: dict,
                  hub: bool) -> dict:
    src, tgt = EDGE_ENDS[name]
    return {"out": degree_stats(sources, nodes[src] + (name == "writes" and hub)),
            "in": degree_stats(targets, nodes[tgt])}


def _manifest(r: Recipe, folder: _Folder, edges: dict, duplicates: dict, degrees: dict,
              seeds: dict) -> dict:
    return {
        "scale": r.scale, "seed": r.seed, "format": folder.fmt, "shards": folder.shards,
        "planted": r.planted, "num_classes": r.num_classes, "timestamps": folder.timestamps,
        "extra_features": folder.extra_seed is not None,
        **({"planted_feature": r.planted_feature} if r.planted else {}),
        "hub_edges": r.hub_edges, "nodes": r.nodes, "edges": edges,
        "duplicates_left": duplicates, "degrees": degrees, "seeds": seeds,
        "write_seconds": folder.timings, "bytes": _folder_bytes(folder.output),
    }


def write_graph(graph: SyntheticGraph, output: str, fmt: str, shards: int = 1, *,
                timestamps: bool = False, extra_features: bool = False) -> dict:
    """Writes schema, spec, tables, seeds and manifest.json's content into `output` from a
    graph in memory; returns the manifest. `timestamps`: the `timestamp` columns and
    timed_seeds (module docstring); `extra_features`: the venue, tags, tokens, intent and
    position columns (pipelines/synthetic_features.py; always with a graph planted on
    venues)."""
    hub_edges = len(graph.hub_papers)
    extra_features = extra_features or graph.venues is not None
    r = Recipe(graph.scale, graph.seed, graph.num_nodes, {}, hub_edges, graph.planted,
               graph.num_classes, graph.planted_feature)
    folder = _Folder(output, fmt, shards, _note(graph.scale, graph.seed, graph.planted,
                                                graph.num_classes, hub_edges), timestamps,
                     graph.seed if extra_features else None)
    n_papers = graph.num_nodes["paper"]
    folder.papers(n_papers, lambda lo, hi: graph.feat[lo:hi],
                  lambda lo, hi: graph.labels[lo:hi], graph.year,
                  None if graph.venues is None else lambda lo, hi: graph.venues[lo:hi])
    for name in EDGE_ENDS:
        sources, targets, weights = graph.edges[name]
        times = graph.edge_times(name) if timestamps else None
        folder.edges(name, sources, targets, lambda lo, hi, w=weights: w[lo:hi],
                     None if times is None else lambda lo, hi, t=times: t[lo:hi],
                     graph.hub_index if name == "writes" else None)
    seeds = folder.seeds(n_papers, graph.hub_papers, graph.year)
    return _manifest(r, folder, {name: int(len(e[0])) for name, e in graph.edges.items()},
                     graph.duplicates_left,
                     {name: _edge_degrees(name, graph.edges[name][0], graph.edges[name][1],
                                          graph.num_nodes, bool(hub_edges))
                      for name in EDGE_ENDS}, seeds)


class _Rows:
    """A column drawn chunk after chunk from one random stream: rows lo:hi, asked for in
    row order, are the rows lo:hi of the column drawn whole (numpy's generators draw
    element after element)."""

    def __init__(self, rng: np.random.Generator, draw):
        self.rng, self.draw, self.at = rng, draw, 0

    def __call__(self, lo: int, hi: int) -> np.ndarray:
        if lo != self.at:
            raise AssertionError(f"rows {lo}:{hi} asked for after row {self.at}")
        self.at = hi
        return self.draw(self.rng, hi - lo)


def write_streamed(output: str, fmt: str, shards: int = 1, *, scale: float, seed: int,
                   hub_edges: int = 0, planted: bool = False, num_classes: int | None = None,
                   timestamps: bool = False, planted_feature: str = "feat",
                   extra_features: bool = False, scratch_dir: str | None = None) -> dict:
    """The tables of write_graph(generate(...)), byte for byte, without holding the graph:
    paper rows are drawn a batch at a time as they are written, and each edge set is drawn,
    written and dropped before the next. The arrays of an edge set's size (its index
    arrays, and what its draw shuffles, sorts and groups) are memory-mapped files in a
    scratch folder made inside `scratch_dir` (default: inside `output`) and removed at the
    end, whether the run succeeds or fails (a killed run's, by the next run there).
    Memory: arrays of node-set size plus blocks of synthetic_model.BLOCK edges on the
    heap; the edge set being drawn is page cache, which the kernel writes back and evicts under a memory
    cap. Returns the manifest."""
    r = recipe(scale, seed, hub_edges=hub_edges, planted=planted, num_classes=num_classes,
               planted_feature=planted_feature)
    on_venues = r.planted_feature == "venue"
    folder = _Folder(output, fmt, shards, _note(scale, seed, planted, r.num_classes,
                                                hub_edges), timestamps,
                     seed if extra_features or on_venues else None)
    if scratch_dir is not None:
        os.makedirs(scratch_dir, exist_ok=True)
    with Scratch(output if scratch_dir is None else scratch_dir) as scratch:
        counts, duplicates, degrees, seeds = _write_streamed(r, folder, scratch)
    return _manifest(r, folder, counts, duplicates, degrees, seeds)


def _write_streamed(r: Recipe, folder: _Folder, scratch: Scratch):
    """write_streamed's tables: (edge counts, duplicates left, degrees, seed tables)."""
    seed, hub_edges, planted = r.seed, r.hub_edges, r.planted
    n_papers = r.nodes["paper"]
    year = year_rows(random_stream(seed, "year"), n_papers)
    hub_papers, hub_weights = draw_hub(r)
    counts, duplicates, degrees = {}, {}, {}
    planted_cites = None
    for name in EDGE_ENDS:
        sources, targets, duplicates[name], rng = draw_edge_set(r, name, scratch)
        weights = _Rows(rng, weight_rows)
        if name == "writes" and hub_edges:
            n = len(sources)
            sources, targets = (_append(scratch, sources, np.full(
                hub_edges, r.nodes["author"], dtype=np.int64)),
                _append(scratch, targets, hub_papers))

            def weights(lo, hi, main=weights, n=n):  # the set's own draws, then the hub's
                own = main(lo, min(hi, n)) if lo < n else np.zeros(0)
                return np.concatenate([own, hub_weights[max(lo, n) - n:hi - n]]) \
                    if hi > n else own
        if name == "cites" and planted:
            own, planted_targets, duplicates[name] = plant_colours(
                random_stream(seed, "planted"), n_papers, sources, targets, r.num_classes,
                scratch)
            scratch.free(targets)
            targets = planted_targets
            planted_cites = (sources, targets, own)
        times = None
        if folder.timestamps:
            affiliated = random_stream(seed, "affiliated_time")

            def times(lo, hi, name=name, sources=sources, targets=targets):
                return edge_years(name, sources[lo:hi], targets[lo:hi], year, affiliated)
        counts[name] = int(len(sources))
        degrees[name] = _edge_degrees(name, sources, targets, r.nodes, bool(hub_edges))
        folder.edges(name, sources, targets, weights, times,
                     r.nodes["author"] if name == "writes" else None)
        if planted_cites is None or planted_cites[0] is not sources:
            scratch.free(sources, targets)
        del sources, targets, weights, times
    if planted:
        cites_sources, cites_targets, own = planted_cites
        del planted_cites
    if planted and r.planted_feature == "venue":  # feat stays noise; the venues' colours
        all_labels = labels_from_colours(n_papers, cites_sources, cites_targets, own,
                                         r.num_classes)
        assert (all_labels >= 0).all(), "every paper cites a paper"
        scratch.free(cites_sources, cites_targets)
        del cites_sources, cites_targets
        folder.papers(n_papers, _Rows(random_stream(seed, "feat"), feat_rows),
                      lambda lo, hi: all_labels[lo:hi], year,
                      lambda lo, hi: extra.planted_venues(seed, np.arange(lo, hi), own[lo:hi],
                                                          r.num_classes))
    elif planted:
        colour = np.zeros(n_papers, np.int64)
        pass_one = _Rows(random_stream(seed, "feat"), feat_rows)
        for lo, hi in _chunks(n_papers):
            colour[lo:hi] = colours(_planted_rows(pass_one(lo, hi), own[lo:hi]),
                                    r.num_classes)
        all_labels = labels_from_colours(n_papers, cites_sources, cites_targets, colour,
                                         r.num_classes)
        assert (all_labels >= 0).all(), "every paper cites a paper"
        scratch.free(cites_sources, cites_targets)
        del cites_sources, cites_targets, colour
        feat_stream = _Rows(random_stream(seed, "feat"), feat_rows)
        folder.papers(n_papers, lambda lo, hi: _planted_rows(feat_stream(lo, hi), own[lo:hi]),
                      lambda lo, hi: all_labels[lo:hi], year)
    else:
        folder.papers(n_papers, _Rows(random_stream(seed, "feat"), feat_rows),
                      _Rows(random_stream(seed, "labels"),
                            lambda rng, count: label_rows(rng, count, r.num_classes)), year)
    seeds = folder.seeds(n_papers, hub_papers, year)
    return counts, duplicates, degrees, seeds


def _append(scratch: Scratch, head: np.ndarray, tail: np.ndarray) -> np.ndarray:
    """np.concatenate([head, tail]) into a scratch array; `head`'s is freed."""
    out = scratch.empty(len(head) + len(tail), head.dtype)
    for lo, hi in blocks(len(head), model.BLOCK):
        out[lo:hi] = head[lo:hi]
    out[len(head):] = tail
    scratch.free(head)
    return out


def _planted_rows(feat: np.ndarray, own: np.ndarray) -> np.ndarray:
    """Paper rows with each paper's own colour written into its features."""
    feat[np.arange(len(feat)), own] += PLANTED_SIGNAL
    return feat


def _folder_bytes(folder: str) -> int:
    return sum(os.path.getsize(os.path.join(folder, f)) for f in os.listdir(folder)
               if os.path.isfile(os.path.join(folder, f)))


# ---- command line ---------------------------------------------------------------------

EXAMPLES = """\
examples:
  synthetic-graph --scale 0.01 --output /tmp/mag_0.01
  synthetic-graph --scale 0.1 --format csv --shards 4 --seed 7 --output /tmp/mag_csv
  synthetic-graph --scale 0.01 --planted --num-classes 8 --output /tmp/mag_planted
  synthetic-graph --scale 0.01 --hub-edges 100000 --output /tmp/mag_hub
  synthetic-graph --scale 0.01 --timestamps --output /tmp/mag_timed
  synthetic-graph --scale 0.01 --extra-features --output /tmp/mag_features
  synthetic-graph --scale 0.01 --planted venue --output /tmp/mag_planted_venue
"""


def make_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="synthetic-graph", description=__doc__.split("\n\n")[0],
        epilog=EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--output", required=True, metavar="DIR",
                        help="folder to write the graph into (created if missing)")
    parser.add_argument("--scale", type=float, default=0.01,
                        help="1.0 = OGBN-MAG's node and edge counts; counts scale linearly "
                             "(default 0.01)")
    parser.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    parser.add_argument("--format", choices=sorted(FORMATS), default="parquet",
                        help="table file format (default parquet)")
    parser.add_argument("--shards", type=int, default=1, metavar="N",
                        help="files per table, as name@N (default 1)")
    parser.add_argument("--hub-edges", type=int, default=0, metavar="N",
                        help="add author 'author/hub' with N writes edges, and hub_seeds.<ext> "
                             "listing its papers (default 0: no hub)")
    parser.add_argument("--planted", nargs="?", const="feat", choices=PLANTED_FEATURES,
                        metavar="FEATURE",
                        help="paper labels from the features of the cited papers (see the "
                             "module docstring); own features carry no signal. FEATURE "
                             "`feat` (the default) plants the colour in `feat`, `venue` in "
                             "the venue strings only (implies --extra-features)")
    parser.add_argument("--num-classes", type=int, metavar="C",
                        help=f"label classes (default {OGBN_MAG_CLASSES}, or "
                             f"{PLANTED_DEFAULT_CLASSES} with --planted, at most {FEAT_DIM})")
    parser.add_argument("--timestamps", action="store_true",
                        help="a `timestamp` column (years) in every table and "
                             "timed_seeds.<ext> with every paper's year as its cut-off (see "
                             "the module docstring)")
    parser.add_argument("--extra-features", action="store_true",
                        help="every kind of feature: a venue string and lists of tags and "
                             "token ids per paper, a citation's intent, an author's "
                             "position (pipelines/synthetic_features.py)")
    parser.add_argument("--scratch-dir", metavar="DIR",
                        help="where to keep the edge set being drawn (memory-mapped files, "
                             "about 40 bytes per edge of the largest set, in a folder made "
                             "here and removed at the end; default: inside --output)")
    parser.add_argument("--quiet", action="store_true", help="print only the output folder")
    return parser


@interruptible("synthetic-graph", "interrupted")
def main(argv: list[str] | None = None) -> int:
    args = make_parser().parse_args(argv)
    started = time.perf_counter()
    try:
        manifest = write_streamed(args.output, args.format, args.shards, scale=args.scale,
                                  seed=args.seed, hub_edges=args.hub_edges,
                                  planted=args.planted is not None,
                                  num_classes=args.num_classes, timestamps=args.timestamps,
                                  planted_feature=args.planted or "feat",
                                  extra_features=args.extra_features,
                                  scratch_dir=args.scratch_dir)
    except ValueError as e:
        print(f"synthetic-graph: error: {e}", file=sys.stderr)
        return 2
    manifest["total_seconds"] = round(time.perf_counter() - started, 3)
    with open(os.path.join(args.output, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=2)
    if not args.quiet:
        print("nodes: " + ", ".join(f"{k} {v:,}" for k, v in manifest["nodes"].items()))
        print("edges: " + ", ".join(f"{k} {v:,}" for k, v in manifest["edges"].items()))
        print(f"{manifest['bytes'] / 1e6:.1f} MB of {args.format} in "
              f"{manifest['total_seconds']:.2f} s")
    print(f"graph: {os.path.join(args.output, 'graph_schema.pbtxt')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
