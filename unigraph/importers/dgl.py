"""A DGL graph (`DGLGraph`, homogeneous or heterogeneous) as an ImportedGraph
(unigraph.importers.arrays).

Read through DGL's own accessors: `ntypes`, `canonical_etypes`, `num_nodes(ntype)`,
`nodes[ntype].data`, `edges(etype=..., order="eid")` (edges in their id order, so an
edge's row is its DGL edge id) and `edges[etype].data`. A graph with one node and one
edge type of DGL's default names (`_N`, `_E`) is one node set `nodes` and one edge set
`edges`. DGL's own bookkeeping attributes (`dgl.NID`, `dgl.EID`: `_ID`) are left out.
This module imports neither torch nor DGL: it reads the object it is given. DGL's
wheels need their own PyTorch (the project's `make dgl` virtualenv); the tests of this
module run there (tests/unigraph/importers/test_dgl_import.py says how).
"""
from __future__ import annotations

import numpy as np

from unigraph.errors import SchemaError
from unigraph.importers.arrays import EdgeArrays, NodeArrays, import_arrays
from unigraph.importers.graph import ImportedGraph

DGL_DEFAULT_NODE_TYPE, DGL_DEFAULT_EDGE_TYPE = "_N", "_E"
DGL_BOOKKEEPING = ("_ID",)


def is_dgl(graph) -> bool:
    """Whether `graph` is a DGLGraph (told without importing DGL)."""
    return any(cls.__module__.startswith("dgl") and cls.__name__ == "DGLGraph"
               for cls in type(graph).__mro__)


def _numpy(value) -> np.ndarray:
    return value.detach().cpu().numpy() if hasattr(value, "detach") else np.asarray(value)


def _attributes(frame) -> dict[str, np.ndarray]:
    return {key: _numpy(value) for key, value in frame.items() if key not in DGL_BOOKKEEPING}


def from_dgl(graph, *, reverse_edges: bool = True) -> ImportedGraph:
    """The ImportedGraph of a DGLGraph (module docstring)."""
    if not is_dgl(graph):
        raise SchemaError(f"import_dgl: expected a DGLGraph, got {type(graph).__name__}")
    edge_types = list(graph.canonical_etypes)
    homogeneous = (list(graph.ntypes) == [DGL_DEFAULT_NODE_TYPE] and len(edge_types) == 1
                   and edge_types[0][1] == DGL_DEFAULT_EDGE_TYPE)
    nodes = {node_type: NodeArrays(int(graph.num_nodes(node_type)),
                                   _attributes(graph.nodes[node_type].data))
             for node_type in graph.ntypes}
    edges = {}
    for edge_type in edge_types:
        sources, targets = graph.edges(etype=edge_type, order="eid")
        edges[tuple(edge_type)] = EdgeArrays(_numpy(sources), _numpy(targets),
                                             _attributes(graph.edges[edge_type].data))
    return import_arrays("DGLGraph", nodes, edges, reverse_edges=reverse_edges,
                         homogeneous=homogeneous)
