"""The feature specification: per node set and edge set, how each feature becomes model
input (docs/features.md), and its defaults from the schema.

Kinds:
  Numeric      numbers as they are (float32 columns of `x`), standardized, or the index
               of their bucket among boundaries
  Categorical  strings or integers as embedding indices: through a vocabulary of the
               graph's own values (index 0 for any other value) or hashed into buckets
  Timestamp    times as seconds (or as an age at the sample's cut-off), or buckets
  Ignore       left out
A ragged feature (a shape with -1) is multi-valued: each item's values come as a bag
(flat values and each item's offset, torch.nn.EmbeddingBag's input) or padded to a
length with a mask (`layout="padded"`). Every kind takes `layout` and `max_length`.

Defaults (a feature the spec does not name): numbers Numeric(); strings Categorical()
(a vocabulary of every value, min_count 1); the set's timestamp column (as
unigraph.timestamps names it) Timestamp(); ragged ones as bags. So most graphs need
no spec. `#id` and the `_readout` sets are the sampler's, never features here.

`resolve` checks a spec against a schema (each named set and feature exists, each kind
fits its dtype and shape) and gives every feature of every set its `ResolvedFeature`.
"""
from __future__ import annotations

import dataclasses
import math
from typing import Mapping, Optional, Sequence, Union

import numpy as np

from sampler.graph_tensor.readout_structure import READOUT_NODE_SET, READOUT_PREFIX
from sampler.output.names import ID_FEATURE
from unigraph.errors import SamplerError
from unigraph.protos import graph_schema_pb2 as gs
from unigraph.schema import NUMPY_DTYPES, dtype_name, feature_shape
from unigraph.timestamps import declared_timestamp

LAYOUTS = ("bag", "padded")
SET_KINDS = ("nodes", "edges")


class FeatureError(SamplerError):
    """A feature spec, a value or a written vocabulary that does not fit (one line
    naming the feature and the value)."""


def _floats(values, what: str) -> Optional[tuple[float, ...]]:
    if values is None:
        return None
    out = tuple(float(v) for v in values)
    if any(math.isnan(v) for v in out):
        raise FeatureError(f"{what}: NaN is not a value here")
    return out


def _check_boundaries(boundaries, what: str) -> None:
    if boundaries is not None:
        if not boundaries:
            raise FeatureError(f"{what}: boundaries is empty; give at least one")
        if any(b >= a for a, b in zip(boundaries[1:], boundaries[:-1])):
            raise FeatureError(f"{what}: boundaries {list(boundaries)} are not ascending")


def _check_layout(layout: str, max_length: int, what: str) -> None:
    if layout not in LAYOUTS:
        raise FeatureError(f"{what}: layout {layout!r}; give one of {', '.join(LAYOUTS)}")
    if max_length < 0:
        raise FeatureError(f"{what}: max_length {max_length}; give 0 (the batch's longest) "
                           f"or more")


@dataclasses.dataclass(frozen=True)
class Numeric:
    """Numbers as they are, standardized ((x - mean) / std per column; the graph's
    mean and std unless given), or bucketized (`boundaries`: the index of each value's
    bucket, the number of boundaries <= it, as Keras' Discretization)."""

    standardize: bool = False
    mean: Optional[Sequence[float]] = None
    std: Optional[Sequence[float]] = None
    boundaries: Optional[Sequence[float]] = None
    layout: str = "bag"
    max_length: int = 0

    def __post_init__(self):
        what = "Numeric"
        for name in ("mean", "std", "boundaries"):
            object.__setattr__(self, name, _floats(getattr(self, name), f"{what} {name}"))
        _check_boundaries(self.boundaries, what)
        _check_layout(self.layout, self.max_length, what)
        if self.boundaries is not None and self.standardize:
            raise FeatureError(f"{what}: standardize and boundaries do not go together")
        if (self.mean is not None or self.std is not None) and not self.standardize:
            raise FeatureError(f"{what}: mean and std are for standardize=True")
        if (self.mean is None) != (self.std is None):
            raise FeatureError(f"{what}: give both mean and std, or neither")
        if self.std is not None and (len(self.std) != len(self.mean)
                                     or any(not s > 0 for s in self.std)):
            raise FeatureError(f"{what}: std {list(self.std)} must be as long as mean and > 0")

    @property
    def fitted(self) -> bool:
        return not self.standardize or self.mean is not None


@dataclasses.dataclass(frozen=True)
class Categorical:
    """Values as embedding indices. By a vocabulary (the default): the graph's values
    held at least `min_count` times, at most `max_tokens` of them (0: all), most
    frequent first, ties by value; or the tokens of `vocabulary_file`. Index 0 is
    every other value, tokens are 1..n in file order. By hashing (`hash_buckets` > 0):
    a splitmix64 hash of the value with `salt`, modulo the buckets.
    `vocabulary_size`/`vocabulary_sha256` are filled in when a vocabulary is written."""

    min_count: int = 1
    max_tokens: int = 0
    vocabulary_file: Optional[str] = None
    hash_buckets: int = 0
    salt: int = 0
    layout: str = "bag"
    max_length: int = 0
    vocabulary_size: Optional[int] = None
    vocabulary_sha256: Optional[str] = None

    def __post_init__(self):
        what = "Categorical"
        _check_layout(self.layout, self.max_length, what)
        if self.min_count < 1 or self.max_tokens < 0:
            raise FeatureError(f"{what}: min_count {self.min_count} must be >= 1 and "
                               f"max_tokens {self.max_tokens} >= 0")
        if self.hash_buckets < 0 or not 0 <= self.salt < 2 ** 64:
            raise FeatureError(f"{what}: hash_buckets {self.hash_buckets} must be >= 0 and "
                               f"salt {self.salt} in 0..2**64-1")
        if self.hash_buckets and self.vocabulary_file:
            raise FeatureError(f"{what}: hash_buckets and vocabulary_file do not go together")

    @property
    def hashed(self) -> bool:
        return self.hash_buckets > 0

    @property
    def fitted(self) -> bool:
        return self.hashed or self.vocabulary_file is not None


@dataclasses.dataclass(frozen=True)
class Timestamp:
    """Times as seconds (values times `unit_seconds`), float32; `age`: the sample's
    cut-off (its `seed_timestamp`) minus the time; `boundaries` (in seconds): the
    bucket index instead, as Numeric's."""

    unit_seconds: float = 1.0
    age: bool = False
    boundaries: Optional[Sequence[float]] = None
    layout: str = "bag"
    max_length: int = 0

    def __post_init__(self):
        what = "Timestamp"
        object.__setattr__(self, "boundaries", _floats(self.boundaries, f"{what} boundaries"))
        _check_boundaries(self.boundaries, what)
        _check_layout(self.layout, self.max_length, what)
        if not self.unit_seconds > 0 or math.isinf(self.unit_seconds):
            raise FeatureError(f"{what}: unit_seconds {self.unit_seconds} must be > 0")

    @property
    def fitted(self) -> bool:
        return True


@dataclasses.dataclass(frozen=True)
class Ignore:
    """Left out of the model input."""

    layout: str = "bag"
    max_length: int = 0

    @property
    def fitted(self) -> bool:
        return True


Kind = Union[Numeric, Categorical, Timestamp, Ignore]
KINDS = (Numeric, Categorical, Timestamp, Ignore)


@dataclasses.dataclass(frozen=True)
class FeatureSpec:
    """Per node set and edge set, feature name -> kind (the features it does not name
    get their defaults). `source`: the file it was read from, if any (a relative
    vocabulary_file is found beside it)."""

    node_sets: Mapping[str, Mapping[str, Kind]] = dataclasses.field(default_factory=dict)
    edge_sets: Mapping[str, Mapping[str, Kind]] = dataclasses.field(default_factory=dict)
    source: Optional[str] = None

    def __post_init__(self):
        for kind, sets in (("node set", self.node_sets), ("edge set", self.edge_sets)):
            for set_name, features in sets.items():
                for name, value in features.items():
                    if not isinstance(value, KINDS):
                        raise FeatureError(
                            f"{kind} '{set_name}' feature '{name}': {value!r} is not a kind; "
                            f"give Numeric, Categorical, Timestamp or Ignore")

    def sets(self, set_kind: str) -> Mapping[str, Mapping[str, Kind]]:
        return self.node_sets if set_kind == "nodes" else self.edge_sets


@dataclasses.dataclass(frozen=True)
class ResolvedFeature:
    """One feature of one set with its kind, as the schema declares it."""

    set_kind: str                 # "nodes" or "edges"
    set_name: str
    name: str
    kind: Kind
    dtype: np.dtype               # of the decoded values (object: bytes)
    shape: tuple[int, ...]        # per item, -1 for a ragged dimension

    @property
    def ragged(self) -> bool:
        return -1 in self.shape

    @property
    def columns(self) -> int:
        """Values per item of a fixed shape, or per ragged value of a [-1, *fixed] one:
        what standardize keeps a mean and std of each of."""
        if self.ragged and self.shape.index(-1) != 0 or self.shape.count(-1) > 1:
            return 1  # flattened: each item's bag is all of its values
        return max(1, math.prod(d for d in self.shape if d != -1))

    @property
    def is_string(self) -> bool:
        return self.dtype.kind == "O"

    @property
    def where(self) -> str:
        return f"{'node' if self.set_kind == 'nodes' else 'edge'} set '{self.set_name}' " \
               f"feature '{self.name}'"

    @property
    def key(self) -> tuple[str, str, str]:
        return self.set_kind, self.set_name, self.name


SetKey = tuple[str, str]  # ("nodes" | "edges", set name)


def model_sets(schema: gs.GraphSchema) -> list[SetKey]:
    """The node and edge sets whose features are model input: all but `_readout`'s."""
    nodes = [("nodes", n) for n in sorted(schema.node_sets) if n != READOUT_NODE_SET]
    edges = [("edges", n) for n in sorted(schema.edge_sets)
             if n != READOUT_NODE_SET and not n.startswith(READOUT_PREFIX)]
    return nodes + edges


def resolve(spec: Optional[FeatureSpec], schema: gs.GraphSchema, *,
            strict: bool = True) -> dict[SetKey, dict[str, ResolvedFeature]]:
    """Every feature of every model set with its kind: the spec's, else the default.
    FeatureError (one line) for a set or feature the schema lacks (`strict=False`: a
    set it lacks is passed over, as an output schema leaves out sets never reached) or
    a kind that does not fit the feature."""
    spec = spec or FeatureSpec()
    resolved: dict[SetKey, dict[str, ResolvedFeature]] = {}
    sets = model_sets(schema)
    for set_kind in SET_KINDS:
        for set_name in spec.sets(set_kind):
            if strict and (set_kind, set_name) not in sets:
                raise FeatureError(f"feature spec: {set_kind[:-1]} set '{set_name}' is not in "
                                   f"the graph schema (it has "
                                   f"{', '.join(n for k, n in sets if k == set_kind) or 'none'})")
    for set_kind, set_name in sets:
        features = (schema.node_sets if set_kind == "nodes" else schema.edge_sets)[set_name]
        named = spec.sets(set_kind).get(set_name, {})
        own = {n: f for n, f in features.features.items() if n != ID_FEATURE}
        for name in named:
            if name not in own:
                raise FeatureError(f"feature spec: {set_kind[:-1]} set '{set_name}' has no "
                                   f"feature '{name}' (it has {', '.join(sorted(own)) or 'none'})")
        timestamp = declared_timestamp(_Schema(schema), set_kind, set_name)
        resolved[(set_kind, set_name)] = {
            name: _resolved(set_kind, set_name, name, feature, named.get(name),
                            name == timestamp)
            for name, feature in sorted(own.items())}
    return resolved


@dataclasses.dataclass(frozen=True)
class _Schema:
    schema: gs.GraphSchema  # what unigraph.timestamps reads


def default_kind(feature: gs.Feature, is_timestamp: bool) -> Kind:
    dtype = NUMPY_DTYPES.get(feature.dtype)
    if dtype is None:
        return Ignore()
    if dtype.kind == "O":
        return Categorical()
    if is_timestamp and dtype.kind in "iuf" and -1 not in feature_shape(feature):
        return Timestamp()
    return Numeric()


def _resolved(set_kind: str, set_name: str, name: str, feature: gs.Feature,
              kind: Optional[Kind], is_timestamp: bool) -> ResolvedFeature:
    dtype = NUMPY_DTYPES.get(feature.dtype, np.dtype(object))
    resolved = ResolvedFeature(set_kind, set_name, name,
                               kind if kind is not None else default_kind(feature, is_timestamp),
                               dtype, feature_shape(feature))
    _check_fits(resolved, dtype_name(feature.dtype))
    return resolved


def _check_fits(feature: ResolvedFeature, dtype: str) -> None:
    kind, where = feature.kind, feature.where
    if isinstance(kind, Ignore):
        return
    if isinstance(kind, (Numeric, Timestamp)) and feature.dtype.kind not in "biuf":
        raise FeatureError(f"{where}: {type(kind).__name__.lower()}, but its dtype is {dtype}; "
                           f"give it categorical (or ignore)")
    if isinstance(kind, Timestamp) and feature.dtype.kind == "b":
        raise FeatureError(f"{where}: timestamp, but its dtype is {dtype}")
    if isinstance(kind, Categorical) and feature.dtype.kind not in "Oiub":
        raise FeatureError(f"{where}: categorical, but its dtype is {dtype}; categories are "
                           f"strings or integers (bucketize numbers with numeric boundaries)")
    if not feature.ragged and (kind.layout != "bag" or kind.max_length):
        raise FeatureError(f"{where}: layout {kind.layout!r} and max_length are for ragged "
                           f"(multi-valued) features; its shape is {list(feature.shape)}")
    if isinstance(kind, Numeric) and kind.mean is not None:
        columns = feature.columns
        if len(kind.mean) != columns:
            raise FeatureError(f"{where}: {len(kind.mean)} means for {columns} column(s)")
