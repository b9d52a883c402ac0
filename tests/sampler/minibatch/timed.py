"""A small graph with node and edge times, for cut-offs in mini-batches: items that
appear over time and links between them (with hubs), and a spec whose ops join."""
import numpy as np

SCHEMA = """
node_sets {
  key: "item"
  value {
    features { key: "x" value { dtype: DT_FLOAT shape { dim { size: 2 } } } }
    metadata { filename: "items.csv" }
  }
}
node_sets { key: "tag" value { metadata { filename: "tags.csv" } } }
edge_sets {
  key: "links"
  value { source: "item" target: "item" metadata { filename: "links.csv" } }
}
edge_sets {
  key: "tagged"
  value { source: "item" target: "tag" metadata { filename: "tagged.csv" } }
}
"""
SPEC = """
seed_op { op_name: "seed" node_set_name: "item" }
sampling_ops { op_name: "a" input_op_names: "seed" edge_set_name: "links"
               sample_size: 3 strategy: RANDOM_UNIFORM }
sampling_ops { op_name: "b" input_op_names: "a" edge_set_name: "links"
               sample_size: 2 strategy: LATEST_K }
sampling_ops { op_name: "c" input_op_names: ["seed", "b"] edge_set_name: "tagged"
               sample_size: 2 strategy: RANDOM_UNIFORM }
"""


def timed_graph(folder):
    """(graph folder, spec path, times_of(edge set, positions, graph) -> effective times)."""
    rng = np.random.default_rng(5)
    n_items, n_tags = 60, 8
    (folder / "graph_schema.pbtxt").write_text(SCHEMA)
    (folder / "spec.pbtxt").write_text(SPEC)
    item_times = rng.integers(0, 60, n_items)
    rows = ["id,timestamp,x"] + [f"i{i:03d},{item_times[i]},{rng.random():.3f} {i % 3}"
                                 for i in range(n_items)]
    (folder / "items.csv").write_text("\n".join(rows) + "\n")
    (folder / "tags.csv").write_text("id\n" + "".join(f"t{j}\n" for j in range(n_tags)))
    links = ["source,target,timestamp"]
    for _ in range(600):
        s = int(rng.integers(0, n_items)) if rng.random() < 0.7 else int(rng.integers(0, 3))
        links.append(f"i{s:03d},i{int(rng.integers(0, n_items)):03d},"
                     f"{int(rng.integers(0, 100))}")
    (folder / "links.csv").write_text("\n".join(links) + "\n")
    tagged = ["source,target,timestamp"] + [
        f"i{int(rng.integers(0, n_items)):03d},t{int(rng.integers(0, n_tags))},"
        f"{int(rng.integers(0, 100))}" for _ in range(200)]
    (folder / "tagged.csv").write_text("\n".join(tagged) + "\n")

    def times_of(edge_set, positions, graph):
        return graph._memory.adjacency[edge_set].times[positions]

    return str(folder), str(folder / "spec.pbtxt"), times_of
