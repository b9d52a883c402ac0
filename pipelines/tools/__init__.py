"""Maintainers' tools, not shipped commands: the generated pages of the guide (docs_gen,
perf_tables), the committed _pb2 modules (gen_protos), the planted link example
(planted_link). Run as `python -m pipelines.tools.X` or through the Makefile."""
