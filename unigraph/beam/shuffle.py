"""GroupByKey and CoGroupByKey that count what they shuffle.

On a distributed runner every element that enters a GroupByKey is encoded and
moved between workers, and on Dataflow that traffic is billed ("Shuffle data
processed") besides the workers' CPU time. So the project's Beam code groups only
through these two transforms: before grouping, a step fused with the producer adds
each element's encoded size (unigraph.beam.element_codec, the coder every element
of ours crosses workers with: the key's bytes plus the value's, computed without
encoding) to the Beam counters `shuffle/bytes` and `shuffle/elements` of that step.
`shuffled(result)` reads them back from a finished pipeline, per grouping step.

Counting costs a walk over each element's fields (no copy): elements are a few
large batches of arrays, so a few hundred walks per job.
"""
from __future__ import annotations

import apache_beam as beam
from apache_beam.metrics import Metrics
from apache_beam.metrics.metric import MetricsFilter

from unigraph.beam.element_codec import encoded_size

NAMESPACE = "shuffle"
COUNT = "Count"  # the label of the counting step inside each grouping transform


class _CountBytes(beam.DoFn):
    """Passes (key, value) elements on, counting their encoded bytes."""

    def __init__(self):
        self.bytes = Metrics.counter(NAMESPACE, "bytes")
        self.elements = Metrics.counter(NAMESPACE, "elements")

    def process(self, element):
        key, value = element
        self.bytes.inc(encoded_size(key) + encoded_size(value))
        self.elements.inc()
        yield element


class GroupByKey(beam.PTransform):
    """beam.GroupByKey, its input's encoded bytes counted (step `<label>/Count`)."""

    def expand(self, pcoll):
        return pcoll | COUNT >> beam.ParDo(_CountBytes()) | "Group" >> beam.GroupByKey()


class CoGroupByKey(beam.PTransform):
    """beam.CoGroupByKey of a dict of keyed PCollections, each input's encoded bytes
    counted (steps `<label>/Count/<tag>`)."""

    def expand(self, inputs):
        counted = {tag: pcoll | f"{COUNT}/{tag}" >> beam.ParDo(_CountBytes())
                   for tag, pcoll in inputs.items()}
        return counted | "Group" >> beam.CoGroupByKey()


def shuffled(result) -> dict | None:
    """{"bytes", "elements", "by_step": {grouping step (and input): bytes}} counted by this module's
    transforms in a finished pipeline; None where the runner keeps no metrics (Beam's
    DaskRunner)."""
    try:
        counters = result.metrics().query(MetricsFilter().with_namespace(NAMESPACE))["counters"]
    except (NotImplementedError, AttributeError, KeyError):
        return None
    totals = {"bytes": 0, "elements": 0}
    by_step: dict[str, int] = {}
    for counter in counters:
        value = counter.committed if counter.committed is not None else counter.attempted
        name = counter.key.metric.name
        totals[name] = totals.get(name, 0) + int(value or 0)
        if name == "bytes":
            step = _grouping_step(counter.key.step)
            by_step[step] = by_step.get(step, 0) + int(value or 0)
    return {**totals, "by_step": dict(sorted(by_step.items(), key=lambda kv: -kv[1]))}


def _grouping_step(step: str) -> str:
    """The grouping step and, for a CoGroupByKey, the input: 'Sample/Hop/cites/Join/Count/
    requests' -> 'Hop/cites/Join/requests', 'Sample/NodeTable/paper/Group/Count' ->
    'NodeTable/paper/Group'."""
    name = step.replace(f"/{COUNT}/", "/").removesuffix(f"/{COUNT}")
    return name.split("/", 1)[1] if name.startswith("Sample/") else name
