"""`FeatureEncoder`: a resolved feature spec with what it needs from the graph (its
vocabularies, means and deviations), fitted once, written beside a `sample` output and
read by every process that makes tensors.

    features/feature_spec.pbtxt                 every feature of every set spelled out,
                                                fitted values and file checksums filled in
    features/vocabulary/<nodes|edges>/<set>/<feature>.txt   one token per line

Set and feature names are percent-encoded in file names, so no name leaves the folder;
a written spec that names any other file for a vocabulary is refused, and every file
is checked against the size and SHA-256 the spec records before it is used (one line
naming the feature when it does not match). The folder is data, never instructions.
"""
from __future__ import annotations

import dataclasses
from typing import Mapping, Optional
from urllib.parse import quote

import numpy as np

from sampler.features.encode import Encoded, encode_feature
from sampler.features.fit import fit, graph_columns, read_vocabulary_file, table_columns
from sampler.features.hashing import Hasher
from sampler.features.spec import (Categorical, FeatureError, FeatureSpec, Ignore, Numeric,
                                   ResolvedFeature, SetKey, Timestamp, resolve)
from sampler.features.spec_text import SPEC_FILE, feature_spec_text, read_feature_spec
from sampler.features.vocabulary import FeatureVocabulary
from sampler.output.files import SCHEMA_FILE, write_bytes, write_text
from unigraph.errors import SamplerError
from unigraph.protos import graph_schema_pb2 as gs
from unigraph.schema import parse_schema_text
from unigraph.storage import paths

FEATURES_FOLDER = "features"   # in a `sample` output folder
VOCABULARY_FOLDER = "vocabulary"
_HEADER = ("Written by the graph sampler (docs/features.md): how each feature of these "
           "samples\nbecomes model input. Read it with sampler.features.FeatureEncoder.load; "
           "it also\nreads back as a feature spec (sample --features), vocabularies beside it.")


def vocabulary_name(set_kind: str, set_name: str, feature: str) -> str:
    """A vocabulary's file, relative to the features folder."""
    return "/".join((VOCABULARY_FOLDER, set_kind, _segment(set_name), _segment(feature)
                     + ".txt"))


def _segment(name: str) -> str:
    """A name as one safe path segment: percent-encoded, never '.' or '..'."""
    encoded = quote(name, safe="")
    return "%2E" + encoded[1:] if encoded.startswith(".") else encoded


class FeatureEncoder:
    """Turns the features of a subgraph's (or batch's) node and edge sets into model
    input (`encode`), by a resolved spec (docs/features.md). Make one with `fit` (from a
    `sampler.api.Graph`), `from_tables`, `from_schema` (a spec that needs nothing from
    the graph) or `load` (a `sample` output folder); `save` writes it."""

    def __init__(self, features: Mapping[SetKey, Mapping[str, ResolvedFeature]],
                 vocabularies: Mapping[tuple[str, str, str], FeatureVocabulary]):
        self._features = {key: dict(value) for key, value in features.items()}
        self._vocabularies = dict(vocabularies)
        # Hashed features' buckets, remembered from batch to batch (hashing.Hasher).
        self._hashers = {f.key: Hasher(f.kind.hash_buckets, f.kind.salt)
                         for value in self._features.values() for f in value.values()
                         if isinstance(f.kind, Categorical) and f.kind.hashed}
        for key, value in self._features.items():
            for feature in value.values():
                if _vocabulary_based(feature) and feature.key not in self._vocabularies:
                    raise FeatureError(f"{feature.where}: no vocabulary given")

    # --- making one --------------------------------------------------------------

    @classmethod
    def fit(cls, graph, spec: Optional[FeatureSpec] = None) -> "FeatureEncoder":
        """From a loaded graph (`sampler.api.load_graph`): the spec (default: every
        feature's default) checked against its schema, vocabularies and statistics
        from its tables (every row of every set the graph's spec reaches)."""
        resolve(spec, graph.schema)  # named sets and features must exist in the graph
        resolved = resolve(spec, graph.output_schema, strict=False)
        fitted, vocabularies = fit(resolved, graph.feature_columns, base_folder=_base(spec))
        return cls(fitted, vocabularies)

    @classmethod
    def fit_loaded(cls, resolved: Mapping[SetKey, Mapping[str, ResolvedFeature]],
                   node_tables: Mapping, adjacency: Mapping,
                   spec: Optional[FeatureSpec] = None) -> "FeatureEncoder":
        """From the memory engine's loaded graph (its node tables and adjacencies)."""
        return cls(*fit(resolved, graph_columns(node_tables, adjacency), base_folder=_base(spec)))

    @classmethod
    def from_tables(cls, loaded, resolved: Mapping[SetKey, Mapping[str, ResolvedFeature]],
                    spec: Optional[FeatureSpec] = None) -> "FeatureEncoder":
        """From a unigraph's tables (a LoadedSchema), read through the project's readers."""
        return cls(*fit(resolved, table_columns(loaded), base_folder=_base(spec)))

    @classmethod
    def from_schema(cls, schema: gs.GraphSchema,
                    spec: Optional[FeatureSpec] = None) -> "FeatureEncoder":
        """For a spec that needs nothing from the graph (numbers as they are, hashing,
        timestamps, vocabulary files); FeatureError naming a feature that does."""
        resolved = resolve(spec, schema, strict=False)
        for features in resolved.values():
            for f in features.values():
                if (_vocabulary_based(f) and not f.kind.vocabulary_file) or not f.kind.fitted:
                    raise FeatureError(f"{f.where}: needs values from the graph (a vocabulary "
                                       f"or statistics); use FeatureEncoder.fit(graph) or a "
                                       f"`sample` output's features")
        return cls(*fit(resolved, lambda *key: (), base_folder=_base(spec)))

    @classmethod
    def load(cls, folder: str, schema: Optional[gs.GraphSchema] = None
             ) -> Optional["FeatureEncoder"]:
        """The encoder a `sample` output folder holds (its features/ folder, checked),
        or None when it has none. `folder` may also be a features folder itself, given
        with the samples' `schema`."""
        if paths.exists(paths.join(paths.join(folder, FEATURES_FOLDER), SPEC_FILE)):
            features_folder, samples = paths.join(folder, FEATURES_FOLDER), folder
        elif paths.exists(paths.join(folder, SPEC_FILE)):
            features_folder, samples = folder, paths.dirname(paths.join(folder, SPEC_FILE))
            samples = paths.dirname(samples)  # a features folder inside an output
        else:
            return None
        if schema is None:
            schema = _read_schema(paths.join(samples, SCHEMA_FILE))
        spec_path = paths.join(features_folder, SPEC_FILE)
        spec = read_feature_spec(spec_path)
        try:
            resolved = resolve(spec, schema)
        except FeatureError as e:  # the folder's spec and schema disagree: name the file
            raise FeatureError(f"{spec_path}: {str(e).removeprefix('feature spec: ')} "
                               f"(of the samples' schema)") from None
        vocabularies = {}
        for features in resolved.values():
            for feature in features.values():
                if _vocabulary_based(feature):
                    vocabularies[feature.key] = _read_own(features_folder, feature)
        return cls(resolved, vocabularies)

    @classmethod
    def for_samples(cls, folder: str, schema: Optional[gs.GraphSchema] = None
                    ) -> tuple["FeatureEncoder", list[str]]:
        """(the encoder a `sample` output folder's records get, the features it leaves
        out): the folder's own (`load`), or without one every feature's default, but
        those that need the graph (vocabularies) left out: a folder `sample --features
        none` wrote, or a version before feature specs, has nothing to give them."""
        loaded = cls.load(folder, schema)
        if loaded is not None:
            return loaded, []
        if schema is None:
            schema = _read_schema(paths.join(folder, SCHEMA_FILE))
        resolved = resolve(None, schema, strict=False)
        left_out = []
        for features in resolved.values():
            for name, feature in list(features.items()):
                if _vocabulary_based(feature) or not feature.kind.fitted:
                    features[name] = dataclasses.replace(feature, kind=Ignore())
                    left_out.append(feature.where)
        return cls(resolved, {}), left_out

    def save(self, folder: str) -> list[str]:
        """Writes the vocabularies, then the spec, into `folder` (each file atomically);
        the names written, relative to `folder`."""
        written = []
        features = {}
        for key, value in self._features.items():
            features[key] = {}
            for name, feature in value.items():
                if _vocabulary_based(feature):
                    vocabulary = self._vocabularies[feature.key]
                    relative = vocabulary_name(*feature.key)
                    write_bytes(paths.join(folder, relative), vocabulary.file_bytes())
                    written.append(relative)
                    feature = dataclasses.replace(feature, kind=dataclasses.replace(
                        feature.kind, vocabulary_file=relative, vocabulary_size=vocabulary.size,
                        vocabulary_sha256=vocabulary.sha256()))
                features[key][name] = feature
        write_text(paths.join(folder, SPEC_FILE),
                   feature_spec_text(_spec_of(features), comment=_HEADER))
        return written + [SPEC_FILE]

    # --- what it holds -------------------------------------------------------------

    @property
    def spec(self) -> FeatureSpec:
        """The resolved spec: every feature of every set with its kind."""
        return _spec_of(self._features)

    def features(self, set_name: str, set_kind: str = "nodes") -> dict[str, ResolvedFeature]:
        """The resolved features of one set (empty for a set it does not know)."""
        return dict(self._features.get((set_kind, set_name), {}))

    @property
    def vocabularies(self) -> dict[tuple[str, str, str], FeatureVocabulary]:
        """Every vocabulary by (set kind, set name, feature)."""
        return dict(self._vocabularies)

    def vocabulary(self, set_name: str, feature: str,
                   set_kind: str = "nodes") -> FeatureVocabulary:
        key = (set_kind, set_name, feature)
        if key not in self._vocabularies:
            raise FeatureError(f"{set_kind[:-1]} set '{set_name}' feature '{feature}' has no "
                               f"vocabulary")
        return self._vocabularies[key]

    def num_embeddings(self, set_name: str, feature: str, set_kind: str = "nodes") -> int:
        """The rows an embedding table of a categorical or bucketized feature needs:
        the vocabulary's tokens + 1, the hash buckets, or the boundaries + 1."""
        resolved = self.features(set_name, set_kind).get(feature)
        if resolved is None:
            raise FeatureError(f"{set_kind[:-1]} set '{set_name}' has no feature '{feature}'")
        kind = resolved.kind
        if isinstance(kind, Categorical):
            return kind.hash_buckets if kind.hashed else \
                self.vocabulary(set_name, feature, set_kind).size + 1
        if isinstance(kind, (Numeric, Timestamp)) and kind.boundaries is not None:
            return len(kind.boundaries) + 1
        raise FeatureError(f"{resolved.where}: {type(kind).__name__.lower()} values are not "
                           f"indices")

    # --- applying it -----------------------------------------------------------------

    def encode(self, set_kind: str, set_name: str, features: Mapping[str, object], *,
               cutoffs: Optional[np.ndarray] = None) -> dict[str, Encoded]:
        """The model input of one set's features (each an array over the set's items, or
        a Ragged), by name in sorted order; Ignore'd ones left out. `cutoffs`: each
        item's sample cut-off (Timestamp(age=True)). Features the spec does not know
        are an error (an encoder of another schema); ones it knows and the set lacks
        are passed over."""
        known = self._features.get((set_kind, set_name))
        if known is None:
            if not features:
                return {}
            raise FeatureError(f"{set_kind[:-1]} set '{set_name}' is not in the feature spec "
                               f"(it covers {', '.join(n for _, n in sorted(self._features))})")
        out = {}
        for name in sorted(features):
            feature = known.get(name)
            if feature is None:
                raise FeatureError(f"{set_kind[:-1]} set '{set_name}' feature '{name}' is not "
                                   f"in the feature spec (made for another schema?)")
            encoded = encode_feature(feature, features[name],
                                     vocabulary=self._vocabularies.get(feature.key),
                                     cutoffs=cutoffs, hasher=self._hashers.get(feature.key))
            if encoded is not None:
                out[name] = encoded
        return out

    def needs_cutoffs(self, set_kind: str, set_name: str) -> bool:
        return any(isinstance(f.kind, Timestamp) and f.kind.age
                   for f in self._features.get((set_kind, set_name), {}).values())

    def __repr__(self) -> str:
        counts = {}
        for features in self._features.values():
            for feature in features.values():
                counts[type(feature.kind).__name__] = counts.get(type(feature.kind).__name__,
                                                                 0) + 1
        shown = ", ".join(f"{n} {k.lower()}" for k, n in sorted(counts.items()))
        return f"FeatureEncoder({len(self._features)} sets: {shown or 'no features'})"


def _vocabulary_based(feature: ResolvedFeature) -> bool:
    return isinstance(feature.kind, Categorical) and not feature.kind.hashed


def _base(spec: Optional[FeatureSpec]) -> Optional[str]:
    return paths.dirname(spec.source) if spec is not None and spec.source else None


def _spec_of(features: Mapping[SetKey, Mapping[str, ResolvedFeature]]) -> FeatureSpec:
    sets = {"nodes": {}, "edges": {}}
    for (set_kind, set_name), value in features.items():
        sets[set_kind][set_name] = {name: f.kind for name, f in value.items()}
    return FeatureSpec(sets["nodes"], sets["edges"])


def _read_schema(path: str) -> gs.GraphSchema:
    try:
        return parse_schema_text(paths.read_text(path), path)
    except (OSError, UnicodeDecodeError) as e:
        raise SamplerError(f"{path}: cannot read the samples' schema: {e}") from None


def _read_own(features_folder: str, feature: ResolvedFeature) -> FeatureVocabulary:
    """A written vocabulary: only the folder's own file for the feature, checked."""
    expected = vocabulary_name(*feature.key)
    kind: Categorical = feature.kind
    if kind.vocabulary_file != expected:
        raise FeatureError(f"{features_folder}/{SPEC_FILE}: {feature.where} names the "
                           f"vocabulary {kind.vocabulary_file!r}, not its own {expected!r}")
    if kind.vocabulary_size is None or not kind.vocabulary_sha256:
        raise FeatureError(f"{features_folder}/{SPEC_FILE}: {feature.where}: the written "
                           f"vocabulary records no size and SHA-256")
    return read_vocabulary_file(feature, paths.join(features_folder, expected))

