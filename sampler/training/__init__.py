"""Training on the sampler's output: reading, a minimal GNN, export.

  layout.py      what a model reads from the output schema: features, edges, label
                 (numpy only)
  input.py       tf.data: batches of records parsed and merged into one graph each
  tf_padding.py  padding those batches to fixed total sizes (the core's padding rule,
                 run with TensorFlow), for accelerators
  model.py       a small heterogeneous message-passing GNN and a seed-only MLP baseline
  trainer.py     the training loop behind the `train` command
  export.py      a SavedModel that serves predictions from serialized records

The output folder itself is read by sampler/output/folder.py. Nothing is imported
here: `layout` stays importable without TensorFlow, the rest import it themselves.
"""
