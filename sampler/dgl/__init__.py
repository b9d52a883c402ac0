"""DGL interop: mini-batches (sampler.minibatch) as DGL's message flow graphs, one block
per layer, as `dgl.dataloading` hands them out (docs/minibatches.md).

    from sampler.dgl import DataLoader, to_blocks

  to_blocks   a MergedBatch -> [block of layer 0, ..., block of the last layer]
  DataLoader  (input_nodes, output_nodes, blocks) per batch, made in DataLoader workers;
              link specs: (input_nodes, pair_graph, blocks)

DGL's wheels need their own PyTorch (DGL 2.1.0 with torch 2.2.1: `make dgl` makes that
virtualenv, .cache/dgl), so this package is not an extra of the project's install:
without DGL, importing it raises one line saying what to install. It imports torch and
DGL, never torch_geometric.
"""
from unigraph.errors import MissingExtra

try:
    import dgl  # noqa: F401  (what to install, said once here)
except ModuleNotFoundError as e:
    if e.name is None or e.name.split(".")[0] not in ("dgl", "torch"):
        raise
    raise MissingExtra(f"sampler.dgl needs {e.name.split('.')[0]}, which is not installed: "
                       f"pip install dgl==2.1.0 torch==2.2.1 in a virtualenv of their own "
                       f"(`make dgl` makes one in .cache/dgl)") from None

from sampler.dgl.blocks import block_items, blocks_of, to_blocks  # noqa: E402
from sampler.dgl.loader import DataLoader  # noqa: E402

__all__ = ["DataLoader", "block_items", "blocks_of", "to_blocks"]
