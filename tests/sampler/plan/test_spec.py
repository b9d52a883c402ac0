"""Every SamplingSpec check, each triggered by a bad spec; the message is asserted."""
import os

import pytest

from sampler.plan import sampling_spec_pb2 as ss
from sampler.plan.plan import build_plan
from sampler.plan.spec import load_spec, parse_spec_text
from tests.conftest import TESTDATA
from unigraph.errors import SpecError
from unigraph.schema import load_schema

MAG = os.path.join(TESTDATA, "mag")
CREDITCARD = os.path.join(TESTDATA, "creditcard")


def plan_of(text, folder=MAG, has_weight=lambda name: False, has_timestamp=lambda name: False):
    return build_plan(parse_spec_text(text, "spec.pbtxt"), load_schema(folder),
                      source="spec.pbtxt", has_weight=has_weight, has_timestamp=has_timestamp)


SEED = 'seed_op { op_name: "seed" node_set_name: "paper" } '


def op(name, inputs, edge_set, size=4, strategy="RANDOM_UNIFORM"):
    names = " ".join(f'input_op_names: "{i}"' for i in inputs)
    return (f'sampling_ops {{ op_name: "{name}" {names} edge_set_name: "{edge_set}" '
            f'sample_size: {size} strategy: {strategy} }} ')


def test_tfgnn_mag_spec_plans_in_order():
    plan = build_plan(load_spec(os.path.join(MAG, "sampling_spec.pbtxt")), load_schema(MAG),
                      source="mag")
    assert plan.seed_set == "paper"
    assert [(o.name, o.source_set, o.edge_set, o.target_set) for o in plan.ops] == [
        ("seed->paper", "paper", "cites", "paper"),
        ("paper->author", "paper", "written", "author"),
        ("author->paper", "author", "writes", "paper"),
        ("author->institution", "author", "affiliated_with", "institution"),
        ("paper->field_of_study", "paper", "has_topic", "field_of_study"),
    ]
    assert plan.node_sets() == ["paper", "author", "institution", "field_of_study"]
    assert plan.ops[2].input_ops == ("paper->author",)


def test_tfgnn_creditcard_spec_plans():
    plan = build_plan(load_spec(os.path.join(CREDITCARD, "sampling_spec.pbtxt")),
                      load_schema(CREDITCARD), source="cc")
    assert [(o.name, o.strategy_name, o.sample_size) for o in plan.ops] == [
        ("seed->creditcard", "RANDOM_UNIFORM", 3)]


@pytest.mark.parametrize("text, message", [
    (op("h", ["seed"], "cites"), "no seed_op"),
    ('seed_op { node_set_name: "paper" }', "seed_op has no op_name"),
    ('seed_op { op_name: "seed" node_set_name: "papers" }',
     "seed op 'seed': node set 'papers' does not exist (node sets: author, field_of_study, "
     "institution, paper)"),
    (SEED + op("h", ["seed"], "cites") + op("h", ["seed"], "cites"), "op 'h': op name is used twice"),
    (SEED + op("seed", ["seed"], "cites"), "op 'seed': op name is used twice"),
    (SEED + op("h", [], "cites"), "op 'h': no input_op_names"),
    (SEED + op("h", ["later"], "cites") + op("later", ["seed"], "cites"),
     "op 'h': input op 'later' is defined after its use"),
    (SEED + op("h", ["ghost"], "cites"), "op 'h': input op 'ghost' is not defined before its use"),
    (SEED + op("h", ["seed"], "citez"), "op 'h': edge set 'citez' does not exist (edge sets: "
                                        "affiliated_with, cites, has_topic, writes, written)"),
    (SEED + op("h", ["seed"], "writes"),
     "op 'h': edge set 'writes' starts at node set 'author', but its input op 'seed' yields "
     "'paper'"),
    (SEED + op("h", ["seed"], "cites", size=0), "op 'h': sample_size must be > 0, found 0"),
    (SEED + op("h", ["seed"], "cites", size=-2), "op 'h': sample_size must be > 0, found -2"),
    (SEED + op("h", ["seed"], "cites", strategy="TOP_K"),
     "op 'h': strategy TOP_K needs edge weights, but edge set 'cites' has no '#weight' or "
     "'weight' column"),
    (SEED + op("h", ["seed"], "cites", strategy="RANDOM_WEIGHTED"),
     "op 'h': strategy RANDOM_WEIGHTED needs edge weights"),
    (SEED + op("h", ["seed"], "cites", strategy="LATEST_K"),
     "op 'h': strategy LATEST_K needs edge timestamps, but edge set 'cites' has no "
     "'#timestamp' or 'timestamp' column (name another with --timestamp-column or the edge "
     "set's metadata extra 'timestamp_column')"),
    (SEED + op("h", ["seed"], "cites", strategy="3"),
     "op 'h': strategy LATEST_K needs edge timestamps"),
    (SEED + op("h", ["seed", "seed"], "cites"), "op 'h': input_op_names repeats an op"),
    (SEED + 'sampling_ops { input_op_names: "seed" edge_set_name: "cites" sample_size: 1 }',
     "sampling_ops[0]: no op_name"),
    (SEED + op("h", ["seed"], "cites", strategy="7"),
     'Enum type "SamplingStrategy" has no value with number 7'),
    ('seed_op { op_name: "seed" node_set_name: "paper" ', "line 1 column"),
])
def test_bad_spec_is_reported(text, message):
    with pytest.raises(SpecError) as info:
        plan_of(text)
    assert message in str(info.value)
    assert str(info.value).startswith("sampling spec spec.pbtxt")
    assert "\n" not in str(info.value)


def test_weighted_strategies_pass_with_weights():
    plan = plan_of(SEED + op("h", ["seed"], "cites", strategy="TOP_K"),
                   has_weight=lambda name: name == "cites")
    assert plan.ops[0].strategy == ss.TOP_K


def test_latest_k_passes_with_timestamps():
    plan = plan_of(SEED + op("h", ["seed"], "cites", strategy="LATEST_K"),
                   has_timestamp=lambda name: name == "cites")
    assert plan.ops[0].strategy == ss.LATEST_K == 3
    assert plan.latest_k_edge_sets() == ["cites"]


def test_timestamp_column_is_found_in_the_table_or_renamed(tmp_path):
    from unigraph.timestamps import override_timestamp_column

    folder = tmp_path / "g"
    folder.mkdir()
    (folder / "graph_schema.pbtxt").write_text(
        'node_sets { key: "p" value { } } edge_sets { key: "c" value { source: "p" '
        'target: "p" metadata { filename: "c.csv" } } }')
    (folder / "c.csv").write_text("source,target,year\na,b,2001\n")
    spec = parse_spec_text('seed_op { op_name: "s" node_set_name: "p" } '
                           'sampling_ops { op_name: "h" input_op_names: "s" '
                           'edge_set_name: "c" sample_size: 2 strategy: LATEST_K }', "s")
    loaded = load_schema(str(folder))
    with pytest.raises(SpecError, match="no '#timestamp' or 'timestamp' column"):
        build_plan(spec, loaded, source="s")
    override_timestamp_column(loaded, "year")
    assert build_plan(spec, loaded, source="s").ops[0].strategy == ss.LATEST_K
    override_timestamp_column(loaded, "month")
    with pytest.raises(SpecError, match="edge set 'c' has no 'month' column"):
        build_plan(spec, loaded, source="s")


def test_weight_column_is_found_in_the_table(tmp_path):
    folder = os.path.join(os.path.dirname(TESTDATA), "..", "examples", "mag_tiny")
    loaded = load_schema(folder)
    spec = parse_spec_text(SEED + op("h", ["seed"], "cites", strategy="TOP_K"), "s")
    assert build_plan(spec, loaded, source="s").ops[0].strategy == ss.TOP_K


def test_missing_spec_file(tmp_path):
    with pytest.raises(SpecError, match=r"sampling spec .*missing.pbtxt: no such file"):
        load_spec(str(tmp_path / "missing.pbtxt"))
