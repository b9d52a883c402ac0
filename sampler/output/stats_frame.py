"""sample-stats' numbers as pandas DataFrames, for notebooks.

    from sampler.output.stats import folder_stats
    from sampler.output.stats_frame import records_frame, sets_frame, features_frame
    stats = folder_stats("out/", keep_seed_ids=True)
    records_frame(stats)    # one row per record: file, seed id, bytes, nodes/<set>, edges/<set>
    sets_frame(stats)       # one row per node set and edge set: min, p5, p50, p95, max, ...
    features_frame(stats)   # one row per feature: mean, std, quantiles, NaN, distinct, ...

`sample_stats(folder)` in stats.py gives the same numbers as one dict (what
stats.json holds).
"""
from __future__ import annotations

import os

import numpy as np

from sampler.output.stats import FolderStats
from unigraph.errors import require_extra

pd = require_extra("pandas", "stats", "sampler.output.stats_frame")


def records_frame(stats: FolderStats) -> pd.DataFrame:
    """Per-record numbers, in file order (seed_id only when folder_stats kept them)."""
    columns: dict = {}
    per_file = stats.tally.records_per_file
    columns["file"] = np.repeat([os.path.basename(f) for f in stats.files], per_file)
    columns["record"] = np.concatenate([np.arange(n) for n in per_file]) if per_file else []
    if stats.tally.seed_ids:
        columns["seed_id"] = [s.decode("utf-8", "backslashreplace")
                              for s in np.concatenate(stats.tally.seed_ids)]
    columns["bytes"] = stats.record_bytes
    for name in stats.layout.node_sets:
        columns[f"nodes/{name}"] = stats.nodes(name)
    for name in stats.layout.edge_sets:
        columns[f"edges/{name}"] = stats.edges(name)
    return pd.DataFrame(columns)


def sets_frame(stats: FolderStats) -> pd.DataFrame:
    """Count quantiles per node set and edge set (and bytes per record)."""
    d = stats.as_dict()
    rows = [{"kind": "node set", "name": n, **q} for n, q in d["node_sets"].items()]
    rows += [{"kind": "edge set", "name": n, **q} for n, q in d["edge_sets"].items()]
    rows.append({"kind": "record", "name": "bytes", **d["bytes_per_record"]})
    return pd.DataFrame(rows).set_index(["kind", "name"])


def features_frame(stats: FolderStats) -> pd.DataFrame:
    """One row per feature: its summary flattened (quantiles as columns)."""
    d = stats.as_dict()["features"]
    rows = []
    for scope, sets in (("context", {"": d["context"]}), ("node set", d["node_sets"]),
                        ("edge set", d["edge_sets"])):
        for set_name, features in sets.items():
            for name, f in features.items():
                row = {"scope": scope, "set": set_name, "feature": name}
                for key, value in f.items():
                    if key in ("quantiles", "length_bytes"):
                        prefix = "" if key == "quantiles" else "length_"
                        row.update({prefix + q: v for q, v in value.items()})
                    elif key == "top_values":
                        row[key] = [tuple(v) for v in value]
                    elif key == "row_lengths":
                        row.update({f"row_lengths_{dim}_{q}": v for dim, r in value.items()
                                    for q, v in r.items()})
                    else:
                        row[key] = value if not isinstance(value, list) else tuple(value)
                rows.append(row)
    return pd.DataFrame(rows).set_index(["scope", "set", "feature"])
