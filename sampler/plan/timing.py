"""Which timestamps a job reads, decided before any engine runs.

Two things need time (docs/architecture.md, "Time"):
  * a LATEST_K op needs its edge set's timestamps;
  * a seeds table with a `timestamp` column gives every sample a cut-off, and then
    every op considers only edges not later than it, at every hop. A link plan's pairs
    table likewise: each pair's cut-off holds for its whole subgraph, and (with
    --negatives) its negatives take it too; if the paired node set has timestamps, a
    negative's target must not be later than the cut-off, so that node set's times
    are read as well.

An edge set is *time-ordered* when a LATEST_K op samples it, or when there are
cut-offs and it has a timestamp column or its target node set has one. Its edges
get an *effective time*, the later of the edge's own timestamp and its target node's
(a node created after the cut-off makes every edge to it ineligible), and each
node's adjacency row is sorted by (effective time, then the canonical order), so a
cut-off is a binary search. Without cut-offs nothing else changes: the other edge
sets keep their canonical order, and without a timestamp anywhere `time_plan` is None
and the job runs exactly as before.
"""
from __future__ import annotations

import dataclasses

from sampler.plan.plan import Plan
from unigraph.storage import bigquery, paths
from unigraph.tables.columns import set_columns, table_columns
from unigraph.errors import SamplerError
from unigraph.protos import graph_schema_pb2 as gs
from unigraph.schema import LINK_READOUT_NODE_SET, LoadedSchema, has_table
from unigraph.tables.layout import TimeColumn
from unigraph.tables.read import seed_files
from unigraph.timestamps import (FLOAT_TIMES, INT_TIMES, SEED_TIMESTAMP_COLUMNS,
                                 find_timestamp_column, time_dtype)


@dataclasses.dataclass(frozen=True)
class TimePlan:
    dtype: str                                # "int64" or "float64": every time of the job
    seed_column: TimeColumn | None            # the seeds' cut-off column (None: no cut-off)
    edge_columns: dict[str, TimeColumn]       # time-ordered edge set -> its column, if it has one
    node_columns: dict[str, TimeColumn]       # node set -> its column, read for effective times
    ordered_edge_sets: tuple[str, ...]        # edge sets whose rows are in time order
    node_targets: tuple[str, ...] = ()        # ordered edge sets whose targets have times
    # Link plans with cut-offs and negatives: the paired node set, when it has a
    # timestamp column (in node_columns): a negative's target must exist at the cut-off.
    negative_target_set: str | None = None

    @property
    def has_cutoffs(self) -> bool:
        return self.seed_column is not None



def seed_timestamp_column(seeds_path: str | None) -> str | None:
    """The cut-off column of a seeds table (its first file's, or a BigQuery table's)."""
    if not seeds_path:
        return None
    if bigquery.is_uri(seeds_path):
        source = bigquery.source_from_uri(seeds_path, "seeds")
        columns = list(bigquery.table_info(source.table, source.name).columns)
    else:
        first = seed_files(seeds_path)[0]
        if paths.file_format(first) == "text":
            return None
        columns = table_columns(first)
    return next((c for c in SEED_TIMESTAMP_COLUMNS if c in columns), None)


def time_plan(loaded: LoadedSchema, plan: Plan, seeds_path: str | None) -> TimePlan | None:
    """What the job reads and orders by time; None when nothing needs time."""
    return time_plan_of(loaded, plan, seed_timestamp_column(seeds_path), f"--seeds {seeds_path}")


def time_plan_of(loaded: LoadedSchema, plan: Plan, seed_column: str | None,
                 seeds: str) -> TimePlan | None:
    """`time_plan` for seeds whose cut-off column is `seed_column` (None: no cut-offs);
    `seeds` names them in messages."""
    readout_type = _readout_cutoff_type(loaded, plan, seed_column, seeds)
    latest = plan.latest_k_edge_sets()
    if seed_column is None and not latest:
        return None

    def column_of(kind, name):
        if kind == "nodes" and not has_table(loaded.schema.node_sets[name].metadata):
            return None
        return find_timestamp_column(loaded, kind, name, set_columns(loaded, kind, name))

    edge_names = {name: column_of("edges", name) for name in plan.edge_sets()}
    node_names = {}   # the timed target node sets of the sampled edge sets
    for name in plan.edge_sets():
        target = loaded.schema.edge_sets[name].target
        if target not in node_names:
            node_names[target] = column_of("nodes", target)
    node_names = {k: v for k, v in node_names.items() if v is not None}
    if seed_column is None:
        ordered = list(latest)
    else:
        ordered = [name for name in plan.edge_sets()
                   if edge_names[name] is not None
                   or loaded.schema.edge_sets[name].target in node_names]
    targets = {loaded.schema.edge_sets[name].target for name in ordered}
    node_names = {k: v for k, v in node_names.items() if k in targets}
    negative_target_set = None
    if seed_column is not None and plan.link and plan.negatives:
        column = node_names.get(plan.seed_set) or column_of("nodes", plan.seed_set)
        if column is not None:
            node_names[plan.seed_set] = column
            negative_target_set = plan.seed_set
    timed = [("edges", n) for n in ordered if edge_names[n]] + [("nodes", n) for n in node_names]
    dtype = time_dtype(loaded, timed).name
    if readout_type is not None and readout_type.kind == "f":  # a float `_readout` cut-off
        dtype = FLOAT_TIMES.name
    return TimePlan(
        dtype=dtype,
        seed_column=TimeColumn(seed_column, dtype) if seed_column else None,
        edge_columns={n: TimeColumn(edge_names[n], dtype) for n in ordered if edge_names[n]},
        node_columns={n: TimeColumn(c, dtype) for n, c in node_names.items()},
        ordered_edge_sets=tuple(ordered),
        node_targets=tuple(n for n in ordered
                           if loaded.schema.edge_sets[n].target in node_names),
        negative_target_set=negative_target_set)


def _readout_cutoff_type(loaded: LoadedSchema, plan: Plan, seed_column: str | None,
                         seeds: str):
    """A link plan whose schema's `_readout` declares the pairs' cut-off column as a
    feature: the type it declares (float cut-offs make the job's times float64); None
    when it is not declared. SamplerError when it is no numeric scalar."""
    if seed_column is None or not plan.link:
        return None
    feature = loaded.schema.node_sets[LINK_READOUT_NODE_SET].features.get(seed_column)
    if feature is None:
        return None
    numeric = {gs.DT_INT64: INT_TIMES, gs.DT_INT32: INT_TIMES, gs.DT_FLOAT: FLOAT_TIMES,
               gs.DT_DOUBLE: FLOAT_TIMES}
    if feature.dtype not in numeric or len(feature.shape.dim):
        raise SamplerError(
            f"{seeds}: the pairs' cut-off column '{seed_column}' is declared as "
            f"feature of node set '{LINK_READOUT_NODE_SET}' with {gs.DataType.Name(feature.dtype)} "
            f"of shape {[d.size for d in feature.shape.dim]}; a cut-off is an int64 or float "
            f"scalar")
    return numeric[feature.dtype]


def describe_time_plan(timing: TimePlan) -> str:
    """One line for the run's log: what time does in this job."""
    cutoff = (f"cut-offs from the seeds' '{timing.seed_column.name}' column"
              if timing.has_cutoffs else "no cut-offs")
    if timing.negative_target_set is not None:
        cutoff += (f" (negatives' targets: node set '{timing.negative_target_set}' not later "
                   f"than the cut-off)")
    ordered = ", ".join(
        f"{name} ({timing.edge_columns[name].name if name in timing.edge_columns else 'timeless'}"
        f"{' + target node times' if name in timing.node_targets else ''})"
        for name in timing.ordered_edge_sets) or "none"
    return f"time: {cutoff}; {timing.dtype} times; time-ordered edge sets: {ordered}"
