"""Beam wiring: the transforms that read a unigraph, and the coder of every element the pipelines move.

Importing this package (which every module of it and of sampler.beam does first)
imports Apache Beam without the connectors the project never uses (lean_import.py).
"""
from unigraph.beam.lean_import import import_beam

import_beam()
