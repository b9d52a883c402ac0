"""Exporting a trained model as a SavedModel that serves from serialized records.

The signature `serving_default` takes the records `sample` writes (a string
vector of serialized tf.Examples, any number per call), parses and merges them
like the training input, and returns per record its `seed_id`, the `logits`,
`probabilities` and predicted `class`. A SavedModel (not the `.keras` format)
because it carries the parsing too and loads with `tf.saved_model.load` under
Keras 3 and tf-keras alike. The sampled schema and the training facts are
copied to `assets.extra/` beside it, where TF Serving expects extra files.
"""
from __future__ import annotations

import dataclasses
import json
import os

import tensorflow as tf

from sampler.training.input import SEED_ID_KEY, parse_and_merge
from sampler.training.layout import GraphLayout
from unigraph.schema import SCHEMA_FILE_NAME

EXTRA_DIR = "assets.extra"
INFO_FILE = "training_info.json"


class _Serving(tf.Module):
    def __init__(self, model: tf.keras.Model, layout: GraphLayout):
        super().__init__()
        # Track the weights, not the Keras model: saving a Keras 3 model object
        # also traces its own default signature, which cannot guess our dict of
        # int and float inputs. A bound method is not tracked.
        self.weights = list(model.variables)
        self._call_model = model.__call__
        # Serving records need not carry the label: parse without it.
        self._layout = dataclasses.replace(layout, label=None)

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="examples")])
    def serve(self, examples):
        graph = parse_and_merge(examples, self._layout, with_seed_ids=True)
        seed_ids = graph.pop(SEED_ID_KEY)
        logits = self._call_model(graph, training=False)
        return {"seed_id": seed_ids, "logits": logits,
                "probabilities": tf.nn.softmax(logits),
                "class": tf.argmax(logits, axis=1)}


def export_model(model: tf.keras.Model, layout: GraphLayout, export_dir: str, *,
                 schema_text: str, info: dict) -> None:
    serving = _Serving(model, layout)
    tf.saved_model.save(serving, export_dir, signatures={"serving_default": serving.serve})
    extra = os.path.join(export_dir, EXTRA_DIR)
    tf.io.gfile.makedirs(extra)
    with tf.io.gfile.GFile(os.path.join(extra, SCHEMA_FILE_NAME), "w") as f:
        f.write(schema_text)
    with tf.io.gfile.GFile(os.path.join(extra, INFO_FILE), "w") as f:
        f.write(json.dumps(info, indent=2, sort_keys=True) + "\n")


def load_predictor(export_dir: str):
    """The serving function of an export: `predict(tf.constant([record, ...]))` -> dict."""
    return tf.saved_model.load(export_dir).signatures["serving_default"]
