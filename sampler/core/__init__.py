"""The pure numpy core every engine shares: no Beam, no TensorFlow, no I/O.

In the order data flows:
  buckets.py     which node bucket an id, which output shard a sample belongs to;
                 batches cut into one part per bucket
  pieces.py      what flows between steps: Requests (sample, node), EdgePiece,
                 SeedPiece, NodeFeatures, all dictionary-encoded numpy columns
  node_table.py  one bucket's node table; features of reached nodes, once per shard
  adjacency.py   one bucket's CSR adjacency in canonical order
  long_rows.py   rows of more than chunk_edges edges: cut into chunks, sampled per
                 chunk, the k best candidates merged (exact for every strategy)
  hubs.py        the Beam pipeline's hubs: found per bucket, their edges and requests
                 routed to chunk elements
  temporal.py    effective edge times; a cut-off as an eligible prefix of a row
  seeds.py       seed rows -> samples; seeds joined with their node set
  negatives.py   link seeds: negative pairs drawn per positive
  pairs.py       link seeds: pairs numbered, each a sample of two requests
  rng.py         counter-based random streams: a hash of (seed, op, sample, node, i)
  strategies.py  TOP_K, RANDOM_UNIFORM, RANDOM_WEIGHTED, LATEST_K over a CSR, vectorized
  hop.py         one op on one bucket, its output cut for the next steps
  induced.py     --edge-aggregation node: every edge among a subgraph's nodes
  assemble.py    a shard's pieces -> subgraphs in canonical order (arrays)
  stats.py       the run's counts, mergeable in any order
"""
