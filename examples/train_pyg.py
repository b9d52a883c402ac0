"""Train a PyTorch Geometric GNN on the subgraphs `sample` wrote, or online on mini-batches
(no TensorFlow).

    python examples/train_pyg.py --samples out/ --label labels
    python examples/train_pyg.py --samples out/ --label labels --baseline mlp
    python examples/train_pyg.py --samples out/link --label label      # link samples
    python examples/train_pyg.py --graph G/ --spec spec.pbtxt --label labels --batches merged
    python examples/train_pyg.py --graph G/ --spec spec.pbtxt --label labels --batches disjoint

Online (`--graph`): `sampler.torch.NeighborLoader` samples mini-batches of the seed set
as PyG's NeighborLoader lays them out (`merged`: each node of a hop once per batch;
`disjoint`: each seed's own subgraph, the records' draws), and a heterogeneous
GraphSAGE with one layer per hop of the spec reads them through PyG's `trim_to_layer`
(each layer only the nodes and edges the layers after it need). Seeds are held out by
the same hash of their ids; the result gives held-out accuracy and seconds per epoch
(wall and CPU). Both modes' accuracy and epoch times on the planted task, seeds 0-5,
are measured by `python -m pipelines.bench.training_benchmark` (each of its runs is
this command with `--epochs 8 --batch-size 64 --seed S`, one thread) into
docs/benchmarks/training.json, and shown in docs/minibatches.md (Training).

The folder's records are read with `sampler.torch.SampleDataset` (one HeteroData per
record, reverse edges added so messages reach the seed), batched by PyG's DataLoader
(`Batch`: each record's seed is its node 0, at `ptr[:-1]`), and trained with a
heterogeneous GraphSAGE (`to_hetero`), or `--baseline mlp` on the seed's own features.
Every feature reaches the model: the folder's feature spec (features/, docs/features.md)
turns categories into indices, which the model embeds (`nn.Embedding`, and
`nn.EmbeddingBag` for lists of them) beside the numbers; `--numeric-only` reads the
numbers alone.
A share of the seeds (a pair's two ids for link samples) is held out by a hash of their
ids; node samples report held-out accuracy against the majority class, link samples
held-out ROC AUC against 0.5. Needs the [torch] extra. docs/torch.md walks through it.
"""
from __future__ import annotations

import argparse
import hashlib
import sys
import time

import numpy as np
import torch
import torch_geometric.transforms as T
from torch_geometric.loader import DataLoader
from torch_geometric.nn import HeteroConv, SAGEConv, to_hetero
from torch_geometric.utils import trim_to_layer

from sampler.features import Categorical
from sampler.output.names import LINK_READOUT_EDGE_SETS
from sampler.torch import SampleDataset, Vocabulary


def held_out(keys: list[str], fraction: float) -> np.ndarray:
    """True for the keys of the held-out part: a fixed hash of each, not file order."""
    buckets = [int.from_bytes(hashlib.blake2b(k.encode(), digest_size=8).digest(), "little")
               % 10_000 for k in keys]
    return np.array(buckets) < round(fraction * 10_000)


def load(folder: str, label: str, numeric_only: bool = False):
    """(records as HeteroData with reverse edges, whether they are link samples, the
    key of each record for the held-out split, the feature encoder or None)."""
    dataset = SampleDataset(folder, label=label, vocabulary=Vocabulary(),
                            **({"encoder": None} if numeric_only else {}))
    link = all(name in dataset.schema.edge_sets for name in LINK_READOUT_EDGE_SETS)
    add_reverse = T.ToUndirected()
    records = [add_reverse(data) for data in dataset]
    keys = [f"{d.source_id}\x1f{d.target_id}" if link else d.seed_id for d in records]
    return records, link, keys, dataset.encoder


class FeatureInputs(torch.nn.Module):
    """Each node type's input: its numbers (`x`) beside an embedding of each categorical
    feature (`nn.Embedding`; a list of categories, as indices and offsets, through
    `nn.EmbeddingBag`'s mean). Sizes come from the encoder (vocabulary + 1, or buckets)."""

    def __init__(self, encoder, node_types, dim: int = 8):
        super().__init__()
        self.features = {}
        self.tables = torch.nn.ModuleDict()
        for node_type in node_types:
            for name, feature in (encoder.features(node_type) if encoder else {}).items():
                if not isinstance(feature.kind, Categorical) or feature.kind.layout != "bag":
                    continue
                rows = encoder.num_embeddings(node_type, name)
                key = f"{node_type}__{name}"
                self.tables[key] = (torch.nn.EmbeddingBag(rows, dim, mode="mean")
                                    if feature.ragged else torch.nn.Embedding(rows, dim))
                self.features.setdefault(node_type, []).append((name, key, feature.ragged))

    def forward(self, batch) -> dict:
        inputs = {}
        for node_type in batch.node_types:
            store = batch[node_type]
            parts = [store.x] if "x" in store else []
            for name, key, bag in self.features.get(node_type, ()):
                table = self.tables[key]
                parts.append(table(store[name], store[name + "_offsets"]) if bag
                             else table(store[name].reshape(store.num_nodes, -1)).flatten(1))
            inputs[node_type] = torch.cat(parts, -1)
        return inputs


def standardize(records, train_mask: np.ndarray) -> None:
    """Node features to mean 0, variance 1 by the training part; a node set without
    features gets a constant 1 (its nodes are told apart by their edges only)."""
    types = records[0].node_types
    for node_type in types:
        if "x" not in records[0][node_type]:
            for data in records:
                data[node_type].x = torch.ones(data[node_type].num_nodes, 1)
            continue
        seen = torch.cat([d[node_type].x for d, t in zip(records, train_mask) if t])
        mean, std = seen.mean(0), seen.std(0).clamp_min(1e-6)
        for data in records:
            data[node_type].x = (data[node_type].x - mean) / std


class SAGE(torch.nn.Module):
    def __init__(self, hidden: int, out: int):
        super().__init__()
        self.conv1 = SAGEConv((-1, -1), hidden)
        self.conv2 = SAGEConv((-1, -1), hidden)
        self.out = torch.nn.Linear(hidden, out)

    def forward(self, x, edge_index):
        x = self.conv1(x, edge_index).relu()
        x = self.conv2(x, edge_index).relu()
        return self.out(x)


class MLP(torch.nn.Module):
    def __init__(self, hidden: int, out: int):
        super().__init__()
        self.layers = torch.nn.Sequential(torch.nn.LazyLinear(hidden), torch.nn.ReLU(),
                                          torch.nn.Linear(hidden, hidden), torch.nn.ReLU(),
                                          torch.nn.Linear(hidden, out))

    def forward(self, x):
        return self.layers(x)


def seed_set_of(data, link: bool) -> str:
    if link:
        return next(t for t in data.edge_types if "edge_label_index" in data[t])[0]
    return next(t for t in data.node_types if "batch_size" in data[t])


def roc_auc(scores: np.ndarray, labels: np.ndarray) -> float:
    """The probability that a positive outscores a negative (ties count half)."""
    order = np.argsort(scores, kind="stable")
    ranks = np.empty(len(scores))
    sorted_scores = scores[order]
    # Average ranks over ties.
    _, first, counts = np.unique(sorted_scores, return_index=True, return_counts=True)
    ranks[order] = np.repeat(first + (counts + 1) / 2, counts)
    positives = labels == 1
    n_pos, n_neg = positives.sum(), (~positives).sum()
    return float((ranks[positives].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))


def train(folder: str, label: str, *, baseline: str | None = None, epochs: int = 10,
          hidden: int = 32, batch_size: int = 32, learning_rate: float = 0.01,
          weight_decay: float = 0.0, validation_fraction: float = 0.25, seed: int = 0,
          numeric_only: bool = False, log=print) -> dict:
    torch.manual_seed(seed)
    records, link, keys, encoder = load(folder, label, numeric_only)
    test = held_out(keys, validation_fraction)
    standardize(records, ~test)
    seed_set = seed_set_of(records[0], link)
    train_part = [r for r, t in zip(records, test) if not t]
    test_part = [r for r, t in zip(records, test) if t]
    if link:
        link_type = next(t for t in records[0].edge_types if "edge_label_index" in records[0][t])
        labels = torch.cat([r[link_type].edge_label for r in records])
        out_dim = hidden
    else:
        labels = torch.cat([r[seed_set].y[:1] for r in records])
        out_dim = int(labels.max()) + 1
    log(f"{len(train_part)} subgraphs for training, {len(test_part)} held out; "
        f"{'link samples' if link else f'{out_dim} classes'}; model "
        f"{baseline or 'gnn (to_hetero GraphSAGE)'}")

    if baseline == "mlp":
        model = MLP(hidden, out_dim)
    else:
        # Message passing runs over the edge sets; the pairs' edge type holds labels only.
        node_types, edge_types = records[0].metadata()
        edge_types = [t for t in edge_types if "edge_index" in records[0][t]]
        model = to_hetero(SAGE(hidden, out_dim), (node_types, edge_types), aggr="mean")
    project = torch.nn.Linear(hidden, hidden) if link else None
    inputs = FeatureInputs(encoder, records[0].node_types)
    if inputs.features:
        log("embedded: " + ", ".join(f"{t}.{n}" for t, names in inputs.features.items()
                                     for n, _, _ in names))

    def forward(batch):
        """Logits per subgraph (link: one score per pair)."""
        x_dict = inputs(batch)
        if baseline == "mlp":
            states = model(x_dict[seed_set])
        else:
            states = model(x_dict, batch.edge_index_dict)[seed_set]
        if link:
            ends = batch[link_type].edge_label_index
            source, target = project(states[ends[0]]), project(states[ends[1]])
            return (source * target).sum(-1)
        return states[batch[seed_set].ptr[:-1]]

    def target_of(batch):
        if link:
            return batch[link_type].edge_label.float()
        return batch[seed_set].y[batch[seed_set].ptr[:-1]]

    loss_fn = (torch.nn.BCEWithLogitsLoss() if link else torch.nn.CrossEntropyLoss())
    loader = DataLoader(train_part, batch_size=batch_size, shuffle=True,
                        generator=torch.Generator().manual_seed(seed))
    with torch.no_grad():  # lazy layers take their shapes from a first batch
        forward(next(iter(loader)))
    parameters = (list(model.parameters()) + list(inputs.parameters())
                  + (list(project.parameters()) if project else []))
    optimizer = torch.optim.AdamW(parameters, lr=learning_rate, weight_decay=weight_decay)
    for epoch in range(epochs):
        model.train()
        total = 0.0
        for batch in loader:
            optimizer.zero_grad()
            loss = loss_fn(forward(batch), target_of(batch))
            loss.backward()
            optimizer.step()
            total += float(loss.detach()) * batch.num_graphs
        log(f"epoch {epoch + 1}/{epochs}: loss {total / len(train_part):.4f}")

    model.eval()
    outputs, targets = [], []
    with torch.no_grad():
        for batch in DataLoader(test_part, batch_size=256):
            outputs.append(forward(batch))
            targets.append(target_of(batch))
    output, target = torch.cat(outputs), torch.cat(targets)
    if link:
        result = {"auc": roc_auc(output.numpy(), target.numpy().astype(int)), "chance": 0.5}
        log(f"held-out ({baseline or 'gnn'}): ROC AUC {result['auc']:.4f} on "
            f"{len(test_part)} pairs; chance 0.5")
    else:
        counts = np.bincount(target.numpy(), minlength=out_dim)
        result = {"accuracy": float((output.argmax(-1) == target).float().mean()),
                  "chance": float(counts.max() / counts.sum())}
        log(f"held-out ({baseline or 'gnn'}): accuracy {result['accuracy']:.4f} on "
            f"{len(test_part)} subgraphs; chance (majority class) {result['chance']:.4f}")
    result.update(train_count=len(train_part), held_out_count=len(test_part))
    return result


class TrimmedSAGE(torch.nn.Module):
    """GraphSAGE over a mini-batch's edge types, one layer per hop, each layer reading
    the batch trimmed to what the layers after it need (trim_to_layer). Each layer adds
    to a node's state (h + relu(conv(h))), so what a seed read at the first layer (on
    the planted task, its cited papers' own features) reaches the output as read: the
    later layers' messages come from nodes whose states have absorbed their own
    neighbourhoods, and in a merged batch a cited paper that is also a seed of the batch
    has absorbed its own citations (its label's colour, unrelated to the citing paper's).
    Without the skip the deep model has to undo that mixing and learns more slowly
    (docs/minibatches.md, Training)."""

    def __init__(self, node_types, edge_types, layers: int, hidden: int, out: int):
        super().__init__()
        self.inputs = torch.nn.ModuleDict({t: torch.nn.LazyLinear(hidden) for t in node_types})
        self.convs = torch.nn.ModuleList(
            HeteroConv({t: SAGEConv(hidden, hidden) for t in edge_types}, aggr="mean")
            for _ in range(layers))
        self.out = torch.nn.Linear(hidden, out)

    def forward(self, data, seed_set: str):
        x = {t: self.inputs[t](data[t].x) for t in self.inputs}
        edge_index = data.edge_index_dict
        for i, conv in enumerate(self.convs):
            x, edge_index, _ = trim_to_layer(i, data.num_sampled_nodes_dict,
                                             data.num_sampled_edges_dict, x, edge_index)
            x = {**x, **{t: x[t] + h.relu() for t, h in conv(x, edge_index).items()}}
        return self.out(x[seed_set][:data[seed_set].batch_size])


def with_inputs(data, scale: dict):
    """Every node set an input `x`, standardized by `scale` (a set without features: 1)."""
    for t in data.node_types:
        if "x" in data[t]:
            mean, std = scale[t]
            data[t].x = (data[t].x - mean) / std
        else:
            data[t].x = torch.ones(data[t].num_nodes, 1)
    return data


def train_online(graph_path: str, spec: str, label: str, *, batches: str = "merged",
                 epochs: int = 3, hidden: int = 32, batch_size: int = 64,
                 learning_rate: float = 0.01, validation_fraction: float = 0.25,
                 num_workers: int = 0, seed: int = 0, log=print) -> dict:
    """Trains on mini-batches sampled online (module docstring): held-out accuracy and
    seconds per epoch."""
    from sampler import api
    from sampler.torch import NeighborLoader, to_hetero_data

    torch.manual_seed(seed)
    graph = api.load_graph(graph_path, spec)
    ids = graph.node_ids()
    test = held_out([i.decode() for i in ids.tolist()], validation_fraction)
    disjoint = batches == "disjoint"
    train_loader = NeighborLoader(graph, ids[~test], batch_size=batch_size, shuffle=True,
                                  num_workers=num_workers, disjoint=disjoint, seed=seed,
                                  label=label)
    test_loader = NeighborLoader(graph, ids[test], batch_size=256, num_workers=num_workers,
                                 disjoint=disjoint, seed=seed + 1, label=label)
    seed_set = graph.seed_set
    first = next(iter(train_loader))  # input scale, classes and the model's shapes
    scale = {t: (first[t].x.mean(0), first[t].x.std(0).clamp_min(1e-6))
             for t in first.node_types if "x" in first[t]}
    # Classes: the largest label among many seeds' batch (labels of every node of it).
    classes = int(to_hetero_data(graph.sample_merged(ids[~test][:4096]),
                                 label=label)[seed_set].y.max()) + 1
    edge_types = [t for t in first.edge_types if "edge_index" in first[t]]
    model = TrimmedSAGE(first.node_types, edge_types, len(next(iter(
        first.num_sampled_edges_dict.values()))), hidden, classes)
    with torch.no_grad():
        model(with_inputs(first, scale), seed_set)
    optimizer = torch.optim.AdamW(model.parameters(), lr=learning_rate)
    loss_fn = torch.nn.CrossEntropyLoss()
    log(f"{int((~test).sum())} seeds for training, {int(test.sum())} held out; {classes} "
        f"classes; {batches} mini-batches of {batch_size}; GraphSAGE with trim_to_layer")
    epoch_seconds, epoch_cpu_seconds = [], []
    train_loader.set_epoch(0)
    for epoch in range(epochs):
        model.train()
        started, total, count = time.perf_counter(), 0.0, 0
        cpu_started = time.process_time()  # this process's (the loader's workers' not)
        for data in train_loader:
            data = with_inputs(data, scale)
            size = data[seed_set].batch_size
            optimizer.zero_grad()
            loss = loss_fn(model(data, seed_set), data[seed_set].y[:size])
            loss.backward()
            optimizer.step()
            total += float(loss.detach()) * size
            count += size
        epoch_seconds.append(time.perf_counter() - started)
        epoch_cpu_seconds.append(time.process_time() - cpu_started)
        log(f"epoch {epoch + 1}/{epochs}: loss {total / count:.4f}, "
            f"{epoch_seconds[-1]:.2f} s")
    model.eval()
    correct = seen = 0
    labels = []
    with torch.no_grad():
        for data in test_loader:
            data = with_inputs(data, scale)
            size = data[seed_set].batch_size
            target = data[seed_set].y[:size]
            correct += int((model(data, seed_set).argmax(-1) == target).sum())
            seen += size
            labels.append(target)
    counts = np.bincount(torch.cat(labels).numpy())
    result = {"accuracy": correct / seen, "chance": float(counts.max() / counts.sum()),
              "held_out_count": seen, "epoch_seconds": epoch_seconds,
              "epoch_cpu_seconds": epoch_cpu_seconds, "batches": batches}
    log(f"held-out ({batches} batches): accuracy {result['accuracy']:.4f} on {seen} seeds; "
        f"chance (majority class) {result['chance']:.4f}; "
        f"{np.mean(epoch_seconds):.2f} s per epoch")
    return result


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--samples", help="a `sample` output folder")
    parser.add_argument("--graph", help="train online on this graph (a schema's folder or "
                                        "a graph store) instead, with --spec")
    parser.add_argument("--spec", help="--graph: the sampling spec")
    parser.add_argument("--batches", choices=["merged", "disjoint"], default="merged",
                        help="--graph: mini-batches sampled at once (merged) or per seed")
    parser.add_argument("--workers", type=int, default=0, help="--graph: loader workers")
    parser.add_argument("--label", required=True,
                        help="the seed node set's (or `_readout`'s) integer label feature")
    parser.add_argument("--baseline", choices=["mlp"], help="the seed's own features only")
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--hidden", type=int, default=32)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--learning-rate", type=float, default=0.01)
    parser.add_argument("--weight-decay", type=float, default=0.0, help="AdamW's")
    parser.add_argument("--validation-fraction", type=float, default=0.25)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--numeric-only", action="store_true",
                        help="the numeric features alone (no categories embedded)")
    args = parser.parse_args(argv)
    if args.graph:
        if not args.spec:
            parser.error("--graph needs --spec")
        train_online(args.graph, args.spec, args.label, batches=args.batches,
                     epochs=args.epochs, hidden=args.hidden, batch_size=args.batch_size,
                     learning_rate=args.learning_rate,
                     validation_fraction=args.validation_fraction, num_workers=args.workers,
                     seed=args.seed)
        return 0
    if not args.samples:
        parser.error("give --samples (a folder) or --graph and --spec")
    train(args.samples, args.label, baseline=args.baseline, epochs=args.epochs,
          hidden=args.hidden, batch_size=args.batch_size, learning_rate=args.learning_rate,
          weight_decay=args.weight_decay,
          validation_fraction=args.validation_fraction, seed=args.seed,
          numeric_only=args.numeric_only)
    return 0


if __name__ == "__main__":
    sys.exit(main())
