"""A planted link-prediction task: `examples/link_tiny` and the link training test.

    python -m pipelines.tools.planted_link examples/link_tiny

Users belong to hidden communities and follow only users of their own community.
Half of the users show their community in their features (a one-hot block); the
others show noise only. The pairs to predict join two users of the second kind:
label 1 for a follow edge that exists (the sampler leaves it out of the pair's
subgraph), label 0 for two users of different communities. So a model that sees
only the two endpoints' own features can do no better than chance (ROC AUC 0.5),
while a GNN can read each endpoint's community off its neighbours.
"""
from __future__ import annotations

import os
import sys

import numpy as np

SCHEMA = """\
# A planted link-prediction graph (pipelines/tools/planted_link.py): TF-GNN's link layout.
node_sets {
  key: "user"
  value {
    features { key: "x" value { dtype: DT_FLOAT shape { dim { size: %(width)d } } } }
    metadata { filename: "users.csv" }
  }
}
node_sets {
  key: "_readout"
  value { features { key: "label" value { dtype: DT_INT64 } } }
}
edge_sets {
  key: "follows"
  value { source: "user" target: "user" metadata { filename: "follows.csv" } }
}
edge_sets {
  key: "followed_by"
  value {
    source: "user" target: "user"
    metadata { filename: "follows.csv" extra { key: "edge_type" value: "reversed" } }
  }
}
edge_sets { key: "_readout/source" value { source: "user" target: "_readout" } }
edge_sets { key: "_readout/target" value { source: "user" target: "_readout" } }
"""

SPEC = """\
symmetric_link_seed_op { op_name: "seed" }
sampling_ops { op_name: "out" input_op_names: "seed" edge_set_name: "follows"
               sample_size: 8 strategy: RANDOM_UNIFORM }
sampling_ops { op_name: "in" input_op_names: "seed" edge_set_name: "followed_by"
               sample_size: 8 strategy: RANDOM_UNIFORM }
"""


def write_planted_link_graph(folder: str, *, communities: int = 6, per_community: int = 40,
                             follows: int = 6, pairs: int = 400, noise: int = 2,
                             seed: int = 0) -> None:
    """Writes graph_schema.pbtxt, sampling_spec.pbtxt, users.csv, follows.csv, pairs.csv."""
    rng = np.random.default_rng(seed)
    n = communities * per_community
    community = np.repeat(np.arange(communities), per_community)
    shows = rng.random(n) < 0.5
    width = communities + noise
    x = np.zeros((n, width))
    x[shows, community[shows]] = 1.0
    x[:, communities:] = rng.normal(size=(n, noise))
    x[~shows, :communities] = rng.normal(scale=0.1, size=((~shows).sum(), communities))
    edges = set()
    for u in range(n):
        peers = np.flatnonzero(community == community[u])
        for v in rng.choice(peers[peers != u], follows, replace=False):
            edges.add((u, int(v)))
    hidden = np.flatnonzero(~shows)
    positives = [(u, v) for u, v in sorted(edges) if not shows[u] and not shows[v]]
    chosen = [positives[i] for i in rng.permutation(len(positives))[:pairs // 2]]
    negatives = []
    while len(negatives) < len(chosen):
        u, v = rng.choice(hidden, 2)
        if community[u] != community[v]:
            negatives.append((int(u), int(v)))
    os.makedirs(folder, exist_ok=True)
    name = [f"u{i:04d}" for i in range(n)]
    with open(os.path.join(folder, "graph_schema.pbtxt"), "w") as f:
        f.write(SCHEMA % {"width": width})
    with open(os.path.join(folder, "sampling_spec.pbtxt"), "w") as f:
        f.write(SPEC)
    with open(os.path.join(folder, "users.csv"), "w") as f:
        f.write("id,x\n" + "".join(f"{name[i]}," + " ".join(f"{v:.3f}" for v in x[i]) + "\n"
                                   for i in range(n)))
    with open(os.path.join(folder, "follows.csv"), "w") as f:
        f.write("source,target\n" + "".join(f"{name[u]},{name[v]}\n" for u, v in sorted(edges)))
    rows = [(u, v, 1) for u, v in chosen] + [(u, v, 0) for u, v in negatives]
    with open(os.path.join(folder, "pairs.csv"), "w") as f:
        f.write("source,target,label\n" + "".join(
            f"{name[u]},{name[v]},{label}\n" for u, v, label in sorted(rows)))


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1:
        print("usage: python -m pipelines.tools.planted_link FOLDER", file=sys.stderr)
        return 2
    write_planted_link_graph(argv[0])
    return 0


if __name__ == "__main__":
    sys.exit(main())
