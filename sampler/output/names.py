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
