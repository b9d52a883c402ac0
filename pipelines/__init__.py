"""The commands a user runs (setup.py's console scripts) and what they share.

The benchmarks behind `benchmark` live in pipelines.bench, the maintainers' tools
(generated docs, protos, the planted example) in pipelines.tools."""
# Imported first, before any command imports numpy: sampler/numpy_cpu.py.
import sampler  # noqa: F401

import os

# The checkout (or install) the commands run from: examples/, docs/ and setup.py are found
# from here by the benchmarks and the tools.
REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
