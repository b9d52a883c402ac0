"""The tf.Example keys of a GraphTensor, as TF-GNN names them.

  context/<feature>
  nodes/<set>.#size       nodes/<set>.<feature>
  edges/<set>.#size       edges/<set>.#source     edges/<set>.#target
  edges/<set>.<feature>
  <feature key>.d<k>      row lengths of ragged dimension k of that feature,
                          where k counts the feature's dimensions with the item
                          dimension as 0 (so a [items, None] feature adds .d1).
There is no context/#size: TF-GNN neither writes nor reads one; a parser gets
the number of components from the length of any #size.
"""
from __future__ import annotations

from typing import Sequence

from unigraph.protos import graph_schema_pb2 as gs

SIZE_NAME = "#size"
SOURCE_NAME = "#source"
TARGET_NAME = "#target"
CONTEXT_PREFIX = "context/"


def context_key(feature: str) -> str:
    return f"{CONTEXT_PREFIX}{feature}"


def node_key(node_set: str, field: str) -> str:
    return f"nodes/{node_set}.{field}"


def edge_key(edge_set: str, field: str) -> str:
    return f"edges/{edge_set}.{field}"


def ragged_key(feature_key: str, dimension: int) -> str:
    return f"{feature_key}.d{dimension}"


def ragged_dimensions(shape: Sequence[int]) -> list[int]:
    """The dimension numbers (item dimension = 0) that get a .d<k> key, for a
    per-item shape where -1 marks a ragged dimension."""
    return [k for k, size in enumerate(shape, start=1) if size == -1]


def schema_keys(schema: gs.GraphSchema) -> list[str]:
    """Every key a graph of this schema writes, sorted."""
    keys = []

    def add_features(prefix_key, features):
        for name, feature in features.items():
            key = prefix_key(name)
            keys.append(key)
            keys.extend(ragged_key(key, k)
                        for k in ragged_dimensions([d.size for d in feature.shape.dim]))

    add_features(context_key, schema.context.features)
    for set_name, node_set in schema.node_sets.items():
        keys.append(node_key(set_name, SIZE_NAME))
        add_features(lambda f, s=set_name: node_key(s, f), node_set.features)
    for set_name, edge_set in schema.edge_sets.items():
        keys += [edge_key(set_name, n) for n in (SIZE_NAME, SOURCE_NAME, TARGET_NAME)]
        add_features(lambda f, s=set_name: edge_key(s, f), edge_set.features)
    return sorted(keys)
