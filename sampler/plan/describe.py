"""The plan as text: what `sample --dry-run` prints after every check has passed."""
from __future__ import annotations

from sampler.plan.plan import Plan, edge_sets_to_read
from unigraph.schema import LoadedSchema, set_names, table_files
from unigraph.tables.layout import is_reversed


def describe_plan(loaded: LoadedSchema, plan: Plan) -> str:
    lines = [f"graph schema: {loaded.path}",
             f"seed op '{plan.seed_op}': node set '{plan.seed_set}'",
             "sampling ops, in execution order:"]
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
        files = table_files(loaded, kind, name)
        lines.append(f"  {kind[:-1]} set '{name}': {len(files)} file(s), first {files[0]}")
    unused = sorted(set(loaded.schema.node_sets) - needed_nodes) + sorted(
        set(loaded.schema.edge_sets) - set(plan.edge_sets()))
    if unused:
        lines.append(f"not reached by the spec (omitted from the output): {', '.join(unused)}")
    return "\n".join(lines)
