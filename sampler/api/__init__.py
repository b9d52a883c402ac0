"""The Python API: load a graph once, then sample subgraphs in the training loop.

    from sampler import api

    graph = api.load_graph("examples/mag_tiny", "examples/mag_tiny/sampling_spec.pbtxt")
    subgraphs = graph.sample(["p01", "p02"], seed=42)   # numpy GraphTensors, in that order
    for batch in graph.batches(batch_size=512, epochs=3, seed=42):
        ...                                             # new draws every epoch
    record = api.to_example(subgraphs[0])               # the bytes `sample` writes for p01

Same subgraphs as the CLI: `graph.sample([id], seed=S)[0]` is, byte for byte once
encoded, the record `sample --seed S` writes for that seed (a subgraph depends on the
graph, the spec, the seed and its row's content only, never on the other seeds asked
for), and epoch 0 of `batches` is exactly that; epoch e > 0 draws with
`sampler.job.job.epoch_seed(S, e)`, as `sample --seed S --epoch e` does. The CLI's
in-memory engine runs the same calls (sampler.memory.batch).

Errors: every problem of input raises `SamplerError` (a ValueError) with the one-line
message the CLI prints. Seeds that are not nodes of the seed set are not an error:
each call reports them (`Subgraphs.missing`) and logs a warning, as the CLI's report
does. The library prints nothing; it logs to the `sampler` logger.

TensorFlow is imported only by `to_tf_dataset`; PyTorch by `sampler.torch`.

The modules behind these names, one job each: loading.py (`load_graph`), graph.py
(`Graph` and its sampling calls), seed_tables.py (`SeedRows`: tables and Python rows
as seeds), subgraphs.py (`Subgraphs`, `to_example`), batching.py (epochs, prefetch),
tf_dataset.py (`to_tf_dataset`).
"""
from sampler.api.graph import Graph
from sampler.api.loading import load_graph
from sampler.api.seed_tables import SeedRows
from sampler.api.subgraphs import Subgraphs, to_example
from sampler.api.tf_dataset import to_tf_dataset
from sampler.job.job import DEFAULT_SEED
from unigraph.errors import SamplerError

__all__ = ["DEFAULT_SEED", "Graph", "SamplerError", "SeedRows", "Subgraphs", "load_graph",
           "to_example", "to_tf_dataset"]
