"""A job's schema, plan and link options from what the user gives: the checks the CLI
(`sample`) and the Python API (`sampler.api.load_graph`) share, so both refuse the
same input with the same one-line messages."""
from __future__ import annotations

from sampler.plan import sampling_spec_pb2 as ss
from sampler.plan.plan import (DEGREE, UNIFORM, Plan, build_plan, pair_edge_sets,
                               with_negatives, with_target_edges)
from sampler.plan.spec import load_spec
from unigraph.errors import SamplerError
from unigraph.schema import LoadedSchema, check_schema, load_schema
from unigraph.timestamps import override_timestamp_column


def load_and_check(graph: str | LoadedSchema, spec: str | ss.SamplingSpec,
                   data_path: str | None = None,
                   timestamp_column: str | None = None) -> tuple[LoadedSchema, Plan]:
    """Every check of the schema (a path, or a schema loaded already: a graph held in
    memory) and spec (a path, or a SamplingSpec message) that can run before a pipeline
    exists."""
    loaded = graph if isinstance(graph, LoadedSchema) else load_schema(graph, data_path)
    if timestamp_column:
        override_timestamp_column(loaded, timestamp_column)
    check_schema(loaded)
    if isinstance(spec, ss.SamplingSpec):
        return loaded, build_plan(spec, loaded, source="(SamplingSpec message)")
    return loaded, build_plan(load_spec(spec), loaded, source=spec)


def link_plan(plan: Plan, loaded: LoadedSchema, *, exclude_target_edge: bool = True,
              target_edge_sets: list[str] | None = None, negatives: int = 0,
              negative_sampling: str = UNIFORM) -> Plan:
    """The link options applied to the plan; refused for a node-seeded spec. The messages
    name the options by their command-line flags."""
    given = [flag for flag, on in (("--no-exclude-target-edge", not exclude_target_edge),
                                   ("--target-edge-sets", target_edge_sets is not None),
                                   ("--negatives", negatives != 0),
                                   ("--negative-sampling", negative_sampling != UNIFORM))
             if on]
    if not plan.link:
        if given:
            raise SamplerError(f"{given[0]} is for link seeds; the spec's seed op "
                               f"'{plan.seed_op}' seeds nodes")
        return plan
    plan = with_negatives(plan, negatives, negative_sampling, loaded.schema)
    if plan.negatives and plan.negatives.mode == DEGREE and not pair_edge_sets(plan):
        raise SamplerError(f"--negative-sampling degree needs the spec to sample an edge set "
                           f"from node set '{plan.seed_set}' to itself (degrees come from it)")
    if not exclude_target_edge:
        if target_edge_sets is not None:
            raise SamplerError("--target-edge-sets and --no-exclude-target-edge contradict "
                               "each other; give one")
        return with_target_edges(plan, [])
    return with_target_edges(plan, target_edge_sets, source="--target-edge-sets: ")
