"""`sample-inspect OUT`: decoded subgraphs of a `sample` output folder, as text, JSON or DOT.

    sample-inspect out/                      # the first record
    sample-inspect out/ --seed-id p17        # the subgraph(s) of seed p17
    sample-inspect out/ --context label=3 --first --json
    sample-inspect out/ --seed-id p17 --dot | dot -Tsvg > p17.svg

Text shows every node set with its ids and the first values of every feature
(the seed marked *), every edge set as `source id -> target id` lines with the
edge features; --max-items bounds the rows per set. --json prints one JSON
object per matching record per line (every value); --dot a Graphviz digraph
per record (node sets as clusters, the seed filled).

Finding a seed does not decode every record: each record is first searched for
the wire bytes of the wanted value (a C substring search), and only records
holding them have their keys walked and one context feature decoded
(sampler/output/seek.py). A seed listed twice has two subgraphs: all are shown
(--first stops at the first). The records found are decoded many at a time by the
batched decoder (sampler.graph_tensor) against the folder's graph_schema.pbtxt,
without TensorFlow.
"""
from __future__ import annotations

import argparse
import json
import os
import sys

import numpy as np

from sampler.graph_tensor import GraphTensor
from sampler.graph_tensor.batch_codec import BatchDecoder
from sampler.output.batches import decoded_records
from sampler.output.folder import SampleFolder, iter_records, open_samples
from sampler.output.names import ID_FEATURE
from sampler.output.seek import Condition, ScanCounts, find_records, parse_condition, \
    seed_condition
from sampler.output.stats import json_safe
from unigraph.errors import SamplerError, message_line, one_line, printable
from unigraph.interrupts import interruptible
from unigraph.columnar.ragged import Ragged

SHOWN_VALUES = 4   # values of a feature shown per item in text


def nth_record(files: list[str], index: int) -> tuple[str, int, bytes]:
    """(file, index within the file, record) of the index-th record across the shards."""
    seen = 0
    for path in files:
        for position, record in enumerate(iter_records(path)):
            if seen == index:
                return path, position, record
            seen += 1
    raise SamplerError(f"{os.path.dirname(files[0])}: has {seen} record(s), no record #{index}")


# --- values as text ---------------------------------------------------------------

def _text(value: bytes) -> str:
    return value.decode("utf-8", errors="backslashreplace")


def _scalar(value) -> str:
    if isinstance(value, (bytes, np.bytes_)):
        return repr(_text(bytes(value)))
    if isinstance(value, (float, np.floating)):
        return f"{float(value):.6g}"
    return str(value.item() if isinstance(value, np.generic) else value)


def _item_text(item) -> str:
    """One item's value: a scalar, or the first SHOWN_VALUES values of a vector."""
    if isinstance(item, Ragged) or isinstance(item, list):
        rows = item.to_list() if isinstance(item, Ragged) else item
        return _list_text(rows)
    if isinstance(item, np.ndarray) and item.ndim:
        return _list_text(item.reshape(-1).tolist() if item.ndim > 1 else list(item),
                          shape=item.shape if item.ndim > 1 else None)
    return _scalar(item)


def _list_text(values: list, shape=None) -> str:
    shown = ", ".join(_item_text(v) if isinstance(v, list) else _scalar(v)
                      for v in values[:SHOWN_VALUES])
    more = f", … +{len(values) - SHOWN_VALUES}" if len(values) > SHOWN_VALUES else ""
    prefix = f"{list(shape)} " if shape is not None else ""
    return f"{prefix}[{shown}{more}]"


def _row(field, i: int):
    return field.row(i) if isinstance(field, Ragged) else field[i]


def _describe(field) -> str:
    if isinstance(field, Ragged):
        dtype = field.flat_values.dtype
        return f"ragged {'string' if dtype.kind == 'O' else dtype}"
    dtype = "string" if field.dtype.kind == "O" else str(field.dtype)
    return f"{dtype}{list(field.shape[1:]) if field.ndim > 1 else ''}"


def _table(header: list[str], rows: list[list[str]], indent: str = "  ") -> list[str]:
    widths = [max(len(r[c]) for r in [header] + rows) for c in range(len(header))]
    return [indent + "  ".join(cell.ljust(w) for cell, w in zip(r, widths)).rstrip()
            for r in [header] + rows]


def seeds_of(graph: GraphTensor) -> dict[str, set[int]]:
    """Node set -> indices of the nodes the readout edge sets start from (the seeds)."""
    seeds: dict[str, set[int]] = {}
    for name, edge_set in graph.edge_sets.items():
        if name.startswith("_readout"):
            adjacency = edge_set.adjacency
            seeds.setdefault(adjacency.node_set_name("source"), set()).update(
                adjacency.indices("source").tolist())
    return seeds


def _ids(graph: GraphTensor, node_set: str, shown: bool = False) -> list[str]:
    """The node ids; `shown`: for a terminal, control characters escaped."""
    ids = graph.node_sets[node_set].features.get(ID_FEATURE)
    if ids is None:
        return [str(i) for i in range(graph.node_sets[node_set].total_size)]
    return [printable(_text(i)) if shown else _text(i) for i in ids]


def format_text(graph: GraphTensor, where: str, max_items: int | None) -> str:
    """Every set of the subgraph: nodes with ids and features, edges as id -> id lines."""
    context = "; ".join(
        f"{name} {_item_text(_row(field, 0) if len(field) == 1 else list(field))}"
        for name, field in sorted(graph.context.features.items()))
    lines = [f"{where}", f"context: {context or '-'}"]
    seeds = seeds_of(graph)

    def limited(count: int) -> int:
        return count if max_items is None else min(count, max_items)

    def more(count: int, shown: int, what: str) -> None:
        if shown < count:
            lines.append(f"  … {count - shown:,} more {what} (--max-items 0 shows all)")

    for name, node_set in sorted(graph.node_sets.items()):
        size = node_set.total_size
        features = {f: v for f, v in sorted(node_set.features.items()) if f != ID_FEATURE}
        lines.append(f"node set '{name}': {size:,} node{'s' if size != 1 else ''}")
        if not size:
            continue
        has_ids = ID_FEATURE in node_set.features
        ids = _ids(graph, name, shown=True)
        header = ["#"] + [ID_FEATURE] * has_ids + [f"{f} ({_describe(v)})"
                                                   for f, v in features.items()]
        rows = [[f"{i}{'*' if i in seeds.get(name, ()) else ''}"] + [ids[i]] * has_ids
                + [_item_text(_row(v, i)) for v in features.values()]
                for i in range(limited(size))]
        lines += _table(header, rows)
        more(size, len(rows), "nodes")
    for name, edge_set in sorted(graph.edge_sets.items()):
        adjacency = edge_set.adjacency
        source, target = adjacency.node_set_name("source"), adjacency.node_set_name("target")
        size = edge_set.total_size
        lines.append(f"edge set '{name}' ({source} -> {target}): {size:,} "
                     f"edge{'s' if size != 1 else ''}")
        if not size:
            continue
        source_ids, target_ids = _ids(graph, source, True), _ids(graph, target, True)
        features = dict(sorted(edge_set.features.items()))
        sources, targets = adjacency.indices("source"), adjacency.indices("target")
        rows = [[f"{source_ids[s]} -> {target_ids[t]}"]
                + [f"{f} {_item_text(_row(v, i))}" for f, v in features.items()]
                for i, (s, t) in enumerate(zip(sources[:limited(size)].tolist(),
                                               targets[:limited(size)].tolist()))]
        lines += ["  " + "  ".join(r).rstrip() for r in rows]
        more(size, len(rows), "edges")
    if seeds:
        lines.append("(* the seed: where a _readout edge set starts)")
    # Names and values come from the folder's files: nothing in them acts on the terminal.
    return "\n".join(printable(line) for line in lines)


# --- JSON and DOT -----------------------------------------------------------------

def _plain(field) -> list:
    """A feature's values as nested lists; strings decoded (invalid UTF-8 escaped)."""
    values = field.to_list() if isinstance(field, Ragged) else field.tolist()

    def fix(v):
        if isinstance(v, list):
            return [fix(x) for x in v]
        return _text(v) if isinstance(v, bytes) else v
    return fix(values)


def to_json(graph: GraphTensor, path: str, index: int) -> dict:
    """Every value of the subgraph; NaN and infinities as strings."""
    result = {"file": path, "record": index,
              "context": {n: _plain(v) for n, v in sorted(graph.context.features.items())},
              "node_sets": {}, "edge_sets": {}}
    for name, node_set in sorted(graph.node_sets.items()):
        result["node_sets"][name] = {
            "size": node_set.total_size,
            "features": {f: _plain(v) for f, v in sorted(node_set.features.items())}}
    for name, edge_set in sorted(graph.edge_sets.items()):
        adjacency = edge_set.adjacency
        source, target = adjacency.node_set_name("source"), adjacency.node_set_name("target")
        source_ids, target_ids = _ids(graph, source), _ids(graph, target)
        sources = adjacency.indices("source").tolist()
        targets = adjacency.indices("target").tolist()
        result["edge_sets"][name] = {
            "source": source, "target": target, "size": edge_set.total_size,
            "edges": [[source_ids[s], target_ids[t]] for s, t in zip(sources, targets)],
            "source_index": sources, "target_index": targets,
            "features": {f: _plain(v) for f, v in sorted(edge_set.features.items())}}
    return json_safe(result)


def _dot_quote(text: str) -> str:
    text = printable(text)  # `--dot` is read on terminals too
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def to_dot(graph: GraphTensor, title: str) -> str:
    """A Graphviz digraph: one cluster per node set, seeds filled, auxiliary sets left out."""
    seeds = seeds_of(graph)
    lines = [f"digraph {_dot_quote(title)} {{",
             f"  graph [label={_dot_quote(title)}, labelloc=t, fontsize=12, rankdir=LR];",
             "  node [shape=box, fontsize=10, style=rounded];", "  edge [fontsize=8];"]
    for name in sorted(graph.node_sets):
        if name.startswith("_"):
            continue
        lines.append(f"  subgraph {_dot_quote('cluster_' + name)} {{")
        lines.append(f"    label={_dot_quote(name)}; color=gray;")
        for i, node_id in enumerate(_ids(graph, name)):
            style = ', style="rounded,filled", fillcolor=gold' if i in seeds.get(name, ()) \
                else ""
            lines.append(f"    {_dot_quote(f'{name}/{i}')} [label={_dot_quote(node_id)}{style}];")
        lines.append("  }")
    for name, edge_set in sorted(graph.edge_sets.items()):
        if name.startswith("_"):
            continue
        adjacency = edge_set.adjacency
        source, target = adjacency.node_set_name("source"), adjacency.node_set_name("target")
        for s, t in zip(adjacency.indices("source").tolist(),
                        adjacency.indices("target").tolist()):
            lines.append(f"  {_dot_quote(f'{source}/{s}')} -> {_dot_quote(f'{target}/{t}')} "
                         f"[label={_dot_quote(name)}];")
    lines.append("}")
    return "\n".join(lines)


# --- the command -----------------------------------------------------------------

def _selected(samples: SampleFolder, args, counts: ScanCounts):
    """(path, index, record) of every record the arguments ask for."""
    conditions: list[Condition] = []
    if args.seed_id is not None:
        conditions.append(seed_condition(samples.schema, args.seed_id, samples.schema_path))
    conditions += [parse_condition(samples.schema, c, samples.schema_path)
                   for c in args.context]
    if not conditions:
        yield nth_record(list(samples.files), args.index)
        return
    found_any = False
    for found in find_records(samples, conditions, counts):
        found_any = True
        yield found.path, found.index, found.record
        if args.first:
            return
    if not found_any:
        wanted = " and ".join(str(c) for c in conditions)
        raise SamplerError(f"{samples.folder}: no record has {wanted} (scanned "
                           f"{counts.records:,} records in {counts.files} files)")


@interruptible("sample-inspect", "interrupted")
def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="sample-inspect", description=__doc__.split("\n\n")[0],
        epilog="examples:\n  sample-inspect out/demo --index 3\n"
               "  sample-inspect out/demo --seed-id p03 --max-items 0\n"
               "  sample-inspect out/demo --seed-id p03 --json | jq .node_sets.paper.size\n"
               "  sample-inspect out/demo --seed-id p03 --dot | dot -Tsvg > p03.svg",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("output", metavar="OUT", help="a `sample` output folder")
    parser.add_argument("--index", type=int, default=0,
                        help="the record at this position across the shards, from 0 "
                             "(default 0; ignored with --seed-id or --context)")
    parser.add_argument("--seed-id", metavar="ID",
                        help="the subgraph(s) whose context/seed_id is ID")
    parser.add_argument("--context", metavar="KEY=VALUE", action="append", default=[],
                        help="records whose context feature KEY holds VALUE (repeat to "
                             "require several, e.g. both ends of a seed pair)")
    parser.add_argument("--first", action="store_true", help="stop at the first match")
    form = parser.add_mutually_exclusive_group()
    form.add_argument("--json", action="store_true",
                      help="one JSON object per record per line, with every value")
    form.add_argument("--dot", action="store_true", help="a Graphviz digraph per record")
    parser.add_argument("--max-items", type=int, default=20, metavar="N",
                        help="text: nodes and edges shown per set (default 20, 0: all)")
    args = parser.parse_args(argv)
    if args.index < 0:
        parser.error(f"--index {args.index}: must be >= 0")
    if args.max_items < 0:
        parser.error(f"--max-items {args.max_items}: must be >= 0")
    counts = ScanCounts()
    try:
        samples = open_samples(args.output)
        found = _selected(samples, args, counts)
        group = 1 if args.first or (args.seed_id is None and not args.context) else 64
        for number, (path, index, graph) in enumerate(decoded_records(
                BatchDecoder(samples.schema), found, group)):  # a bad one says which it is
            name = os.path.basename(path)
            if args.json:
                print(json.dumps(to_json(graph, path, index), allow_nan=False))
            elif args.dot:
                print(to_dot(graph, f"{name} record {index}"))
            else:
                if number:
                    print()
                print(format_text(graph, f"{path}, record {index}:", args.max_items or None))
        return 0
    except SamplerError as e:
        print(f"sample-inspect: error: {message_line(e)}", file=sys.stderr)
        return 2
    except BrokenPipeError:   # e.g. `| head`: the reader has all it wants (before OSError,
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # its base class)
        return 0
    except OSError as e:  # e.g. a shard that cannot be read
        print(f"sample-inspect: error: {one_line(e)}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
