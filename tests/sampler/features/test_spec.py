"""The feature spec: defaults from the schema's dtypes and shapes, the text format both
ways, and one-line errors naming the set and feature for a spec that does not fit."""
import os

import pytest

from sampler.features import (Categorical, FeatureError, FeatureSpec, Ignore, Numeric,
                              Timestamp, feature_spec_text, parse_feature_spec,
                              read_feature_spec, resolve)
from sampler.features.spec_text import spec_for_graph
from tests.conftest import TESTDATA
from unigraph.schema import load_schema, parse_schema_text

MIXED = os.path.join(TESTDATA, "unigraph", "mixed")

TIMED = parse_schema_text("""
node_sets { key: "paper" value {
  features { key: "timestamp" value { dtype: DT_INT64 } }
  features { key: "flags" value { dtype: DT_BOOL shape { dim { size: 2 } } } }
  features { key: "grid" value { dtype: DT_FLOAT shape { dim { size: -1 } dim { size: 3 } } } }
  metadata { filename: "paper.csv" } } }
edge_sets { key: "cites" value { source: "paper" target: "paper"
  features { key: "when" value { dtype: DT_DOUBLE } }
  metadata { filename: "cites.csv" extra { key: "timestamp_column" value: "when" } } } }
""", "timed")


def kinds(resolved, set_kind, set_name):
    return {n: f.kind for n, f in resolved[(set_kind, set_name)].items()}


def test_defaults_from_dtypes_and_shapes():
    resolved = resolve(None, load_schema(MIXED).schema)
    assert kinds(resolved, "nodes", "item") == {
        "count": Numeric(), "score": Numeric(), "vec": Numeric(), "tags": Numeric(),
        "name": Categorical(), "words": Categorical()}
    assert resolved[("nodes", "item")]["tags"].ragged
    assert not resolved[("nodes", "item")]["vec"].ragged
    assert kinds(resolved, "edges", "link") == {"kind": Categorical(), "pos": Numeric()}
    assert kinds(resolved, "nodes", "tag") == {}
    # The timestamp column of a set (unigraph.timestamps' rule) is a Timestamp.
    timed = resolve(None, TIMED)
    assert kinds(timed, "nodes", "paper") == {"timestamp": Timestamp(), "flags": Numeric(),
                                              "grid": Numeric()}
    assert kinds(timed, "edges", "cites") == {"when": Timestamp()}
    assert timed[("nodes", "paper")]["grid"].columns == 3


def test_a_spec_overrides_the_defaults_it_names():
    spec = FeatureSpec({"item": {"name": Categorical(hash_buckets=64), "count": Ignore(),
                                 "words": Categorical(layout="padded", max_length=2)}},
                       {"link": {"pos": Numeric(boundaries=[0, 3])}})
    resolved = resolve(spec, load_schema(MIXED).schema)
    assert kinds(resolved, "nodes", "item")["name"] == Categorical(hash_buckets=64)
    assert kinds(resolved, "nodes", "item")["score"] == Numeric()
    assert kinds(resolved, "edges", "link")["pos"].boundaries == (0.0, 3.0)


SPEC_TEXT = """
node_sets { key: "item" value {
  features { key: "name"  value { categorical { vocabulary { min_count: 2 max_tokens: 10 } } } }
  features { key: "words" value { categorical { hashing { num_buckets: 128 salt: 5 } }
                                  multi_valued { layout: PADDED max_length: 4 } } }
  features { key: "score" value { numeric { standardize: true } } }
  features { key: "count" value { numeric { boundaries: [-1, 0.5, 3] } } }
  features { key: "vec"   value { ignore {} } }
} }
edge_sets { key: "link" value {
  features { key: "pos" value { timestamp { unit_seconds: 0.001 age: true boundaries: [60] } } }
} }
"""


def test_text_format_round_trip(tmp_path):
    path = tmp_path / "feature_spec.pbtxt"
    path.write_text(SPEC_TEXT)
    spec = read_feature_spec(str(path))
    assert spec.source == str(path)
    item = spec.node_sets["item"]
    assert item["name"] == Categorical(min_count=2, max_tokens=10)
    assert item["words"] == Categorical(hash_buckets=128, salt=5, layout="padded", max_length=4)
    assert item["score"] == Numeric(standardize=True)
    assert item["count"] == Numeric(boundaries=(-1, 0.5, 3))
    assert item["vec"] == Ignore()
    assert spec.edge_sets["link"]["pos"] == Timestamp(unit_seconds=0.001, age=True,
                                                      boundaries=(60,))
    again = parse_feature_spec(feature_spec_text(spec), "again")
    assert (again.node_sets, again.edge_sets) == (spec.node_sets, spec.edge_sets)
    resolve(spec, load_schema(MIXED).schema)  # fits the graph


@pytest.mark.parametrize("text, message", [
    ('node_sets { key: "item" value { features { key: "nope" value { ignore {} } } } }',
     "node set 'item' has no feature 'nope' (it has count, name, score, tags, vec, words)"),
    ('node_sets { key: "items" value { } }',
     "node set 'items' is not in the graph schema (it has item, tag)"),
    ('node_sets { key: "item" value { features { key: "name" value { numeric {} } } } }',
     "node set 'item' feature 'name': numeric, but its dtype is DT_STRING; give it "
     "categorical"),
    ('node_sets { key: "item" value { features { key: "score" value { categorical {} } } } }',
     "node set 'item' feature 'score': categorical, but its dtype is DT_FLOAT"),
    ('node_sets { key: "item" value { features { key: "name" value { categorical {} '
     'multi_valued { layout: PADDED } } } } }',
     "node set 'item' feature 'name': layout 'padded' and max_length are for ragged"),
    ('edge_sets { key: "link" value { features { key: "pos" value { numeric { standardize: '
     'true mean: [1, 2, 3] std: [1, 1, 1] } } } } }',
     "edge set 'link' feature 'pos': 3 means for 2 column(s)"),
])
def test_a_spec_that_does_not_fit_the_graph_is_one_line(text, message):
    spec = parse_feature_spec(text, "spec.pbtxt")
    with pytest.raises(FeatureError) as error:
        resolve(spec, load_schema(MIXED).schema)
    assert message in str(error.value) and "\n" not in str(error.value)


@pytest.mark.parametrize("text, message", [
    ('node_sets { key: "p" value { features { key: "v" value { } } } }',
     "spec.pbtxt: node set 'p' feature 'v': give numeric, categorical, timestamp or ignore"),
    ('node_sets { key: "p" value { features { key: "v" value { numeric { boundaries: [3, 1] '
     '} } } } }', "boundaries [3.0, 1.0] are not ascending"),
    ('node_sets { key: "p" value { features { key: "v" value { categorical { hashing {} } } '
     '} } }', "hashing needs num_buckets >= 1"),
    ('node_sets { key: "p" value { features { key: "v" value { categorcal {} } } } }',
     "spec.pbtxt: line 1 column 58: Message type \"Feature\" has no field named \"categorcal\""),
])
def test_a_bad_spec_file_is_one_line(text, message):
    with pytest.raises(FeatureError) as error:
        parse_feature_spec(text, "spec.pbtxt")
    assert message in str(error.value)


def test_python_kinds_check_their_arguments():
    with pytest.raises(FeatureError, match="standardize and boundaries"):
        Numeric(standardize=True, boundaries=[1])
    with pytest.raises(FeatureError, match="hash_buckets and vocabulary_file"):
        Categorical(hash_buckets=3, vocabulary_file="v.txt")
    with pytest.raises(FeatureError, match="layout 'ragged'"):
        Categorical(layout="ragged")
    with pytest.raises(FeatureError, match="unit_seconds"):
        Timestamp(unit_seconds=0)
    with pytest.raises(FeatureError, match="is not a kind"):
        FeatureSpec({"item": {"name": "categorical"}})


def test_the_spec_beside_the_schema_is_the_default(tmp_path):
    assert spec_for_graph("none", str(tmp_path)) == (None, False)
    spec, given = spec_for_graph(None, str(tmp_path))
    assert (spec, given) == (FeatureSpec(), False)
    (tmp_path / "feature_spec.pbtxt").write_text(SPEC_TEXT)
    spec, given = spec_for_graph(None, str(tmp_path))
    assert given and spec.node_sets["item"]["vec"] == Ignore()
    with pytest.raises(FeatureError, match="no such file"):
        spec_for_graph(str(tmp_path / "missing.pbtxt"), str(tmp_path))
