"""The in-memory engine: the same job as sampler.beam, without Beam, for graphs that
fit one machine; it writes the same bytes.

  graph.py   every table the job reads, once, into interned ids, node tables and one
             CSR per edge set (GraphInMemory), and the loaded size
  engine.py  seeds joined, then worker processes (forked, sharing the graph) write
             whole shards, a chunk of samples at a time, through the core's steps
"""
