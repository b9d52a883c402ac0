"""What a model reads from a sampled graph, derived from the output schema.

The schema written beside the records says which node sets, edge sets and
features every record holds. A `GraphLayout` keeps the part a model uses:
  - per node set, its dense numeric features (strings, ragged features and
    `#id` are left out: a model would need its own encoding for them);
  - per edge set, its endpoints (edge and context features are not used);
  - the seed node set (the source of `_readout/seed`) and the label.
The label is an integer class id, a feature of `_readout` or of the seed node
set (then read out through `_readout/seed`). It is never a model input: the
whole feature is removed from its node set, so neighbours' labels do not leak.

Numpy-only, so the CLI can check `--label` before TensorFlow loads.
"""
from __future__ import annotations

import dataclasses
import math
from typing import Optional

from sampler.graph_tensor import READOUT_NODE_SET
from sampler.output.folder import SamplesError
from sampler.output.names import ID_FEATURE, LINK_READOUT_EDGE_SETS, READOUT_EDGE_SET
from unigraph.protos import graph_schema_pb2 as gs
from unigraph.schema import NUMPY_DTYPES, dtype_name, feature_shape


def _value_kind(feature: gs.Feature) -> str:
    """'f' (float_list), 'i' (int64_list, for ints and bools) or '' (strings, or a dtype
    the schema checks refuse), from the dtype's numpy kind as the encoder sees it."""
    dtype = NUMPY_DTYPES.get(feature.dtype)
    if dtype is None or dtype.kind == "O":
        return ""
    return "f" if dtype.kind == "f" else "i"


@dataclasses.dataclass(frozen=True)
class Feature:
    name: str
    shape: tuple[int, ...]  # per item, all dimensions fixed
    is_float: bool          # stored as float_list (else int64_list)

    @property
    def width(self) -> int:
        """Values per item: the feature flattened."""
        return math.prod(self.shape)


@dataclasses.dataclass(frozen=True)
class Label:
    node_set: str           # READOUT_NODE_SET or the seed node set
    feature: str

    @property
    def on_readout(self) -> bool:
        return self.node_set == READOUT_NODE_SET


@dataclasses.dataclass(frozen=True)
class GraphLayout:
    node_sets: dict[str, tuple[Feature, ...]]  # every node set, with its model features
    edge_sets: dict[str, tuple[str, str]]      # every edge set: (source, target) node sets
    seed_set: str
    label: Optional[Label]
    unused: tuple[str, ...] = ()               # "nodes/author.name (string)", for the log
    # The edge sets that read nodes out: `_readout/seed`, or for link samples (pairs)
    # `_readout/source` and `_readout/target`, whose states a link model scores.
    readout_edge_sets: tuple[str, ...] = (READOUT_EDGE_SET,)

    @property
    def link(self) -> bool:
        return self.readout_edge_sets == LINK_READOUT_EDGE_SETS

    @property
    def message_edge_sets(self) -> dict[str, tuple[str, str]]:
        """The edge sets of the sampled graph proper (not the readout structure)."""
        return {n: ends for n, ends in self.edge_sets.items()
                if READOUT_NODE_SET not in ends}

    @property
    def graph_node_sets(self) -> list[str]:
        return [n for n in self.node_sets if n != READOUT_NODE_SET]


def layout_from_schema(schema: gs.GraphSchema, label: Optional[str] = None) -> GraphLayout:
    """The layout of the records `schema` describes; `label` names a feature of
    `_readout` (looked up first) or of the seed node set."""
    link = all(name in schema.edge_sets for name in LINK_READOUT_EDGE_SETS)
    readout_sets = LINK_READOUT_EDGE_SETS if link else (READOUT_EDGE_SET,)
    if any(n not in schema.edge_sets for n in readout_sets) or \
            READOUT_NODE_SET not in schema.node_sets:
        raise SamplesError(f"graph schema has no '{READOUT_EDGE_SET}' edge set and "
                           f"'{READOUT_NODE_SET}' node set: not the schema of `sample` output")
    seed_set = schema.edge_sets[readout_sets[0]].source
    label_spec = _find_label(schema, seed_set, label, link) if label is not None else None
    node_sets, unused = {}, []
    for set_name in sorted(schema.node_sets):
        features = []
        for name, feature in sorted(schema.node_sets[set_name].features.items()):
            if label_spec and (set_name, name) == (label_spec.node_set, label_spec.feature):
                continue
            reason = _why_not_used(name, feature)
            if reason:
                if name != ID_FEATURE:
                    unused.append(f"nodes/{set_name}.{name} ({reason})")
                continue
            features.append(Feature(name, feature_shape(feature),
                                    _value_kind(feature) == "f"))
        node_sets[set_name] = tuple(features)
    for set_name in sorted(schema.edge_sets):
        unused += [f"edges/{set_name}.{n} (edge feature)"
                   for n in sorted(schema.edge_sets[set_name].features)]
    edge_sets = {name: (edge_set.source, edge_set.target)
                 for name, edge_set in sorted(schema.edge_sets.items())}
    return GraphLayout(node_sets, edge_sets, seed_set, label_spec, tuple(unused), readout_sets)


def _why_not_used(name: str, feature: gs.Feature) -> Optional[str]:
    if name == ID_FEATURE or feature.dtype == gs.DT_STRING:
        return "string"
    if not _value_kind(feature):
        return f"dtype {dtype_name(feature.dtype)}"
    if -1 in feature_shape(feature):
        return "ragged"
    return None


def _find_label(schema: gs.GraphSchema, seed_set: str, label: str, link: bool = False
                ) -> Label:
    # A pair's label is the pair's (on `_readout`); no endpoint feature is one.
    for set_name in (READOUT_NODE_SET,) if link else (READOUT_NODE_SET, seed_set):
        feature = schema.node_sets[set_name].features.get(label)
        if feature is None:
            continue
        shape = feature_shape(feature)
        if _value_kind(feature) != "i" or shape not in ((), (1,)):
            raise SamplesError(
                f"--label {label}: node set '{set_name}' feature '{label}' is "
                f"{dtype_name(feature.dtype)} of shape {list(shape)}; a label must be an "
                f"integer class id of shape [] or [1]")
        return Label(set_name, label)
    candidates = sorted(
        f"{n}" for s in (READOUT_NODE_SET, seed_set)
        for n, f in schema.node_sets[s].features.items()
        if _value_kind(f) == "i" and feature_shape(f) in ((), (1,)))
    raise SamplesError(f"--label {label}: no such feature on node set '{READOUT_NODE_SET}' or "
                       f"on the seed node set '{seed_set}' (integer features there: "
                       f"{', '.join(candidates) or 'none'})")
