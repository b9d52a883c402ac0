"""A graph whose bytes are in its node features: many table bytes, little sampling work.

One node set `item` with a float32 vector `emb` of `dim` values per node (i.i.d. normal
noise, which no format compresses), one edge set `links` from item to item with
`degree` random targets per node, and a two-hop spec over it. Tables are TFRecord,
TF-GNN's own format, in `shards` files each. Used to put tables several times a Dask
worker's memory limit through the pipeline in a test's time (test_dask_memory.py):
reading, bucketing and shuffling every byte is the work that scales with the tables,
and it is all here, while the row counts (which set the CPU time of the adjacency and
the hops) stay small.
"""
from __future__ import annotations

import os

import numpy as np

from unigraph.columnar.batches import EdgeBatch, NodeBatch
from unigraph.schema import load_schema
from unigraph.tables import seeds_layout, table_layout
from unigraph.tables.writers import write_sharded, write_table

SCHEMA = """\
node_sets {{
  key: "item"
  value {{
    features {{ key: "emb" value {{ dtype: DT_FLOAT shape {{ dim {{ size: {dim} }} }} }} }}
    metadata {{ filename: "item@{shards}.tfrecord" }}
  }}
}}
edge_sets {{
  key: "links"
  value {{ source: "item" target: "item" metadata {{ filename: "links@{shards}.tfrecord" }} }}
}}
"""

SPEC = """\
seed_op { op_name: "seed" node_set_name: "item" }
sampling_ops { op_name: "hop1" input_op_names: ["seed"] edge_set_name: "links"
               sample_size: 4 strategy: RANDOM_UNIFORM }
sampling_ops { op_name: "hop2" input_op_names: ["hop1"] edge_set_name: "links"
               sample_size: 4 strategy: RANDOM_UNIFORM }
"""

CHUNK_ROWS = 4096  # rows generated and written at a time: the generator's memory stays small


def _ids(index: np.ndarray) -> np.ndarray:
    return np.char.add(b"item/", index.astype("S"))


def write_wide_graph(folder: str, *, nodes: int, dim: int, degree: int, shards: int,
                     seeds: int, seed: int = 0) -> dict:
    """Writes the graph, `sampling_spec.pbtxt` and `seeds.csv` (the first `seeds` items)
    into `folder`; returns {"schema", "spec", "seeds", "table_bytes"}."""
    os.makedirs(folder, exist_ok=True)
    schema_path = os.path.join(folder, "graph_schema.pbtxt")
    with open(schema_path, "w", encoding="utf-8") as f:
        f.write(SCHEMA.format(dim=dim, shards=shards))
    spec_path = os.path.join(folder, "sampling_spec.pbtxt")
    with open(spec_path, "w", encoding="utf-8") as f:
        f.write(SPEC)
    loaded = load_schema(schema_path)
    rng = np.random.default_rng(seed)

    def node_batches():
        for lo in range(0, nodes, CHUNK_ROWS):
            index = np.arange(lo, min(nodes, lo + CHUNK_ROWS), dtype=np.int64)
            emb = rng.standard_normal((len(index), dim), dtype=np.float32)
            yield NodeBatch("item", _ids(index), index, {"emb": emb})

    def edge_batches():
        for lo in range(0, nodes, CHUNK_ROWS):
            sources = np.repeat(np.arange(lo, min(nodes, lo + CHUNK_ROWS)), degree)
            targets = rng.integers(0, nodes, len(sources))
            rows = np.arange(lo * degree, lo * degree + len(sources), dtype=np.int64)
            yield EdgeBatch("links", _ids(sources), _ids(targets), rows, None, {})

    def shard_paths(name):
        return [os.path.join(folder, f"{name}-{i:05d}-of-{shards:05d}.tfrecord")
                for i in range(shards)]

    write_sharded(shard_paths("item"), table_layout(loaded, "nodes", "item"), node_batches())
    write_sharded(shard_paths("links"), table_layout(loaded, "edges", "links"), edge_batches())
    seeds_path = os.path.join(folder, "seeds.csv")
    index = np.arange(min(seeds, nodes), dtype=np.int64)
    write_table(seeds_path, seeds_layout(), [NodeBatch("seeds", _ids(index), index, {})])
    table_bytes = sum(os.path.getsize(p) for p in shard_paths("item") + shard_paths("links"))
    return {"schema": schema_path, "spec": spec_path, "seeds": seeds_path,
            "table_bytes": table_bytes}
