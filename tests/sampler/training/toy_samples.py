"""A small `sample`-shaped output folder with a planted label, built in memory.

For tests and a quick try of `train` without running the Beam pipeline. The
records follow the output encoding exactly (docs/architecture.md): `#id` on
every node set, the seed as node 0 of `paper`, `_readout` and `_readout/seed`,
context `seed_id`; the schema is the sampler's own `sampled_schema`.

The planted task: paper features are i.i.d. normal noise and
    label(p) = argmax_c  sum over papers q that p cites of  feat_q[c],
so a paper's own features say nothing about its label while the papers it
cites decide it. Each subgraph holds its seed, every paper the seed cites (so
the label is computable from the subgraph), and the seed's authors, a node set
without features.
"""
from __future__ import annotations

import os

import numpy as np

from sampler.graph_tensor import (Adjacency, Context, EdgeSet, GraphTensor, NodeSet,
                                  add_readout, encode_example)
from sampler.output.files import SCHEMA_FILE, write_records, write_text
from sampler.output.schema import sampled_schema, schema_text
from sampler.plan import sampling_spec_pb2 as ss
from sampler.plan.plan import Plan, PlannedOp
from unigraph.protos import graph_schema_pb2 as gs

FEATURE = "feat"
LABEL = "labels"


def input_schema(num_classes: int) -> gs.GraphSchema:
    """The (unsampled) graph: papers with features and labels, featureless authors."""
    schema = gs.GraphSchema()
    paper = schema.node_sets["paper"]
    paper.features[FEATURE].dtype = gs.DT_FLOAT
    paper.features[FEATURE].shape.dim.add().size = num_classes
    paper.features[LABEL].dtype = gs.DT_INT64
    paper.features[LABEL].shape.dim.add().size = 1
    schema.node_sets["author"].SetInParent()
    schema.edge_sets["cites"].source = "paper"
    schema.edge_sets["cites"].target = "paper"
    schema.edge_sets["written"].source = "paper"
    schema.edge_sets["written"].target = "author"
    return schema


def plan() -> Plan:
    return Plan("seed", "paper", (
        PlannedOp("seed->paper", ("seed",), "cites", "paper", "paper", 8, ss.RANDOM_UNIFORM),
        PlannedOp("paper->author", ("seed",), "written", "paper", "author", 4,
                  ss.RANDOM_UNIFORM)))


def planted_labels(features: np.ndarray, cites_source: np.ndarray,
                   cites_target: np.ndarray) -> np.ndarray:
    """label(p) = argmax_c sum_{p cites q} features[q, c] (ties: the lowest class)."""
    sums = np.zeros_like(features, dtype=np.float64)
    np.add.at(sums, cites_source, features[cites_target])
    return sums.argmax(axis=1).astype(np.int64)


def planted_graphs(num_papers: int = 300, num_classes: int = 4, max_cites: int = 4,
                   num_authors: int = 50, seed: int = 0) -> tuple[gs.GraphSchema, list]:
    """(sampled schema, one GraphTensor per paper as seed)."""
    rng = np.random.default_rng(seed)
    features = rng.normal(size=(num_papers, num_classes)).astype(np.float32)
    out_degree = rng.integers(1, max_cites + 1, size=num_papers)
    cites_source = np.repeat(np.arange(num_papers), out_degree)
    # Distinct cited papers, never the citing paper itself.
    cites_target = np.concatenate([
        rng.choice(np.delete(np.arange(num_papers), p), size=d, replace=False)
        for p, d in enumerate(out_degree)])
    labels = planted_labels(features, cites_source, cites_target)
    authors_of = [rng.choice(num_authors, size=rng.integers(1, 3), replace=False)
                  for _ in range(num_papers)]
    paper_ids = np.array([b"p%05d" % i for i in range(num_papers)], dtype=object)
    author_ids = np.array([b"a%04d" % i for i in range(num_authors)], dtype=object)

    graphs = []
    for p in range(num_papers):
        cited = np.sort(cites_target[cites_source == p])
        papers = np.concatenate([[p], cited])                 # seed first, then by id
        authors = np.sort(authors_of[p])
        graph = GraphTensor.from_pieces(
            context=Context.from_fields(features={"seed_id": paper_ids[[p]]}),
            node_sets={
                "paper": NodeSet.from_fields(sizes=[len(papers)], features={
                    "#id": paper_ids[papers], FEATURE: features[papers],
                    LABEL: labels[papers].reshape(-1, 1)}),
                "author": NodeSet.from_fields(sizes=[len(authors)],
                                              features={"#id": author_ids[authors]})},
            edge_sets={
                "cites": EdgeSet.from_fields(sizes=[len(cited)], adjacency=Adjacency.from_indices(
                    source=("paper", np.zeros(len(cited), np.int64)),
                    target=("paper", np.arange(1, len(papers))))),
                "written": EdgeSet.from_fields(
                    sizes=[len(authors)], adjacency=Adjacency.from_indices(
                        source=("paper", np.zeros(len(authors), np.int64)),
                        target=("author", np.arange(len(authors)))))})
        graphs.append(add_readout(graph, "seed", "paper", [0]))
    return sampled_schema(input_schema(num_classes), plan()), graphs


def write_samples(folder: str, schema: gs.GraphSchema, records: list[bytes],
                  num_shards: int = 2) -> list[str]:
    """Writes records round-robin into shards plus graph_schema.pbtxt; returns the shards."""
    os.makedirs(folder, exist_ok=True)
    write_text(os.path.join(folder, SCHEMA_FILE), schema_text(schema))
    files = []
    for shard in range(num_shards):
        path = os.path.join(folder, f"samples-{shard:05d}-of-{num_shards:05d}.tfrecord")
        write_records(path, records[shard::num_shards])
        files.append(path)
    return files


def write_planted_samples(folder: str, *, num_shards: int = 2, **kwargs) -> list[str]:
    """A planted output folder (see `planted_graphs` for the knobs); returns the shards."""
    schema, graphs = planted_graphs(**kwargs)
    return write_samples(folder, schema, [encode_example(g, schema) for g in graphs], num_shards)
