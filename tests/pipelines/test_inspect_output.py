"""`sample-inspect` summarizes one decoded record."""
import numpy as np

from pipelines import inspect_output
from sampler.graph_tensor import (Adjacency, Context, EdgeSet, GraphTensor, NodeSet, add_readout,
                                  encode_example)
from unigraph import tfrecord
from unigraph.schema import parse_schema_text

SCHEMA = """
node_sets { key: "p" value { features { key: "#id" value { dtype: DT_STRING } }
                             features { key: "x" value { dtype: DT_FLOAT shape { dim { size: 2 } } } } } }
node_sets { key: "_readout" value {} }
edge_sets { key: "pp" value { source: "p" target: "p" } }
edge_sets { key: "_readout/seed" value { source: "p" target: "_readout" } }
context { features { key: "seed_id" value { dtype: DT_STRING } } }
"""


def test_summary_names_ids_edges_and_feature_shapes(tmp_path, capsys):
    graph = GraphTensor.from_pieces(
        context=Context.from_fields(features={"seed_id": np.array([b"a"], object)}, sizes=[1]),
        node_sets={"p": NodeSet.from_fields(sizes=[2], features={
            "#id": np.array([b"a", b"b"], object), "x": np.zeros((2, 2), np.float32)})},
        edge_sets={"pp": EdgeSet.from_fields(sizes=[1], adjacency=Adjacency.from_indices(
            source=("p", [0]), target=("p", [1])))})
    graph = add_readout(graph, "seed", "p", [0])
    (tmp_path / "graph_schema.pbtxt").write_text(SCHEMA)
    parse_schema_text(SCHEMA, "check")
    with open(tmp_path / "samples-00000-of-00001.tfrecord", "wb") as f:
        f.write(tfrecord.encode_record(encode_example(graph)))
    assert inspect_output.main([str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "subgraph of seed 'a'" in out
    assert "nodes p: 2 [a, b]; features: x [2, 2] float32" in out
    assert "edges pp (p -> p): 1 [a->b]" in out
    assert inspect_output.main([str(tmp_path), "--index", "5"]) == 2
    assert "has 1 record(s), no record #5" in capsys.readouterr().err
