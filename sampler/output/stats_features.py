"""Per-feature summaries of `sample-stats`, mergeable: moments, quantiles and value counts
of numbers (sketches.py), lengths and top values of strings, row lengths of ragged
dimensions."""
from __future__ import annotations

from typing import Iterator

import numpy as np

from sampler.graph_tensor.example_batch import Strings
from sampler.output.sketches import (QUANTILE_NAMES, DistinctCount, LogHistogram, Moments, TopValues)
from sampler.output.stats_layout import FeatureRef

STRING_BATCH_BYTES = 32 << 20  # bound on one fixed-width array of string values
TOP_SHOWN = 10                # top values listed per feature


class NumericSummary:
    """Moments, quantiles and (for integers) value counts of numeric values."""

    def __init__(self, integer: bool):
        self.moments = Moments()
        self.histogram = LogHistogram()
        self.top = TopValues() if integer else None
        self.distinct = DistinctCount() if integer else None

    def add(self, values: np.ndarray) -> None:
        if not values.size:
            return
        finite = self.moments.add(values)
        self.histogram.add(finite)
        if self.top is not None:
            self.top.add(finite)
            self.distinct.add(finite)

    def merge(self, other: "NumericSummary") -> None:
        self.moments.merge(other.moments)
        self.histogram.merge(other.histogram)
        if self.top is not None:
            self.top.merge(other.top)
            self.distinct.merge(other.distinct)

    @property
    def quantiles_exact(self) -> bool:
        return self.top is not None and self.top.exact

    def quantiles(self) -> dict:
        if self.quantiles_exact:
            values = [None if v is None else plain_number(v) for v in self.top.quantiles()]
        else:
            low, high = self.moments.min, self.moments.max
            values = [None if v is None else min(max(v, low), high)
                      for v in self.histogram.quantiles()]
            if self.moments.finite:   # min and max are exact
                values[0], values[-1] = low, high
        return dict(zip(QUANTILE_NAMES, values))

    def as_dict(self) -> dict:
        result = self.moments.as_dict()
        result["quantiles"] = self.quantiles()
        result["quantiles_exact"] = self.quantiles_exact
        if self.top is not None:
            result["distinct"] = self.top.distinct() if self.top.exact else \
                self.distinct.estimate()
            result["distinct_exact"] = self.top.exact or self.distinct.exact
            result["top_values"] = [[int(v), c] for v, c in self.top.top(TOP_SHOWN)]
            result["top_values_max_undercount"] = self.top.error
        return result


class StringSummary:
    """Value counts, distinct count and byte lengths of string values."""

    def __init__(self):
        self.top = TopValues()
        self.distinct = DistinctCount()
        self.lengths = NumericSummary(integer=True)
        self.count = 0

    def add(self, items: list[bytes]) -> None:
        if not items:
            return
        self.count += len(items)
        lengths = np.fromiter(map(len, items), np.int64, len(items))
        self.lengths.add(lengths)
        for batch in string_batches(items, lengths):
            self.top.add(batch)
            self.distinct.add(batch)

    def add_strings(self, strings: Strings) -> None:
        """`add` of the batched decoder's strings: their fixed-width array as it is, when
        they have one (as string_batches would make it, up to its width)."""
        if strings.as_objects or strings.fixed.size * strings.fixed.dtype.itemsize \
                > STRING_BATCH_BYTES:
            self.add(strings.objects().reshape(-1).tolist())
            return
        if not len(strings.lengths):
            return
        fixed = strings.fixed.reshape(-1)
        self.count += len(fixed)
        self.lengths.add(strings.lengths.reshape(-1))
        self.top.add(fixed)
        self.distinct.add(fixed)

    def merge(self, other: "StringSummary") -> None:
        self.count += other.count
        self.top.merge(other.top)
        self.distinct.merge(other.distinct)
        self.lengths.merge(other.lengths)

    def as_dict(self) -> dict:
        exact = self.top.exact or self.distinct.exact
        distinct = self.top.distinct() if self.top.exact else self.distinct.estimate()
        return {"values": self.count, "distinct": distinct, "distinct_exact": exact,
                "top_values": [[text_value(v), c] for v, c in self.top.top(TOP_SHOWN)],
                "top_values_max_undercount": self.top.error,
                "length_bytes": self.lengths.quantiles()}


def string_batches(items: list[bytes], lengths: np.ndarray) -> Iterator[np.ndarray]:
    """Fixed-width 'S' arrays of the items, each under STRING_BATCH_BYTES (one long
    string does not make every other one as wide)."""
    start = 0
    while start < len(items):
        widths = np.maximum.accumulate(np.maximum(lengths[start:], 1))
        fits = (np.arange(1, len(widths) + 1) * widths) <= STRING_BATCH_BYTES
        end = start + max(1, int(np.argmin(fits)) if not fits.all() else len(widths))
        yield np.array(items[start:end], dtype=f"S{int(widths[end - start - 1])}")
        start = end


def text_value(value: bytes) -> str:
    return value.decode("utf-8", errors="backslashreplace")


class FeatureSummary:
    """The values of one feature (flattened over items and dimensions) and the row
    lengths of each of its ragged dimensions."""

    def __init__(self, ref: FeatureRef):
        self.ref = ref
        self.values = StringSummary() if ref.is_string else NumericSummary(
            integer=np.dtype(ref.dtype).kind in "biu")
        self.row_lengths = {d: NumericSummary(integer=True) for d in ref.ragged_dimensions}

    def merge(self, other: "FeatureSummary") -> None:
        self.values.merge(other.values)
        for dimension, summary in self.row_lengths.items():
            summary.merge(other.row_lengths[dimension])

    def as_dict(self) -> dict:
        result = {"dtype": self.ref.schema_dtype, "shape": list(self.ref.shape),
                  **self.values.as_dict()}
        if self.row_lengths:
            result["row_lengths"] = {f"d{d}": {**s.quantiles(), "mean": s.moments.mean}
                                     for d, s in self.row_lengths.items()}
        return result


def plain_number(value):
    """A float as an int when it is a whole number (JSON shows 3, not 3.0)."""
    value = float(value)
    return int(value) if value.is_integer() else value
