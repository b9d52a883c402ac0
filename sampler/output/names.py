"""Names the sampler's output adds to every subgraph (DESIGN.md section 3, "Output").

One home for them, so the writer (assembly, output schema) and the readers
(training input, sample-check) cannot drift apart.
"""
from sampler.graph_tensor import READOUT_NODE_SET

ID_FEATURE = "#id"            # nodes/<set>.#id: the node's id in the input graph
SEED_ID_FEATURE = "seed_id"   # context/seed_id: the seed's id
READOUT_KEY = "seed"
READOUT_EDGE_SET = f"{READOUT_NODE_SET}/{READOUT_KEY}"  # from the seed (node 0) to _readout
