"""One output, several consumers: (tag, payload) pairs split by one FlatMap per tag.

A stage whose step produces more than one kind of result (a hop's edges, reached
nodes and counts) yields `(tag, payload)` pairs on its single output, and
`split_tagged` gives each consumer its own PCollection of payloads. Beam's
multi-output DoFns (`with_outputs`, `TaggedOutput`) would say the same, but not
every runner translates them: Beam's released DaskRunner sends every tagged
output to every consumer. A FlatMap per tag runs on any runner, and fuses with
the producing step where the runner fuses (FnApiRunner, Dataflow), so the
payloads are not copied.
"""
from __future__ import annotations

from unigraph.beam.steps import FlatMap


def _payloads_of(element, tag: str):
    if element[0] == tag:
        yield element[1]


def split_tagged(tagged, tags: tuple[str, ...]) -> dict:
    """{tag: PCollection of the payloads of `tagged`'s (tag, payload) pairs with that tag},
    each split labelled `<tag>` under the current transform."""
    return {tag: tagged | tag.capitalize() >> FlatMap(_payloads_of, tag) for tag in tags}
