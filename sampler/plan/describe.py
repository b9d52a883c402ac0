"""The plan as text: what `sample --dry-run` prints after every check has passed."""
from __future__ import annotations

from sampler.plan.plan import Plan, edge_sets_to_read, pairs_table_layout
from sampler.plan.timing import describe_time_plan, time_plan
from unigraph.storage import bigquery
from unigraph.schema import (LoadedSchema, bigquery_source, is_link_readout, set_names,
                             table_files)
from unigraph.tables import seeds_layout, seeds_source, table_layout
from unigraph.tables.bigquery import describe_source
from unigraph.tables.layout import TableLayout, is_reversed


def _bigquery_line(layout: TableLayout, source: bigquery.Source) -> str:
    """Rows and read streams of a BigQuery table, or why it cannot be reached now (a
    missing table or column is an error, as a missing file is)."""
    try:
        return describe_source(layout, source)
    except bigquery.BigQueryAccessError as e:
        return f"{source.name}: not reachable now ({e})"


def describe_plan(loaded: LoadedSchema, plan: Plan, seeds: str | None = None) -> str:
    seeded = (f"pairs of node set '{plan.seed_set}' (symmetric_link_seed_op; source node 0, "
              f"target node 1)" if plan.link else f"node set '{plan.seed_set}'")
    lines = [f"graph schema: {loaded.path}", f"seed op '{plan.seed_op}': {seeded}"]
    if plan.link:
        excluded = sorted({op.edge_set for op in plan.ops if op.exclude_pair_edges})
        lines.append("  a pair's own edges left out of its subgraph in: "
                     f"{', '.join(excluded) or 'no edge set (--no-exclude-target-edge)'}")
        if plan.negatives:
            lines.append(f"  negatives: {plan.negatives.per_positive} per pair, targets drawn "
                         f"{plan.negatives.mode}")
    if plan.induced_edge_sets:
        lines.append(f"induced edges (every edge between a subgraph's nodes) in: "
                     f"{', '.join(plan.induced_edge_sets)}")
    lines.append("sampling ops, in execution order:")
    for i, op in enumerate(plan.ops, 1):
        edge_set = loaded.schema.edge_sets[op.edge_set]
        reversed_note = " (reversed table)" if is_reversed(edge_set) else ""
        lines.append(
            f"  {i}. {op.name}: from {', '.join(op.input_ops)} [{op.source_set}] via edge set "
            f"'{op.edge_set}'{reversed_note} -> [{op.target_set}], {op.strategy_name} "
            f"{op.sample_size}")
    lines.append("tables to read:")
    needed_nodes = set(plan.node_sets())
    needed_edges = set(edge_sets_to_read(plan, loaded.schema))
    for kind, name in set_names(loaded.schema):
        if name not in (needed_nodes if kind == "nodes" else needed_edges):
            continue
        if loaded.store is not None:
            lines.append(f"  {kind[:-1]} set '{name}': mapped from graph store "
                         f"{loaded.store.folder} (prepared from "
                         f"{', '.join(loaded.store.table(kind, name).locations[:1])}"
                         f"{' ...' if len(loaded.store.table(kind, name).locations) > 1 else ''})")
            continue
        source = bigquery_source(loaded, kind, name)
        if source is not None:
            lines.append(f"  {kind[:-1]} set '{name}': "
                         f"{_bigquery_line(table_layout(loaded, kind, name), source)}")
            continue
        files = table_files(loaded, kind, name)
        lines.append(f"  {kind[:-1]} set '{name}': {len(files)} file(s), first {files[0]}")
    source = seeds_source(seeds) if seeds else None
    if source is not None:
        layout = pairs_table_layout(plan, loaded.schema) if plan.link else seeds_layout()
        lines.append(f"  {'pairs' if plan.link else 'seeds'}: {_bigquery_line(layout, source)}")
    unused = sorted(n for n in set(loaded.schema.node_sets) - needed_nodes
                    if not (plan.link and is_link_readout("node set", n))) + sorted(
        n for n in set(loaded.schema.edge_sets) - set(plan.edge_sets())
        if not (plan.link and is_link_readout("edge set", n)))
    if unused:
        lines.append(f"not reached by the spec (omitted from the output): {', '.join(unused)}")
    timing = time_plan(loaded, plan, seeds)
    if timing is not None:
        lines.append(describe_time_plan(timing))
    return "\n".join(lines)
