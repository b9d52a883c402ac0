"""PyTorch Geometric interop: the sampler's subgraphs as `HeteroData` (docs/torch.md).

    from sampler.torch import SampleDataset, Vocabulary, to_hetero_data

  to_hetero_data  one subgraph, a list, or a `sampler.api` Subgraphs -> HeteroData,
                  laid out as PyG's NeighborLoader / LinkNeighborLoader lay out theirs
  SampleDataset   an output folder (local or gs://) as an IterableDataset, shards split
                  across DataLoader workers
  Vocabulary      `#id` strings <-> the integer `n_id`

Only this package imports torch and torch_geometric (the [torch] extra); without them,
importing it raises one line naming the extra. TensorFlow is never imported.
"""
from sampler.torch.convert import to_hetero_data
from sampler.torch.dataset import SampleDataset
from sampler.torch.vocabulary import Vocabulary

__all__ = ["SampleDataset", "Vocabulary", "to_hetero_data"]
