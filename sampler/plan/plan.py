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

import numpy as np

from sampler.plan import sampling_spec_pb2 as ss
from unigraph.tables.columns import set_columns
from unigraph.errors import SpecError
from unigraph.schema import (LINK_READOUT_EDGE_SETS, LINK_READOUT_NODE_SET, NUMPY_DTYPES,
                             WEIGHT_COLUMNS, LoadedSchema, feature_shape, has_table,
                             is_link_readout, link_node_set)
from unigraph.tables.layout import TimeColumn, pairs_layout
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
    # Link plans: never sample an edge between the sample's pair (source and target) here;
    # on for every edge set from the paired node set to itself (with_target_edges).
    exclude_pair_edges: bool = False

    @property
    def strategy_name(self) -> str:
        return STRATEGY_NAMES[self.strategy]


UNIFORM, DEGREE = "uniform", "degree"  # how negatives' targets are drawn
LABEL = "label"  # the `_readout` feature a run with negatives writes: 1 positive, 0 negative


@dataclasses.dataclass(frozen=True)
class NegativeSampling:
    """Negatives of a link plan (`--negatives K`, `--negative-sampling MODE`): K pairs per
    positive, same source, target drawn uniformly or by degree**0.75 (core.negatives)."""

    per_positive: int
    mode: str = UNIFORM


@dataclasses.dataclass(frozen=True)
class Plan:
    """The seed op and the sampling ops in execution (= spec) order.

    A link plan (`symmetric_link_seed_op`) seeds every sample with a pair of nodes of
    `seed_set` (the schema's `_readout/source` start); everything after the seeds is
    the same as for node seeds."""

    seed_op: OpName
    seed_set: str
    ops: tuple[PlannedOp, ...]
    link: bool = False
    negatives: NegativeSampling | None = None  # link plans only
    # Edge sets whose every edge between two nodes of a subgraph is added to it
    # (--edge-aggregation node; core.induced); the others keep only sampled edges.
    induced_edge_sets: tuple[str, ...] = ()

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

    def weighted_edge_sets(self) -> list[str]:
        """Edge sets some TOP_K or RANDOM_WEIGHTED op samples: they need their weights."""
        return self._edge_sets_sampled_by(WEIGHTED_STRATEGIES)

    def latest_k_edge_sets(self) -> list[str]:
        """Edge sets some LATEST_K op samples: they need their edges' timestamps."""
        return self._edge_sets_sampled_by(TIMED_STRATEGIES)

    def _edge_sets_sampled_by(self, strategies) -> list[str]:
        """Edge sets some op samples by one of `strategies`, in edge_sets' order."""
        used = {op.edge_set for op in self.ops if op.strategy in strategies}
        return [name for name in self.edge_sets() if name in used]


def edge_sets_to_read(plan: Plan, schema) -> list[str]:
    """The edge sets a run reads: the plan's, plus, when the seed node set has no table,
    every edge set that names it (its nodes are the ids those edges name)."""
    names = plan.edge_sets()
    if not has_table(schema.node_sets[plan.seed_set].metadata):
        names += [name for name, edge_set in sorted(schema.edge_sets.items())
                  if name not in names and plan.seed_set in (edge_set.source, edge_set.target)
                  and not is_link_readout("edge set", name)]
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
    link = spec.HasField("symmetric_link_seed_op")
    if link:
        seed_op_name = spec.symmetric_link_seed_op.op_name
        if not seed_op_name:
            raise SpecError(f"{where}: symmetric_link_seed_op has no op_name")
        seed_set = link_node_set(schema)
        if seed_set is None:
            raise SpecError(
                f"{where}: symmetric_link_seed_op '{seed_op_name}' needs a graph schema with "
                f"node set '{LINK_READOUT_NODE_SET}' and edge sets "
                f"'{LINK_READOUT_EDGE_SETS[0]}' and '{LINK_READOUT_EDGE_SETS[1]}' from the "
                f"paired node set to it (as TF-GNN's link sampler requires)")
    else:
        if not spec.HasField("seed_op"):
            raise SpecError(f"{where}: no seed_op (nor symmetric_link_seed_op)")
        seed = spec.seed_op
        seed_op_name, seed_set = seed.op_name, seed.node_set_name
        if not seed_op_name:
            raise SpecError(f"{where}: seed_op has no op_name")
        if seed_set not in schema.node_sets or is_link_readout("node set", seed_set):
            raise SpecError(
                f"{where}: seed op '{seed_op_name}': node set '{seed_set}' does not "
                f"exist (node sets: {', '.join(sorted(schema.node_sets))})")
    yields: dict[OpName, str] = {seed_op_name: seed_set}
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
        if op.edge_set_name not in schema.edge_sets or is_link_readout("edge set",
                                                                          op.edge_set_name):
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
                             op.HasField("strategy"),
                             link and edge_set.source == edge_set.target == seed_set))
    return Plan(seed_op_name, seed_set, tuple(ops), link)


def pair_edge_sets(plan: Plan) -> list[str]:
    """The edge sets a link plan samples from the paired node set to itself: those that can
    hold the edge a pair predicts (or its reverse)."""
    return [name for name in plan.edge_sets() if any(
        op.edge_set == name and op.source_set == op.target_set == plan.seed_set
        for op in plan.ops)] if plan.link else []


def with_target_edges(plan: Plan, excluded: list[str] | None, *, source: str = "") -> Plan:
    """The plan leaving out each pair's own edges in the edge sets `excluded` (None: every
    edge set of `pair_edge_sets`; []: none, the leakage check is off). SpecError for an
    edge set that cannot hold the pair's edge."""
    candidates = pair_edge_sets(plan)
    chosen = candidates if excluded is None else excluded
    for name in chosen:
        if name not in candidates:
            raise SpecError(
                f"{source}edge set '{name}' cannot hold a pair's edge: the link plan samples "
                f"these edge sets from node set '{plan.seed_set}' to itself: "
                f"{', '.join(candidates) or 'none'}")
    return dataclasses.replace(plan, ops=tuple(
        dataclasses.replace(op, exclude_pair_edges=op.edge_set in chosen) for op in plan.ops))


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


def pairs_table_layout(plan: Plan, schema, timestamp: TimeColumn | None = None):
    """The columns a link plan reads from its pairs table (with negatives, the label is
    the sampler's, not the table's); `timestamp` (a TimeColumn): the pairs' cut-offs too."""
    return pairs_layout(schema, (LABEL,) if plan.negatives else (), timestamp)


def with_negatives(plan: Plan, per_positive: int, mode: str, schema) -> Plan:
    """The link plan drawing `per_positive` negatives per pair; SpecError if the schema's
    `_readout` declares a label the sampler cannot write (0/1 need a numeric scalar)."""
    if per_positive < 0:
        raise SpecError(f"--negatives {per_positive}: give 0 or more")
    if mode not in (UNIFORM, DEGREE):
        raise SpecError(f"--negative-sampling {mode}: give {UNIFORM} or {DEGREE}")
    if per_positive == 0:
        return plan
    declared = schema.node_sets[LINK_READOUT_NODE_SET].features.get(LABEL)
    if declared is not None:
        dtype = NUMPY_DTYPES.get(declared.dtype)
        if dtype is None or dtype.kind not in "biuf" or feature_shape(declared):
            raise SpecError(f"--negatives: node set '{LINK_READOUT_NODE_SET}' declares feature "
                            f"'{LABEL}', which the sampler writes (1 positive, 0 negative): "
                            f"it must be a numeric scalar")
    return dataclasses.replace(plan, negatives=NegativeSampling(per_positive, mode))


def label_dtype(schema) -> np.dtype:
    """The numpy dtype of the label a run with negatives writes: the schema's `_readout`
    label's, else int64."""
    declared = schema.node_sets[LINK_READOUT_NODE_SET].features.get(LABEL)
    return NUMPY_DTYPES[declared.dtype] if declared is not None else np.dtype(np.int64)


EDGE_AGGREGATIONS = ("edge", "node")  # TF-GNN v1's names: sampled edges only, or induced


def with_edge_aggregation(plan: Plan, value: str) -> Plan:
    """`--edge-aggregation edge` (default: the sampled edges only), `node` (every edge set
    the plan samples gets all edges among a subgraph's nodes) or `node:E1,E2` (those)."""
    mode, _, names = value.partition(":")
    if mode not in EDGE_AGGREGATIONS or (mode == "edge" and names):
        raise SpecError(f"--edge-aggregation {value}: give edge, node, or node:EDGE_SET,...")
    if mode == "edge":
        return dataclasses.replace(plan, induced_edge_sets=())
    chosen = [n.strip() for n in names.split(",") if n.strip()] if names else plan.edge_sets()
    for name in chosen:
        if name not in plan.edge_sets():
            raise SpecError(f"--edge-aggregation {value}: edge set '{name}' is not sampled by "
                            f"the spec (it samples: {', '.join(plan.edge_sets())})")
    return dataclasses.replace(plan, induced_edge_sets=tuple(
        n for n in plan.edge_sets() if n in chosen))


def members_ops(plan: Plan, node_set: str) -> list[OpName]:
    """The ops whose reached nodes are a subgraph's nodes of `node_set` (the seed op's
    found seeds first, for the seed set)."""
    ops = [plan.seed_op] if node_set == plan.seed_set else []
    return ops + [op.name for op in plan.ops if op.target_set == node_set]


def excludes_pair_edges(plan: Plan, edge_set: str) -> bool:
    return any(op.exclude_pair_edges for op in plan.ops if op.edge_set == edge_set)
