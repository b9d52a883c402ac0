"""Link-prediction specs (`symmetric_link_seed_op`) and schemas, as TF-GNN writes them."""
import os

import pytest
from google.protobuf import text_format

from sampler.plan.plan import build_plan
from sampler.plan.spec import load_spec, parse_spec_text
from tests.conftest import TESTDATA
from unigraph.errors import SchemaError, SpecError
from unigraph.schema import check_schema, load_schema, parse_schema_text, LoadedSchema

LINK = os.path.join(TESTDATA, "link")


def test_tfgnn_link_spec_and_schema_plan():
    loaded = load_schema(LINK)
    check_schema(loaded)
    plan = build_plan(load_spec(os.path.join(LINK, "sampling_spec.pbtxt")), loaded, source="s")
    assert plan.link and plan.seed_op == "seed" and plan.seed_set == "user"
    assert [(o.name, o.input_ops, o.edge_set) for o in plan.ops] == [
        ("out", ("seed",), "follows"), ("in", ("seed",), "followed_by"),
        ("out2", ("out", "in"), "follows")]
    assert plan.node_sets() == ["user"]  # never the auxiliary _readout set


def test_link_files_parse_to_the_same_bytes_as_tfgnn():
    pytest.importorskip("tensorflow_gnn")
    from tensorflow_gnn.proto import graph_schema_pb2 as tfgnn_schema
    from tensorflow_gnn.sampler import sampling_spec_pb2 as tfgnn_spec

    from sampler.plan import sampling_spec_pb2
    from unigraph.protos import graph_schema_pb2
    for name, ours, theirs in (
            ("graph_schema.pbtxt", graph_schema_pb2.GraphSchema(), tfgnn_schema.GraphSchema()),
            ("sampling_spec.pbtxt", sampling_spec_pb2.SamplingSpec(),
             tfgnn_spec.SamplingSpec())):
        with open(os.path.join(LINK, name)) as f:
            text = f.read()
        text_format.Parse(text, ours)
        text_format.Parse(text, theirs)
        assert ours.SerializeToString(deterministic=True) == theirs.SerializeToString(
            deterministic=True)


def _schema(text: str) -> LoadedSchema:
    return LoadedSchema(parse_schema_text(text, "g.pbtxt"), "g.pbtxt", LINK)


USER = 'node_sets { key: "user" value { metadata { filename: "users.csv" } } }\n' \
       'edge_sets { key: "follows" value { source: "user" target: "user" ' \
       'metadata { filename: "follows.csv" } } }\n'
READOUT = 'node_sets { key: "_readout" value { features { key: "label" value { dtype: DT_INT64 } } } }\n'


def _aux(name, source="user", target="_readout"):
    return f'edge_sets {{ key: "{name}" value {{ source: "{source}" target: "{target}" }} }}\n'


@pytest.mark.parametrize("text, message", [
    (USER + READOUT + _aux("_readout/source"),
     "declares node set '_readout' and edge sets '_readout/source' and '_readout/target'"),
    (USER + _aux("_readout/source") + _aux("_readout/target"), "found '_readout/source'"),
    (USER + READOUT + _aux("_readout/source") + _aux("_readout/target", target="user"),
     "edge set '_readout/target' must go from the paired node set to '_readout'"),
    (USER + READOUT + _aux("_readout/source") + _aux("_readout/target")
     + _aux("_readout/seed"), "edge set '_readout/seed' uses the prefix '_readout'"),
    (USER.replace("user", "_readout/x", 1), "node set '_readout/x' uses the prefix"),
])
def test_bad_link_schema_is_one_line(text, message):
    with pytest.raises(SchemaError) as info:
        check_schema(_schema(text), check_files=False)
    assert message in str(info.value) and "\n" not in str(info.value)


def test_link_schema_with_two_node_sets_names_the_paired_one():
    loaded = _schema(USER + 'node_sets { key: "item" value {} }\n' + READOUT
                     + _aux("_readout/source") + _aux("_readout/target"))
    check_schema(loaded, check_files=False)
    spec = parse_spec_text('symmetric_link_seed_op { op_name: "s" } sampling_ops { op_name: "h" '
                           'input_op_names: "s" edge_set_name: "follows" sample_size: 2 '
                           'strategy: RANDOM_UNIFORM }', "spec")
    assert build_plan(spec, loaded, source="spec").seed_set == "user"


@pytest.mark.parametrize("spec, message", [
    ('symmetric_link_seed_op { }', "symmetric_link_seed_op has no op_name"),
    ('symmetric_link_seed_op { op_name: "s" } sampling_ops { op_name: "h" input_op_names: "s" '
     'edge_set_name: "_readout/source" sample_size: 1 strategy: RANDOM_UNIFORM }',
     "edge set '_readout/source' does not exist"),
    ('seed_op { op_name: "s" node_set_name: "_readout" }', "node set '_readout' does not exist"),
])
def test_bad_link_spec_is_one_line(spec, message):
    loaded = load_schema(LINK)
    with pytest.raises(SpecError) as info:
        build_plan(parse_spec_text(spec, "spec"), loaded, source="spec")
    assert message in str(info.value) and "\n" not in str(info.value)


def test_link_spec_needs_a_link_schema():
    loaded = _schema(USER)
    spec = parse_spec_text('symmetric_link_seed_op { op_name: "s" }', "spec")
    with pytest.raises(SpecError, match="needs a graph schema with node set '_readout'"):
        build_plan(spec, loaded, source="spec")


def test_both_seed_ops_are_refused_as_one_oneof():
    with pytest.raises(SpecError, match='another member of oneof "seed_type"'):
        parse_spec_text('seed_op { op_name: "a" node_set_name: "user" } '
                        'symmetric_link_seed_op { op_name: "b" }', "spec")
