"""Training on the sampler's output: reading, a minimal GNN, export.

  samples.py      an output folder: its schema and shard files (numpy only)
  layout.py       what a model reads from the schema: features, edges, label (numpy only)
  input.py        tf.data: batches of records parsed and merged into one graph each
  padding.py      padding those batches to fixed total sizes, for accelerators
  model.py        a small heterogeneous message-passing GNN and a seed-only MLP baseline
  export.py       a SavedModel that serves predictions from serialized records
  toy_samples.py  a small planted-label output folder built in memory, for tests and demos

Nothing is imported here: `samples` and `layout` stay importable without
TensorFlow (sample-check uses them), the rest import TensorFlow themselves.
"""
