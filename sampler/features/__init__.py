"""Every feature as model input: a feature spec declared once, applied to every batch
(docs/features.md). Numpy only: sampler.torch applies it to HeteroData, and a
TensorFlow user gets the same indices through the written vocabularies
(sampler.training.features).

    from sampler.features import Categorical, FeatureEncoder, FeatureSpec, Numeric

  FeatureSpec       per node set and edge set, how a feature becomes a tensor:
                    Numeric, Categorical, Timestamp or Ignore (defaults from the schema)
  read_feature_spec a feature_spec.pbtxt (proto/feature_spec.proto)
  FeatureEncoder    the spec fitted on a graph (vocabularies, statistics): fit, save,
                    load (a `sample` output's features/), encode
"""
from sampler.features.encode import Encoded
from sampler.features.encoder import FEATURES_FOLDER, FeatureEncoder
from sampler.features.spec import (Categorical, FeatureError, FeatureSpec, Ignore, Numeric,
                                   ResolvedFeature, Timestamp, resolve)
from sampler.features.spec_text import (SPEC_FILE, feature_spec_text, parse_feature_spec,
                                        read_feature_spec)
from sampler.features.vocabulary import FeatureVocabulary

__all__ = ["Categorical", "Encoded", "FEATURES_FOLDER", "FeatureEncoder", "FeatureError",
           "FeatureSpec", "FeatureVocabulary", "Ignore", "Numeric", "ResolvedFeature",
           "SPEC_FILE", "Timestamp", "feature_spec_text", "parse_feature_spec",
           "read_feature_spec", "resolve"]
