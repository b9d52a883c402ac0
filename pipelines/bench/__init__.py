"""The benchmarks: `benchmark` (whole jobs on synthetic graphs, beside what we compare
against) and the harnesses it and the maintainers run (`python -m pipelines.bench.X`).
Each writes its figures as JSON with their provenance (provenance.py); the performance
page is generated from them (pipelines.tools.docs_gen)."""
