"""Names the sampler's output adds to every subgraph (docs/architecture.md, "The output
contract").

One home for them, so the writers (encoder, output schema) and the readers
(training input, sample-check) cannot drift apart.
"""
from sampler.graph_tensor.readout_structure import READOUT_NODE_SET

ID_FEATURE = "#id"            # nodes/<set>.#id: the node's id in the input graph
SEED_ID_FEATURE = "seed_id"   # context/seed_id: the seed's id
SEED_TIMESTAMP_FEATURE = "seed_timestamp"  # context/seed_timestamp: the sample's cut-off
READOUT_KEY = "seed"
READOUT_EDGE_SET = f"{READOUT_NODE_SET}/{READOUT_KEY}"  # from the seed (node 0) to _readout

# Link samples (symmetric_link_seed_op), as TF-GNN's link sampler lays them out: edge
# sets from the pair's source (node 0) and target (node 1, or 0 when it is the source)
# to `_readout`, which carries the pair's features; the context names both ends.
SOURCE_ID_FEATURE = "source_id"  # context/source_id: the pair's source id
TARGET_ID_FEATURE = "target_id"  # context/target_id: the pair's target id
LINK_READOUT_KEYS = ("source", "target")
LINK_READOUT_EDGE_SETS = tuple(f"{READOUT_NODE_SET}/{key}" for key in LINK_READOUT_KEYS)
