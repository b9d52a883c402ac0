"""GroupByKey and CoGroupByKey that count what they shuffle.

On a distributed runner every element that enters a GroupByKey is encoded and
moved between workers, and on Dataflow that traffic is billed ("Shuffle data
processed") besides the workers' CPU time. So the project's Beam code groups only
through these two transforms: before grouping, a step fused with the producer adds
each element's encoded size (unigraph.beam.element_codec, the coder every element
of ours crosses workers with: the key's bytes plus the value's, computed without
encoding) to the Beam counters `shuffle/bytes` and `shuffle/elements` of that step.
`shuffled(result)` reads them back from a finished pipeline, per grouping step.

Counting costs a walk over each element's fields (no copy, a min and max of each
integer array): elements are a few large batches of arrays, so a few hundred walks
per job. CoGroupByKey is Beam's own construction (each input's values tagged,
flattened, grouped, collected per tag) with the counting done by the tagging step,
so it adds no step to the pipeline.
"""
from __future__ import annotations

import zlib

import apache_beam as beam
from apache_beam.metrics import Metrics
from apache_beam.metrics.metric import MetricsFilter

from unigraph.beam.element_codec import encode, encoded_size
from unigraph.beam.steps import DoFn, FlatMapTuple

NAMESPACE = "shuffle"
COUNT = "Count"  # the label of the counting step inside each grouping transform


class _CountBytes(DoFn):
    """Passes (key, value) elements on, as (key, (tag, value)) with a tag, counting the
    encoded bytes of what it passes on."""

    def __init__(self, tag: str | None = None):
        super().__init__()
        self.tag = tag
        self.bytes = Metrics.counter(NAMESPACE, "bytes")
        self.elements = Metrics.counter(NAMESPACE, "elements")

    def process(self, element):
        key, value = element
        if self.tag is not None:
            value = (self.tag, value)
            element = (key, value)
        self.bytes.inc(encoded_size(key) + encoded_size(value))
        self.elements.inc()
        yield element


class _Collect(DoFn):
    """(key, [(tag, value), ...]) -> (key, {tag: [values], for every tag})."""

    def __init__(self, tags: list[str]):
        super().__init__()
        self.tags = tags

    def process(self, element):
        key, tagged = element
        grouped = {tag: [] for tag in self.tags}
        for tag, value in tagged:
            grouped[tag].append(value)
        yield key, grouped


class GroupByKey(beam.PTransform):
    """beam.GroupByKey, its input's encoded bytes counted (step `<label>/Count`)."""

    def expand(self, pcoll):
        return pcoll | COUNT >> beam.ParDo(_CountBytes()) | "Group" >> beam.GroupByKey()


class CoGroupByKey(beam.PTransform):
    """beam.CoGroupByKey of a dict of keyed PCollections: (key, {tag: [values]}), each
    input's encoded bytes counted (steps `<label>/Count/<tag>`)."""

    def expand(self, inputs):
        tags = list(inputs)
        tagged = tuple(pcoll | f"{COUNT}/{tag}" >> beam.ParDo(_CountBytes(tag))
                       for tag, pcoll in inputs.items())
        return (tagged | "Flatten" >> beam.Flatten()
                | "Group" >> beam.GroupByKey()
                | "Collect" >> beam.ParDo(_Collect(tags)))


class _KeyByContent(DoFn):
    """element -> (a hash of its bytes, element), counting the bytes of the pair."""

    def __init__(self):
        super().__init__()
        self.bytes = Metrics.counter(NAMESPACE, "bytes")
        self.elements = Metrics.counter(NAMESPACE, "elements")

    def process(self, element):
        data = encode(element)
        key = zlib.crc32(data)
        self.bytes.inc(encoded_size(key) + len(data))
        self.elements.inc()
        yield key, element


class Spread(beam.PTransform):
    """Beam's Reshuffle, for the few small elements a read starts from (files, work
    units, BigQuery streams): each keyed by a hash of its content, grouped (a fusion
    break, so the next step runs spread over the workers) and passed on, its bytes
    counted. Three steps where Beam's Reshuffle takes six; elements of one key are
    passed on in any order (the readers' output does not depend on it)."""

    def expand(self, pcoll):
        return (pcoll | "Key" >> beam.ParDo(_KeyByContent())
                | "Group" >> beam.GroupByKey()
                | "Values" >> FlatMapTuple(_values))


def _values(_, values):
    return values


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
    'NodeTable/paper/Group', 'Sample/Read/edges/cites/SpreadFiles/Key' ->
    'Read/edges/cites/SpreadFiles'."""
    name = step.replace(f"/{COUNT}/", "/").removesuffix(f"/{COUNT}").removesuffix("/Key")
    return name.split("/", 1)[1] if name.startswith("Sample/") else name
