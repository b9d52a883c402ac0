"""A training loop's sampling over a graph, for tests/sampler/store/test_memory_cap.py:

    python -m tests.sampler.store.api_job GRAPH SPEC SEEDS OUT [--torch]

loads GRAPH (a store or tables) with sampler.api (two threads), takes every id of the
SEEDS Parquet table (column `id`) once through `graph.batches` (batches of 64, shuffled
with seed 7, two batches prefetched), encodes every subgraph (`api.to_example`) into
one digest and, with --torch, turns every batch into PyG HeteroData
(`sampler.torch.to_hetero_data` with `Vocabulary.from_graph`, the loader's layout)
and counts its nodes, then takes the same seeds through the merged mini-batch loader
(`sampler.torch.NeighborLoader`, batches of 64, two forked workers) into a second
digest of every batch's node ids and features. Writes {"subgraphs", "digest",
"torch_nodes", "loader_batches", "loader_digest"} to OUT.
"""
import hashlib
import json
import sys


def main(argv):
    graph_path, spec, seeds, out = argv[:4]
    use_torch = "--torch" in argv[4:]
    import pyarrow.parquet as pq

    from sampler import api

    ids = pq.read_table(seeds).column("id").to_pylist()
    graph = api.load_graph(graph_path, spec, threads=2)
    digest, count, nodes = hashlib.sha256(), 0, 0
    if use_torch:
        from sampler.torch import Vocabulary, to_hetero_data

        vocabulary = Vocabulary.from_graph(graph)  # n_id: positions in the node sets' ids
    for batch in graph.batches(ids, batch_size=64, seed=7, prefetch=2):
        for subgraph in batch:
            digest.update(api.to_example(subgraph))
        count += len(batch)
        if use_torch:
            data = to_hetero_data(batch, vocabulary=vocabulary)
            nodes += sum(int(store.num_nodes) for store in data.node_stores)
    result = {"subgraphs": count, "digest": digest.hexdigest(), "torch_nodes": nodes}
    if use_torch:
        from sampler.torch import NeighborLoader

        loader_digest, batches = hashlib.sha256(), 0
        for data in NeighborLoader(graph, ids, batch_size=64, shuffle=True, num_workers=2,
                                   seed=7):
            for node_type in sorted(data.node_types):
                loader_digest.update(data[node_type].n_id.numpy().tobytes())
                if "x" in data[node_type]:
                    loader_digest.update(data[node_type].x.numpy().tobytes())
            batches += 1
        result.update(loader_batches=batches, loader_digest=loader_digest.hexdigest())
    with open(out, "w") as f:
        json.dump(result, f)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
