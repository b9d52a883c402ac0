"""A PyTorch Geometric `HeteroData` or `Data` as an ImportedGraph (unigraph.importers.arrays).

Read through PyG's own accessors: `node_types` and `edge_types`, each store's
`num_nodes`, `node_attrs()` and `edge_attrs()`, `edge_index`. A `Data` is one node set
`nodes` and one edge set `edges`. Tensors become numpy arrays without a copy where they
are on the CPU already (`Tensor.numpy()`). This module imports neither torch nor PyG:
it reads the object it is given.
"""
from __future__ import annotations

import numpy as np

from unigraph.errors import SchemaError
from unigraph.importers.arrays import EdgeArrays, NodeArrays, import_arrays
from unigraph.importers.graph import ImportedGraph

EDGE_INDEX = "edge_index"


def is_pyg(data) -> bool:
    """Whether `data` is a PyG Data or HeteroData (told without importing PyG)."""
    return any(cls.__module__.startswith("torch_geometric.data")
               and cls.__name__ in ("Data", "HeteroData") for cls in type(data).__mro__)


def _numpy(value) -> np.ndarray:
    if hasattr(value, "detach"):
        value = value.detach()
        if getattr(value, "is_sparse", False):
            raise TypeError("sparse")
        if str(value.dtype) == "torch.bfloat16":
            value = value.float()
        return value.cpu().numpy()
    return np.asarray(value)


def from_pyg(data, *, reverse_edges: bool = True) -> ImportedGraph:
    """The ImportedGraph of a PyG `HeteroData` or `Data` (module docstring)."""
    if not is_pyg(data):
        raise SchemaError(f"import_pyg: expected a torch_geometric Data or HeteroData, got "
                          f"{type(data).__name__}")
    homogeneous = type(data).__name__ == "Data"
    origin = type(data).__name__
    node_stores = ([("nodes", data)] if homogeneous
                   else [(t, data[t]) for t in data.node_types])
    edge_stores = ([(("nodes", "edges", "nodes"), data)] if homogeneous
                   else [(t, data[t]) for t in data.edge_types])
    nodes, skipped = {}, []
    for node_type, store in node_stores:
        count = store.num_nodes
        if count is None:
            raise SchemaError(f"{origin}: node type '{node_type}' has no num_nodes and no "
                              f"attribute to count its nodes by")
        attributes = {}
        for key in store.node_attrs():
            if key == EDGE_INDEX or key.startswith("edge_"):
                continue
            try:
                attributes[key] = _numpy(store[key])
            except (TypeError, ValueError):
                skipped.append(f"{node_type}.{key}")
        nodes[node_type] = NodeArrays(int(count), attributes)
    edges = {}
    for edge_type, store in edge_stores:
        if EDGE_INDEX not in store:
            raise SchemaError(f"{origin}: edge type {edge_type} has no edge_index (an adjacency "
                              f"matrix is not read: give edge_index)")
        index = _numpy(store[EDGE_INDEX])
        if index.ndim != 2 or index.shape[0] != 2:
            raise SchemaError(f"{origin}: edge type {edge_type}: edge_index of shape "
                              f"{list(index.shape)}, expected [2, num_edges]")
        attributes = {}
        for key in store.edge_attrs():
            if key == EDGE_INDEX:
                continue
            try:
                attributes[key] = _numpy(store[key])
            except (TypeError, ValueError):
                skipped.append(f"{edge_type}.{key}")
        edges[edge_type] = EdgeArrays(index[0], index[1], attributes)
    graph = import_arrays(origin, nodes, edges, reverse_edges=reverse_edges,
                          homogeneous=homogeneous)
    for name in skipped:
        graph.notes.append(f"{origin}: attribute {name} is not a dense array, left out")
    return graph
