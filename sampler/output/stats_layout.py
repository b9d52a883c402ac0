"""What `sample-stats` reads of an output folder: every feature of its schema and the
tf.Example key it is written under."""
from __future__ import annotations

import dataclasses
from typing import Optional

from sampler.graph_tensor import keys as k
from sampler.output.folder import (SamplesError)
from unigraph.protos import graph_schema_pb2 as gs
from unigraph.schema import NUMPY_DTYPES, dtype_name


@dataclasses.dataclass(frozen=True)
class FeatureRef:
    """One feature of the folder's schema and the tf.Example key it is written under."""

    scope: str            # "context", "nodes" or "edges"
    set_name: str         # "" for context features
    name: str
    key: str
    dtype: str            # numpy dtype name of the decoded values ("object" for strings)
    schema_dtype: str     # DT_FLOAT, ...
    shape: tuple[int, ...]

    @property
    def is_string(self) -> bool:
        return self.dtype == "object"

    @property
    def ragged_dimensions(self) -> list[int]:
        return k.ragged_dimensions(self.shape)

    @property
    def label(self) -> str:
        return f"context/{self.name}" if self.scope == "context" else \
            f"{self.scope}/{self.set_name}.{self.name}"


@dataclasses.dataclass(frozen=True)
class Layout:
    """The keys sample-stats reads, from the folder's graph_schema.pbtxt."""

    node_sets: tuple[str, ...]
    edge_sets: tuple[str, ...]
    features: tuple[FeatureRef, ...]
    # The schema itself, serialized (workers get it pickled), for the batched decoder.
    schema: Optional[bytes] = dataclasses.field(default=None, compare=False)

    @staticmethod
    def of(schema: gs.GraphSchema) -> "Layout":
        features = [_feature_ref("context", "", name, feature)
                    for name, feature in sorted(schema.context.features.items())]
        for scope, sets in (("nodes", schema.node_sets), ("edges", schema.edge_sets)):
            for set_name, piece in sorted(sets.items()):
                features += [_feature_ref(scope, set_name, name, feature)
                             for name, feature in sorted(piece.features.items())]
        return Layout(tuple(sorted(schema.node_sets)), tuple(sorted(schema.edge_sets)),
                      tuple(features), schema.SerializeToString())


def _feature_ref(scope: str, set_name: str, name: str, feature: gs.Feature) -> FeatureRef:
    key = k.context_key(name) if scope == "context" else (
        k.node_key(set_name, name) if scope == "nodes" else k.edge_key(set_name, name))
    dtype = NUMPY_DTYPES.get(feature.dtype)
    if dtype is None:
        raise SamplesError(f"graph schema: feature {key} has dtype "
                           f"{dtype_name(feature.dtype)}, which tf.train.Example cannot hold")
    return FeatureRef(scope, set_name, name, key, dtype.name, dtype_name(feature.dtype),
                      tuple(d.size for d in feature.shape.dim))


def is_auxiliary(set_name: str) -> bool:
    """TF-GNN's auxiliary sets (`_readout`, `_readout/seed`) start with an underscore."""
    return set_name.startswith("_")
