"""Train a DGL GNN on blocks: the sampler's mini-batches as dgl.dataloading hands them out.

    .cache/dgl/bin/python examples/train_dgl.py --graph G/ --spec spec.pbtxt --label labels

Runs in DGL's own virtualenv (`make dgl`: DGL 2.1.0 with the torch it needs), with this
project on PYTHONPATH (`PYTHONPATH=. .cache/dgl/bin/python examples/train_dgl.py ...`).
`sampler.dgl.DataLoader` samples mini-batches of the seed set (each node of a hop once
per batch) and hands out (input_nodes, output_nodes, blocks), one block per hop of the
spec; a heterogeneous GraphSAGE (dgl.nn.HeteroGraphConv of SAGEConv) reads one block
per layer, the node features from the first block's sources, the labels from the last
block's destinations. Seeds are held out by a hash of their ids, as
examples/train_pyg.py holds them out; it reports held-out accuracy and seconds per epoch.
"""
from __future__ import annotations

import argparse
import hashlib
import sys
import time

import numpy as np
import torch
from dgl.nn import HeteroGraphConv, SAGEConv

from sampler import api
from sampler.dgl import DataLoader


def held_out(keys: list[str], fraction: float) -> np.ndarray:
    buckets = [int.from_bytes(hashlib.blake2b(k.encode(), digest_size=8).digest(), "little")
               % 10_000 for k in keys]
    return np.array(buckets) < round(fraction * 10_000)


class BlockSAGE(torch.nn.Module):
    def __init__(self, node_types, edge_types, layers: int, hidden: int, out: int):
        super().__init__()
        self.inputs = torch.nn.ModuleDict({t: torch.nn.LazyLinear(hidden) for t in node_types})
        self.convs = torch.nn.ModuleList(
            HeteroGraphConv({e: SAGEConv(hidden, hidden, "mean") for _, e, _ in edge_types},
                            aggregate="mean") for _ in range(layers))
        self.out = torch.nn.Linear(hidden, out)

    def forward(self, blocks, features: dict, seed_set: str):
        h = {t: self.inputs[t](x) for t, x in features.items()}
        for conv, block in zip(self.convs, blocks):
            dst = {t: v[:block.num_dst_nodes(t)] for t, v in h.items()}
            out = conv(block, (h, dst))
            h = {**dst, **{t: v.relu() for t, v in out.items()}}
        return self.out(h[seed_set])


def inputs(block, scale: dict) -> dict:
    """Each node type's input: its features concatenated and standardized, else 1."""
    features = {}
    for t in block.srctypes:
        data = block.srcnodes[t].data
        columns = [data[k].float().reshape(block.num_src_nodes(t), -1) for k in sorted(data)
                   if k != "_ID"]
        if columns:
            x = torch.cat(columns, dim=1)
            mean, std = scale.setdefault(t, (x.mean(0), x.std(0).clamp_min(1e-6)))
            features[t] = (x - mean) / std
        else:
            features[t] = torch.ones(block.num_src_nodes(t), 1)
    return features


def train(graph_path: str, spec: str, label: str, *, epochs: int = 3, hidden: int = 32,
          batch_size: int = 32, learning_rate: float = 0.01, validation_fraction: float = 0.25,
          num_workers: int = 0, seed: int = 0, log=print) -> dict:
    torch.manual_seed(seed)
    graph = api.load_graph(graph_path, spec)
    ids = graph.node_ids()
    test = held_out([i.decode() for i in ids.tolist()], validation_fraction)
    seed_set = graph.seed_set
    train_loader = DataLoader(graph, ids[~test], batch_size=batch_size, shuffle=True,
                              num_workers=num_workers, seed=seed, label=label)
    test_loader = DataLoader(graph, ids[test], batch_size=256, seed=seed + 1, label=label)
    scale: dict = {}
    _, _, blocks = next(iter(train_loader))
    features = inputs(blocks[0], scale)
    labels = blocks[-1].dstnodes[seed_set].data[label]
    classes = int(labels.max()) + 1
    for _, _, more in test_loader:  # classes the first batch may not show
        classes = max(classes, int(more[-1].dstnodes[seed_set].data[label].max()) + 1)
    model = BlockSAGE(list(features), blocks[0].canonical_etypes, len(blocks), hidden, classes)
    with torch.no_grad():
        model(blocks, features, seed_set)
    optimizer = torch.optim.AdamW(model.parameters(), lr=learning_rate)
    loss_fn = torch.nn.CrossEntropyLoss()
    epoch_seconds = []
    train_loader.set_epoch(0)
    for epoch in range(epochs):
        started, total, count = time.perf_counter(), 0.0, 0
        model.train()
        for _, _, blocks in train_loader:
            target = blocks[-1].dstnodes[seed_set].data[label]
            optimizer.zero_grad()
            loss = loss_fn(model(blocks, inputs(blocks[0], scale), seed_set), target)
            loss.backward()
            optimizer.step()
            total += float(loss.detach()) * len(target)
            count += len(target)
        epoch_seconds.append(time.perf_counter() - started)
        log(f"epoch {epoch + 1}/{epochs}: loss {total / count:.4f}, {epoch_seconds[-1]:.2f} s")
    model.eval()
    correct = seen = 0
    with torch.no_grad():
        for _, _, blocks in test_loader:
            target = blocks[-1].dstnodes[seed_set].data[label]
            correct += int((model(blocks, inputs(blocks[0], scale), seed_set).argmax(-1)
                            == target).sum())
            seen += len(target)
    result = {"accuracy": correct / seen, "held_out_count": seen,
              "epoch_seconds": epoch_seconds}
    log(f"held-out: accuracy {result['accuracy']:.4f} on {seen} seeds; "
        f"{np.mean(epoch_seconds):.2f} s per epoch")
    return result


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--graph", required=True, help="a schema's folder or a graph store")
    parser.add_argument("--spec", required=True)
    parser.add_argument("--label", required=True, help="the seed set's integer label feature")
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--learning-rate", type=float, default=0.01)
    parser.add_argument("--workers", type=int, default=0)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    train(args.graph, args.spec, args.label, epochs=args.epochs, batch_size=args.batch_size,
          learning_rate=args.learning_rate, num_workers=args.workers, seed=args.seed)
    return 0


if __name__ == "__main__":
    sys.exit(main())
