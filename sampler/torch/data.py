"""The HeteroData class the sampler's views return (PyG's, with one rule added)."""
from __future__ import annotations

from sampler.features.encode import OFFSETS
from unigraph.errors import require_extra

require_extra("torch", "torch", "sampler.torch")  # torch first: the line names what is missing
HeteroData = require_extra("torch_geometric.data", "torch", "sampler.torch").HeteroData


class SampledHeteroData(HeteroData):
    """A HeteroData whose ragged features' offsets (`<name>_offsets`, into `<name>`,
    docs/features.md) move past the values of the graphs before when PyG's `Batch`
    collates several."""

    def __inc__(self, key, value, store=None, *args, **kwargs):
        if key.endswith(OFFSETS) and store is not None and key[:-len(OFFSETS)] in store:
            return store[key[:-len(OFFSETS)]].size(0)
        return super().__inc__(key, value, store, *args, **kwargs)
