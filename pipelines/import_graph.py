"""`unigraph-import`: bring your own graph. An OGB dataset folder or a folder of plain tables
becomes a unigraph folder that `sample` runs on as it is.

    unigraph-import dataset/ogbn_mag --output graphs/mag/
    unigraph-import my_tables/ --output graphs/shop/ --dry-run     # review the guess first
    sample --graph graphs/mag --spec graphs/mag/sampling_spec.pbtxt \\
           --seeds graphs/mag/seeds-train.csv --output out/mag/

SOURCE is told by what is there (`--from` forces it):
  ogb     an OGB dataset folder as the `ogb` package stores it (raw/, split/): node and
          link property prediction, homogeneous (ogbn-arxiv) or not (ogbn-mag), CSV or
          binary (.npz); unigraph.importers.ogb says what becomes what
  tables  a folder of CSV, Parquet or TFRecord tables without a schema: the schema is
          guessed from column names and values (unigraph.importers.infer) and printed
          for review before anything is written; flags correct any guess
(PyG and DGL graphs are imported from Python: `unigraph.import_pyg(data, folder)`.)

DIR gets the tables (`--format`, default csv), graph_schema.pbtxt, one seeds table
per split (`seeds-train.csv`, ...; link prediction: `pairs-<split>` with `source`,
`target`, `label`) and a starting sampling_spec.pbtxt: hops over every edge set from
the labelled node set (`--fanouts`, default 10,5). Written all or nothing: a bad value
anywhere leaves DIR as it was. docs/import.md has every path with an example.
"""
from __future__ import annotations

import argparse
import os
import sys

from unigraph.errors import SamplerError, SchemaError, message_line, one_line, printable
from unigraph.importers import infer, write_graph
from unigraph.interrupts import interruptible
from unigraph.importers.review import review, schema_lines
from unigraph.importers.ogb import OgbOptions, from_ogb, is_ogb_folder
from unigraph.importers.spec import DEFAULT_FANOUTS
from unigraph.importers.tables import from_tables, guess_tables
from unigraph.protos import graph_schema_pb2 as gs
from unigraph.tables.writers import EXTENSIONS

KINDS = ("ogb", "tables")


def make_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="unigraph-import", description=__doc__.split("\n\n")[0],
        epilog="docs/import.md: every path with an example; docs/cli/unigraph-import.md")
    parser.add_argument("source", metavar="SOURCE",
                        help="an OGB dataset folder, or a folder of tables")
    parser.add_argument("--output", required=True, metavar="DIR",
                        help="the unigraph folder to write (not inside SOURCE)")
    parser.add_argument("--from", dest="kind", choices=KINDS,
                        help="the kind of SOURCE (default: told from what is there)")
    parser.add_argument("--format", default="csv", choices=sorted(EXTENSIONS),
                        help="format of the tables written (default csv)")
    parser.add_argument("--fanouts", default=",".join(map(str, DEFAULT_FANOUTS)),
                        metavar="K1,K2,...",
                        help="the starting spec: one hop per value, that many edges of every "
                             "edge set per node (default 10,5)")
    parser.add_argument("--no-reverse-edges", dest="reverse_edges", action="store_false",
                        help="no reversed edge set rev_<name> (read backwards, no table of its "
                             "own) for each directed edge set")
    ogb = parser.add_argument_group("OGB datasets")
    ogb.add_argument("--split", metavar="SCHEME",
                     help="the split scheme to write (a folder of split/; default: the only one)")
    ogb.add_argument("--task", choices=("node", "link"),
                     help="node or link property prediction (default: from the folder's name, "
                          "else from its split files)")
    direction = ogb.add_mutually_exclusive_group()
    direction.add_argument("--undirected", dest="undirected", action="store_const", const=True,
                           help="read every edge both ways, as ogb's add_inverse_edge (default: "
                                "as ogb loads the dataset)")
    direction.add_argument("--directed", dest="undirected", action="store_const", const=False,
                           help="read every edge as stored")
    parser.add_argument("--dry-run", action="store_true",
                        help="print the schema (for tables: the guess) and stop; nothing is "
                             "written")
    parser.add_argument("--yes", action="store_true",
                        help="plain tables: do not ask before writing (asked only on a "
                             "terminal)")
    tables = parser.add_argument_group("plain tables: correct the guess (TABLE is a file's "
                                       "name without its extension)")
    tables.add_argument("--nodes", action="append", default=[], metavar="TABLE=ID_COLUMN",
                        help="TABLE is a node table with this id column")
    tables.add_argument("--edges", action="append", default=[],
                        metavar="TABLE=SOURCE[:SET],TARGET[:SET]",
                        help="TABLE is an edge table: its end columns, each with its node set")
    tables.add_argument("--name", action="append", default=[], metavar="TABLE=SET",
                        help="the set name of TABLE (default: the table's name)")
    tables.add_argument("--skip", action="append", default=[], metavar="TABLE[.COLUMN]",
                        help="leave a table or a column out")
    tables.add_argument("--dtype", action="append", default=[], metavar="TABLE.COLUMN=DTYPE",
                        help="a feature's dtype, e.g. DT_DOUBLE, DT_STRING")
    tables.add_argument("--timestamp", action="append", default=[], metavar="TABLE=COLUMN",
                        help="TABLE's timestamp column (empty: none)")
    tables.add_argument("--label", metavar="TABLE.COLUMN",
                        help="the labels (their table is the seed set)")
    tables.add_argument("--split-column", metavar="TABLE.COLUMN",
                        help="the column whose values (train, valid, ...) split the seeds")
    tables.add_argument("--seed-set", metavar="SET", help="the node set the spec seeds from")
    return parser


def _pairs(values: list[str], flag: str) -> dict[str, str]:
    result = {}
    for value in values:
        key, sep, rest = value.partition("=")
        if not sep or not key:
            raise SchemaError(f"{flag} {value}: expected NAME=VALUE")
        result[key] = rest
    return result


def hints_of(args: argparse.Namespace) -> infer.Hints:
    """The flags that correct the tables' guess."""
    edges = {}
    for table, ends in _pairs(args.edges, "--edges").items():
        parts = ends.split(",")
        if len(parts) != 2 or not all(p.split(":")[0] for p in parts):
            raise SchemaError(f"--edges {table}={ends}: expected SOURCE[:SET],TARGET[:SET]")
        edges[table] = tuple((p.split(":", 1)[0], p.split(":", 1)[1] if ":" in p else None)
                             for p in parts)
    dtypes = {}
    for column, name in _pairs(args.dtype, "--dtype").items():
        if name not in gs.DataType.keys() or "." not in column:
            raise SchemaError(f"--dtype {column}={name}: expected TABLE.COLUMN=DT_... "
                              f"(DT_FLOAT, DT_DOUBLE, DT_INT64, DT_STRING, DT_BOOL, ...)")
        dtypes[column] = gs.DataType.Value(name)
    return infer.Hints(nodes=_pairs(args.nodes, "--nodes"), edges=edges,
                       names=_pairs(args.name, "--name"), skip=set(args.skip), dtypes=dtypes,
                       timestamps=_pairs(args.timestamp, "--timestamp"), label=args.label,
                       split=args.split_column, seed_set=args.seed_set)


def fanouts_of(text: str) -> tuple[int, ...]:
    try:
        values = tuple(int(v) for v in text.split(","))
    except ValueError:
        raise SchemaError(f"--fanouts {text}: expected whole numbers, e.g. 10,5") from None
    if not values or any(v < 1 for v in values):
        raise SchemaError(f"--fanouts {text}: every hop samples at least 1 edge")
    return values


def kind_of(source: str, forced: str | None) -> str:
    if forced:
        return forced
    if is_ogb_folder(source):
        return "ogb"
    if os.path.isdir(source):
        return "tables"
    raise SchemaError(f"{source}: no such folder (give an OGB dataset folder or a folder of "
                      f"tables)")


def _check_output(source: str, output: str) -> None:
    source, out = os.path.abspath(source), os.path.abspath(output)
    if out == source or out.startswith(source.rstrip(os.sep) + os.sep):
        raise SchemaError(f"--output {output} is or lies inside SOURCE {source}; the input is "
                          f"never written: choose another folder")


def _confirm(args: argparse.Namespace) -> bool:
    if args.yes or not sys.stdin.isatty():
        return True
    answer = input(f"write the graph into {args.output}? [Y/n] ").strip().lower()
    return answer in ("", "y", "yes")


def run(args: argparse.Namespace, out=print) -> int:
    _check_output(args.source, args.output)
    fanouts = fanouts_of(args.fanouts)
    kind = kind_of(args.source, args.kind)
    if kind == "ogb":
        graph = from_ogb(args.source, OgbOptions(task=args.task, split=args.split,
                                                 undirected=args.undirected,
                                                 reverse_edges=args.reverse_edges))
    else:
        guess = guess_tables(args.source, hints_of(args))
        for line in review(guess):
            out(line)
        if args.dry_run:
            out("(--dry-run: nothing written)")
            return 0
        if not _confirm(args):
            out("nothing written")
            return 1
        graph = from_tables(args.source, guess, reverse_edges=args.reverse_edges)
    if kind == "ogb":
        for line in schema_lines(graph):
            out(line)
    for note in graph.notes:
        out(f"note: {note}")
    if args.dry_run:
        out("(--dry-run: nothing written)")
        return 0
    write_graph(graph, args.output, args.format, fanouts, log=out)
    if graph.seed_set is not None and graph.splits:
        first = graph.split_file_stem(graph.splits[0]) + EXTENSIONS[args.format]
        out(f"sample it: sample --graph {args.output} --spec "
            f"{os.path.join(args.output, 'sampling_spec.pbtxt')} --seeds "
            f"{os.path.join(args.output, first)} --output OUT/")
    return 0


def _shown(line: str) -> None:
    print(printable(line))  # names and values from the source: nothing acts on the terminal


@interruptible("unigraph-import", "interrupted; nothing written")
def main(argv: list[str] | None = None) -> int:
    args = make_parser().parse_args(argv)
    try:
        return run(args, out=_shown)
    except SamplerError as e:
        print(f"unigraph-import: error: {message_line(e)}", file=sys.stderr)
        return 2
    except OSError as e:  # the environment: a full disk, permissions, a vanished folder
        print(f"unigraph-import: error: --output {args.output}: {one_line(e)}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
