"""`sample`: one GraphTensor tf.Example per seed node, sampled by a SamplingSpec.

    sample --graph graph/graph_schema.pbtxt --spec spec.pbtxt --seeds seeds.csv --output out/

Every check (schema, tables, spec against schema, where the output goes, the seeds)
runs before anything is written; a problem prints as one line naming the file and
the op, set or field. The output is committed only when the whole run succeeded:
until then, the previous output in the folder stays as it was.

Exit status: 0 written; 1 ran, but none of the seeds is in the graph (nothing
written); 2 bad input, flags or environment (one line); 130 interrupted.
Flags this command does not know must be Beam pipeline options (--runner,
--project, --direct_num_workers, ...); anything else is an error.
"""
from __future__ import annotations

import argparse
import sys

from sampler.core.long_rows import CHUNK_EDGES
from sampler.features.spec import resolve
from sampler.features.spec_text import spec_for_graph
from sampler.output.report import format_report
from sampler.plan.describe import describe_plan
from sampler.job.job import DEFAULT_SEED
from sampler.job.options import link_plan, load_and_check
from sampler.plan.plan import DEGREE, UNIFORM, Plan, plan_warnings, with_edge_aggregation
from unigraph.errors import SamplerError, message_line, one_line, printable
from unigraph.interrupts import interruptible
from unigraph.schema import LoadedSchema
from unigraph.storage import bigquery, paths

EXIT_NOTHING_SAMPLED, EXIT_ERROR = 1, 2  # EXIT_INTERRUPTED: 130 (unigraph.interrupts)

EXAMPLES = """\
examples:
  sample --graph examples/mag_tiny/graph_schema.pbtxt \\
         --spec examples/mag_tiny/sampling_spec.pbtxt --dry-run
  sample --graph mag/ --spec spec.pbtxt --seeds seeds.csv --output out/
  sample --graph mag/ --spec spec.pbtxt --output out/train.tfrecords@16     (TF-GNN's naming)
  sample --graph gs://bucket/mag --spec spec.pbtxt --seeds gs://bucket/seeds.csv \\
         --output gs://bucket/out/ --runner DataflowRunner \\
         --project my-project --region us-central1 --temp_location gs://bucket/tmp
TF-GNN's tfgnn_sampler flags work too: --graph_schema, --sampling_spec, --input_seeds,
--output_samples, --data_path.
"""


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, exit status 2, like every other input problem
        raise SamplerError(message)


def make_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="sample", description=__doc__.split("\n\n")[0], epilog=EXAMPLES,
                     formatter_class=argparse.RawDescriptionHelpFormatter, allow_abbrev=False)
    parser.add_argument("--graph", "--graph_schema", dest="graph", required=True,
                        metavar="SCHEMA",
                        help="graph schema: a .pbtxt file, or a folder holding graph_schema.pbtxt; "
                             "e.g. --graph data/mag/graph_schema.pbtxt")
    parser.add_argument("--spec", "--sampling_spec", dest="spec", required=True,
                        metavar="SPEC",
                        help="SamplingSpec in text format; e.g. --spec data/mag/sampling_spec.pbtxt")
    parser.add_argument("--seeds", "--input_seeds", dest="seeds", metavar="TABLE",
                        help="seed ids: a CSV/TFRecord/Parquet table with an id column, or a .txt "
                             "file with one id per line; `name@N` shards and globs work; or a "
                             "BigQuery table with an id column, bq://project.dataset.table; "
                             "a link spec's pairs: source and target columns; a 'timestamp' "
                             "column gives each seed or pair a time cut-off; "
                             "default: every node of the seed node set; e.g. --seeds seeds.csv")
    parser.add_argument("--output", "--output_samples", dest="output", metavar="PATH",
                        help="output folder (always a folder, whether or not it exists), or a "
                             "file pattern: name@N, name.tfrecords@N (TF-GNN's naming), "
                             "name-?????-of-0000N, or one file name.tfrecord; e.g. --output out/")
    parser.add_argument("--data_path", "--data-path", dest="data_path", metavar="FOLDER",
                        help="where the schema's tables are (default: the schema's folder), "
                             "as TF-GNN's --data_path")
    parser.add_argument("--timestamp-column", dest="timestamp_column", metavar="COLUMN",
                        help="the column holding node and edge timestamps in every table "
                             "(default '#timestamp' or 'timestamp', or a set's metadata extra "
                             "'timestamp_column'); LATEST_K and seed cut-offs use it; "
                             "e.g. --timestamp-column year")
    parser.add_argument("--bigquery-project", dest="bigquery_project", metavar="PROJECT",
                        help="the project BigQuery queries and reads are billed to (default: "
                             "Beam's --project when given, else GOOGLE_CLOUD_PROJECT, else the "
                             "credentials' project)")
    parser.add_argument("--overwrite", action="store_true",
                        help="write into a non-empty output folder that `sample` did not write "
                             "(its own earlier output is always replaced, atomically)")
    parser.add_argument("--verify-store", dest="verify_store", action="store_true",
                        help="with a graph store as --graph: check every file's checksum "
                             "before sampling (reads the whole store; docs/store.md). What "
                             "is cheap is checked on every run")
    parser.add_argument("--engine", choices=("auto", "memory", "beam"), default="auto",
                        help="memory: the graph in this machine's memory, worker processes "
                             "over output shards (fastest where the graph fits); beam: an "
                             "Apache Beam pipeline (local, Dataflow, Dask, Flink, Spark); "
                             "auto (default): memory unless Beam options are given or the "
                             "graph would not fit in the memory available")
    parser.add_argument("--workers", type=int, metavar="N",
                        help="worker processes of the memory engine (default: one per core); "
                             "the output is the same for any number")
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED, metavar="N",
                        help=f"random seed: the same seed gives byte-identical records on any "
                             f"runner and worker count (default {DEFAULT_SEED}); e.g. --seed 7")
    parser.add_argument("--epoch", type=int, default=0, metavar="E",
                        help="draw epoch E's subgraphs: 0 (default) is --seed's own draws, each "
                             "later epoch new ones, reproducibly, as the Python API's "
                             "graph.batches(..., seed=N) draws in epoch E; e.g. --epoch 3")
    parser.add_argument("--node-buckets", type=int, metavar="B",
                        help="number of node buckets each keyed join is split into (default: "
                             "from the size of the edge tables); e.g. --node-buckets 512")
    parser.add_argument("--chunk-edges", type=int, default=CHUNK_EDGES, metavar="N",
                        help=f"a node with more edges is sampled in chunks of about N edges, "
                             f"each a bounded element (default {CHUNK_EDGES}); part of the "
                             f"output like --seed: it decides such nodes' random draws")
    parser.add_argument("--edge-aggregation", default="edge", metavar="MODE",
                        help="edge (default): a subgraph holds the edges its ops sampled; "
                             "node: also every other edge between two of its nodes, in every "
                             "edge set the spec samples (an induced subgraph, TF-GNN v1's "
                             "name); node:E1,E2: in those edge sets only")
    link = parser.add_argument_group(
        "link seeds (a spec with symmetric_link_seed_op; --seeds is then a table of pairs)")
    link.add_argument("--no-exclude-target-edge", dest="exclude_target_edge",
                      action="store_false",
                      help="keep the edges between a pair's two nodes in its own subgraph "
                           "(default: left out, in either direction, so a model cannot read "
                           "the answer off the input)")
    link.add_argument("--target-edge-sets", metavar="NAMES",
                      help="comma-separated edge sets that hold the edges being predicted "
                           "(default: every sampled edge set from the paired node set to "
                           "itself); only these leave out a pair's edges")
    link.add_argument("--negatives", type=int, default=0, metavar="K",
                      help="per pair of the table, K more pairs with its source and a random "
                           "target (never a known positive of the source), each its own "
                           "subgraph; the _readout feature 'label' is then 1 for the table's "
                           "pairs and 0 for negatives (default 0)")
    link.add_argument("--negative-sampling", choices=(UNIFORM, DEGREE), default=UNIFORM,
                      help="how negatives' targets are drawn: uniform over the paired node "
                           "set, or degree (in proportion to degree**0.75, as word2vec and "
                           "PinSage do)")
    parser.add_argument("--features", metavar="SPEC",
                        help="a feature spec (feature_spec.pbtxt, docs/features.md): how each "
                             "feature becomes model input; its vocabularies and statistics "
                             "are computed from the graph and written to OUT/features/. "
                             "Default: feature_spec.pbtxt beside the graph schema if there is "
                             "one, else every feature's default; 'none' writes no features/")
    parser.add_argument("--dry-run", action="store_true",
                        help="run every check, print the plan and exit without sampling")
    parser.add_argument("--quiet", action="store_true",
                        help="print only the report path, not the summary")
    return parser


def link_options(plan: Plan, args: argparse.Namespace, loaded: LoadedSchema) -> Plan:
    """The link flags applied to the plan (sampler.job.options.link_plan)."""
    names = None if args.target_edge_sets is None else [
        n.strip() for n in args.target_edge_sets.split(",") if n.strip()]
    return link_plan(plan, loaded, exclude_target_edge=args.exclude_target_edge,
                     target_edge_sets=names, negatives=args.negatives,
                     negative_sampling=args.negative_sampling)


def check_pipeline_flags(parser: argparse.ArgumentParser, extra: list[str]) -> None:
    """Flags `sample` does not know must be Beam pipeline options."""
    if not extra:
        return
    from sampler.beam.options import beam_flag_names, closest, unknown_flags  # imports Beam

    unknown = unknown_flags(extra)
    if not unknown:
        return
    ours = [s for a in parser._actions for s in a.option_strings if s.startswith("--")]
    # The closest of all flags, ours and Beam's alike (--runer is Beam's --runner).
    suggestion = closest(unknown[0], ours + beam_flag_names(extra))
    hint = f"; did you mean {suggestion}?" if suggestion else ""
    raise SamplerError(f"unknown flag {unknown[0]}: neither a `sample` flag nor a Beam "
                       f"pipeline option{hint}")


def beam_project(beam_args: list[str]) -> str | None:
    """Beam's `--project` among the pipeline options, if given (`--project P` or
    `--project=P`): BigQuery bills to it, as Beam's own BigQuery IO does."""
    project = None
    for i, arg in enumerate(beam_args):
        if arg == "--project" and i + 1 < len(beam_args):
            project = beam_args[i + 1]
        elif arg.startswith("--project="):
            project = arg.split("=", 1)[1]
    return project


def _sample(args: argparse.Namespace, beam_args: list[str]) -> int:
    loaded, plan = load_and_check(args.graph, args.spec, args.data_path,
                                  args.timestamp_column)
    plan = with_edge_aggregation(link_options(plan, args, loaded), args.edge_aggregation)
    for warning in plan_warnings(plan, args.spec):
        print(f"sample: warning: {warning}", file=sys.stderr)
    if args.verify_store:
        _verify_store(loaded, args.graph, say=(lambda line: None) if args.quiet else print)
    features, features_given = spec_for_graph(args.features, paths.dirname(loaded.path))
    if features is not None:
        resolve(features, loaded.schema)  # checked before anything runs
    if args.dry_run:
        print(printable(describe_plan(loaded, plan, seeds=args.seeds), keep="\n"))
        return 0
    if args.epoch < 0:
        raise SamplerError(f"--epoch {args.epoch}: give 0 or more")
    if args.chunk_edges < 1:
        raise SamplerError(f"--chunk-edges must be at least 1, got {args.chunk_edges}")
    if not args.output:
        raise SamplerError("--output is required (a folder, or a file pattern such as "
                           "out/samples@8)")
    from sampler.run import NothingSampled, run_sampling  # imports Beam: only to sample

    try:
        run_sampling(loaded, plan, spec_path=args.spec, seeds=args.seeds,
                     output=args.output, seed=args.seed, epoch=args.epoch,
                     node_buckets=args.node_buckets,
                     chunk_edges=args.chunk_edges,
                     beam_args=beam_args, engine=args.engine, workers=args.workers,
                     overwrite=args.overwrite, verbose=not args.quiet,
                     features=features, features_given=features_given)
    except NothingSampled as e:
        if not args.quiet:
            print(printable(format_report(e.report), keep="\n"))
        print(f"sample: {message_line(e)}; the previous output (if any) is kept",
              file=sys.stderr)
        return EXIT_NOTHING_SAMPLED
    return 0


def _verify_store(loaded: LoadedSchema, graph: str, say) -> None:
    if loaded.store is None:
        raise SamplerError(f"--verify-store: --graph {graph} is not a graph store (it has no "
                           f"store.json of this project's format)")
    from sampler.store.mapped import verify_store  # numpy and the store: only here

    verify_store(loaded.store.folder, loaded.store.manifest)
    files = loaded.store.manifest["files"]
    say(f"graph store {loaded.store.folder}: {len(files)} files, "
        f"{sum(f['bytes'] for f in files.values()) / 1e6:,.1f} MB, every checksum verified")


# SIGTERM (a scheduler's stop) ends a run like Ctrl-C: staged work dropped, previous
# output kept (unigraph.interrupts).
@interruptible("sample", "interrupted; previous output kept")
def main(argv: list[str] | None = None) -> int:
    parser = make_parser()
    try:
        args, beam_args = parser.parse_known_args(argv)
        if args.workers is not None and args.workers < 1:
            raise SamplerError(f"--workers {args.workers}: give at least 1")
        check_pipeline_flags(parser, beam_args)
        with bigquery.billing_project_given(args.bigquery_project or beam_project(beam_args)):
            return _sample(args, beam_args)
    except SamplerError as e:
        print(f"sample: error: {message_line(e)}", file=sys.stderr)
        return EXIT_ERROR
    except OSError as e:  # the environment: a full disk, a vanished folder, permissions
        print(f"sample: error: {one_line(e)}", file=sys.stderr)
        return EXIT_ERROR


if __name__ == "__main__":
    sys.exit(main())
