"""The pure numpy core every engine shares: no Beam, no TensorFlow, no I/O.

In the order data flows:
  buckets.py     which node bucket an id, which output shard a sample belongs to;
                 batches cut into one part per bucket
  pieces.py      what flows between steps: Requests (sample, node), EdgePiece,
                 SeedPiece, NodeFeatures, all dictionary-encoded numpy columns
  node_table.py  one bucket's node table; features of reached nodes, once per shard
  adjacency.py   one bucket's CSR adjacency in canonical order
  seeds.py       seed rows -> samples; seeds joined with their node set
  rng.py         counter-based random streams: a hash of (seed, op, sample, node, i)
  strategies.py  TOP_K, RANDOM_UNIFORM, RANDOM_WEIGHTED over a CSR, vectorized
  hop.py         one op on one bucket, its output cut for the next steps
  assemble.py    a shard's pieces -> subgraphs in canonical order (arrays)
  stats.py       the run's counts, mergeable in any order
"""
