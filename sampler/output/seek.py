"""Finding records by their context features without decoding them.

    conditions = [seed_condition(schema, "p17"), parse_condition(schema, "label=3")]
    for found in find_records(samples, conditions): ...

A record matches when, for every condition, the context feature holds the value
among its values (`--seed-id ID` is the condition seed_id=ID; a record seeded by
a pair, with context features naming its source and target, is found with one
condition per end).

The scan reads each shard once and, per record, first asks whether the value's
wire bytes occur in the record at all: a bytes_list item is written
`0x0A varint(length) value`, an int64 as its varint, a float as its four
little-endian bytes, so a record without those bytes cannot match, and
`bytes in record` (a C substring search) rejects it without parsing anything.
Only records containing the bytes (the seed's own, and those where the same
bytes appear elsewhere, e.g. the id as a neighbour's #id) have their keys walked
(wire.feature_spans) and the one context feature decoded. Nothing else is
decoded, and sample's shards need no index beside them.
"""
from __future__ import annotations

import dataclasses
from typing import Iterator

import numpy as np

from sampler.graph_tensor import keys as k
from sampler.graph_tensor import wire
from sampler.output.folder import SampleFolder, SamplesError, iter_records
from sampler.output.names import SEED_ID_FEATURE
from unigraph.protos import graph_schema_pb2 as gs
from unigraph.errors import SamplerError, one_line
from unigraph.schema import NUMPY_DTYPES


@dataclasses.dataclass(frozen=True)
class Condition:
    """Context feature `name` holds `value` (bytes, int or float, as its dtype says)."""

    name: str
    value: object
    needle: bytes   # wire bytes every record that matches must contain

    @property
    def key(self) -> str:
        return k.context_key(self.name)

    def __str__(self) -> str:
        shown = self.value.decode("utf-8", "backslashreplace") if isinstance(
            self.value, bytes) else self.value
        return f"context/{self.name} {shown!r}"


def seed_condition(schema: gs.GraphSchema, seed_id: str,
                   source: str = "the samples' schema") -> Condition:
    return parse_condition(schema, f"{SEED_ID_FEATURE}={seed_id}", source)


def parse_condition(schema: gs.GraphSchema, text: str,
                    source: str = "the samples' schema") -> Condition:
    """`KEY=VALUE` for a context feature KEY of the schema; SamplesError if it has none
    (`source` names the schema, e.g. its path)."""
    name, sep, raw = text.partition("=")
    if not sep or not name:
        raise SamplesError(f"--context {text!r}: expected KEY=VALUE")
    features = schema.context.features
    if name not in features:
        known = ", ".join(sorted(features)) or "none"
        raise SamplesError(f"--context {text!r}: {source} has no context feature "
                           f"'{name}' (it has: {known})")
    dtype = NUMPY_DTYPES.get(features[name].dtype)
    if dtype is None:
        raise SamplesError(f"--context {text!r}: context feature '{name}' of {source} has a "
                           f"dtype tf.train.Example cannot hold")
    if dtype.kind == "O":
        value = raw.encode("utf-8")
        return Condition(name, value, b"\x0a" + wire.varint(len(value)) + value)
    try:
        if dtype.kind == "f":
            value = float(np.float32(float(raw)))
            return Condition(name, value, np.float32(value).tobytes())
        value = {"true": 1, "false": 0}.get(raw.lower()) if dtype.kind == "b" else None
        value = int(raw) if value is None else value
    except ValueError:
        raise SamplesError(f"--context {text!r}: '{raw}' is not a {dtype.name} value, the "
                           f"dtype of context feature '{name}'") from None
    if not -(1 << 63) <= value < 1 << 63:
        raise SamplesError(f"--context {text!r}: {value} is out of the int64 range of "
                           f"tf.train.Example")
    return Condition(name, value, wire.encode_varints(np.array([value], np.int64)))


@dataclasses.dataclass(frozen=True)
class Found:
    path: str
    index: int       # record index within its file, from 0
    record: bytes


@dataclasses.dataclass
class ScanCounts:
    files: int = 0
    records: int = 0
    parsed: int = 0   # records whose keys were walked (the rest were skipped unparsed)


def find_records(samples: SampleFolder, conditions: list[Condition],
                 counts: ScanCounts | None = None) -> Iterator[Found]:
    """Every record matching all conditions, in file order; `counts` says what was read."""
    counts = counts if counts is not None else ScanCounts()
    for path in samples.files:
        counts.files += 1
        for index, record in enumerate(iter_records(path)):
            counts.records += 1
            if not all(c.needle in record for c in conditions):
                continue
            counts.parsed += 1
            if matches(record, conditions, f"{path}: record {index}"):
                yield Found(path, index, record)


def matches(record: bytes, conditions: list[Condition], where: str) -> bool:
    """Whether the record's context features hold every condition's value."""
    try:
        spans = wire.feature_spans(record)
    except SamplerError as e:  # a damaged record: say which one
        raise SamplerError(f"{where}: {one_line(e)}") from None
    for condition in conditions:
        span = spans.get(condition.key)
        if span is None:
            return False
        _, values = wire.decode_feature(memoryview(record)[span[0]:span[1]],
                                        f"{where}: {condition.key}")
        if isinstance(condition.value, bytes):
            if condition.value not in values:
                return False
        else:
            array = np.asarray(values)
            if isinstance(condition.value, float):
                hit = (array.astype(np.float32) == np.float32(condition.value)).any()
            else:
                hit = (array.astype(np.int64) == condition.value).any()
            if not hit:
                return False
    return True
