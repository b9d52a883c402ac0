"""unigraph: TF-GNN's graph format (a GraphSchema and one table per node and edge set),
read, checked and written; and graphs of other kinds brought into it.

    import unigraph
    unigraph.import_pyg(data, "graph/")   # a PyG Data or HeteroData as a unigraph folder
    unigraph.import_dgl(g, "graph/")      # a DGL graph (in a Python with DGL)

The importers live in unigraph.importers (docs/import.md); importing this package
imports none of them, nor PyTorch.
"""


def import_pyg(data, folder, **options):
    """Writes a PyG `Data` or `HeteroData` as a unigraph folder: one table per node and
    edge type, graph_schema.pbtxt, a seeds table per mask (`seeds-train.csv`, ...) and a
    starting sampling_spec.pbtxt (unigraph.importers.import_pyg has the options)."""
    from unigraph.importers import import_pyg as run

    return run(data, folder, **options)


def import_dgl(graph, folder, **options):
    """Writes a DGL graph as a unigraph folder, as `import_pyg` does."""
    from unigraph.importers import import_dgl as run

    return run(graph, folder, **options)
