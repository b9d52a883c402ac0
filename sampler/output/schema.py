"""The schema of the sampled graphs, written as graph_schema.pbtxt beside the records.

It is the input schema restricted to the sets the spec reaches (sets it never
reaches are left out, so the schema says which sets the records hold), without
file metadata, plus what the sampler adds: `#id` on every node set, the
`_readout` node set with the `_readout/seed` edge set from the seed, and the
context feature `seed_id` (and `seed_timestamp`, the sample's cut-off, when the seeds
have one: DT_INT64, or DT_FLOAT for float times, as tf.train.Example stores floats
in 32 bits). `tfgnn.parse_example` with a spec made from it
parses every record.
"""
from __future__ import annotations

from google.protobuf import text_format

from sampler.graph_tensor import READOUT_NODE_SET
from sampler.output.names import (ID_FEATURE, LINK_READOUT_EDGE_SETS, READOUT_KEY,
                                  SEED_ID_FEATURE, SEED_TIMESTAMP_FEATURE, SOURCE_ID_FEATURE,
                                  TARGET_ID_FEATURE)
from sampler.plan.plan import LABEL, Plan
from unigraph.protos import graph_schema_pb2 as gs
from unigraph.schema import ID_COLUMNS, SOURCE_COLUMNS, TARGET_COLUMNS


def sampled_schema(schema: gs.GraphSchema, plan: Plan,
                   seed_timestamp_dtype: str | None = None) -> gs.GraphSchema:
    """`seed_timestamp_dtype`: the job's time type ("int64"/"float64") when the samples
    have cut-offs, else None."""
    out = gs.GraphSchema()
    for name in plan.node_sets():
        node_set = out.node_sets[name]
        node_set.CopyFrom(schema.node_sets[name])
        node_set.ClearField("metadata")
        for id_column in ID_COLUMNS:
            if id_column in node_set.features:
                del node_set.features[id_column]
        node_set.features[ID_FEATURE].dtype = gs.DT_STRING
        node_set.features[ID_FEATURE].description = "the node's id in the input graph"
    for name in plan.edge_sets():
        edge_set = out.edge_sets[name]
        edge_set.CopyFrom(schema.edge_sets[name])
        edge_set.ClearField("metadata")
    if plan.link:
        _link_readout(out, schema, plan)
    else:
        out.node_sets[READOUT_NODE_SET].description = "one node per subgraph: the readout target"
        readout = out.edge_sets[f"{READOUT_NODE_SET}/{READOUT_KEY}"]
        readout.source = plan.seed_set
        readout.target = READOUT_NODE_SET
        readout.description = "from the seed (node 0 of the seed node set) to _readout"
        seed_id = out.context.features[SEED_ID_FEATURE]
        seed_id.dtype = gs.DT_STRING
        seed_id.description = "the id of the subgraph's seed node"
    if seed_timestamp_dtype is not None:
        seed_time = out.context.features[SEED_TIMESTAMP_FEATURE]
        seed_time.dtype = gs.DT_INT64 if seed_timestamp_dtype == "int64" else gs.DT_FLOAT
        seed_time.description = ("the sample's time cut-off: no edge or node in the "
                                 "subgraph is later")
    out.info.graph_type = gs.SUBGRAPH
    out.info.root_set.append(plan.seed_set)
    return out


def schema_text(schema: gs.GraphSchema) -> str:
    return text_format.MessageToString(schema)


def _link_readout(out: gs.GraphSchema, schema: gs.GraphSchema, plan: Plan) -> None:
    """Link samples: the input's `_readout` node set (its features come from the pairs
    table), `_readout/source` and `_readout/target`, and the pair's ids as context."""
    readout = out.node_sets[READOUT_NODE_SET]
    readout.CopyFrom(schema.node_sets[READOUT_NODE_SET])
    for column in SOURCE_COLUMNS + TARGET_COLUMNS:  # the pair's ends are the context's
        if column in readout.features:
            del readout.features[column]
    readout.description = "one node per subgraph: the pair, with the pairs table's features"
    if plan.negatives and LABEL not in readout.features:
        readout.features[LABEL].dtype = gs.DT_INT64
    if plan.negatives:
        readout.features[LABEL].description = "1: a pair of the pairs table; 0: a negative"
    for name, which in zip(LINK_READOUT_EDGE_SETS, ("source (node 0)", "target (node 1, or "
                                                    "node 0 when it is the source)")):
        edge_set = out.edge_sets[name]
        edge_set.source = plan.seed_set
        edge_set.target = READOUT_NODE_SET
        edge_set.description = f"from the pair's {which} of the paired node set to _readout"
    for name, what in ((SOURCE_ID_FEATURE, "source"), (TARGET_ID_FEATURE, "target")):
        feature = out.context.features[name]
        feature.dtype = gs.DT_STRING
        feature.description = f"the id of the pair's {what} node"
