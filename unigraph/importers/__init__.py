"""Bring your own graph: OGB dataset folders, PyG and DGL graphs and plain tables as a
unigraph (docs/import.md).

Every importer builds an `ImportedGraph` (graph.py: a schema whose tables are Arrow
sources, the labelled node set, the splits), which is written as a unigraph folder
(write.py: the tables in any format, the schema, a seeds or pairs table per split and a
starting sampling spec, spec.py) or sampled as it is (`sampler.api.load_graph`).

  ogb.py      an OGB dataset folder as the `ogb` package stores it (node and link
              property prediction, homogeneous and heterogeneous)
  pyg.py      a PyG Data / HeteroData     dgl.py   a DGL graph
  arrays.py   what both frameworks hold (numpy arrays per node and edge type)
  tables.py, infer.py   plain tables without a schema: the schema inferred
  detect.py   which kind of source a path is

PyTorch, PyG and DGL are imported only by pyg.py and dgl.py, when such a graph is given.
"""
from __future__ import annotations

from unigraph.importers.graph import ImportedGraph, Split
from unigraph.importers.spec import DEFAULT_FANOUTS
from unigraph.importers.write import write_graph


def from_object(graph) -> ImportedGraph | None:
    """A graph given in Python as an ImportedGraph: a PyG Data or HeteroData, a DGL graph,
    or an ImportedGraph as it is; None for anything else (a path, say)."""
    from unigraph.importers import dgl, pyg

    if isinstance(graph, ImportedGraph):
        return graph
    if pyg.is_pyg(graph):
        return pyg.from_pyg(graph)
    if dgl.is_dgl(graph):
        return dgl.from_dgl(graph)
    return None


def import_pyg(data, folder: str, *, format: str = "csv", reverse_edges: bool = True,
               fanouts=DEFAULT_FANOUTS) -> list[str]:
    """Writes a PyG `Data` or `HeteroData` as a unigraph folder (tables, schema, a seeds
    table per mask, a starting spec); returns one line per file written."""
    from unigraph.importers.pyg import from_pyg

    return write_graph(from_pyg(data, reverse_edges=reverse_edges), folder, format, fanouts)


def import_dgl(graph, folder: str, *, format: str = "csv", reverse_edges: bool = True,
               fanouts=DEFAULT_FANOUTS) -> list[str]:
    """Writes a DGL graph as a unigraph folder, as `import_pyg` does."""
    from unigraph.importers.dgl import from_dgl

    return write_graph(from_dgl(graph, reverse_edges=reverse_edges), folder, format, fanouts)


__all__ = ["DEFAULT_FANOUTS", "ImportedGraph", "Split", "from_object", "import_dgl", "import_pyg",
           "write_graph"]
