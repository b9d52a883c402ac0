"""`train`: a GNN (or a seed-only MLP baseline) on the subgraphs `sample` wrote.

    train --samples out/ --label labels --epochs 10 --export model/

Reads the records and graph_schema.pbtxt of a `sample` output folder, holds out
a fraction of the seeds (by a hash of their ids, the same on every run), trains
with a progress bar per epoch and prints held-out accuracy next to chance.
Problems with the input print as one line and exit with status 2.
"""
from __future__ import annotations

import argparse
import os
import sys

from sampler.output.folder import open_samples
from sampler.training.layout import layout_from_schema
from unigraph.errors import SamplerError, require_extra

EXAMPLES = """\
examples:
  train --samples out/ --label labels
  train --samples out/ --label labels --baseline mlp
  train --samples gs://bucket/out --label labels --epochs 20 --pad --export gs://bucket/model
"""


def make_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="train", description=__doc__.split("\n\n")[0],
        epilog=EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--samples", required=True, metavar="OUT",
                        help="a `sample` output folder (records + graph_schema.pbtxt)")
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
    parser.add_argument("--verbose", type=int, choices=[0, 1, 2], default=1,
                        help="Keras verbosity: 1 progress bar (default), 2 a line per epoch")
    return parser


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


def main(argv=None) -> int:
    args = make_parser().parse_args(argv)
    try:
        # The folder and the label are checked before paying for TensorFlow's import.
        samples = open_samples(args.samples)
        layout_from_schema(samples.schema, args.label)

        # TensorFlow's C++ start-up chatter would bury the progress bar.
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
        require_extra("tensorflow", "tf", "train")
        from sampler.training.trainer import TrainOptions, train

        options = TrainOptions(
            label=args.label, model=args.baseline or "gnn", epochs=args.epochs,
            batch_size=args.batch_size, validation_fraction=args.validation_fraction,
            hidden_dim=args.hidden_dim, num_rounds=args.rounds,
            learning_rate=args.learning_rate, dropout=args.dropout,
            weight_decay=args.weight_decay, num_classes=args.num_classes, pad=args.pad,
            seed=args.seed, scorer=args.scorer, export_dir=args.export,
            verbose=args.verbose)
        result = train(samples, options)
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
