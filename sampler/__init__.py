"""The graph sampler: TF-GNN SamplingSpec subgraphs of a unigraph, as GraphTensor records.

The flow, one step per line, with the module that does it (docs/architecture.md
has the diagram and the contract that makes the output byte-identical):

  1. read      unigraph.tables (file -> columnar batch); unigraph.beam.read (Beam sources)
  2. plan      sampler.plan.plan.build_plan: SamplingSpec checked against the schema -> Plan
               (sampler.plan.timing: timestamps to read, cut-offs; plan.builder writes specs)
  3. job       sampler.job.job.SamplingJob: plan + time plan + output + shard and bucket counts
  4. index     sampler.core.node_table, sampler.core.adjacency: per-bucket tables and CSR
  5. seeds     sampler.core.seeds.join_seeds: seed rows -> samples, found or listed missing
               (link seeds: sampler.core.pairs, negatives from sampler.core.negatives);
               a seed's or pair's time cut-off is part of its content and its requests
  6. hop       sampler.core.hop.hop_bucket (strategies.py, rng.py, temporal.py): one op on
               one bucket, each sample's cut-off an eligible prefix of the rows
               (then sampler.core.induced for --edge-aggregation node)
  7. lookup    sampler.core.node_table.features_by_shard: reached nodes' features per shard
  8. assemble  sampler.core.assemble.ShardAssembler: a shard's pieces -> canonical subgraphs
  9. encode    sampler.output.encoder.encode_shard: subgraphs -> tf.train.Example bytes
 10. write     sampler.output.shards.write_shard (files.py); schema.py; report.py

Engines only move data between those steps: sampler.beam (the Beam pipeline, one
module per stage) and sampler.memory (the whole graph in one machine's memory, worker
processes over shards); sampler.run picks one and drives a job end to end. Around them:
sampler.graph_tensor (the numpy GraphTensor core and its codec) and
sampler.training (tf.data input and a small GNN on the output).
"""

# Before anything imports numpy: its AVX2 sorts on AMD Zen 4 (sampler/numpy_cpu.py).
from sampler.numpy_cpu import prefer_avx2_sort as _prefer_avx2_sort

_prefer_avx2_sort()
