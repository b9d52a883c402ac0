"""The Beam coder of every element this project's pipelines move: unigraph.beam.element_codec.

Our stages leave element types undeclared (static type checks are off: they find
nothing to check in batches of numpy arrays and cost a second per run), so every
PCollection gets Beam's fallback coder. Beam's own fallback, FastPrimitivesCoder,
pickles any object it does not know, i.e. every batch, table and piece. Importing
this module makes ElementCoder the fallback instead (Beam's public
`registry.register_fallback_coder`): our dataclasses and numpy arrays are written as
raw bytes with no pickle and no code in the data, and anything else (Beam's own
objects) still falls back to pickle as before. The coder is serialized into the
pipeline, so workers decode with the same coder whatever they imported.
"""
from __future__ import annotations

from typing import Any

import apache_beam as beam
from apache_beam.coders import typecoders

from unigraph.beam.element_codec import decode, encode, size_bound


class ElementCoder(beam.coders.Coder):
    """unigraph.beam.element_codec as a Beam coder; deterministic (valid for group keys)."""

    def encode(self, value) -> bytes:
        return encode(value)

    def decode(self, encoded: bytes):
        return decode(encoded)

    def estimate_size(self, value) -> int:
        # Beam samples elements for its size metrics and, by default, encodes each one
        # sampled to measure it. Ours are few and large, so most are sampled: that
        # second encoding was about 2 of 17 CPU-s of the Beam engine's job at scale
        # 0.04. A bound from the arrays' shapes costs nothing per byte.
        return size_bound(value)

    def is_deterministic(self) -> bool:
        return True

    def as_deterministic_coder(self, step_label, error_message=None):
        return self

    def to_type_hint(self):
        return Any

    def __eq__(self, other):
        return type(self) is type(other)

    def __hash__(self):
        return hash(type(self))


def use_element_coder() -> None:
    """Makes ElementCoder Beam's fallback coder in this process (idempotent)."""
    if not isinstance(getattr(typecoders.registry, "_fallback_coder", None), ElementCoder):
        typecoders.registry.register_fallback_coder(ElementCoder())


use_element_coder()
