"""What a spec needs computed from the graph, computed once: vocabularies (value counts)
and the means and deviations of standardized numbers.

Over the whole graph's tables, never the sampled subgraphs, so the numbers do not
depend on the seeds, the spec's fan-outs or the run: from a loaded graph
(`GraphInMemory`: the memory engine's, sampler.api's, a mapped store's), whose node
tables and adjacencies hold every row of every set a job reaches, or from the tables
themselves through the project's readers, a batch at a time (the Beam engine's runs:
the launching process reads the sets that need it once, holding the distinct values
and not the rows). Counts are integers, so both give the same vocabulary byte for
byte. Means and deviations are float64 sums in batch order, stored rounded to float32
(the precision they are applied in); another batching may differ in the last bit.
"""
from __future__ import annotations

import dataclasses
from typing import Callable, Iterable, Mapping, Optional

import numpy as np

from sampler.features.spec import (Categorical, FeatureError, Numeric, ResolvedFeature,
                                   SetKey)
from sampler.features.values import flat_items
from sampler.features.vocabulary import (Counts, FeatureVocabulary, check_token_values,
                                         count_values, merge_counts)
from unigraph.schema import has_table
from unigraph.storage import paths
from unigraph.tables import read_set

# Columns of one set, batch by batch: feature name -> values (array or Ragged).
Columns = Callable[[str, str], Iterable[Mapping[str, object]]]
MERGE_EVERY = 16  # batches' counts held before they are merged into one


@dataclasses.dataclass
class _Moments:
    """Per column: count, mean and sum of squared deviations (Chan et al.'s merge)."""

    count: int = 0
    mean: Optional[np.ndarray] = None
    m2: Optional[np.ndarray] = None

    def add(self, columns: np.ndarray) -> None:
        n = len(columns)
        if not n:
            return
        columns = columns.astype(np.float64, copy=False)
        mean = columns.mean(axis=0)
        m2 = ((columns - mean) ** 2).sum(axis=0)
        if self.count == 0:
            self.count, self.mean, self.m2 = n, mean, m2
            return
        total = self.count + n
        delta = mean - self.mean
        self.m2 = self.m2 + m2 + delta ** 2 * self.count * n / total
        self.mean = self.mean + delta * n / total
        self.count = total

    def result(self, where: str) -> tuple[list[float], list[float]]:
        if not self.count:
            raise FeatureError(f"{where}: standardize, but the graph holds no value of it")
        std = np.sqrt(self.m2 / self.count)
        std[~(std > 0)] = 1.0  # a constant column: shifted, not scaled
        as_float32 = lambda values: [float(np.float32(v)) for v in values]  # noqa: E731
        return as_float32(self.mean), as_float32(std)


def needs_fitting(resolved: Mapping[SetKey, Mapping[str, ResolvedFeature]]) -> bool:
    """Whether any feature needs something computed from the graph or read from a file."""
    return any(_needs(f) for features in resolved.values() for f in features.values())


def _needs(feature: ResolvedFeature) -> bool:
    kind = feature.kind
    return (isinstance(kind, Categorical) and not kind.hashed) or not kind.fitted


def fit(resolved: Mapping[SetKey, Mapping[str, ResolvedFeature]], columns: Columns, *,
        base_folder: Optional[str] = None
        ) -> tuple[dict[SetKey, dict[str, ResolvedFeature]],
                   dict[tuple[str, str, str], FeatureVocabulary]]:
    """(the features with their fitted kinds, the vocabularies by (set kind, set,
    feature)). One pass over the columns of each set that needs one; a vocabulary_file
    is read instead (relative to `base_folder`, the spec's folder)."""
    fitted = {key: dict(features) for key, features in resolved.items()}
    vocabularies = {}
    for key, features in resolved.items():
        wanted = {n: f for n, f in features.items() if _needs(f)}
        files = {n: f for n, f in wanted.items() if isinstance(f.kind, Categorical)
                 and f.kind.vocabulary_file}
        for name, feature in files.items():
            vocabularies[feature.key] = read_vocabulary(feature, base_folder)
            fitted[key][name] = _with_size(feature, vocabularies[feature.key])
        counted = {n: f for n, f in wanted.items() if n not in files}
        if not counted:
            continue
        counts: dict[str, list[Counts]] = {n: [] for n, f in counted.items()
                                           if isinstance(f.kind, Categorical)}
        moments = {n: _Moments() for n, f in counted.items() if isinstance(f.kind, Numeric)}
        for batch in columns(*key):
            for name, feature in counted.items():
                if name not in batch:
                    continue
                if name in counts:
                    tokens = check_token_values(batch[name], not feature.is_string,
                                                feature.where)
                    counts[name].append(count_values(tokens))
                    if len(counts[name]) >= MERGE_EVERY:
                        counts[name] = [merge_counts(counts[name])]
                else:
                    moments[name].add(_columns(batch[name], feature))
        for name, parts in counts.items():
            feature = counted[name]
            vocabulary = FeatureVocabulary.from_counts(
                merge_counts(parts), feature.kind.min_count, feature.kind.max_tokens,
                feature.where)
            vocabularies[feature.key] = vocabulary
            fitted[key][name] = _with_size(feature, vocabulary)
        for name, moment in moments.items():
            feature = counted[name]
            mean, std = moment.result(feature.where)
            fitted[key][name] = dataclasses.replace(
                feature, kind=dataclasses.replace(feature.kind, mean=mean, std=std))
    return fitted, vocabularies


def _columns(values, feature: ResolvedFeature) -> np.ndarray:
    flat, _ = flat_items(values)
    if flat.dtype.kind not in "biuf":
        raise FeatureError(f"{feature.where}: numeric, but it holds a {flat.dtype} value")
    return flat.reshape(len(flat), feature.columns)


def _with_size(feature: ResolvedFeature, vocabulary: FeatureVocabulary) -> ResolvedFeature:
    kind = dataclasses.replace(feature.kind, vocabulary_size=vocabulary.size,
                               vocabulary_sha256=vocabulary.sha256())
    return dataclasses.replace(feature, kind=kind)


def read_vocabulary(feature: ResolvedFeature, base_folder: Optional[str]) -> FeatureVocabulary:
    """A vocabulary_file's tokens, checked against its recorded size and SHA-256 when
    the spec records them (a resolved spec does)."""
    kind: Categorical = feature.kind
    path = kind.vocabulary_file
    if base_folder and not paths.is_remote(path) and not path.startswith("/"):
        path = paths.join(base_folder, path)
    return read_vocabulary_file(feature, path)


def read_vocabulary_file(feature: ResolvedFeature, path: str) -> FeatureVocabulary:
    """The vocabulary in `path`, checked against what the feature's spec records."""
    where = f"{feature.where}: vocabulary {path}"
    try:
        with paths.open_binary(path) as f:
            data = f.read()
    except OSError as e:
        raise FeatureError(f"{where}: cannot read: {e.strerror or e}") from None
    vocabulary = FeatureVocabulary.parse(data, not feature.is_string, where)
    check_recorded(feature, vocabulary, where)
    return vocabulary


def check_recorded(feature: ResolvedFeature, vocabulary: FeatureVocabulary, where: str):
    kind: Categorical = feature.kind
    if kind.vocabulary_size is not None and kind.vocabulary_size != vocabulary.size:
        raise FeatureError(f"{where}: holds {vocabulary.size:,} tokens where its spec "
                           f"records {kind.vocabulary_size:,}: the file does not match")
    if kind.vocabulary_sha256 and kind.vocabulary_sha256 != vocabulary.sha256():
        raise FeatureError(f"{where}: its SHA-256 differs from the one its spec records: "
                           f"the file does not match (written by another run?)")


def graph_columns(node_tables: Mapping, adjacency: Mapping) -> Columns:
    """The columns of a loaded graph (sampler.memory.graph.GraphInMemory's node tables
    and adjacencies; or anything with `.features` per set), one batch per set."""
    def columns(set_kind: str, set_name: str):
        holder = (node_tables if set_kind == "nodes" else adjacency).get(set_name)
        if holder is not None:
            yield holder.features
    return columns


def table_columns(loaded) -> Columns:
    """The columns of a unigraph's tables (a LoadedSchema), read batch by batch."""
    def columns(set_kind: str, set_name: str):
        sets = loaded.schema.node_sets if set_kind == "nodes" else loaded.schema.edge_sets
        if set_name not in sets or not has_table(sets[set_name].metadata):
            return
        for batch in read_set(loaded, set_kind, set_name):
            yield batch.features
    return columns

