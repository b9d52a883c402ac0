"""Mergeable summaries of value streams too large to hold: the per-feature numbers of
sample-stats.

Each summary takes numpy arrays in any number of `add` calls and merges with
another of its kind, so a folder is summarized shard by shard (in any process)
and the shard summaries merged in file order: the result never depends on how
many workers did the work.

- Moments: exact count, mean, std (Chan et al.'s pairwise update), min, max, and
  counts of NaN and +-inf (which the other numbers leave out).
- LogHistogram: quantiles with a relative error of at most ALPHA (2**-7, 0.8%)
  on the value, in bounded memory (32768 counts): fixed log-linear buckets
  covering every finite float32, as HdrHistogram and DDSketch (Masson, Rim, Lee,
  VLDB 2019) bucket, so merging is adding arrays.
- TopValues: the most frequent values, a mergeable Misra-Gries summary
  (Agarwal et al., "Mergeable summaries", 2012). While a feature has at most
  CAPACITY distinct values it is an exact table of counts (and gives exact
  quantiles of integer features); beyond, each count is low by at most `error`,
  itself at most total / (CAPACITY + 1).
- DistinctCount: the k smallest 64-bit hashes of the values (KMV): exact below
  k distinct values, else an estimate with a relative standard error of about
  1/sqrt(k - 2) (1.1% for k = 8192).
"""
from __future__ import annotations

import math

import numpy as np

from sampler.core import rng

QUANTILES = (0.0, 0.05, 0.5, 0.95, 1.0)
QUANTILE_NAMES = ("min", "p5", "p50", "p95", "max")

# LogHistogram buckets: a float32's sign, exponent and top MANTISSA_BITS mantissa bits,
# so a bucket spans at most a factor 1 + 2**-MANTISSA_BITS and its midpoint is
# within ALPHA of every value in it.
MANTISSA_BITS = 6
ALPHA = 2.0 ** -(MANTISSA_BITS + 1)
_SHIFT = 23 - MANTISSA_BITS
_BUCKETS = 1 << (32 - _SHIFT)
_NEGATIVE = _BUCKETS >> 1        # codes at and above this are negative values

CAPACITY = 2000
DISTINCT_K = 8192


class Moments:
    """Exact count, mean, std, min and max of the finite values; NaN and inf counted."""

    def __init__(self):
        self.count = 0         # every value, NaN and inf included
        self.finite = 0
        self.mean = 0.0
        self.m2 = 0.0          # sum of squared deviations from the mean
        self.min = math.inf
        self.max = -math.inf
        self.nan = 0
        self.posinf = 0
        self.neginf = 0

    def add(self, values: np.ndarray) -> np.ndarray:
        """Counts the values; returns the finite ones (what the other summaries take)."""
        values = np.asarray(values).reshape(-1)
        self.count += values.size
        if values.dtype.kind == "f" and values.size:
            finite = np.isfinite(values)
            if not finite.all():
                self.nan += int(np.isnan(values).sum())
                self.posinf += int((values == np.inf).sum())
                self.neginf += int((values == -np.inf).sum())
                values = values[finite]
        if values.size:
            other = Moments()
            other.finite = values.size
            other.mean = float(values.sum(dtype=np.float64)) / values.size
            deviations = values.astype(np.float64)
            deviations -= other.mean
            # Not np.dot: BLAS may thread it, and then its rounding depends on the threads.
            np.square(deviations, out=deviations)
            other.m2 = float(deviations.sum())
            other.min, other.max = float(values.min()), float(values.max())
            self._merge_finite(other)
        return values

    def merge(self, other: "Moments") -> None:
        self.count += other.count
        self.nan += other.nan
        self.posinf += other.posinf
        self.neginf += other.neginf
        self._merge_finite(other)

    def _merge_finite(self, other: "Moments") -> None:
        if not other.finite:
            return
        n = self.finite + other.finite
        delta = other.mean - self.mean
        self.mean += delta * other.finite / n
        self.m2 += other.m2 + delta * delta * self.finite * other.finite / n
        self.finite = n
        self.min = min(self.min, other.min)
        self.max = max(self.max, other.max)

    @property
    def std(self) -> float:
        """The population standard deviation of the finite values."""
        return math.sqrt(max(self.m2, 0.0) / self.finite) if self.finite else math.nan

    def as_dict(self) -> dict:
        return {"values": self.count, "finite": self.finite,
                "mean": self.mean if self.finite else None,
                "std": self.std if self.finite else None,
                "min": self.min if self.finite else None,
                "max": self.max if self.finite else None,
                "nan": self.nan, "inf": self.posinf + self.neginf,
                "posinf": self.posinf, "neginf": self.neginf}


class LogHistogram:
    """Counts of finite values in log-linear buckets read off the float32 bit pattern
    (as HdrHistogram and DDSketch bucket): one pass of a shift and a bincount."""

    def __init__(self):
        self.counts = np.zeros(_BUCKETS, np.int64)

    @property
    def count(self) -> int:
        return int(self.counts.sum())

    def add(self, finite: np.ndarray) -> None:
        """Adds finite values (float32 keeps every finite value of float32 and int64
        features within 2**-24 of itself, far inside ALPHA)."""
        values = np.ascontiguousarray(finite, dtype=np.float32).reshape(-1)
        if values.size:
            self.counts += np.bincount(values.view(np.uint32) >> np.uint32(_SHIFT),
                                       minlength=_BUCKETS)

    def merge(self, other: "LogHistogram") -> None:
        self.counts += other.counts

    def _in_value_order(self) -> tuple[np.ndarray, np.ndarray]:
        """(bucket codes, counts) ordered by value: negatives by falling magnitude first."""
        codes = np.concatenate([np.arange(_BUCKETS - 1, _NEGATIVE - 1, -1),
                                np.arange(_NEGATIVE)]).astype(np.uint32)
        return codes, self.counts[codes]

    def quantiles(self, qs=QUANTILES) -> list[float | None]:
        """The value at rank floor(q * (n - 1)) of the sorted values, within ALPHA of it."""
        n = self.count
        if not n:
            return [None] * len(qs)
        codes, counts = self._in_value_order()
        ranks = np.floor(np.asarray(qs, dtype=np.float64) * (n - 1)).astype(np.int64)
        chosen = codes[np.searchsorted(np.cumsum(counts), ranks, side="right")]
        return [float(v) for v in bucket_value(chosen)]

    def bins(self) -> tuple[np.ndarray, np.ndarray]:
        """(representative value, count) of every non-empty bucket, in value order."""
        codes, counts = self._in_value_order()
        keep = counts > 0
        return bucket_value(codes[keep]), counts[keep]


def bucket_value(codes: np.ndarray) -> np.ndarray:
    """The midpoint of each bucket (0 for the buckets holding zero), within ALPHA of
    every value in it."""
    codes = np.asarray(codes, dtype=np.uint32)
    magnitude = codes & np.uint32(_NEGATIVE - 1)
    low = (magnitude << np.uint32(_SHIFT)).view(np.float32).astype(np.float64)
    high = ((magnitude + np.uint32(1)) << np.uint32(_SHIFT)).view(np.float32).astype(np.float64)
    middle = np.where(magnitude == 0, 0.0, (low + high) / 2)
    return np.where(codes >= _NEGATIVE, -middle, middle)


class TopValues:
    """Misra-Gries counts of values (int64 or 'S' bytes arrays); exact while error == 0."""

    def __init__(self, capacity: int = CAPACITY):
        self.capacity = capacity
        self.values: np.ndarray | None = None   # distinct values, sorted
        self.counts = np.zeros(0, np.int64)
        self.total = 0
        self.error = 0      # every count is low by at most this much

    @property
    def exact(self) -> bool:
        return self.error == 0

    def add(self, values: np.ndarray) -> None:
        values = np.asarray(values).reshape(-1)
        if not values.size:
            return
        distinct, counts = np.unique(values, return_counts=True)
        self._combine(distinct, counts.astype(np.int64), values.size, 0)

    def merge(self, other: "TopValues") -> None:
        if other.values is not None:
            self._combine(other.values, other.counts, other.total, other.error)

    def _combine(self, values: np.ndarray, counts: np.ndarray, total: int, error: int) -> None:
        self.total += total
        self.error += error
        if self.values is not None:
            if values.dtype.kind == "S" or self.values.dtype.kind == "S":
                width = max(values.dtype.itemsize, self.values.dtype.itemsize)
                values, mine = values.astype(f"S{width}"), self.values.astype(f"S{width}")
            else:
                mine = self.values
            values, inverse = np.unique(np.concatenate([mine, values]), return_inverse=True)
            counts = np.bincount(inverse, weights=np.concatenate([self.counts, counts]),
                                 minlength=len(values)).astype(np.int64)
        if len(values) > self.capacity:
            # Subtract the (capacity+1)-th largest count from all, keep what stays positive.
            cut = int(np.partition(counts, len(counts) - self.capacity - 1)[
                len(counts) - self.capacity - 1])
            counts = counts - cut
            keep = counts > 0
            values, counts = values[keep], counts[keep]
            self.error += cut
        self.values, self.counts = values, counts

    def top(self, k: int = 10) -> list[tuple[object, int]]:
        """The k values with the largest counts (ties by value), with their counts."""
        if self.values is None:
            return []
        order = np.lexsort((self.values, -self.counts))[:k]
        return [(self.values[i], int(self.counts[i])) for i in order]

    def distinct(self) -> int | None:
        return len(self.counts) if self.exact and self.values is not None else (
            0 if self.values is None else None)

    def quantiles(self, qs=QUANTILES) -> list[float | None]:
        """Exact quantiles (rank floor(q * (n - 1))) of numeric values; only when exact."""
        if not self.exact:
            raise ValueError("TopValues.quantiles: counts are not exact")
        if self.values is None or not self.total:
            return [None] * len(qs)
        cumulative = np.cumsum(self.counts)
        ranks = np.floor(np.asarray(qs, dtype=np.float64) * (self.total - 1)).astype(np.int64)
        return [float(self.values[i]) for i in np.searchsorted(cumulative, ranks, side="right")]


class DistinctCount:
    """The DISTINCT_K smallest distinct 64-bit hashes of the values seen (KMV)."""

    def __init__(self, k: int = DISTINCT_K):
        self.k = k
        self.hashes = np.zeros(0, np.uint64)

    def add(self, values: np.ndarray) -> None:
        values = np.asarray(values).reshape(-1)
        if values.size:
            self._keep(hash_values(values))

    def merge(self, other: "DistinctCount") -> None:
        self._keep(other.hashes)

    def _keep(self, hashes: np.ndarray) -> None:
        merged = np.unique(np.concatenate([self.hashes, hashes]))
        self.hashes = merged[:self.k]

    @property
    def exact(self) -> bool:
        return len(self.hashes) < self.k

    def estimate(self) -> int:
        if self.exact:
            return len(self.hashes)
        largest = float(self.hashes[-1]) / 2.0 ** 64   # the k-th smallest, scaled to (0, 1)
        return int(round((self.k - 1) / largest))


def hash_values(values: np.ndarray) -> np.ndarray:
    """Stable 64-bit hashes of int64 or 'S' values (the same in every process)."""
    if values.dtype.kind == "S":
        return rng.fingerprint(values)
    return rng.mix(values.astype(np.int64).view(np.uint64))
