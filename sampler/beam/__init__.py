"""The Beam engine: the job as a pipeline, one module per stage, each a thin PTransform
around a pure function of sampler.core or sampler.output.

  tables.py    NodeTable/<set>, Adjacency/<set>, SeedIds: per-bucket indexes
  seeds.py     Seeds: seeds joined with the seed node set
  hops.py      Hop/<op>: one sampling op
  nodes.py     Nodes/<set>: features of the reached nodes
  assemble.py  Assemble: one file per output shard
  report.py    Report: the stages' counts merged and written
  pipeline.py  SampleSubgraphs: the stages connected, in the order data flows
  runner.py    the runner and options a job runs with
  tagged.py    a step's results of several kinds on one output, split by kind

Every element crosses workers through unigraph.beam.coder (raw arrays, no pickle),
which importing this package makes Beam's fallback coder.
"""
from unigraph.beam.coder import use_element_coder

use_element_coder()
