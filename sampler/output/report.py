"""The run report as people read it: JSON beside the output and a short summary.

The counts themselves are core.stats.RunStats, merged across workers; the same
counts also go to Beam metrics, so they show on Dataflow's job page.
"""
from __future__ import annotations

import json

from sampler.core.stats import RunStats


def to_json(stats: RunStats, **extra) -> str:
    return json.dumps({**stats.as_dict(), **extra}, indent=2)


def format_report(report: dict) -> str:
    """A short human summary of a report dict."""
    lines = [f"seeds read: {report['seeds_read']}, subgraphs written: "
             f"{report['subgraphs_written']}, seeds missing from the graph: "
             f"{report['seeds_missing']}"]
    if report.get("pairs_read"):
        lines.append(f"pairs read: {report['pairs_read']}, left out for an endpoint missing from "
                     f"the graph: {report['pairs_dropped']} (seeds above are pair endpoints); "
                     f"edges between a pair left out of its subgraph: "
                     f"{report.get('pair_edges_excluded', 0)}")
    for name, count in report.get("induced_edges", {}).items():
        lines.append(f"edge set '{name}': {count} edges among subgraph nodes found (induced; "
                     f"those also sampled appear once)")
    if report.get("positives"):
        lines.append(f"negatives: {report['negatives']} for {report['positives']} positive "
                     f"pairs; {report['negatives_redrawn']} draws redrawn (they hit the source "
                     f"or a known positive"
                     + (f", or for {report['negatives_after_cutoff']} a node later than the "
                        f"pair's cut-off" if report.get("negatives_after_cutoff") else "")
                     + f"), {report['negatives_not_found']} negatives given up")
    if report["missing_seed_ids"]:
        shown = ", ".join(report["missing_seed_ids"][:10])
        more = report["seeds_missing"] - min(10, len(report["missing_seed_ids"]))
        lines.append(f"  missing seeds: {shown}" + (f" (+{more} more)" if more > 0 else ""))
    for title, key in (("nodes", "nodes_per_subgraph"), ("edges", "edges_per_subgraph")):
        for name, d in report[key].items():
            lines.append(f"{title} '{name}' per subgraph: min {d['min']}, mean {d['mean']}, "
                         f"max {d['max']}")
    for op, count in report["edges_sampled_per_op"].items():
        draws = report.get("draws_per_op", {}).get(op, 0)
        at_cap = report.get("draws_at_cap_per_op", {}).get(op, 0)
        capped = f", {at_cap / draws:.0%} of {draws} draws hit sample_size" if draws else ""
        lines.append(f"op '{op}': {count} edges sampled{capped}")
    for name, count in report["dangling_edges_dropped"].items():
        first = next((e for e in report.get("dangling_edge_examples", [])
                      if e["edge_set"] == name), None)
        example = (f" (first: {first['source']} -> {first['target']}, {first['file']} row "
                   f"{first['row']})" if first else "")
        lines.append(f"edge set '{name}': {count} sampled edges dropped: an endpoint is absent "
                     f"from its node table{example}")
    for name, count in report["nodes_missing_from_tables"].items():
        lines.append(f"node set '{name}': {count} reached ids absent from its table")
    if "wall_time_s" in report:
        lines.append(f"wall time: {report['wall_time_s']:.2f} s")
    return "\n".join(lines)
