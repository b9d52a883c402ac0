"""plan.timing for link plans: a pairs table's `timestamp` column gives cut-offs, the
time type follows a `_readout` declaration, and negatives read the paired set's times."""
import pytest

from sampler.plan.plan import build_plan, with_negatives
from sampler.plan.spec import parse_spec_text
from sampler.plan.timing import describe_time_plan, time_plan
from unigraph.errors import SamplerError
from unigraph.schema import load_schema
from unigraph.timestamps import override_timestamp_column

SPEC = """
symmetric_link_seed_op { op_name: "seed" }
sampling_ops { op_name: "out" input_op_names: "seed" edge_set_name: "follows"
               sample_size: 2 strategy: RANDOM_UNIFORM }
sampling_ops { op_name: "likes" input_op_names: "seed" edge_set_name: "likes"
               sample_size: 2 strategy: RANDOM_UNIFORM }
"""


def link_graph(folder, readout_features="", user_times=True):
    """user -(follows, timed)-> user, user -(likes, untimed)-> item; users timed."""
    folder.mkdir()
    (folder / "graph_schema.pbtxt").write_text(f"""
node_sets {{ key: "user" value {{ metadata {{ filename: "users.csv" }} }} }}
node_sets {{ key: "item" value {{ }} }}
node_sets {{ key: "_readout" value {{ {readout_features} }} }}
edge_sets {{ key: "follows" value {{ source: "user" target: "user"
            metadata {{ filename: "follows.csv" }} }} }}
edge_sets {{ key: "likes" value {{ source: "user" target: "item"
            metadata {{ filename: "likes.csv" }} }} }}
edge_sets {{ key: "_readout/source" value {{ source: "user" target: "_readout" }} }}
edge_sets {{ key: "_readout/target" value {{ source: "user" target: "_readout" }} }}
""")
    (folder / "users.csv").write_text(
        "id,#timestamp\nu0,1\nu1,2\n" if user_times else "id\nu0\nu1\n")
    (folder / "follows.csv").write_text("source,target,#timestamp\nu0,u1,3\n")
    (folder / "likes.csv").write_text("source,target\nu0,i0\n")
    (folder / "pairs.csv").write_text("source,target,timestamp\nu0,u1,5\n")
    loaded = load_schema(str(folder))
    return loaded, build_plan(parse_spec_text(SPEC, "spec"), loaded, source="spec")


def test_pairs_with_a_timestamp_column_have_cutoffs(tmp_path):
    loaded, plan = link_graph(tmp_path / "g")
    timing = time_plan(loaded, plan, str(tmp_path / "g" / "pairs.csv"))
    assert timing.has_cutoffs and timing.seed_column.name == "timestamp"
    assert timing.dtype == "int64"
    assert timing.ordered_edge_sets == ("follows",)   # likes: no time on it or on items
    assert timing.negative_target_set is None          # no negatives
    with_neg = with_negatives(plan, 2, "uniform", loaded.schema)
    timing = time_plan(loaded, with_neg, str(tmp_path / "g" / "pairs.csv"))
    assert timing.negative_target_set == "user" and "user" in timing.node_columns
    assert "negatives' targets: node set 'user' not later than the cut-off" in \
        describe_time_plan(timing)


def test_negatives_read_the_paired_sets_times_only_when_it_has_them(tmp_path):
    loaded, plan = link_graph(tmp_path / "g", user_times=False)
    plan = with_negatives(plan, 1, "uniform", loaded.schema)
    timing = time_plan(loaded, plan, str(tmp_path / "g" / "pairs.csv"))
    assert timing.has_cutoffs and timing.negative_target_set is None
    assert "user" not in timing.node_columns


def test_pairs_without_a_timestamp_column_have_none(tmp_path):
    loaded, plan = link_graph(tmp_path / "g")
    (tmp_path / "plain.csv").write_text("source,target\nu0,u1\n")
    assert time_plan(loaded, plan, str(tmp_path / "plain.csv")) is None


def test_a_float_cutoff_declared_on_readout_makes_the_times_float(tmp_path):
    loaded, plan = link_graph(
        tmp_path / "g", 'features { key: "timestamp" value { dtype: DT_DOUBLE } }')
    timing = time_plan(loaded, plan, str(tmp_path / "g" / "pairs.csv"))
    assert timing.dtype == "float64"
    assert {c.dtype for c in timing.edge_columns.values()} == {"float64"}


def test_a_cutoff_declared_on_readout_as_no_number_is_one_line(tmp_path):
    # --timestamp-column moves the sets' time column elsewhere, so the schema check no
    # longer sees `_readout`'s `timestamp`; the pairs' cut-off column is still it.
    loaded, plan = link_graph(
        tmp_path / "g", 'features { key: "timestamp" value { dtype: DT_STRING } }')
    override_timestamp_column(loaded, "#timestamp")
    with pytest.raises(SamplerError) as error:
        time_plan(loaded, plan, str(tmp_path / "g" / "pairs.csv"))
    assert "\n" not in str(error.value) and "DT_STRING" in str(error.value)
