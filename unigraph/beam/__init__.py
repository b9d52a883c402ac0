"""Beam wiring: the transforms that read a unigraph, and the coder of every element the pipelines move."""
