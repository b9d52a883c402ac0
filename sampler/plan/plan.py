"""The plan: a SamplingSpec checked against a graph schema, as ops in execution order.

`build_plan` checks everything a spec can get wrong against the schema (one seed
op on an existing node set, unique op names, inputs defined before use, each
edge set starting where its inputs end, sample sizes, weights for the weighted
strategies) and returns a Plan, so that an engine is only ever given a sound spec.
Errors name the spec file and the op.
"""
from __future__ import annotations

import dataclasses
from typing import Callable

from sampler.plan import sampling_spec_pb2 as ss
from unigraph.columns import set_columns
from unigraph.errors import SpecError
from unigraph.schema import WEIGHT_COLUMNS, LoadedSchema, has_table
from unigraph.timestamps import find_timestamp_column, timestamp_spellings

OpName = str
STRATEGY_NAMES = {v: k for k, v in ss.SamplingStrategy.items()}
WEIGHTED_STRATEGIES = (ss.TOP_K, ss.RANDOM_WEIGHTED)
TIMED_STRATEGIES = (ss.LATEST_K,)


@dataclasses.dataclass(frozen=True)
class PlannedOp:
    """One sampling hop, checked against the schema."""

    name: OpName
    input_ops: tuple[OpName, ...]
    edge_set: str
    source_set: str  # node set the inputs yield and the edges start at
    target_set: str  # node set this op yields
    sample_size: int
    strategy: int    # a SamplingStrategy value
    strategy_given: bool = True  # False: the spec left it out, so the proto default (TOP_K)

    @property
    def strategy_name(self) -> str:
        return STRATEGY_NAMES[self.strategy]


@dataclasses.dataclass(frozen=True)
class Plan:
    """The seed op and the sampling ops in execution (= spec) order."""

    seed_op: OpName
    seed_set: str
    ops: tuple[PlannedOp, ...]

    def node_sets(self) -> list[str]:
        """Node sets a subgraph can hold, seed set first."""
        result = [self.seed_set]
        for op in self.ops:
            if op.target_set not in result:
                result.append(op.target_set)
        return result

    def edge_sets(self) -> list[str]:
        result: list[str] = []
        for op in self.ops:
            if op.edge_set not in result:
                result.append(op.edge_set)
        return result

    def latest_k_edge_sets(self) -> list[str]:
        """Edge sets some LATEST_K op samples: they need their edges' timestamps."""
        return [name for name in self.edge_sets()
                if any(op.edge_set == name and op.strategy in TIMED_STRATEGIES
                       for op in self.ops)]


def edge_sets_to_read(plan: Plan, schema) -> list[str]:
    """The edge sets a run reads: the plan's, plus, when the seed node set has no table,
    every edge set that names it (its nodes are the ids those edges name)."""
    names = plan.edge_sets()
    if not has_table(schema.node_sets[plan.seed_set].metadata):
        names += [name for name, edge_set in sorted(schema.edge_sets.items())
                  if name not in names and plan.seed_set in (edge_set.source, edge_set.target)]
    return names


def build_plan(spec: ss.SamplingSpec, loaded: LoadedSchema, *, source: str,
               has_weight: Callable[[str], bool] | None = None,
               has_timestamp: Callable[[str], bool] | None = None) -> Plan:
    """Checks `spec` against the schema; SpecError names the op and the value found.

    `has_weight(edge_set)` tells whether an edge set's table has a weight column;
    by default a weight feature declared in the schema or a weight column in the
    table's first file counts. `has_timestamp(edge_set)` likewise for the timestamp
    column (unigraph.timestamps), which LATEST_K needs.
    """
    schema = loaded.schema
    has_weight = has_weight or (lambda name: edge_set_has_weight(loaded, name))
    has_timestamp = has_timestamp or (lambda name: edge_set_has_timestamp(loaded, name))
    where = f"sampling spec {source}"
    if not spec.HasField("seed_op"):
        raise SpecError(f"{where}: no seed_op")
    seed = spec.seed_op
    if not seed.op_name:
        raise SpecError(f"{where}: seed_op has no op_name")
    if seed.node_set_name not in schema.node_sets:
        raise SpecError(
            f"{where}: seed op '{seed.op_name}': node set '{seed.node_set_name}' does not "
            f"exist (node sets: {', '.join(sorted(schema.node_sets))})")
    yields: dict[OpName, str] = {seed.op_name: seed.node_set_name}
    ops = []
    for index, op in enumerate(spec.sampling_ops):
        name = op.op_name
        op_where = f"{where}: op '{name}'" if name else f"{where}: sampling_ops[{index}]"
        if not name:
            raise SpecError(f"{op_where}: no op_name")
        if name in yields:
            raise SpecError(f"{op_where}: op name is used twice")
        if not op.input_op_names:
            raise SpecError(f"{op_where}: no input_op_names")
        if op.edge_set_name not in schema.edge_sets:
            raise SpecError(
                f"{op_where}: edge set '{op.edge_set_name}' does not exist "
                f"(edge sets: {', '.join(sorted(schema.edge_sets))})")
        edge_set = schema.edge_sets[op.edge_set_name]
        for input_name in op.input_op_names:
            if input_name not in yields:
                later = any(o.op_name == input_name for o in spec.sampling_ops)
                raise SpecError(
                    f"{op_where}: input op '{input_name}' is "
                    f"{'defined after' if later else 'not defined before'} its use")
            if yields[input_name] != edge_set.source:
                raise SpecError(
                    f"{op_where}: edge set '{op.edge_set_name}' starts at node set "
                    f"'{edge_set.source}', but its input op '{input_name}' yields "
                    f"'{yields[input_name]}'")
        if len(set(op.input_op_names)) != len(op.input_op_names):
            raise SpecError(f"{op_where}: input_op_names repeats an op")
        if op.sample_size <= 0:
            raise SpecError(f"{op_where}: sample_size must be > 0, found {op.sample_size}")
        if op.strategy not in STRATEGY_NAMES:
            raise SpecError(
                f"{op_where}: unknown strategy {op.strategy} "
                f"(known: {', '.join(ss.SamplingStrategy.keys())})")
        if op.strategy in WEIGHTED_STRATEGIES and not has_weight(op.edge_set_name):
            defaulted = "" if op.HasField("strategy") else (
                " (the proto's default: the op names no strategy; TF-GNN's sampler would "
                "sample uniformly)")
            raise SpecError(
                f"{op_where}: strategy {STRATEGY_NAMES[op.strategy]}{defaulted} needs edge "
                f"weights, but edge set '{op.edge_set_name}' has no '#weight' or 'weight' "
                f"column")
        if op.strategy in TIMED_STRATEGIES and not has_timestamp(op.edge_set_name):
            names = " or ".join(f"'{c}'" for c in timestamp_spellings(loaded, "edges",
                                                                        op.edge_set_name))
            raise SpecError(
                f"{op_where}: strategy {STRATEGY_NAMES[op.strategy]} needs edge timestamps, "
                f"but edge set '{op.edge_set_name}' has no {names} column (name another "
                f"with --timestamp-column or the edge set's metadata extra "
                f"'timestamp_column')")
        yields[name] = edge_set.target
        ops.append(PlannedOp(name, tuple(op.input_op_names), op.edge_set_name, edge_set.source,
                             edge_set.target, op.sample_size, op.strategy,
                             op.HasField("strategy")))
    return Plan(seed.op_name, seed.node_set_name, tuple(ops))


def plan_warnings(plan: Plan, source: str) -> list[str]:
    """What a user should know before a plan runs, one line each."""
    return [f"sampling spec {source}: op '{op.name}' names no strategy, so the proto's "
            f"default TOP_K applies (TF-GNN's sampler samples uniformly there); write "
            f"`strategy: TOP_K` or `strategy: RANDOM_UNIFORM` to say which"
            for op in plan.ops if not op.strategy_given]


def edge_set_has_weight(loaded: LoadedSchema, edge_set_name: str) -> bool:
    """A weight feature in the schema, or a weight column in the table (its first file)."""
    edge_set = loaded.schema.edge_sets[edge_set_name]
    if any(name in edge_set.features for name in WEIGHT_COLUMNS):
        return True
    return any(name in set_columns(loaded, "edges", edge_set_name) for name in WEIGHT_COLUMNS)


def edge_set_has_timestamp(loaded: LoadedSchema, edge_set_name: str) -> bool:
    """A declared timestamp feature, or the timestamp column in the table (its first file)."""
    return find_timestamp_column(loaded, "edges", edge_set_name,
                                 set_columns(loaded, "edges", edge_set_name)) is not None
