"""Reading a `sample` output folder back in tests: records per seed, decoded."""
import glob
import json
import os

from sampler.graph_tensor import parse_example
from unigraph.encoding import tfrecord
from unigraph.schema import load_schema


def read_records(folder):
    """Serialized records of every shard, in file order."""
    records = []
    for path in sorted(glob.glob(os.path.join(folder, "samples-*-of-*.tfrecord"))):
        with open(path, "rb") as f:
            records.extend(tfrecord.iter_records(f, path))
    return records


def read_graphs(folder):
    """[(seed id, GraphTensor)] sorted by seed id (stable for duplicated seeds)."""
    schema = load_schema(os.path.join(folder, "graph_schema.pbtxt")).schema
    graphs = [parse_example(schema, r) for r in read_records(folder)]
    return sorted(((g.context["seed_id"][0].decode(), g) for g in graphs), key=lambda x: x[0])


def read_report(folder):
    with open(os.path.join(folder, "sample_report.json")) as f:
        return json.load(f)


def ids(graph, node_set):
    return [i.decode() for i in graph.node_sets[node_set]["#id"]]


def edge_pairs(graph, edge_set):
    """(source id, target id) of every edge, in record order."""
    es = graph.edge_sets[edge_set]
    src, tgt = es.adjacency.node_set_name("source"), es.adjacency.node_set_name("target")
    src_ids, tgt_ids = ids(graph, src), ids(graph, tgt)
    return [(src_ids[s], tgt_ids[t]) for s, t in zip(es.adjacency.indices("source"),
                                                    es.adjacency.indices("target"))]


def run_sample(out, graph, spec, *extra):
    """`sample` into the folder `out` (a path); returns it as a string."""
    from pipelines import sample

    code = sample.main(["--graph", str(graph), "--spec", str(spec), "--output", f"{out}/",
                        "--quiet", *extra])
    assert code == 0
    return str(out)


MIXED_SPEC = """
seed_op { op_name: "seed" node_set_name: "item" }
sampling_ops { op_name: "links" input_op_names: "seed" edge_set_name: "link"
               sample_size: 2 strategy: RANDOM_UNIFORM }
sampling_ops { op_name: "back" input_op_names: ["seed", "links"] edge_set_name: "linked_by"
               sample_size: 1 strategy: RANDOM_UNIFORM }
sampling_ops { op_name: "tags" input_op_names: ["seed", "links"] edge_set_name: "tagged"
               sample_size: 1 strategy: RANDOM_UNIFORM }
"""
