"""The feature spec's text format (proto/feature_spec.proto): a `feature_spec.pbtxt`
into a FeatureSpec and back.

The same text format as the graph schema and the sampling spec, so one parser (with
line and column in its errors) serves all three, and a resolved spec written by
`sample` reads back as a spec (its vocabulary files beside it).
"""
from __future__ import annotations

from google.protobuf import text_format

from sampler.features import feature_spec_pb2 as fs
from sampler.features.spec import (Categorical, FeatureError, FeatureSpec, Ignore, Kind,
                                   Numeric, Timestamp)
from unigraph.errors import SamplerError, one_line, text_format_message
from unigraph.storage import paths

SPEC_FILE = "feature_spec.pbtxt"  # beside the graph schema; in an output's features/
NO_SPEC = "none"  # `sample --features none`: no features/ written
_LAYOUTS = {fs.MultiValued.BAG: "bag", fs.MultiValued.PADDED: "padded"}


def parse_feature_spec(text: str, source: str) -> FeatureSpec:
    """A FeatureSpec from text format; FeatureError naming `source`, the line and the
    column, or the set and feature, when it does not parse or a kind is invalid."""
    message = fs.FeatureSpec()
    try:
        text_format.Parse(text, message)
    except text_format.ParseError as e:
        raise FeatureError(f"feature spec {text_format_message(e, source)}") from None
    sets = {}
    for set_kind, by_name in (("node", message.node_sets), ("edge", message.edge_sets)):
        sets[set_kind] = {}
        for set_name, features in by_name.items():
            sets[set_kind][set_name] = {}
            for name, feature in features.features.items():
                try:
                    sets[set_kind][set_name][name] = _kind(feature)
                except SamplerError as e:
                    raise FeatureError(f"feature spec {source}: {set_kind} set '{set_name}' "
                                       f"feature '{name}': {e}") from None
    return FeatureSpec(sets["node"], sets["edge"], source=source)


def read_feature_spec(path: str) -> FeatureSpec:
    """A `feature_spec.pbtxt` (local or gs://)."""
    if not paths.exists(path):
        raise FeatureError(f"feature spec {path}: no such file")
    try:
        text = paths.read_text(path)
    except (OSError, UnicodeDecodeError) as e:
        raise FeatureError(f"feature spec {path}: cannot read: {one_line(e)}") from None
    return parse_feature_spec(text, path)


def spec_for_graph(option: str | None, schema_folder: str) -> tuple[FeatureSpec | None, bool]:
    """(the feature spec a `sample` run uses, whether the user gave one): `--features
    FILE`, `--features none` (None), or by default the graph's own feature_spec.pbtxt
    beside its schema when there is one, else every feature's default."""
    if option == NO_SPEC:
        return None, False
    if option:
        return read_feature_spec(option), True
    beside = paths.join(schema_folder, SPEC_FILE)
    if paths.exists(beside):
        return read_feature_spec(beside), True
    return FeatureSpec(), False


def feature_spec_text(spec: FeatureSpec, comment: str = "") -> str:
    """The spec in text format (map keys in sorted order, so the same spec is the same
    text)."""
    message = fs.FeatureSpec()
    for set_kind, target in (("nodes", message.node_sets), ("edges", message.edge_sets)):
        for set_name, features in spec.sets(set_kind).items():
            into = target[set_name]
            for name, kind in features.items():
                _fill(into.features[name], kind)
    header = "".join(f"# {line}\n" for line in comment.splitlines())
    return header + text_format.MessageToString(message)


def _kind(feature: fs.Feature) -> Kind:
    which = feature.WhichOneof("kind")
    if feature.HasField("multi_valued"):
        layout = dict(layout=_LAYOUTS[feature.multi_valued.layout],
                      max_length=feature.multi_valued.max_length)
    else:
        layout = {}
    if which is None:
        raise FeatureError("give numeric, categorical, timestamp or ignore")
    if which == "numeric":
        n = feature.numeric
        return Numeric(standardize=n.standardize, mean=list(n.mean) or None,
                       std=list(n.std) or None, boundaries=list(n.boundaries) or None, **layout)
    if which == "timestamp":
        t = feature.timestamp
        return Timestamp(unit_seconds=t.unit_seconds, age=t.age,
                         boundaries=list(t.boundaries) or None, **layout)
    if which == "ignore":
        return Ignore(**layout)
    c = feature.categorical
    if c.WhichOneof("index") == "hashing":
        if c.hashing.num_buckets < 1:
            raise FeatureError("hashing needs num_buckets >= 1")
        return Categorical(hash_buckets=c.hashing.num_buckets, salt=c.hashing.salt, **layout)
    v = c.vocabulary
    return Categorical(min_count=v.min_count, max_tokens=v.max_tokens,
                       vocabulary_file=v.file or None,
                       vocabulary_size=v.size if v.HasField("size") else None,
                       vocabulary_sha256=v.sha256 or None, **layout)


def _fill(feature: fs.Feature, kind: Kind) -> None:
    """The kind into `feature`, fields at their default left unset (shorter text)."""
    if isinstance(kind, Numeric):
        numeric = feature.numeric
        numeric.SetInParent()
        if kind.standardize:
            numeric.standardize = True
        numeric.mean.extend(kind.mean or ())
        numeric.std.extend(kind.std or ())
        numeric.boundaries.extend(kind.boundaries or ())
    elif isinstance(kind, Timestamp):
        timestamp = feature.timestamp
        timestamp.SetInParent()
        if kind.unit_seconds != 1.0:
            timestamp.unit_seconds = kind.unit_seconds
        if kind.age:
            timestamp.age = True
        timestamp.boundaries.extend(kind.boundaries or ())
    elif isinstance(kind, Ignore):
        feature.ignore.SetInParent()
    elif kind.hashed:
        feature.categorical.hashing.num_buckets = kind.hash_buckets
        if kind.salt:
            feature.categorical.hashing.salt = kind.salt
    else:
        vocabulary = feature.categorical.vocabulary
        vocabulary.SetInParent()
        if kind.min_count != 1:
            vocabulary.min_count = kind.min_count
        if kind.max_tokens:
            vocabulary.max_tokens = kind.max_tokens
        if kind.vocabulary_file:
            vocabulary.file = kind.vocabulary_file
        if kind.vocabulary_size is not None:
            vocabulary.size = kind.vocabulary_size
        if kind.vocabulary_sha256:
            vocabulary.sha256 = kind.vocabulary_sha256
    if kind.layout != "bag" or kind.max_length:
        feature.multi_valued.layout = {v: k for k, v in _LAYOUTS.items()}[kind.layout]
        feature.multi_valued.max_length = kind.max_length
