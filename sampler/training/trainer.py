"""Training run: datasets from a record source (a samples folder, or a graph sampled
online: sources.py), fit with held-out validation, evaluation against chance, optional
export. The `train` CLI is a thin shell on it.
"""
from __future__ import annotations

import dataclasses
import math
from typing import Callable, Optional

import numpy as np
import tensorflow as tf
from google.protobuf import text_format

from sampler.output.folder import SamplesError
from sampler.training.export import export_model
from sampler.training.input import fixed_size_constraints, make_dataset
from sampler.training.sources import FileSource, OnlineSource
from sampler.training.layout import GraphLayout, layout_from_schema
from sampler.training.progress import fit_arguments
from sampler.training.model import (build_model, compile_for_classification, compile_for_links,
                                    node_features)


@dataclasses.dataclass(frozen=True)
class TrainOptions:
    label: str
    model: str = "gnn"                # or "mlp": the seed-only baseline
    epochs: int = 10
    batch_size: int = 32
    validation_fraction: float = 0.2  # of the seeds, chosen by a hash of their ids
    hidden_dim: int = 64
    num_rounds: int = 2
    learning_rate: float = 1e-3
    dropout: float = 0.0
    weight_decay: float = 0.0
    num_classes: Optional[int] = None  # default: 1 + the largest training label
    pad: bool = False                 # fixed total sizes per batch
    seed: int = 0
    scorer: str = "dot"               # link samples: "dot" or "mlp" over the two states
    export_dir: Optional[str] = None
    progress: str = "bar"             # progress.CHOICES: Keras's bar, a line per epoch, none


@dataclasses.dataclass
class TrainResult:
    model: tf.keras.Model
    layout: GraphLayout
    num_classes: int
    train_count: int
    held_out_count: int
    history: dict                          # metric name -> one value per epoch
    held_out: Optional[dict] = None        # {"loss": ..., "accuracy": ...} ({"auc"} for links)
    chance: Optional[float] = None         # majority-class share (links: AUC 0.5)


@dataclasses.dataclass
class PartSummary:
    label_counts: np.ndarray   # subgraphs per class id
    feature_norms: dict        # node set -> (mean, variance) of its features; may be empty

    @property
    def count(self) -> int:
        return int(self.label_counts.sum())


Source = FileSource | OnlineSource


def summarize(source: Source, layout: GraphLayout, part: str, validation_fraction: float,
              *, with_features: bool = False) -> PartSummary:
    """One pass over a part: its labels, and (if asked) the moments of the node
    features the model reads, for standardizing them."""
    if not with_features:
        layout = dataclasses.replace(layout, node_sets={n: () for n in layout.node_sets})
    counts = np.zeros(0, np.int64)
    moments = {n: np.zeros((3, sum(f.width for f in features)))  # count, sum, sum of squares
               for n, features in layout.node_sets.items() if features}
    dataset = make_dataset(source.records(part, validation_fraction, link=layout.link),
                           layout, batch_size=1024)
    for inputs, labels in dataset:
        labels = labels.numpy()
        if labels.size and labels.min() < 0:
            raise SamplesError(f"--label {layout.label.feature}: negative class id "
                               f"{int(labels.min())}")
        batch = np.bincount(labels)
        size = max(len(counts), len(batch))
        counts = np.pad(counts, (0, size - len(counts))) + np.pad(batch, (0, size - len(batch)))
        for set_name, moment in moments.items():
            values = node_features(inputs, layout, set_name).numpy().astype(np.float64)
            moment += [np.full(values.shape[1], len(values)), values.sum(0),
                       np.square(values).sum(0)]
    norms = {}
    for set_name, (count, total, squares) in moments.items():
        if count[0]:
            mean = total / count
            norms[set_name] = (mean, np.maximum(squares / count - np.square(mean), 0.0))
    return PartSummary(counts, norms)


def train(source: Source, options: TrainOptions,
          log: Callable[[str], None] = print) -> TrainResult:
    """Trains on a source's records; an OnlineSource samples a new epoch for every epoch
    of training (the held-out part stays epoch 0's)."""
    layout = layout_from_schema(source.schema, options.label)
    if layout.link and (options.pad or options.export_dir):
        raise SamplesError("link samples: --pad and --export are not supported yet; train "
                           "without them")
    tf.keras.utils.set_random_seed(options.seed)
    fraction = options.validation_fraction
    online = isinstance(source, OnlineSource)
    if online and options.pad:
        raise SamplesError("--pad needs the largest subgraphs in advance: train from files "
                           "(`sample`, then train --samples) to pad")
    training = summarize(source, layout, "train", fraction, with_features=True)
    held_out_part = (summarize(source, layout, "held_out", fraction) if fraction > 0
                     else PartSummary(np.zeros(0, np.int64), {}))
    train_count, held_out_count = training.count, held_out_part.count
    if not train_count:
        raise SamplesError(f"samples {source.name}: no subgraph left for training "
                           f"(--validation-fraction {fraction})")
    largest = max(len(training.label_counts), len(held_out_part.label_counts)) - 1
    if layout.link and largest > 1:
        raise SamplesError(f"--label {options.label}: link samples need labels 0 and 1, found "
                           f"{largest}")
    num_classes = 1 if layout.link else options.num_classes or largest + 1
    if not layout.link and largest >= num_classes:
        raise SamplesError(f"--label {options.label}: class id {largest} found, but "
                           f"--num-classes is {num_classes}")
    log(f"{train_count} subgraphs for training, {held_out_count} held out "
        f"(fraction {fraction} of {'pairs' if layout.link else 'seeds'} by id hash); "
        f"{'a link score per pair' if layout.link else f'{num_classes} classes'}; "
        f"label '{layout.label.feature}' of node set '{layout.label.node_set}'")
    if layout.unused:
        log(f"not used by the model: {', '.join(layout.unused)}")

    constraints = (fixed_size_constraints(source.files, layout, options.batch_size)
                   if options.pad else None)

    def dataset(part: str, count: int, shuffle: bool) -> tf.data.Dataset:
        # Online, the API shuffles the seeds of every epoch itself; a new epoch's draws
        # on every pass over the training part.
        records = source.records(part, fraction, shuffle=shuffle, seed=options.seed,
                                 link=layout.link, next_epoch=online and part == "train")
        batches = make_dataset(records, layout, batch_size=options.batch_size,
                               shuffle=shuffle and not online, seed=options.seed,
                               size_constraints=constraints)
        if online:  # negatives given up differ by epoch: the length is not known
            return batches
        # A known length gives Keras its progress bar from the first epoch on.
        return batches.apply(tf.data.experimental.assert_cardinality(
            math.ceil(count / options.batch_size)))

    model = build_model(options.model, layout, num_classes, hidden_dim=options.hidden_dim,
                        num_rounds=options.num_rounds, feature_norms=training.feature_norms,
                        dropout=options.dropout, scorer=options.scorer)
    if layout.link:
        compile_for_links(model, learning_rate=options.learning_rate,
                          weight_decay=options.weight_decay)
    else:
        compile_for_classification(model, learning_rate=options.learning_rate,
                                   weight_decay=options.weight_decay,
                                   padded=constraints is not None)
    held_out = dataset("held_out", held_out_count, False) if held_out_count else None
    history = model.fit(dataset("train", train_count, True), validation_data=held_out,
                        epochs=options.epochs, shuffle=False,
                        **fit_arguments(options.progress, options.epochs))
    result = TrainResult(model, layout, num_classes, train_count, held_out_count,
                         {k: [float(v) for v in vs] for k, vs in history.history.items()})
    if held_out is not None:
        metrics = model.evaluate(held_out, verbose=0, return_dict=True)
        result.held_out = {k: float(v) for k, v in metrics.items()}
        result.chance = 0.5 if layout.link else float(
            held_out_part.label_counts.max() / held_out_count)
    if options.export_dir:
        schema = text_format.MessageToString(source.schema)
        export_model(model, layout, options.export_dir, schema_text=schema,
                     info={"label": options.label, "num_classes": num_classes,
                           "model": options.model, "samples": source.name,
                           "held_out": result.held_out})
        log(f"exported the model to {options.export_dir}")
    return result
