"""GroupByKey and CoGroupByKey that count what they shuffle, and move values as bytes.

On a distributed runner every element that enters a GroupByKey is encoded and
moved between workers, and on Dataflow that traffic is billed ("Shuffle data
processed") besides the workers' CPU time. So the project's Beam code groups only
through these two transforms: before grouping, a step fused with the producer
encodes each value (unigraph.beam.element_codec) and adds the key's encoded size plus
the value's bytes to the Beam counters `shuffle/bytes` and `shuffle/elements` of that
step; after grouping, a step fused with the consumer decodes the values.
`shuffled(result)` reads the counters back from a finished pipeline, per grouping step.

The grouped values are `bytes` and their PCollections say so, so the runner moves
them with Beam's bytes coder: each value is encoded once and decoded once, as before.
Beam's in-process runner, which groups by decoding every value and encoding it again
for the consumer, now copies bytes there instead of running the element codec twice
more: at scale 0.04 about 0.4 of the Beam engine's 11.4 user CPU-s (docs/engines.md).
Not on Beam's released DaskRunner: it keeps every step's outputs referenced while a
worker holds the task, so the encoded copies would stay in worker memory beside the
values (tests/pipelines/test_dask_memory.py stalls at its limits); there the values go
as they are, sizes counted without encoding, and Dask pickles what it moves.

CoGroupByKey is Beam's own construction (each input's values tagged, flattened,
grouped, collected per tag) with the encoding done by the tagging step and the
decoding by the collecting step, so it adds no step to the pipeline.
"""
from __future__ import annotations

import zlib

import apache_beam as beam
from apache_beam import typehints
from apache_beam.metrics import Metrics
from apache_beam.metrics.metric import MetricsFilter

from unigraph.beam.element_codec import decode, encode, encoded_size
from unigraph.beam.runners import on_dask
from unigraph.beam.steps import DoFn, FlatMapTuple

NAMESPACE = "shuffle"
COUNT = "Count"  # the label of the counting step inside each grouping transform


class _Encode(DoFn):
    """(key, value) -> (key, the value's bytes), with a tag: (key, bytes of (tag, value));
    `as_bytes=False` (the DaskRunner): the value as it is. Counts the encoded bytes."""

    def __init__(self, tag: str | None = None, as_bytes: bool = True):
        super().__init__()
        self.tag, self.as_bytes = tag, as_bytes
        self.bytes = Metrics.counter(NAMESPACE, "bytes")
        self.elements = Metrics.counter(NAMESPACE, "elements")

    def process(self, element):
        key, value = element
        if self.tag is not None:
            value = (self.tag, value)
        if self.as_bytes:
            value = encode(value)
            size = len(value)
        else:
            size = encoded_size(value)
        self.bytes.inc(encoded_size(key) + size)
        self.elements.inc()
        yield key, value


def _as_bytes(pcoll) -> bool:
    """Whether grouped values travel as bytes: everywhere but on the DaskRunner, which
    keeps each step's outputs referenced, so the encoded copies would stay in worker
    memory beside the values (there Dask pickles the values it moves)."""
    return not on_dask(pcoll.pipeline.options)


def _typed(pcoll, as_bytes: bool):
    """pcoll, declared to hold (key, bytes) where its values are bytes, so that the
    runner moves them with Beam's bytes coder (type inference is off: the type is set,
    not inferred)."""
    if as_bytes:
        pcoll.element_type = typehints.KV[typehints.Any, bytes]
    return pcoll


class _Decode(DoFn):
    """(key, [bytes]) -> (key, [values])."""

    def process(self, element):
        key, values = element
        yield key, [decode(data) for data in values]


class _Collect(DoFn):
    """(key, [(tag, value), as bytes]) -> (key, {tag: [values], for every tag})."""

    def __init__(self, tags: list[str], as_bytes: bool):
        super().__init__()
        self.tags, self.as_bytes = tags, as_bytes

    def process(self, element):
        key, tagged = element
        grouped = {tag: [] for tag in self.tags}
        for tag, value in (map(decode, tagged) if self.as_bytes else tagged):
            grouped[tag].append(value)
        yield key, grouped


class GroupByKey(beam.PTransform):
    """beam.GroupByKey, its input's encoded bytes counted (step `<label>/Count`), the
    values decoded again after the group (`<label>/Decode`; on the DaskRunner, where they
    are grouped as they are, no such step: each step's outputs stay referenced there)."""

    def expand(self, pcoll):
        as_bytes = _as_bytes(pcoll)
        encoded = _typed(pcoll | COUNT >> beam.ParDo(_Encode(as_bytes=as_bytes)), as_bytes)
        grouped = encoded | "Group" >> beam.GroupByKey()
        return grouped | "Decode" >> beam.ParDo(_Decode()) if as_bytes else grouped


class CoGroupByKey(beam.PTransform):
    """beam.CoGroupByKey of a dict of keyed PCollections: (key, {tag: [values]}), each
    input's encoded bytes counted (steps `<label>/Count/<tag>`)."""

    def expand(self, inputs):
        tags = list(inputs)
        as_bytes = _as_bytes(next(iter(inputs.values())))
        tagged = tuple(_typed(pcoll | f"{COUNT}/{tag}" >> beam.ParDo(_Encode(tag, as_bytes)),
                              as_bytes)
                       for tag, pcoll in inputs.items())
        return (_typed(tagged | "Flatten" >> beam.Flatten(), as_bytes)
                | "Group" >> beam.GroupByKey()
                | "Collect" >> beam.ParDo(_Collect(tags, as_bytes)))


class _KeyByContent(DoFn):
    """element -> (a hash of its bytes, its bytes or, `as_bytes=False`, itself), counting
    the bytes of the pair."""

    def __init__(self, as_bytes: bool):
        super().__init__()
        self.as_bytes = as_bytes
        self.bytes = Metrics.counter(NAMESPACE, "bytes")
        self.elements = Metrics.counter(NAMESPACE, "elements")

    def process(self, element):
        data = encode(element)
        key = zlib.crc32(data)
        self.bytes.inc(encoded_size(key) + len(data))
        self.elements.inc()
        yield key, data if self.as_bytes else element


class Spread(beam.PTransform):
    """Beam's Reshuffle, for the few small elements a read starts from (files, work
    units, BigQuery streams): each keyed by a hash of its content, grouped (a fusion
    break, so the next step runs spread over the workers) and passed on, its bytes
    counted. Three steps where Beam's Reshuffle takes six; elements of one key are
    passed on in any order (the readers' output does not depend on it)."""

    def expand(self, pcoll):
        as_bytes = _as_bytes(pcoll)
        return (_typed(pcoll | "Key" >> beam.ParDo(_KeyByContent(as_bytes)), as_bytes)
                | "Group" >> beam.GroupByKey()
                | "Values" >> FlatMapTuple(_values, as_bytes))


def _values(_, values, as_bytes: bool):
    return map(decode, values) if as_bytes else values


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
