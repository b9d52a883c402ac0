"""Step 1 of the flow: a SamplingSpec, checked against the graph schema, becomes a Plan.

  spec.py      the SamplingSpec text format -> message (sampling_spec_pb2, TF-GNN's fields)
  plan.py      message + schema -> Plan: ops in execution order, each with its node sets
  describe.py  the Plan as text, for `sample --dry-run`
"""
