"""`sample`: one GraphTensor tf.Example per seed node, sampled by a SamplingSpec.

    sample --graph graph/graph_schema.pbtxt --spec spec.pbtxt --seeds seeds.csv --output out/

Every check (schema, tables, spec against schema) runs before a pipeline is
built; a problem prints as one line naming the file and the op, set or field,
and the command exits with status 2. Flags this command does not know go to
Beam's PipelineOptions (e.g. --runner DataflowRunner --project ... --region ...).
"""
from __future__ import annotations

import argparse
import sys

from sampler.plan.describe import describe_plan
from sampler.plan.plan import Plan, build_plan
from sampler.plan.spec import load_spec
from unigraph.errors import SamplerError
from unigraph.schema import LoadedSchema, check_schema, load_schema

DEFAULT_SEED = 42

EXAMPLES = """\
examples:
  sample --graph examples/mag_tiny/graph_schema.pbtxt \\
         --spec examples/mag_tiny/sampling_spec.pbtxt --dry-run
  sample --graph gs://bucket/mag --spec spec.pbtxt --seeds gs://bucket/seeds.csv \\
         --output gs://bucket/out/samples@16 --runner DataflowRunner \\
         --project my-project --region us-central1 --temp_location gs://bucket/tmp
"""


def make_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="sample", description=__doc__.split("\n\n")[0],
        epilog=EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--graph", required=True, metavar="SCHEMA",
                        help="graph schema: a .pbtxt file, or a folder holding graph_schema.pbtxt; "
                             "e.g. --graph data/mag/graph_schema.pbtxt")
    parser.add_argument("--spec", required=True, metavar="SPEC",
                        help="SamplingSpec in text format; e.g. --spec data/mag/sampling_spec.pbtxt")
    parser.add_argument("--seeds", metavar="TABLE",
                        help="seed ids: a CSV/TFRecord/Parquet table with an id column, a .txt "
                             "file with one id per line, or a BigQuery table with an id column "
                             "as bq://project.dataset.table; default: every node of the seed "
                             "node set; e.g. --seeds seeds.csv")
    parser.add_argument("--output", metavar="PATH",
                        help="output folder, or file prefix with @N shards; "
                             "e.g. --output out/ or --output out/samples@8")
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED, metavar="N",
                        help=f"random seed: the same seed gives byte-identical records on any "
                             f"runner and worker count (default {DEFAULT_SEED}); e.g. --seed 7")
    parser.add_argument("--node-buckets", type=int, metavar="B",
                        help="number of node buckets each keyed join is split into (default: "
                             "from the size of the edge tables); e.g. --node-buckets 512")
    parser.add_argument("--dry-run", action="store_true",
                        help="run every check, print the plan and exit without sampling")
    parser.add_argument("--quiet", action="store_true",
                        help="print only the report path, not the summary")
    return parser


def load_and_check(graph: str, spec_path: str) -> tuple[LoadedSchema, Plan]:
    """Every check that can run before a pipeline exists."""
    loaded = load_schema(graph)
    check_schema(loaded)
    plan = build_plan(load_spec(spec_path), loaded, source=spec_path)
    return loaded, plan


def main(argv: list[str] | None = None) -> int:
    parser = make_parser()
    args, beam_args = parser.parse_known_args(argv)
    try:
        loaded, plan = load_and_check(args.graph, args.spec)
        if args.dry_run:
            print(describe_plan(loaded, plan, seeds=args.seeds))
            return 0
        if not args.output:
            raise SamplerError("--output is required (a folder, or a prefix with @N shards)")
        from sampler.run import run_sampling  # imports Beam: only when sampling

        report = run_sampling(loaded, plan, seeds=args.seeds, output=args.output,
                              seed=args.seed, node_buckets=args.node_buckets,
                              beam_args=beam_args, verbose=not args.quiet)
        return 0 if report["subgraphs_written"] or not report["seeds_read"] else 1
    except SamplerError as e:
        print(f"sample: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
