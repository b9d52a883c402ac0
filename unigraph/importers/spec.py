"""The starting sampling spec of an imported graph: hops over every edge set from the seeds.

From the labelled node set (link seeds: the pairs' node set), hop 1 samples every edge
set that starts there; hop h samples, from each node set hop h-1 reached, every edge
set that starts there, its inputs every op of hop h-1 that reached it. Each hop takes
its fan-out (default 10, then 5: PyG's `num_neighbors=[10, 5]`), uniformly at random.
Ops are named `hop<h>/<edge set>`. A TF-GNN SamplingSpec in text format, written with
the schema beside it: a starting point to edit, which `sample` runs as it is.
"""
from __future__ import annotations

from google.protobuf import text_encoding

from unigraph.errors import SchemaError
from unigraph.protos import graph_schema_pb2 as gs
from unigraph.schema import LINK_READOUT_NODE_SET

SPEC_FILE_NAME = "sampling_spec.pbtxt"
DEFAULT_FANOUTS = (10, 5)
SEED_OP = "seed"


def _quoted(text: str) -> str:
    return '"' + text_encoding.CEscape(text, as_utf8=True) + '"'


def hops(schema: gs.GraphSchema, seed_set: str, fanouts=DEFAULT_FANOUTS
         ) -> list[tuple[str, list[str], str, int]]:
    """The ops as (name, input op names, edge set, sample size), in an order that defines
    every input before its use."""
    if not fanouts or any(int(k) < 1 for k in fanouts):
        raise SchemaError(f"fan-outs {list(fanouts)}: give one sample size >= 1 per hop")
    starting: dict[str, list[str]] = {}
    for name, edge_set in sorted(schema.edge_sets.items()):
        if not name.startswith(LINK_READOUT_NODE_SET):
            starting.setdefault(edge_set.source, []).append(name)
    frontier = {seed_set: [SEED_OP]}
    ops = []
    for hop, size in enumerate(fanouts, 1):
        reached: dict[str, list[str]] = {}
        for node_set in sorted(frontier):
            for edge_set in starting.get(node_set, []):
                op = f"hop{hop}/{edge_set}"
                ops.append((op, frontier[node_set], edge_set, int(size)))
                reached.setdefault(schema.edge_sets[edge_set].target, []).append(op)
        frontier = reached
    return ops


def starting_spec(schema: gs.GraphSchema, seed_set: str, link: bool = False,
                  fanouts=DEFAULT_FANOUTS, origin: str = "") -> str:
    """The spec's text (module docstring)."""
    ops = hops(schema, seed_set, fanouts)
    lines = [f"# A starting spec{' for ' + origin if origin else ''}, written by the importer: "
             f"{len(fanouts)} hops over every edge set",
             f"# from node set '{seed_set}', fan-outs {', '.join(str(k) for k in fanouts)}, "
             f"RANDOM_UNIFORM. Edit freely (docs/sampling.md)."]
    if link:
        lines.append(f"symmetric_link_seed_op {{ op_name: {_quoted(SEED_OP)} }}")
    else:
        lines.append(f"seed_op {{ op_name: {_quoted(SEED_OP)} "
                     f"node_set_name: {_quoted(seed_set)} }}")
    for name, inputs, edge_set, size in ops:
        inputs_text = ", ".join(_quoted(i) for i in inputs)
        lines.append(f"sampling_ops {{ op_name: {_quoted(name)} input_op_names: [{inputs_text}]"
                     f"\n               edge_set_name: {_quoted(edge_set)} sample_size: {size} "
                     f"strategy: RANDOM_UNIFORM }}")
    return "\n".join(lines) + "\n"
