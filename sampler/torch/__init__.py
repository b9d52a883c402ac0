"""PyTorch Geometric interop: the sampler's subgraphs as `HeteroData` (docs/torch.md).

    from sampler.torch import SampleDataset, Vocabulary, to_hetero_data

  to_hetero_data  one subgraph, a list, or a `sampler.api` Subgraphs -> HeteroData,
                  laid out as PyG's NeighborLoader / LinkNeighborLoader lay out theirs
  SampleDataset   an output folder (local or gs://) as an IterableDataset, shards split
                  across DataLoader workers
  Vocabulary      `#id` strings <-> the integer `n_id`
  NeighborLoader, LinkNeighborLoader
                  mini-batches sampled at once (sampler.api's graph), as PyG's loaders
                  give them, made in DataLoader workers (docs/minibatches.md)
  merged_to_hetero_data
                  a sampler.minibatch.MergedBatch -> HeteroData (to_hetero_data takes
                  one too)

Only this package imports torch and torch_geometric (the [torch] extra); without them,
importing it raises one line naming the extra. TensorFlow is never imported.
"""
from sampler.torch.convert import to_hetero_data
from sampler.torch.dataset import SampleDataset
from sampler.torch.loader import LinkNeighborLoader, NeighborLoader
from sampler.torch.minibatch import merged_to_hetero_data
from sampler.torch.vocabulary import Vocabulary

__all__ = ["LinkNeighborLoader", "NeighborLoader", "SampleDataset", "Vocabulary",
           "merged_to_hetero_data", "to_hetero_data"]
