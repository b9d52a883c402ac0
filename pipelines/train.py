"""`train`: a GNN (or a seed-only MLP baseline) on the subgraphs `sample` wrote.

    train --samples out/ --label labels --epochs 10 --export model/
    train --online graph/ --spec spec.pbtxt --label labels --epochs 10

Reads the records and graph_schema.pbtxt of a `sample` output folder, or (--online)
samples them with the Python API as it trains, a new epoch of draws for every epoch;
holds out a fraction of the seeds (by a hash of their ids, the same on every run),
trains (a progress bar on a terminal, one line per epoch in a log) and prints held-out
accuracy next to chance.
Problems with the input print as one line and exit with status 2.
"""
from __future__ import annotations

import argparse
import sys

from sampler.output.folder import open_samples
from sampler.training.layout import layout_from_schema
from unigraph.errors import SamplerError
from unigraph.interrupts import interruptible

# sampler.training.progress's choices; that module imports TensorFlow, which --help and
# the input checks do not pay for.
PROGRESS = ("bar", "epochs", "none")

EXAMPLES = """\
examples:
  train --samples out/ --label labels
  train --samples out/ --label labels --baseline mlp
  train --samples gs://bucket/out --label labels --epochs 20 --pad --export gs://bucket/model
  train --online mag/ --spec spec.pbtxt --seeds train_seeds.csv --label labels --epochs 8
"""


def make_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="train", description=__doc__.split("\n\n")[0],
        epilog=EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter)
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--samples", metavar="OUT",
                        help="a `sample` output folder (records + graph_schema.pbtxt)")
    source.add_argument("--online", metavar="GRAPH",
                        help="sample while training instead (sampler.api): the graph's schema "
                             "or folder (or a graph store), with --spec; each epoch draws anew, "
                             "as `sample --epoch E` would")
    online = parser.add_argument_group("online sampling (--online)")
    online.add_argument("--spec", metavar="SPEC", help="the SamplingSpec (text format)")
    online.add_argument("--seeds", metavar="TABLE",
                        help="seeds table, or a link spec's pairs table, as sample's --seeds "
                             "(default: every node of the seed set)")
    online.add_argument("--sampling-seed", type=int, default=42, metavar="N",
                        help="sample's --seed: epoch 0 is `sample --seed N`'s output "
                             "(default 42)")
    online.add_argument("--edge-aggregation", default="edge", metavar="MODE",
                        help="as sample's flag (default edge)")
    online.add_argument("--negatives", type=int, default=0, metavar="K",
                        help="link specs: as sample's flag (default 0)")
    online.add_argument("--negative-sampling", default="uniform", metavar="MODE",
                        help="link specs: as sample's flag (default uniform)")
    parser.add_argument("--label", required=True, metavar="FEATURE",
                        help="integer class id: a feature of `_readout`, or of the seed node "
                             "set read out through `_readout/seed`; for pairs (link "
                             "samples), the 0/1 `_readout` label; e.g. --label labels")
    parser.add_argument("--epochs", type=_positive, default=10, metavar="N")
    parser.add_argument("--batch-size", type=_positive, default=32, metavar="B",
                        help="subgraphs per batch (default 32)")
    parser.add_argument("--validation-fraction", type=_fraction, default=0.2, metavar="F",
                        help="share of seeds held out for evaluation (default 0.2)")
    parser.add_argument("--baseline", choices=["mlp"],
                        help="train an MLP on the seed's own features instead of the GNN")
    parser.add_argument("--scorer", choices=["dot", "mlp"], default="dot",
                        help="link samples (pairs): how the two read-out states become a "
                             "score, a dot product or an MLP (default dot)")
    parser.add_argument("--rounds", type=_positive, default=2, metavar="R",
                        help="GNN message-passing rounds (default 2)")
    parser.add_argument("--hidden-dim", type=_positive, default=64, metavar="D")
    parser.add_argument("--learning-rate", type=float, default=1e-3, metavar="LR")
    parser.add_argument("--dropout", type=_fraction, default=0.0, metavar="P",
                        help="dropout rate on layer inputs (default 0)")
    parser.add_argument("--weight-decay", type=float, default=0.0, metavar="W",
                        help="AdamW decoupled weight decay (default 0)")
    parser.add_argument("--num-classes", type=_positive, metavar="C",
                        help="default: 1 + the largest label found")
    parser.add_argument("--pad", action="store_true",
                        help="pad every batch to the same total sizes (for TPUs / XLA)")
    parser.add_argument("--seed", type=int, default=0, metavar="N",
                        help="random seed for initialization and shuffling (default 0)")
    parser.add_argument("--export", metavar="DIR",
                        help="save a SavedModel serving predictions from serialized records")
    parser.add_argument("--progress", choices=("auto",) + PROGRESS, default="auto",
                        help="bar: Keras's progress bar; epochs: one line per epoch (loss, "
                             "metrics, seconds); none; auto (default): bar on a terminal, "
                             "epochs otherwise (a log gets no escape codes)")
    parser.add_argument("--verbose", action="store_true",
                        help="show TensorFlow's start-up messages and warnings (hidden by "
                             "default; an import that fails shows them anyway)")
    return parser


def _folder(folder: str):
    """(the records' schema, a function making the trainer's source) of a samples folder."""
    samples = open_samples(folder)

    def source():
        from sampler.training.sources import FileSource

        return FileSource(samples)
    return samples.schema, source


def _online(args: argparse.Namespace):
    """(the subgraphs' schema, a function making the trainer's source) of a graph that is
    sampled while training: loaded here, once."""
    from sampler import api
    from sampler.plan.timing import seed_timestamp_column

    graph = api.load_graph(args.online, args.spec, edge_aggregation=args.edge_aggregation,
                           negatives=args.negatives, negative_sampling=args.negative_sampling,
                           cutoffs=bool(args.seeds and seed_timestamp_column(args.seeds)))
    if args.seeds:
        seeds = graph.read_seeds(args.seeds)
    elif graph.link:
        raise SamplerError("--online with a link spec needs --seeds, the pairs table")
    else:
        seeds = api.SeedRows(ids=graph.node_ids())
    print(f"sampling online: {graph!r}, {len(seeds):,} {'pairs' if graph.link else 'seeds'}")

    def source():
        from sampler.training.sources import OnlineSource

        return OnlineSource(graph, seeds, seed=args.sampling_seed)
    return graph.output_schema, source


def _progress(choice: str) -> str:
    if choice != "auto":
        return choice
    return "bar" if sys.stdout.isatty() else "epochs"  # Keras draws its bar on stdout


def _positive(text: str) -> int:
    value = int(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be > 0, got {value}")
    return value


def _fraction(text: str) -> float:
    value = float(text)
    if not 0 <= value < 1:
        raise argparse.ArgumentTypeError(f"must be in [0, 1), got {value}")
    return value


@interruptible("train", "interrupted")
def main(argv=None) -> int:
    args = make_parser().parse_args(argv)
    try:
        if args.online and not args.spec:
            raise SamplerError("--online needs --spec, the SamplingSpec to sample with")
        if args.samples and (args.spec or args.seeds):
            raise SamplerError("--spec and --seeds are for --online; --samples reads records "
                               "already sampled")
        # The input and the label are checked before paying for TensorFlow's import.
        schema, make_source = (_online(args) if args.online else _folder(args.samples))
        layout_from_schema(schema, args.label)

        from sampler.training.tf_start import import_tensorflow

        import_tensorflow("train", verbose=args.verbose)  # before anything else imports it
        from sampler.training.trainer import TrainOptions, train

        options = TrainOptions(
            label=args.label, model=args.baseline or "gnn", epochs=args.epochs,
            batch_size=args.batch_size, validation_fraction=args.validation_fraction,
            hidden_dim=args.hidden_dim, num_rounds=args.rounds,
            learning_rate=args.learning_rate, dropout=args.dropout,
            weight_decay=args.weight_decay, num_classes=args.num_classes, pad=args.pad,
            seed=args.seed, scorer=args.scorer, export_dir=args.export,
            progress=_progress(args.progress))
        result = train(make_source(), options)
    except SamplerError as e:
        print(f"train: error: {e}", file=sys.stderr)
        return 2
    if result.held_out is not None and result.layout.link:
        print(f"held-out ({options.model}, {options.scorer} scorer): ROC AUC "
              f"{result.held_out['auc']:.4f}, loss {result.held_out['loss']:.4f} on "
              f"{result.held_out_count} pairs; chance 0.5")
    elif result.held_out is not None:
        print(f"held-out ({options.model}): accuracy {result.held_out['accuracy']:.4f}, "
              f"loss {result.held_out['loss']:.4f} on {result.held_out_count} subgraphs; "
              f"chance (majority class) {result.chance:.4f}")
    else:
        print(f"trained {options.model} on {result.train_count} subgraphs; nothing held out")
    return 0


if __name__ == "__main__":
    sys.exit(main())
