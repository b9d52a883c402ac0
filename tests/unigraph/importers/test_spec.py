"""The starting spec: hops over every edge set from the seed set, a spec the planner
accepts as written."""
import pytest
from google.protobuf import text_format

from sampler.plan import sampling_spec_pb2 as ss
from sampler.plan.plan import build_plan
from unigraph.errors import SchemaError
from unigraph.importers.spec import hops, starting_spec
from unigraph.schema import LoadedSchema, parse_schema_text

SCHEMA = """
node_sets { key: "paper" value { metadata { filename: "p.csv" } } }
node_sets { key: "author" value { } }
node_sets { key: "odd \\"name\\"" value { } }
edge_sets { key: "cites" value { source: "paper" target: "paper" metadata { filename: "c.csv" } } }
edge_sets { key: "writes" value { source: "author" target: "paper" metadata { filename: "w.csv" } } }
edge_sets { key: "rev_writes" value { source: "paper" target: "author" metadata {
  filename: "w.csv" extra { key: "edge_type" value: "reversed" } } } }
edge_sets { key: "quoted" value { source: "author" target: "odd \\"name\\"" metadata { filename: "q.csv" } } }
"""


def test_two_hops_from_the_seed_set_over_every_edge_set_starting_where_the_last_hop_ended():
    schema = parse_schema_text(SCHEMA, "s")
    assert hops(schema, "paper", (10, 5)) == [
        ("hop1/cites", ["seed"], "cites", 10),
        ("hop1/rev_writes", ["seed"], "rev_writes", 10),
        ("hop2/quoted", ["hop1/rev_writes"], "quoted", 5),
        ("hop2/writes", ["hop1/rev_writes"], "writes", 5),
        ("hop2/cites", ["hop1/cites"], "cites", 5),
        ("hop2/rev_writes", ["hop1/cites"], "rev_writes", 5)]


def test_the_spec_parses_and_plans_even_with_quotes_in_names():
    schema = parse_schema_text(SCHEMA, "s")
    text = starting_spec(schema, "paper", fanouts=(3, 2, 1))
    spec = text_format.Parse(text, ss.SamplingSpec())
    plan = build_plan(spec, LoadedSchema(schema, "s", "."), source="spec")
    assert plan.seed_set == "paper" and len(plan.ops) == 2 + 4 + 4


@pytest.mark.parametrize("fanouts", [(), (0,), (3, -1)])
def test_fanouts_are_positive(fanouts):
    with pytest.raises(SchemaError, match="sample size >= 1"):
        hops(parse_schema_text(SCHEMA, "s"), "paper", fanouts)
