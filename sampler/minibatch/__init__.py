"""Mini-batches as PyTorch users train on them (docs/minibatches.md): a batch of seeds
sampled at once, each distinct node of an op's frontier once for the whole batch
(merged, PyG's NeighborLoader and DGL's samplers) or once per seed (disjoint), laid out
hop after hop as framework-neutral numpy arrays.

  sample.py    the driver: every op of the plan over a batch's frontiers, through the
               core's strategies (core.hop.sample_queries) and core.merged's steps
  layout.py    the batch's nodes and edges ordered by hop (a node's hop: its distance
               from the seeds), each edge once, nodes their table lacks left out
  batch.py     MergedBatch: nodes and edges by hop, and its GNN layers
  features.py  the features and ids of a batch's nodes and edges, the arrays tensors
               are made of
  ego.py       the dense EgoGraph form (GraphLearn) for chains with fixed fan-outs

numpy only: sampler.torch and sampler.dgl make PyG's and DGL's objects from these, and
their loaders (sampler.api.loader) call the driver in DataLoader workers.
"""
from sampler.minibatch.batch import EdgeSetBatch, Layer, MergedBatch, NodeSetBatch

__all__ = ["EdgeSetBatch", "Layer", "MergedBatch", "NodeSetBatch"]
